"""Cost of data-race checking on the CPU emulators, through the public kernel call path.

Three kernels, each in CUDA (``CudaKernel`` on the ``emulator`` engine) and in Metal
(``MetalKernel`` on the emulator): an element-wise update, a shared-memory tree reduction with
barriers, and a histogram with atomics. Each is timed as a checked launch
(``EmulatorOptions(checks=True)``) and as a race-checked launch (``races=True``), best of
``--repeat`` calls after a warm-up call (which compiles); the ratio is the cost of race checking.
Target: at most 3x a checked launch. Race-checked launches run their groups serially, so the
ratio is taken against a serial checked launch (``CUNUMPY_EMULATOR_THREADS=1``); where the
emulator has that setting, the checked launch on the default worker threads is printed too.
Times are per call, in ms, and include the call path (argument checks, copies). Shadow memory:
44 bytes per 4-byte granule of each writable buffer (per element for 1- and 2-byte types; of
which 36, the entry, are only touched for a granule that two threads, an atomic, a partial
access or a launch with barriers touch), and 36 per element (up to 4 bytes) of each shared
array.

Usage: ``python benchmarks/bench_races.py [--n N] [--repeat R] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

os.environ.setdefault("CUNUMPY_CUDA_ENGINE", "emulator")
os.environ.setdefault("CUNUMPY_METAL_ENGINE", "emulator")

from cunumpy import config
from cunumpy.emulation import EmulatorOptions, emulate_cuda_kernel
from cunumpy.kernels import CudaKernel, MetalKernel

HAS_THREADS = hasattr(config, "emulator_threads")
"""Whether this emulator runs groups on worker threads (``CUNUMPY_EMULATOR_THREADS``)."""

CUDA = {
    "elementwise": r"""
extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}""",
    "reduction": r"""
extern "C" __global__ void block_sum(int n, const float* x, float* sums) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) sums[blockIdx.x] = s[0];
}""",
    "histogram": r"""
extern "C" __global__ void hist(int n, const int* x, int* bins) {
    __shared__ int local[64];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    if (t < 64) local[t] = 0;
    __syncthreads();
    if (i < n) atomicAdd(&local[x[i] & 63], 1);
    __syncthreads();
    if (t < 64) atomicAdd(&bins[t], local[t]);
}""",
}

METAL = {
    "elementwise": ("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i] + y0[i];",
                    ["a", "x", "y0"], ["y"], False),
    "reduction": ("""
threadgroup float s[256];
uint t = thread_position_in_threadgroup.x;
s[t] = x[thread_position_in_grid.x];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint k = 128; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (t == 0) sums[threadgroup_position_in_grid.x] = s[0];
""", ["x"], ["sums"], False),
    "histogram": ("""
threadgroup atomic_int local[64];
uint t = thread_position_in_threadgroup.x;
if (t < 64) atomic_store_explicit(&local[t], 0, memory_order_relaxed);
threadgroup_barrier(mem_flags::mem_threadgroup);
atomic_fetch_add_explicit(&local[x[thread_position_in_grid.x] & 63], 1, memory_order_relaxed);
threadgroup_barrier(mem_flags::mem_threadgroup);
if (t < 64) atomic_fetch_add_explicit(&bins[t],
    atomic_load_explicit(&local[t], memory_order_relaxed), memory_order_relaxed);
""", ["x"], ["bins"], True),
}


def _best(call: Callable[[], Any], repeat: int, threads: str | None = None) -> float:
    saved = os.environ.get("CUNUMPY_EMULATOR_THREADS")
    if threads is not None:
        os.environ["CUNUMPY_EMULATOR_THREADS"] = threads
    try:
        call()  # compiles
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
    finally:
        if saved is None:
            os.environ.pop("CUNUMPY_EMULATOR_THREADS", None)
        else:
            os.environ["CUNUMPY_EMULATOR_THREADS"] = saved
    return min(times)


def _cuda_calls(name: str, n: int, options: EmulatorOptions) -> Callable[[], Any]:
    k = CudaKernel(CUDA[name])
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    if name == "elementwise":
        y = np.zeros(n, np.float32)
        return lambda: emulate_cuda_kernel(k, n, np.float32(2.0), x, y, n_threads=n,
                                           options=options)
    if name == "reduction":
        sums = np.zeros(n // 256, np.float32)
        return lambda: emulate_cuda_kernel(k, n, x, sums, grid=n // 256, block=256,
                                           options=options)
    xi = np.arange(n, dtype=np.int32)
    bins = np.zeros(64, np.int32)
    return lambda: emulate_cuda_kernel(k, n, xi, bins, grid=n // 256, block=256,
                                       options=options)


def _metal_calls(name: str, n: int, options: EmulatorOptions) -> Callable[[], Any]:
    body, ins, outs, atomic = METAL[name]
    k = MetalKernel(body, inputs=ins, outputs=outs, name=f"bench_{name}", threadgroup=256,
                    atomic_outputs=atomic, init_value=0 if atomic else None,
                    emulator_options=options)
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    if name == "elementwise":
        a = np.array([2.0], np.float32)
        y = np.empty(n, np.float32)
        return lambda: k(a, x, x, out=y, n_threads=n)
    if name == "reduction":
        sums = np.empty(n // 256, np.float32)
        return lambda: k(x, out=sums, n_threads=n)
    xi = np.arange(n, dtype=np.int32)
    bins = np.empty(64, np.int32)
    return lambda: k(xi, out=bins, n_threads=n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 18, help="threads per launch")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    checked = EmulatorOptions(checks=True, races=False)
    races = EmulatorOptions(checks=True, races=True)
    rows = []
    for dialect, make in (("cuda", _cuda_calls), ("metal", _metal_calls)):
        for name in ("elementwise", "reduction", "histogram"):
            t_serial = _best(make(name, args.n, checked), args.repeat, "1")
            t_races = _best(make(name, args.n, races), args.repeat)
            row = {"dialect": dialect, "kernel": name, "n": args.n,
                   "checked_serial_s": t_serial, "races_s": t_races,
                   "ratio": t_races / t_serial}
            line = (f"{dialect:5s} {name:12s} n={args.n}: checked serial {t_serial * 1e3:8.2f} ms, "
                    f"races {t_races * 1e3:8.2f} ms, ratio {t_races / t_serial:5.2f}x")
            if HAS_THREADS:
                t_par = _best(make(name, args.n, checked), args.repeat)
                row["checked_parallel_s"] = t_par
                line += f" (checked on worker threads {t_par * 1e3:8.2f} ms)"
            rows.append(row)
            print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
