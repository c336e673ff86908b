"""The CPU emulators timed through the calls users write, against a native loop in the same run.

Rows (issue 14's table), each the best of several alternated runs on this machine:

- element-wise ``out[i] = x[i] + v[i] * dt`` over 4 Mi float32 threads, written as a
  ``CudaKernel`` with ``if (i >= n) return;`` and called as ``k(x, v, np.float32(dt), out,
  np.int32(n), n_threads=n)`` on the emulator, checks on and off (``CUNUMPY_EMULATOR_CHECKS``);
- the same body as a ``MetalKernel`` called as ``k(x, v, dt, out=out)``, checks on and off
  (``emulator_options``);
- the anchors: the same loop as plain C++ compiled in this run with ``g++ -O2`` (one core) and
  with ``g++ -O2 -fopenmp`` (every core, the limit of the rows that use the worker threads), and
  NumPy;
- barrier crossings per second of a 256-thread tree reduction (``CudaKernel``, ``__syncthreads``
  in a loop, and the same as a ``MetalKernel`` with ``threadgroup_barrier``), checks on and off.

Every emulated row is timed twice: with the default worker threads (groups in parallel on every
CPU; keys without a suffix) and with ``CUNUMPY_EMULATOR_THREADS=1`` (serial; keys ending in
``_t1``). ``*_vs_native`` keys divide by the one-core ``-O2`` row; ``*_vs_native_same_threads``
divide each row by the anchor with the same number of threads (``_t1`` rows by ``-O2``, the others
by ``-O2 -fopenmp``). Race checking an element-wise kernel against a checked launch is
``benchmarks/bench_races.py``; ``benchmarks/bench_emulator.py`` times what this one does not:
compiles and cached loads.

Usage: ``python benchmarks/bench_emulator_calls.py [--json PATH] [--n N]``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# The OpenMP anchor's threads sleep between its calls instead of spinning, so they take no CPU
# from the emulated row timed next (read when libgomp loads, before the first call).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

CUDA_PUSH = r"""
extern "C" __global__ void push(const float* x, const float* v, float dt, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = x[i] + v[i] * dt;
}
"""

METAL_PUSH = "uint i = thread_position_in_grid.x; out[i] = x[i] + v[i] * dt;"

NATIVE = r"""
extern "C" void push(const float* x, const float* v, float dt, float* out, long n) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long i = 0; i < n; ++i) out[i] = x[i] + v[i] * dt;
}
"""

CUDA_REDUCE = r"""
extern "C" __global__ void reduce(const float* x, float* out, int reps) {
    __shared__ float buf[256];
    unsigned t = threadIdx.x;
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r) {
        buf[t] = x[blockIdx.x * 256 + t] + (float)r;
        __syncthreads();
        for (unsigned s = 128; s > 0; s >>= 1) {
            if (t < s) buf[t] += buf[t + s];
            __syncthreads();
        }
        acc += buf[0];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = acc;
}
"""
"""Barriers each thread passes per repetition: 1 + 8 (tree levels) + 1."""
REDUCE_BARRIERS = 10

METAL_REDUCE = """
threadgroup float buf[256];
uint t = thread_position_in_threadgroup.x;
float acc = 0.0f;
for (int r = 0; r < reps[0]; ++r) {
    buf[t] = x[threadgroup_position_in_grid.x * 256 + t] + float(r);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 128; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    acc += buf[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (t == 0) out[threadgroup_position_in_grid.x] = acc;
"""

THREAD_ROWS = (("", None), ("_t1", "1"))
"""(key suffix, CUNUMPY_EMULATOR_THREADS): the default workers, then serial."""


def _set_threads(value: str | None) -> None:
    if value is None:
        os.environ.pop("CUNUMPY_EMULATOR_THREADS", None)
    else:
        os.environ["CUNUMPY_EMULATOR_THREADS"] = value


def _best(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _native(tmp: Path, openmp: bool = False):
    cxx = shutil.which(os.environ.get("CXX", "g++")) or "g++"
    src = tmp / "native.cpp"
    src.write_text(NATIVE)
    lib = tmp / ("native_omp.so" if openmp else "native.so")
    flags = ["-O2", "-fopenmp"] if openmp else ["-O2"]
    subprocess.run([cxx, *flags, "-fPIC", "-shared", "-o", str(lib), str(src)], check=True)
    fn = ctypes.CDLL(str(lib)).push
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p,
                   ctypes.c_long]
    return fn, cxx


def _set_checks(on: bool) -> None:
    os.environ["CUNUMPY_EMULATOR_CHECKS"] = "1" if on else "0"


def bench_elementwise(results: dict, n: int, reps: int) -> None:
    from cunumpy.emulation import EmulatorOptions
    from cunumpy.kernels import CudaKernel, MetalKernel

    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    v = rng.random(n, dtype=np.float32)
    dt = 0.01
    out = np.empty(n, np.float32)
    expect = x + v * np.float32(dt)
    cuda = CudaKernel(CUDA_PUSH, "push", engine="emulator", outputs=["out"])
    # The same kernel without outputs=: no poisoning and no unwritten-element check.
    cuda_inout = CudaKernel(CUDA_PUSH, "push", engine="emulator")
    # Explicit options on both: the CUDA rows set CUNUMPY_EMULATOR_CHECKS, which a MetalKernel
    # without emulator_options would follow.
    metal_on = MetalKernel(METAL_PUSH, ["x", "v", "dt"], ["out"],
                           emulator_options=EmulatorOptions(checks=True))
    metal_off = MetalKernel(METAL_PUSH, ["x", "v", "dt"], ["out"],
                            emulator_options=EmulatorOptions(checks=False))
    ndt, nn = np.float32(dt), np.int32(n)

    def cuda_call() -> None:
        cuda(x, v, ndt, out, nn, n_threads=n)

    def metal_call(k) -> None:
        k(x, v, dt, out=out, engine="emulator")

    with tempfile.TemporaryDirectory() as tmp:
        fn, cxx = _native(Path(tmp))
        results["native_compiler"] = cxx
        ref = np.empty_like(out)
        args = (x.ctypes.data, v.ctypes.data, ctypes.c_float(dt), ref.ctypes.data, n)
        rows = {}
        for suffix, threads in THREAD_ROWS:
            rows.update({
                f"cuda_checks{suffix}": lambda t=threads: (_set_threads(t), _set_checks(True),
                                                           cuda_call()),
                f"cuda_nochecks{suffix}": lambda t=threads: (_set_threads(t), _set_checks(False),
                                                             cuda_call()),
                f"metal_checks{suffix}": lambda t=threads: (_set_threads(t), metal_call(metal_on)),
                f"metal_nochecks{suffix}": lambda t=threads: (_set_threads(t),
                                                              metal_call(metal_off)),
            })
        rows["cuda_checks_no_outputs_decl"] = lambda: (
            _set_threads(None), _set_checks(True), cuda_inout(x, v, ndt, out, nn, n_threads=n))
        rows["native_O2"] = lambda: fn(*args)
        try:
            omp, _ = _native(Path(tmp), openmp=True)
        except subprocess.CalledProcessError:  # no OpenMP: the threaded rows lack their anchor
            omp = None
        if omp is not None:
            rows["native_O2_omp"] = lambda: omp(*args)
        rows["numpy"] = lambda: np.add(x, v * np.float32(dt), out=ref)
        for f in rows.values():  # compile and warm every row first
            _set_checks(True)
            f()
        best = dict.fromkeys(rows, float("inf"))
        for _ in range(reps):  # alternate, so every row sees the same machine load
            for name, f in rows.items():
                best[name] = min(best[name], _best(f, 1))
        _set_checks(True)
        cuda_call()
        np.testing.assert_allclose(out, expect, rtol=1e-6)
    for name, t in best.items():
        results[f"elementwise_{name}_ms"] = t * 1e3
    for name in best:
        if name != "native_O2":
            results[f"elementwise_{name}_vs_native"] = best[name] / best["native_O2"]
    threaded = best.get("native_O2_omp")
    for name in best:
        if name.startswith(("cuda_", "metal_")):
            anchor = best["native_O2"] if name.endswith("_t1") else threaded
            if anchor is not None:
                results[f"elementwise_{name}_vs_native_same_threads"] = best[name] / anchor


def bench_barriers(results: dict, reps: int, groups: int = 64, loops: int = 20) -> None:
    from cunumpy.emulation import EmulatorOptions
    from cunumpy.kernels import CudaKernel, MetalKernel

    k = CudaKernel(CUDA_REDUCE, "reduce", engine="emulator")
    x = np.ones(256 * groups, np.float32)
    out = np.zeros(groups, np.float32)
    crossings = 256 * groups * loops * REDUCE_BARRIERS
    want = sum(256.0 + r * 256.0 for r in range(loops))
    for suffix, threads in THREAD_ROWS:
        _set_threads(threads)
        for label, on in (("checks", True), ("nochecks", False)):
            _set_checks(on)
            k(x, out, np.int32(loops), grid=groups, block=256)
            t = _best(lambda: k(x, out, np.int32(loops), grid=groups, block=256), reps)
            results[f"barrier_crossings_M_per_s_{label}{suffix}"] = crossings / t / 1e6
            np.testing.assert_allclose(out, want, rtol=1e-5)
    _set_checks(True)
    reps_arg = np.array([loops], np.int32)
    for label, on in (("checks", True), ("nochecks", False)):
        mk = MetalKernel(METAL_REDUCE, ["x", "reps"], ["out"], threadgroup=256,
                         emulator_options=EmulatorOptions(checks=on))
        for suffix, threads in THREAD_ROWS:
            _set_threads(threads)

            def call(mk=mk) -> None:
                mk(x, reps_arg, out=out, n_threads=256 * groups, engine="emulator")

            call()
            t = _best(call, reps)
            results[f"metal_barrier_crossings_M_per_s_{label}{suffix}"] = crossings / t / 1e6
            np.testing.assert_allclose(out, want, rtol=1e-5)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    parser.add_argument("--n", type=int, default=4 * 1024 * 1024, help="threads (default 4 Mi)")
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args(argv)
    import cunumpy.config as config

    results: dict[str, object] = {
        "python": sys.version.split()[0], "cpus": os.cpu_count(),
        "emulator_threads": getattr(config, "emulator_threads", lambda: 1)(),
    }
    saved = {k: os.environ.get(k) for k in ("CUNUMPY_EMULATOR_CHECKS",
                                             "CUNUMPY_EMULATOR_THREADS")}
    try:
        bench_elementwise(results, args.n, args.reps)
        bench_barriers(results, args.reps)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    width = max(len(k) for k in results)
    for key, value in results.items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {shown}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
