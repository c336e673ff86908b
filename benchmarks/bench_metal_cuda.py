"""Metal kernels on an NVIDIA GPU (MetalKernel engine ``metal-cuda``) against the same kernels in CUDA.

The Metal side runs with ``engine="cuda"`` (the setting that selects ``metal-cuda``).

Two kernels, each written twice: as a :class:`~cunumpy.kernels.MetalKernel` body (run with
``engine="cuda"``: translated to CUDA, compiled by NVRTC) and by hand as a
:class:`~cunumpy.kernels.CudaKernel`. All arrays are CuPy arrays (resident: no host copies).

1. **Particle push** (the spec's kernel): ``NSTEPS`` explicit steps ``x += v * dt`` per particle,
   ``--n`` particles (default 2**24), ``NSTEPS`` a compile-time constant (200).
2. **Tree reduction**: per threadgroup of 256 threads, a sum in threadgroup (shared) memory with a
   barrier per level, one partial sum per group; ``--n`` elements.

Kernel time: CUDA events around 20 launches queued back to back, per launch, median of
``--reps`` (a single launch between two events would also count the host's queueing time when
the GPU is idle). Target: Metal-on-CUDA takes at
most 1.1x the hand-written kernel's time. Host overhead: a one-block launch of each kernel
(256 elements) timed with ``perf_counter`` over ``--calls`` launches without synchronising (the
cost of queueing a call), median of rounds, the two sides interleaved. Target: at most 1.2x
CudaKernel's.

Usage: ``python benchmarks/bench_metal_cuda.py [--json PATH] [--n N] [--reps R] [--calls C]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

NSTEPS = 200

PUSH_METAL = """
uint i = thread_position_in_grid.x;
float x = pos[i], v = vel[i];
for (int k = 0; k < NSTEPS; ++k) { x += v * dt[0]; }
pos_out[i] = x;
"""

PUSH_CUDA = r"""
extern "C" __global__ void push(const float* pos, const float* vel, float dt, float* pos_out,
                                int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = pos[i], v = vel[i];
    for (int k = 0; k < NSTEPS; ++k) { x += v * dt; }
    pos_out[i] = x;
}
"""

REDUCE_METAL = """
threadgroup float buf[256];
uint t = thread_position_in_threadgroup.x;
buf[t] = x[thread_position_in_grid.x];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (t == 0) partial[threadgroup_position_in_grid.x] = buf[0];
"""

REDUCE_CUDA = r"""
extern "C" __global__ void reduce(const float* x, float* partial, int n) {
    __shared__ float buf[256];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    buf[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned s = 128; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = buf[0];
}
"""


def _timed(cupy, fn, reps: int, batch: int = 20) -> float:
    """Seconds per launch: CUDA events around ``batch`` launches queued back to back (so the
    host's cost of queueing a call overlaps the kernels before it), median of ``reps``."""
    for _ in range(3):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        fn()
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e-3 / batch)
    return float(statistics.median(times))


def _per_call_us(cupy, fns: dict, calls: int, rounds: int = 15) -> dict:
    samples: dict = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    cupy.cuda.get_current_stream().synchronize()
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - t0) / calls * 1e6)
            cupy.cuda.get_current_stream().synchronize()
    return {k: float(statistics.median(v)) for k, v in samples.items()}


