"""CudaKernel on CuPy: launch overhead against a raw ``cupy.RawKernel``, and push bandwidth.

All figures come from one run on one device:

1. **Launch overhead.** The same 4-argument kernel (``saxpy(int n, float a, const float* x,
   float* y)`` on 1024 elements, so the launch dominates) launched through ``cupy.RawKernel`` and
   through :class:`cunumpy.kernels.CudaKernel`. Each launch is timed on its own with
   ``perf_counter_ns``; the table gives the median of many launches, interleaved in rounds so
   drift affects both sides alike. *Without sync* is the host cost of queueing a launch; *with
   sync* adds ``stream.synchronize()`` after each launch. The raw side is measured twice: with
   the argument tuple built once (``raw prebuilt``, the smallest possible cost) and with NumPy
   scalars made at each call as RawKernel requires (``raw inline``).
2. **Push bandwidth.** A one-step particle push (``x, v`` read and written, ``E`` read) over
   arrays of 12 M float32 each, timed with CUDA events, against a device-to-device copy of a
   256 MiB array (bytes read + written in both cases).

Usage: ``python benchmarks/bench_cuda.py [--json PATH] [--launches N]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

SAXPY = r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x,
                                 float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

TEN_ARGS = r"""
extern "C" __global__ void ten(int n, float a, float b, double c, int d, unsigned int e,
                               const float* __restrict__ x, const float* __restrict__ z,
                               const int* __restrict__ w, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b * z[i] + (float)c + (float)(d + (int)e + w[i]);
}
"""

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def push_source() -> str:
    from cuda_conformance.cases import PUSH_SOURCE

    return PUSH_SOURCE


def median_ns(samples: list[int]) -> float:
    return float(statistics.median(samples))


def time_launches(cases: dict, launches: int, rounds: int, sync) -> dict[str, float]:
    """Median per-launch host time (ns) of each callable, interleaved over ``rounds``."""
    samples: dict[str, list[int]] = {name: [] for name in cases}
    per_round = max(1, launches // rounds)
    clock = time.perf_counter_ns
    for _ in range(rounds):
        for name, fn in cases.items():
            record = samples[name].append
            for _ in range(per_round):
                t0 = clock()
                fn()
                if sync is not None:
                    sync()
                record(clock() - t0)
            if sync is None:
                cases_sync()
    return {name: median_ns(s) for name, s in samples.items()}


def cases_sync() -> None:
    import cupy

    cupy.cuda.get_current_stream().synchronize()


def bench_overhead(launches: int) -> dict:
    import cupy

    from cunumpy.kernels import CudaKernel

    n = 1024
    x = cupy.ones(n, dtype=cupy.float32)
    y = cupy.zeros(n, dtype=cupy.float32)
    raw = cupy.RawKernel(SAXPY, "saxpy")
    kernel = CudaKernel(SAXPY, "saxpy")
    fixed = CudaKernel(SAXPY, "saxpy", engine="cupy")
    grid, block = ((n + 127) // 128,), (128,)
    prebuilt = (np.int32(n), np.float32(2.0), x, y)

    def raw_prebuilt():
        raw(grid, block, prebuilt)

    def raw_inline():
        raw(grid, block, (np.int32(n), np.float32(2.0), x, y))

    def ours():
        kernel(n, 2.0, x, y)

    def ours_fixed_engine():
        fixed(n, 2.0, x, y, n_threads=n)

    def ours_slow_path():
        kernel(n, 2.0, x, y, grid=grid, block=block)

    def ours_numpy_scalars():
        kernel(np.int32(n), np.float32(2.0), x, y)

    n32, a32 = np.int32(n), np.float32(2.0)

    def ours_numpy_scalars_prebuilt():
        kernel(n32, a32, x, y)

    def ours_numpy_scalars_geometry():
        kernel(np.int32(n), np.float32(2.0), x, y, grid=grid, block=block)

    z = cupy.ones(n, dtype=cupy.float32)
    w = cupy.ones(n, dtype=cupy.int32)
    raw10 = cupy.RawKernel(TEN_ARGS, "ten")
    ten = CudaKernel(TEN_ARGS, "ten")
    prebuilt10 = (
        np.int32(n), np.float32(2.0), np.float32(3.0), np.float64(0.5), np.int32(1),
        np.uint32(2), x, z, w, y,
    )

    def raw10_prebuilt():
        raw10(grid, block, prebuilt10)

    def raw10_inline():
        raw10(grid, block, (np.int32(n), np.float32(2.0), np.float32(3.0), np.float64(0.5),
                            np.int32(1), np.uint32(2), x, z, w, y))

    def ours10_python():
        ten(n, 2.0, 3.0, 0.5, 1, 2, x, z, w, y)

    def ours10_numpy():
        ten(np.int32(n), np.float32(2.0), np.float32(3.0), np.float64(0.5), np.int32(1),
            np.uint32(2), x, z, w, y)

    cases = {
        "raw prebuilt": raw_prebuilt,
        "raw inline": raw_inline,
        "CudaKernel": ours,
        "CudaKernel NumPy scalars": ours_numpy_scalars,
        "CudaKernel NumPy scalars prebuilt": ours_numpy_scalars_prebuilt,
        "CudaKernel engine= n_threads=": ours_fixed_engine,
        "CudaKernel grid= block=": ours_slow_path,
        "CudaKernel grid= block= NumPy scalars": ours_numpy_scalars_geometry,
        "10 args: raw prebuilt": raw10_prebuilt,
        "10 args: raw inline": raw10_inline,
        "10 args: CudaKernel Python scalars": ours10_python,
        "10 args: CudaKernel NumPy scalars": ours10_numpy,
    }
    for fn in cases.values():  # compile and warm up
        for _ in range(200):
            fn()
    cases_sync()
    y.fill(0)
    kernel(n, 2.0, x, y)
    cases_sync()
    assert float(y[0]) == 2.0, "CudaKernel gave a wrong result"

    function = raw.kernel

    def function_prebuilt():
        function(grid, block, prebuilt)

    cases["cupy Function prebuilt (floor)"] = function_prebuilt
    stream = cupy.cuda.get_current_stream()
    no_sync = time_launches(cases, launches, rounds=10, sync=None)
    with_sync = time_launches(cases, launches // 4, rounds=10, sync=stream.synchronize)
    import timeit

    env = {"x": x, "np": np, "cupy": cupy, "kernel": kernel, "n": n}
    micro = {}
    for stmt in (
        "np.int32(n)",
        "np.float32(2.0)",
        "x.flags.c_contiguous",
        "x.dtype",
        "x.size",
        "cupy.cuda.runtime.getDevice()",
    ):
        reps = 200_000
        micro[stmt] = timeit.timeit(stmt, globals=env, number=reps) / reps * 1e9
    return {
        "no_sync_ns": no_sync,
        "sync_ns": with_sync,
        "micro_ns": micro,
        "n": n,
        "launches": launches,
    }


def bench_bandwidth(n_push: int, copy_bytes: int, reps: int) -> dict:
    import cupy

    from cunumpy.kernels import CudaKernel

    push = CudaKernel(push_source(), "push")
    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.uniform(0, 10, n_push).astype(np.float32))
    v = cupy.asarray(rng.uniform(-1, 1, n_push).astype(np.float32))
    E = cupy.asarray(rng.uniform(-1, 1, n_push).astype(np.float32))
    raw_push = cupy.RawKernel(push_source(), "push")
    m = copy_bytes // 4
    src = cupy.ones(m, dtype=cupy.float32)
    dst = cupy.empty_like(src)

    def timed(fn) -> float:
        for _ in range(5):
            fn()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        times = []
        for _ in range(reps):
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e-3)
        return float(statistics.median(times))

    t_copy = timed(lambda: cupy.copyto(dst, src))
    t_push = timed(lambda: push(n_push, 0.01, -1.0, 10.0, x, v, E))
    grid = ((n_push + 127) // 128,)
    args = (np.int32(n_push), np.float32(0.01), np.float32(-1.0), np.float32(10.0), x, v, E)
    t_raw_push = timed(lambda: raw_push(grid, (128,), args))
    copy_moved = 2 * copy_bytes
    push_moved = 5 * 4 * n_push
    return {
        "copy_bytes_moved": copy_moved,
        "copy_s": t_copy,
        "copy_GBps": copy_moved / t_copy / 1e9,
        "push_n": n_push,
        "push_bytes_moved": push_moved,
        "push_s": t_push,
        "push_GBps": push_moved / t_push / 1e9,
        "raw_push_s": t_raw_push,
        "raw_push_GBps": push_moved / t_raw_push / 1e9,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    parser.add_argument("--launches", type=int, default=40_000)
    parser.add_argument("--push-n", type=int, default=12_000_000)
    parser.add_argument("--copy-mib", type=int, default=256)
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args(argv)

    from cunumpy._backend import cupy_status

    ok, reason = cupy_status()
    if not ok:
        print(f"bench_cuda needs a working CuPy: {reason}", file=sys.stderr)
        return 2
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    device = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    overhead = bench_overhead(args.launches)
    bandwidth = bench_bandwidth(args.push_n, args.copy_mib * 1024 * 1024, args.reps)

    ns, ss = overhead["no_sync_ns"], overhead["sync_ns"]
    base = ns["raw prebuilt"]
    print(f"device: {device}; CuPy {cupy.__version__}; Python {platform.python_version()}")
    print(f"\nlaunch of saxpy(n={overhead['n']}): median host time per launch")
    print(f"{'':42s} {'no sync (us)':>13s} {'x raw prebuilt':>15s} {'with sync (us)':>15s}")
    for name in ns:
        print(f"{name:42s} {ns[name] / 1e3:13.2f} {ns[name] / base:15.2f} {ss[name] / 1e3:15.2f}")
    print("micro (ns): " + ", ".join(f"{k} {v:.0f}" for k, v in overhead["micro_ns"].items()))
    ratio = ns["CudaKernel"] / base
    styles = {
        name: ns[name] / (ns["10 args: raw prebuilt"] if name.startswith("10 args") else base)
        for name in ns
        if name.startswith(("CudaKernel", "10 args: CudaKernel"))
    }
    # Inline NumPy scalars cost their construction (np.int32(n): ~0.25 us each) on any API; the
    # same-style anchor is RawKernel with the same scalars made at each call.
    inline = {
        name: ns[name] / ns["10 args: raw inline" if name.startswith("10 args") else "raw inline"]
        for name in styles
        if name.endswith("NumPy scalars")
    }
    print("\nratio to the raw prebuilt launch of the same kernel (target <= 1.1x):")
    for name, r in styles.items():
        note = f"  ({inline[name]:.2f}x raw inline)" if name in inline else ""
        print(f"  {name:42s} {r:5.2f}x {'PASS' if r <= 1.1 else 'FAIL'}{note}")
    ratio_inline = ns["CudaKernel"] / ns["raw inline"]
    b = bandwidth
    share = b["push_GBps"] / b["copy_GBps"]
    print(
        f"\ndevice-to-device copy: {b['copy_GBps']:.0f} GB/s ({b['copy_s'] * 1e6:.1f} us for "
        f"{b['copy_bytes_moved'] / 1e6:.0f} MB read+write)"
    )
    print(
        f"push of {b['push_n'] / 1e6:.0f} M particles (x, v, E float32): "
        f"{b['push_s'] * 1e6:.1f} us, {b['push_GBps']:.0f} GB/s = {share:.0%} of the copy "
        f"(raw RawKernel push: {b['raw_push_s'] * 1e6:.1f} us, {b['raw_push_GBps']:.0f} GB/s)"
    )
    print(
        f"\ntargets: CudaKernel launch <= 1.2x raw: {ratio:.2f}x raw prebuilt, "
        f"{ratio_inline:.2f}x raw inline -> {'PASS' if ratio <= 1.2 else 'FAIL'}; "
        f"push >= 80% of copy: {share:.0%} -> {'PASS' if share >= 0.8 else 'FAIL'}"
    )
    if args.json:
        result = {
            "device": device,
            "cupy": cupy.__version__,
            "python": platform.python_version(),
            "overhead": overhead,
            "bandwidth": bandwidth,
            "ratio_vs_raw_prebuilt": ratio,
            "ratio_per_style": styles,
            "ratio_numpy_scalars_vs_raw_inline": inline,
            "ratio_vs_raw_inline": ratio_inline,
            "push_share_of_copy": share,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
