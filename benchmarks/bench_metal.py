"""MetalKernel front-end overhead and copy accounting, measured side by side in one run.

Targets (issue: MetalKernel): front-end overhead per call, excluding copies and the kernel
itself, <= 30 us for a 3-input kernel; bytes copied per call equal to inputs + outputs exactly
once (checked with count_transfers); zero in resident mode.

The front end is timed with an engine that copies nothing and launches nothing, so the number is
exactly validation + signature lookup + bookkeeping. The same call on the CPU emulator is timed
beside it for scale (that adds the emulator's own launch cost).

    python benchmarks/bench_metal.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import cunumpy as xp
from cunumpy._engines._metal_registry import get_metal_engine
from cunumpy._engines.emu_metal import EmulatedDeviceArray, EmuMetalEngine
from cunumpy.kernels import metal as metal_module
from cunumpy.profiling import count_transfers

PUSH = """
    uint i = thread_position_in_grid.x;
    float x = pos[i], v = vel[i];
    for (int k = 0; k < NSTEPS; ++k) { x += v * dt[0]; }
    pos_out[i] = x;
"""


class NullEngine(EmuMetalEngine):
    """Copies nothing and runs nothing: what remains of a call is the front end."""

    name = "null"

    def check_available(self) -> None:
        pass

    def to_device(self, host, dtype, contiguous):
        return EmulatedDeviceArray(host)

    def _prepare(self, program):
        return lambda launch: self.outputs


def _median_us(fn, repeat: int) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def measure(n: int = 1 << 16, repeat: int = 2000) -> dict[str, float]:
    kernel = xp.kernels.MetalKernel(PUSH, inputs=["pos", "vel", "dt"], outputs=["pos_out"],
                                    name="push")
    rng = np.random.default_rng(0)
    pos = rng.random(n, dtype=np.float32)
    vel = rng.random(n, dtype=np.float32)
    out = np.empty_like(pos)
    template = {"NSTEPS": 4}
    # The front end's cost does not depend on the size; 8 elements keep the copy into `out`
    # (which the null engine still makes) negligible.
    small = np.ones(8, np.float32)
    small_out = np.empty_like(small)
    null = NullEngine()
    null.outputs = [EmulatedDeviceArray(np.empty_like(small))]
    real_get = metal_module.get_metal_engine
    results: dict[str, float] = {"n": n}
    try:
        metal_module.get_metal_engine = lambda name=None: null
        results["frontend_us"] = _median_us(
            lambda: kernel(small, small, 0.01, out=small_out, template=template), repeat)
    finally:
        metal_module.get_metal_engine = real_get

    emu = get_metal_engine("emulator")
    emu.check_available()
    call = lambda: kernel(pos, vel, 0.01, out=out, template=template, engine="emulator")  # noqa: E731
    results["emulator_call_us"] = _median_us(call, max(20, repeat // 50))
    results["emulator_call_8_threads_us"] = _median_us(
        lambda: kernel(small, small, 0.01, out=small_out, template=template, engine="emulator"),
        max(50, repeat // 10))

    with count_transfers() as c:
        call()
    expected_in = pos.nbytes + vel.nbytes + 4
    results["bytes_to_device"] = c.bytes_to_device
    results["bytes_to_host"] = c.bytes_to_host
    results["expected_bytes_to_device"] = expected_in
    results["expected_bytes_to_host"] = out.nbytes
    results["copies_exactly_once"] = float(
        c.bytes_to_device == expected_in and c.bytes_to_host == out.nbytes
        and c.to_device == 3 and c.to_host == 1)

    dpos = xp.kernels.metal_asarray(pos, engine="emulator")
    dvel = xp.kernels.metal_asarray(vel, engine="emulator")
    ddt = xp.kernels.metal_asarray(np.array([0.01], np.float32), engine="emulator")
    with count_transfers() as c:
        for _ in range(10):
            dpos = kernel(dpos, dvel, ddt, output_shapes=(n,), output_dtypes=np.float32,
                          template=template, engine="emulator")
    results["resident_bytes_per_call"] = (c.bytes_to_device + c.bytes_to_host) / 10
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--n", type=int, default=1 << 16)
    args = parser.parse_args()
    r = measure(args.n)
    print(f"front end per call (3 inputs, null engine)   {r['frontend_us']:8.1f} us  "
          "(target <= 30)")
    print(f"whole call on the emulator, n={r['n']:<9d}      {r['emulator_call_us']:8.1f} us")
    print(f"whole call on the emulator, 8 threads        {r['emulator_call_8_threads_us']:8.1f} us")
    print(f"bytes to device per call  {r['bytes_to_device']:>10d}  "
          f"(inputs: {r['expected_bytes_to_device']})")
    print(f"bytes to host per call    {r['bytes_to_host']:>10d}  "
          f"(outputs: {r['expected_bytes_to_host']})")
    print(f"resident mode bytes/call  {r['resident_bytes_per_call']:>10.0f}  (target 0)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(r, fh, indent=2)


if __name__ == "__main__":
    main()