def run(n: int, reps: int, calls: int) -> dict:
    import cupy

    from cunumpy.kernels import CudaKernel, MetalKernel

    rng = np.random.default_rng(0)
    pos = cupy.asarray(rng.uniform(0, 1, n).astype(np.float32))
    vel = cupy.asarray(rng.uniform(-1, 1, n).astype(np.float32))
    out_m, out_c = cupy.empty_like(pos), cupy.empty_like(pos)
    push_m = MetalKernel(PUSH_METAL, inputs=["pos", "vel", "dt"], outputs=["pos_out"],
                         threadgroup=256, name="push")
    push_c = CudaKernel(PUSH_CUDA, "push", block_size=256, options=(f"-DNSTEPS={NSTEPS}",))
    tmpl = {"NSTEPS": NSTEPS}

    def metal_push(p=pos, o=out_m):
        push_m(p, vel, 0.01, out=o, template=tmpl, engine="cuda")

    def cuda_push(p=pos, o=out_c):
        push_c(p, vel, 0.01, o, n, n_threads=n)

    metal_push()
    cuda_push()
    cupy.testing.assert_allclose(out_m, out_c, rtol=1e-5, atol=1e-5)
    t_push_m, t_push_c = _timed(cupy, metal_push, reps), _timed(cupy, cuda_push, reps)

    groups = n // 256
    x = pos[: groups * 256]
    part_m = cupy.empty(groups, dtype=cupy.float32)
    part_c = cupy.empty(groups, dtype=cupy.float32)
    red_m = MetalKernel(REDUCE_METAL, inputs=["x"], outputs=["partial"], threadgroup=256,
                        name="reduce")
    red_c = CudaKernel(REDUCE_CUDA, "reduce", block_size=256)

    def metal_reduce(a=x, o=part_m):
        red_m(a, out=o, n_threads=a.size, engine="cuda")

    def cuda_reduce(a=x, o=part_c):
        red_c(a, o, a.size, n_threads=a.size)

    metal_reduce()
    cuda_reduce()
    cupy.testing.assert_allclose(part_m, part_c, rtol=1e-5, atol=1e-4)
    t_red_m, t_red_c = _timed(cupy, metal_reduce, reps), _timed(cupy, cuda_reduce, reps)

    small = pos[:256]
    small_out_m, small_out_c = cupy.empty_like(small), cupy.empty_like(small)
    overhead = _per_call_us(cupy, {
        "metal_push": lambda: push_m(small, vel[:256], 0.01, out=small_out_m, template=tmpl,
                                     engine="cuda"),
        "cuda_push": lambda: push_c(small, vel[:256], 0.01, small_out_c, 256, n_threads=256),
        "metal_reduce": lambda: red_m(small, out=part_m[:1], n_threads=256, engine="cuda"),
        "cuda_reduce": lambda: red_c(small, part_c[:1], 256, n_threads=256),
    }, calls)
    return {
        "n": n,
        "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "push_metal_s": t_push_m, "push_cuda_s": t_push_c, "push_ratio": t_push_m / t_push_c,
        "reduce_metal_s": t_red_m, "reduce_cuda_s": t_red_c,
        "reduce_ratio": t_red_m / t_red_c,
        "overhead_us": overhead,
        "overhead_ratio_push": overhead["metal_push"] / overhead["cuda_push"],
        "overhead_ratio_reduce": overhead["metal_reduce"] / overhead["cuda_reduce"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2**24)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    try:
        import cupy  # noqa: F401
    except ImportError:
        print("bench_metal_cuda needs CuPy and an NVIDIA GPU", file=sys.stderr)
        return 2
    r = run(args.n, args.reps, args.calls)
    r["python"] = platform.python_version()
    print(f"device {r['device']}, n = {r['n']}")
    print(f"{'kernel':<10} {'metal->cuda':>12} {'CudaKernel':>12} {'ratio':>7} (target <= 1.1)")
    for k in ("push", "reduce"):
        print(f"{k:<10} {r[k + '_metal_s'] * 1e3:10.3f}ms {r[k + '_cuda_s'] * 1e3:10.3f}ms "
              f"{r[k + '_ratio']:7.3f}")
    o = r["overhead_us"]
    print(f"{'overhead':<10} {'metal->cuda':>12} {'CudaKernel':>12} {'ratio':>7} (target <= 1.2)")
    for k in ("push", "reduce"):
        print(f"{k:<10} {o['metal_' + k]:10.2f}us {o['cuda_' + k]:10.2f}us "
              f"{r['overhead_ratio_' + k]:7.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
