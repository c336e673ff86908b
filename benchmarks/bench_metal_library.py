"""One kernel as a whole-library kernel (:class:`~cunumpy.kernels.MetalLibrary`) and as a
:class:`~cunumpy.kernels.MetalKernel` body, on the same Metal engine.

The kernel is the particle push of ``bench_metal_cuda.py`` (``NSTEPS`` steps ``x += v * dt``).
On ``metal-cuda`` (the default where CuPy sees a GPU) the arrays are CuPy arrays, bound in place:
kernel time is CUDA events around 20 launches queued back to back (per launch, median of
``--reps``), host overhead the time to queue one launch of 256 elements (``perf_counter`` over
``--calls`` launches, median of rounds, the two sides interleaved). On ``emu-metal`` (``--engine
emulator``: no GPU needed, to check the script) both are wall-clock time per call on NumPy arrays.
The library call checks each argument against the kernel's declaration and has no generated fast
path yet; the figure says what that costs.

Usage: ``python benchmarks/bench_metal_library.py [--engine cuda|emulator] [--n N] [--reps R]
[--calls C] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

NSTEPS = 200

LIBRARY = f"""
kernel void push(device float* pos_out [[buffer(0)]], device const float* pos [[buffer(1)]],
                 device const float* vel [[buffer(2)]], constant float& dt [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {{
    float x = pos[i], v = vel[i];
    for (int k = 0; k < {NSTEPS}; ++k) {{ x += v * dt; }}
    pos_out[i] = x;
}}
"""

BODY = f"""
uint i = thread_position_in_grid.x;
float x = pos[i], v = vel[i];
for (int k = 0; k < {NSTEPS}; ++k) {{ x += v * dt; }}
pos_out[i] = x;
"""


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # no CuPy or no device: the emulator then
        return None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=("cuda", "emulator"), default=None)
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    from cunumpy.kernels import MetalKernel, MetalLibrary

    cupy = _cupy()
    engine = args.engine or ("cuda" if cupy is not None else "emulator")
    n = args.n or (2**24 if engine == "cuda" else 4096)
    lib = MetalLibrary(LIBRARY, filename="push.metal").push
    body = MetalKernel(BODY, inputs=["pos", "vel", "dt"], outputs=["pos_out"], name="push_body")
    xp = cupy if engine == "cuda" else np
    pos = xp.asarray(np.linspace(0, 1, n, dtype=np.float32))
    vel = xp.asarray(np.ones(n, dtype=np.float32))
    out_lib, out_body = xp.empty_like(pos), xp.empty_like(pos)
    dt = 0.001

    def run_lib(count: int = n) -> None:
        lib(out_lib[:count], pos[:count], vel[:count], dt, grid=count, threadgroup=256,
            engine=engine)

    def run_body(count: int = n) -> None:
        body(pos[:count], vel[:count], np.float32(dt), out=out_body[:count], n_threads=count,
             threadgroup=256, engine=engine)

    run_lib()
    run_body()
    got = [cupy.asnumpy(a) if engine == "cuda" else a for a in (out_lib, out_body)]
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)
    result: dict = {"engine": engine, "n": n}
    for name, fn in (("library", run_lib), ("MetalKernel", run_body)):
        times = []
        for _ in range(args.reps):
            if engine == "cuda":
                start, stop = cupy.cuda.Event(), cupy.cuda.Event()
                start.record()
                for _ in range(20):
                    fn()
                stop.record()
                stop.synchronize()
                times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / 20)
            else:
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e6)
        result[f"{name}_kernel_us"] = statistics.median(times)
    if engine == "cuda":
        rounds: dict[str, list[float]] = {"library": [], "MetalKernel": []}
        for _ in range(args.reps):
            for name, fn in (("library", run_lib), ("MetalKernel", run_body)):
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    fn(256)
                rounds[name].append((time.perf_counter() - t0) * 1e6 / args.calls)
                cupy.cuda.Device().synchronize()
        for name, values in rounds.items():
            result[f"{name}_host_us"] = statistics.median(values)
    for key, value in result.items():
        print(f"{key:24s} {value:.2f}" if isinstance(value, float) else f"{key:24s} {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
