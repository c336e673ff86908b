"""Compile and load times of the CPU emulators, through the calls users write.

Figures (each measured in this run):

- cold compile of a typical kernel, timed as the first ``MetalKernel`` call of a new kernel: with
  the precompiled runtime header already built (the usual case), and as the first kernel of an
  empty cache (compiled from the plain headers while the precompiled header is built in the
  background);
- the same for a ``CudaKernel`` call on the emulator (precompiled header built);
- load of a cached variant in a new process (time of the first ``MetalKernel`` call, measured in
  the child).

Run time of emulated launches (element-wise and barrier rows, against a native loop) is in
``benchmarks/bench_emulator_calls.py``.

Usage: ``python benchmarks/bench_emulator.py [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

PUSH = """
uint i = thread_position_in_grid.x;
float x = pos[i];
float v = vel[i];
for (int k = 0; k < NSTEPS; ++k) {
    v += -x * dt * 0.5f;
    x += v * dt;
}
pos_out[i] = x;
"""

CUDA_PUSH = r"""
extern "C" __global__ void push(const float* pos, const float* vel, float dt, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = pos[i], v = vel[i];
    for (int k = 0; k < NSTEPS; ++k) { v += -x * dt * 0.5f; x += v * dt; }
    out[i] = x;
}
"""

CHILD = textwrap.dedent(
    """
    import time, numpy as np
    from cunumpy.kernels import MetalKernel
    src = {src!r}
    pos = np.ones(1024, np.float32); vel = np.ones(1024, np.float32)
    out = np.empty(1024, np.float32)
    k = MetalKernel(src, ["pos", "vel", "dt"], ["pos_out"], name="push")
    t = time.perf_counter()
    k(pos, vel, 0.01, out=out, template={{"NSTEPS": 10}}, engine="emulator")
    print(time.perf_counter() - t)
    """
)


def _metal_call(nsteps: int) -> None:
    from cunumpy.kernels import MetalKernel

    pos = np.ones(1024, np.float32)
    out = np.empty(1024, np.float32)
    k = MetalKernel(PUSH, ["pos", "vel", "dt"], ["pos_out"], name="push")
    k(pos, pos, 0.01, out=out, template={"NSTEPS": nsteps}, engine="emulator")


def bench_compile(results: dict) -> None:
    from cunumpy.emulation import metal
    from cunumpy.emulation._build import forget_loaded, wait_for_pch
    from cunumpy.kernels import CudaKernel

    saved = os.environ.get("CUNUMPY_CACHE_DIR")
    with tempfile.TemporaryDirectory() as root:
        os.environ["CUNUMPY_CACHE_DIR"] = root
        metal.forget_variants()
        forget_loaded()
        t = time.perf_counter()
        _metal_call(3)
        results["cold_compile_empty_cache_s"] = time.perf_counter() - t
        wait_for_pch()  # the usual case: the precompiled runtime header exists
        t = time.perf_counter()
        _metal_call(10)
        results["cold_compile_s"] = time.perf_counter() - t
        pos = np.ones(1024, np.float32)
        out = np.empty_like(pos)
        k = CudaKernel(CUDA_PUSH, "push", engine="emulator", options=("-DNSTEPS=10",))
        t = time.perf_counter()
        k(pos, pos, np.float32(0.01), out, np.int32(1024), n_threads=1024)
        results["cuda_cold_compile_s"] = time.perf_counter() - t
        done = subprocess.run([sys.executable, "-c", CHILD.format(src=PUSH)], env=dict(os.environ),
                              capture_output=True, text=True, check=True)
        results["cached_load_new_process_s"] = float(done.stdout.strip().splitlines()[-1])
    if saved is None:
        os.environ.pop("CUNUMPY_CACHE_DIR", None)
    else:
        os.environ["CUNUMPY_CACHE_DIR"] = saved
    metal.forget_variants()
    forget_loaded()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = parser.parse_args(argv)
    from cunumpy.emulation._build import which_compiler

    results: dict[str, object] = {"compiler": which_compiler(), "python": sys.version.split()[0]}
    bench_compile(results)
    targets = {
        "cold_compile_s": ("<=", 1.5),
        "cached_load_new_process_s": ("<=", 0.05),
    }
    print(f"{'figure':44s} {'value':>14s}  target")
    for k, v in results.items():
        if isinstance(v, float):
            tgt = targets.get(k)
            ok = ""
            if tgt:
                good = v <= tgt[1] if tgt[0] == "<=" else v >= tgt[1]
                ok = f"{tgt[0]} {tgt[1]:g} {'ok' if good else 'MISSED'}"
            print(f"{k:44s} {v:14.4g}  {ok}")
        else:
            print(f"{k:44s} {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
