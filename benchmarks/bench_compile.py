"""Cold compile of emulated kernel variants, through the calls users write (issue 26, item 1).

Four rows: a ``CudaKernel`` call on the ``emulator`` engine and a ``MetalKernel`` call on the
emulator, each plain (checked, the default) and race-checked (``CUNUMPY_EMULATOR_RACES=1``). A row's figure
is the first call of a new variant (compile, load and first launch of 1024 threads), the median
over ``--variants`` variants, each a different kernel text (a different constant), so every one is
a cache miss. The cache is a fresh directory (``CUNUMPY_CACHE_DIR``); before the timed variants
one warm-up variant per row is compiled and the precompiled runtime header it starts in the
background is waited for, as in a user's session after its first kernel. The first variant of an
empty cache (no precompiled header yet) is printed too.

Targets (issue 26): 0.1 s per plain variant, 0.3 s per race-checked one, on the project's 2-core
machine. Anchor: NVRTC compiles the same CUDA kernel in 0.03 s on the H200 host
(``/work/shared/DESIGN.md``). Wall times: quote them with the machine's load.

Usage: ``python benchmarks/bench_compile.py [--variants N] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ["CUNUMPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cunumpy-bench-compile-")
os.environ.setdefault("CUNUMPY_CUDA_ENGINE", "emulator")
os.environ.setdefault("CUNUMPY_METAL_ENGINE", "emulator")

import numpy as np

from cunumpy.kernels import CudaKernel, MetalKernel

NVRTC_ANCHOR_S = 0.03
TARGETS = {False: 0.1, True: 0.3}

CUDA = r"""
extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] + %d.0f;
}
"""

METAL = "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i] + y0[i] + %d.0f;"

N = 1024


def _cuda_call(variant: int) -> Callable[[], object]:
    k = CudaKernel(CUDA % variant, "axpy", engine="emulator")
    x = np.ones(N, np.float32)
    y = np.zeros(N, np.float32)
    return lambda: k(np.int32(N), np.float32(2.0), x, y, n_threads=N)


def _metal_call(variant: int) -> Callable[[], object]:
    k = MetalKernel(METAL % variant, inputs=["a", "x", "y0"], outputs=["y"],
                    name=f"axpy{variant}")
    a = np.array([2.0], np.float32)
    x = np.ones(N, np.float32)
    y = np.empty(N, np.float32)
    return lambda: k(a, x, x, out=y, n_threads=N, engine="emulator")


def _first_call(make: Callable[[int], Callable[[], object]], variant: int, races: bool) -> float:
    call = make(variant)
    os.environ["CUNUMPY_EMULATOR_RACES"] = "1" if races else "0"
    try:
        t = time.perf_counter()
        call()
        return time.perf_counter() - t
    finally:
        del os.environ["CUNUMPY_EMULATOR_RACES"]


def _nvrtc_anchor(variants: int) -> float | None:
    """Median seconds of NVRTC compiling the same CUDA kernel (a new constant each time) through
    CuPy, where CuPy and a device are here; else ``None``."""
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy or no device: the recorded anchor stands in
        return None
    times = []
    for j in range(variants + 1):
        src = CUDA % (7000 + j + int(time.time()) % 1000 * 10)
        t = time.perf_counter()
        cupy.RawKernel(src, "axpy").compile()
        times.append(time.perf_counter() - t)
    return statistics.median(times[1:])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=5, help="timed variants per row")
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = parser.parse_args(argv)
    from cunumpy.emulation._build import wait_for_pch, which_compiler

    rows = []
    print(f"compiler: {which_compiler()}; cache {os.environ['CUNUMPY_CACHE_DIR']}")
    measured = _nvrtc_anchor(args.variants)
    anchor = measured if measured is not None else NVRTC_ANCHOR_S
    where = "measured in this run through CuPy" if measured is not None else (
        "H200 host, DESIGN.md")
    print(f"NVRTC anchor ({where}): {anchor:.3f} s per variant")
    variant = 0
    for dialect, make in (("cuda", _cuda_call), ("metal", _metal_call)):
        for races in (False, True):
            variant += 1
            empty = _first_call(make, 1000 * variant, races)  # no precompiled header yet
            wait_for_pch()
            times = [_first_call(make, 1000 * variant + j + 1, races)
                     for j in range(args.variants)]
            median = statistics.median(times)
            target = TARGETS[races]
            row = {"dialect": dialect, "races": races, "first_of_empty_cache_s": empty,
                   "median_s": median, "min_s": min(times), "times_s": times,
                   "target_s": target}
            rows.append(row)
            kind = "race-checked" if races else "plain"
            print(f"{dialect:5s} {kind:12s} median {median:6.3f} s  min {min(times):6.3f} s  "
                  f"(first of an empty cache {empty:6.3f} s)  target {target:.1f} s "
                  f"{'ok' if median <= target else 'MISSED'}  "
                  f"{median / anchor:5.1f}x NVRTC")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"compiler": which_compiler(), "python": sys.version.split()[0],
             "nvrtc_anchor_s": anchor, "nvrtc_measured": measured is not None,
             "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
