"""The CUDA emulator (emu-cuda): CUDA built-ins, warps in lockstep, atomics, shared memory, and
every check demonstrated by a broken kernel.

Tests of correct kernels take the ``engine`` fixture: they run on the emulator everywhere and,
with the same expected results, on an NVIDIA GPU through CuPy (``requires_cuda``). Broken kernels
run on the emulator only: a GPU does not report them. Kernels are built once per engine and
compile once per test session (the session cache is shared).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import cunumpy
from cunumpy.emulation import (
    BarrierDivergenceError,
    EmulationError,
    EmulatorOptions,
    InactiveLaneError,
    KernelCompileError,
    OutOfBoundsError,
    UndefinedBehaviorError,
    emulate_cuda_kernel,
)
from cunumpy.kernels import CudaCompileError, CudaKernel


def K(source: str, name: str | None = None, **kw) -> CudaKernel:
    return CudaKernel(source, name, engine="emulator", **kw)


@pytest.fixture
def engine(cuda_engine: str) -> str:
    """The plugin's ``cuda_engine`` (ids ``emu-cuda``, ``cupy``): ``emulator`` or ``cupy``."""
    return cuda_engine


_BUILT: dict[tuple, CudaKernel] = {}


def on(engine: str, kernel: CudaKernel) -> CudaKernel:
    """``kernel`` (built for the emulator) rebuilt for ``engine``, once per session."""
    if engine == "emulator":
        return kernel
    key = (engine, kernel.source, kernel.name, repr(kernel.template_args), kernel.options,
           kernel.include_dirs)
    if key not in _BUILT:
        _BUILT[key] = CudaKernel(
            kernel.source, kernel.name, engine=engine, template_args=kernel.template_args,
            options=kernel.options, include_dirs=kernel.include_dirs,
        )
    return _BUILT[key]


def launch(engine: str, kernel: CudaKernel, *args, **kw) -> list:
    """Run ``kernel`` on ``engine`` with host arguments; return them, arrays copied back."""
    k = on(engine, kernel)
    dev = [cunumpy.to_cupy(a) if engine == "cupy" and isinstance(a, np.ndarray) else a
           for a in args]
    k(*dev, **kw)
    return [cunumpy.to_numpy(d) if isinstance(a, np.ndarray) else a for a, d in zip(args, dev)]


@pytest.fixture(autouse=True)
def _default_emulator_options(monkeypatch):
    """Messages name the first failing thread: run blocks in order, with checks, in-process."""
    for var in ("CUNUMPY_EMULATOR_ORDER", "CUNUMPY_EMULATOR_CHECKS", "CUNUMPY_EMULATOR_ISOLATED"):
        monkeypatch.delenv(var, raising=False)


# ---------------------------------------------------------------------------------------------
# Broken kernels: each check
# ---------------------------------------------------------------------------------------------

SAXPY_NO_GUARD = K(r"""
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + y[i];
}
""")


def test_surplus_threads_that_do_not_return_are_caught():
    x = np.ones(1000, np.float32)
    y = np.zeros(1000, np.float32)
    # 1000 threads in blocks of 128: 24 surplus threads each read x, read y and write y.
    message = re.escape(
        "[emu-cuda kernel 'saxpy'] argument 'x' (float32[1000]): index 1000 out of bounds "
        "(size 1000) at thread (104,0,0) block (7,0,0), saxpy.cu:4; 71 further failures"
    )
    with pytest.raises(OutOfBoundsError, match=message):
        SAXPY_NO_GUARD(1000, 2.0, x, y)
    np.testing.assert_array_equal(y, 2.0)  # the in-bounds threads did their work


def test_negative_index_is_caught():
    k = K(r"""
extern "C" __global__ void shift(int n, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i - 1] = 1.0f;
}
""")
    with pytest.raises(OutOfBoundsError, match=r"argument 'y' \(float32\[100\]\): index -1 out of "
                                               r"bounds \(size 100\) at thread \(0,0,0\) block "
                                               r"\(0,0,0\), shift.cu:4$"):
        k(100, np.zeros(100, np.float32))


def test_an_access_the_rewrite_does_not_see_gets_its_line_from_the_code():
    k = K(r"""
extern "C" __global__ void deref(int n, const float* x, float* y) {
    int i = threadIdx.x;
    float v = *(x + i);
    y[0] = v;
}
""")
    with pytest.raises(OutOfBoundsError) as info:
        k(4, np.ones(4, np.float32), np.zeros(1, np.float32), grid=1, block=5)
    assert str(info.value).endswith(
        "index 4 out of bounds (size 4) at thread (4,0,0) block (0,0,0), deref.cu:4"
    )


def test_two_dimensional_argument_is_named_with_its_shape():
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[10,10\]\): index 100 "):
        SAXPY_NO_GUARD(100, 1.0, np.ones((10, 10), np.float32), np.ones((10, 10), np.float32))


def test_barrier_after_an_early_return_is_divergence_with_strict_barriers():
    k = K(r"""
extern "C" __global__ void rotate_block(int n, float* y) {
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = y[i];
    __syncthreads();
    y[i] = s[(threadIdx.x + 1) % blockDim.x];
}
""", "rotate_block")
    with pytest.raises(BarrierDivergenceError, match=r"\[emu-cuda kernel 'rotate_block'\] barrier "
                       r"divergence in block \(0,0,0\): 100 of 128 threads wait at the barrier at "
                       r"rotate_block.cu:7 but 28 threads have returned"):
        emulate_cuda_kernel(k, 100, np.zeros(100, np.float32), n_threads=100,
                            options=EmulatorOptions(strict_barriers=True))
    # By default threads that returned count as arrived, as on the GPU.
    y = np.arange(100, dtype=np.float32)
    k(100, y)
    expected = np.roll(np.arange(100, dtype=np.float32), -1)
    expected[99] = np.nan  # reads the poisoned slot of a thread that returned
    np.testing.assert_array_equal(y[:99], expected[:99])


def test_barriers_at_different_places_are_divergence():
    k = K(r"""
extern "C" __global__ void two_barriers(int n, int* y) {
    if (threadIdx.x < 5) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    y[threadIdx.x] = 1;
}
""")
    with pytest.raises(BarrierDivergenceError, match=r"threads wait at different barriers"):
        k(8, np.zeros(8, np.int32), grid=1, block=8)


WARP_SUM_EARLY_RETURN = K(r"""
extern "C" __global__ void warp_sum(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) y[i / 32] = v;
}
""")


def test_shuffle_from_an_exited_lane_is_caught():
    with pytest.raises(InactiveLaneError, match=r"\[emu-cuda kernel 'warp_sum'\] undefined behaviour "
                       r"at warp_sum.cu:6: __shfl_down_sync with mask 0xffffffff: lane 0 reads lane "
                       r"16, which has exited; rule: .* \(thread \(96,0,0\) block \(0,0,0\)\)"):
        WARP_SUM_EARLY_RETURN(100, np.ones(100, np.float32), np.zeros(4, np.float32))


def test_same_warp_kernel_is_fine_with_full_warps(engine):
    _, _, y = launch(engine, WARP_SUM_EARLY_RETURN, 128, np.arange(128, dtype=np.float32),
                     np.zeros(4, np.float32))
    np.testing.assert_array_equal(y, np.arange(128).reshape(4, 32).sum(1))


def test_shuffle_outside_the_mask_is_caught():
    k = K(r"""
extern "C" __global__ void masked(float* y) {
    int t = threadIdx.x;
    y[t] = __shfl_sync(0x0000ffffu, (float)t, 20);
}
""")
    with pytest.raises(UndefinedBehaviorError, match=r"undefined behaviour at masked.cu:4: "
                       r"__shfl_sync with mask 0x0000ffff: lane 0 reads lane 20, which the mask "
                       r"leaves out; rule: the source lane must be named in the mask"):
        k(np.zeros(32, np.float32), grid=1, block=32)


def test_mask_naming_a_lane_that_waits_elsewhere_is_caught():
    k = K(r"""
extern "C" __global__ void split(float* y) {
    int t = threadIdx.x;
    float v = t;
    if (t < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
    __syncthreads();
    y[t] = v;
}
""")
    with pytest.raises(UndefinedBehaviorError, match=r"__shfl_xor_sync with mask 0xffffffff: "
                       r"lane 16 is named in the mask but waits elsewhere"):
        k(np.zeros(32, np.float32), grid=1, block=32)


def test_static_shared_array_out_of_bounds():
    k = K(r"""
extern "C" __global__ void tile(float* y) {
    __shared__ float t[4][8];
    int i = threadIdx.x;
    t[i][i % 8] = 1.0f;
    __syncthreads();
    y[i] = t[i % 4][i % 8];
}
""")
    with pytest.raises(OutOfBoundsError, match=r"shared array 't' \(float\[4\]\[8\]\): index 4 out "
                                               r"of bounds \(size 4\) at thread \(4,0,0\) block "
                                               r"\(0,0,0\), tile.cu:5;"):
        k(np.zeros(8, np.float32), grid=1, block=8)


DYNAMIC_REVERSE = K(r"""
extern "C" __global__ void reverse(int* y) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    s[t] = y[t];
    __syncthreads();
    y[t] = s[blockDim.x - 1 - t];
}
""")


def test_dynamic_shared_memory_is_sized_by_shared_mem(engine):
    (y,) = launch(engine, DYNAMIC_REVERSE, np.arange(64, dtype=np.int32), grid=1, block=64,
                  shared_mem=64 * 4)
    np.testing.assert_array_equal(y, np.arange(64)[::-1])


def test_dynamic_shared_memory_too_small_is_caught():
    with pytest.raises(OutOfBoundsError, match=r"shared array 's' \(int\[32\]\): index 32 out of "
                                               r"bounds \(size 32\) at thread \(32,0,0\) block "
                                               r"\(0,0,0\), reverse.cu:5;"):
        DYNAMIC_REVERSE(np.zeros(64, np.int32), grid=1, block=64, shared_mem=32 * 4)


def test_device_assert_reports_thread_and_expression():
    k = K(r"""
extern "C" __global__ void checked(int n, float* y) {
    int t = threadIdx.x;
    assert(t < n);
    y[t] = 1.0f;
}
""")
    with pytest.raises(EmulationError, match=r"assertion `t < n` failed at checked.cu:4 at thread "
                                             r"\(5,0,0\) block \(0,0,0\)"):
        k(5, np.zeros(8, np.float32), grid=1, block=8)


def test_trap_stops_the_launch_and_math_constants_exist():
    k = K(r"""
#include <math_constants.h>
extern "C" __global__ void trap(float* y) {
    y[threadIdx.x] = CUDART_PI_F + (isinf(CUDART_INF_F) ? 1.0f : 0.0f);
    if (threadIdx.x == 3) __trap();
}
""")
    y = np.zeros(4, np.float32)
    with pytest.raises(EmulationError, match=r"the kernel called __trap\(\) at trap.cu:5 at "
                                             r"thread \(3,0,0\)"):
        k(y, grid=1, block=4)
    np.testing.assert_allclose(y, np.pi + 1, rtol=1e-7)


def test_random_order_reports_its_seed():
    with pytest.raises(OutOfBoundsError, match=r"\(random order, seed 7\)"):
        emulate_cuda_kernel(SAXPY_NO_GUARD, 100, 1.0, np.ones(100, np.float32),
                            np.ones(100, np.float32),
                            options=EmulatorOptions(random_order=True, seed=7))


def test_checks_off_runs_without_bounds_checks():
    x = np.ones(100, np.float32)
    y = np.zeros(128, np.float32)
    xs = np.ones(128, np.float32)
    emulate_cuda_kernel(SAXPY_NO_GUARD, 128, 3.0, xs, y, options=EmulatorOptions(checks=False))
    np.testing.assert_array_equal(y, 3.0)
    del x


# ---------------------------------------------------------------------------------------------
# Warps in lockstep
# ---------------------------------------------------------------------------------------------

WARP_OPS = K(r"""
extern "C" __global__ void warp_ops(const int* x, int* out) {
    int t = threadIdx.x;
    int lane = t & 31;
    int v = x[t];
    int s = v;                                     // butterfly sum over the warp
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    int seg = v;                                   // sum over segments of 8 lanes
    for (int o = 4; o > 0; o >>= 1) seg += __shfl_down_sync(0xffffffffu, seg, o, 8);
    seg = __shfl_sync(0xffffffffu, seg, 0, 8);      // broadcast each segment's lane 0
    int up = __shfl_up_sync(0xffffffffu, v, 3);
    int bcast = __shfl_sync(0xffffffffu, v, 31 - lane);
    unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
    unsigned match = __match_any_sync(0xffffffffu, v & 3);
    int red = __reduce_max_sync(0xffffffffu, v);
    out[t * 8 + 0] = s;
    out[t * 8 + 1] = seg;
    out[t * 8 + 2] = up;
    out[t * 8 + 3] = bcast;
    out[t * 8 + 4] = (int)ballot;
    out[t * 8 + 5] = (int)match;
    out[t * 8 + 6] = red;
    out[t * 8 + 7] = __popc(ballot) + __any_sync(0xffffffffu, v > 8) * 100
                     + __all_sync(0xffffffffu, v > -10) * 1000;
}
""")


def test_warp_functions_match_numpy(engine):
    rng = np.random.default_rng(1)
    x = rng.integers(-9, 10, 64).astype(np.int32)
    _, out = launch(engine, WARP_OPS, x, np.zeros((64, 8), np.int32), grid=1, block=64)
    w = x.reshape(2, 32)
    lane = np.arange(32)
    pos = w > 0
    ballot = (pos * (1 << lane).astype(np.int64)).sum(1)
    for k in range(2):
        got, v = out[32 * k : 32 * k + 32], w[k]
        assert (got[:, 0] == v.sum()).all()
        np.testing.assert_array_equal(got[:, 1], np.repeat(v.reshape(4, 8).sum(1), 8))
        np.testing.assert_array_equal(got[:, 2], np.where(lane >= 3, np.roll(v, 3), v))
        np.testing.assert_array_equal(got[:, 3], v[::-1])
        assert (got[:, 4].astype(np.uint32) == np.uint32(ballot[k])).all()
        match = [int(((v & 3) == (v[i] & 3)) @ (1 << lane).astype(np.int64)) for i in range(32)]
        np.testing.assert_array_equal(got[:, 5].astype(np.uint32), np.array(match, np.uint32))
        assert (got[:, 6] == v.max()).all()
        expected = pos.sum(1)[k] + 100 * (v > 8).any() + 1000 * (v > -10).all()
        assert (got[:, 7] == expected).all()


def test_partial_mask_ballot_and_activemask_in_a_branch():
    k = K(r"""
extern "C" __global__ void branchy(unsigned* out) {
    int t = threadIdx.x;
    if (t % 2 == 0) {
        out[t] = __activemask();
    } else {
        out[t] = __ballot_sync(0xaaaaaaaau, t > 10);
    }
}
""")
    out = np.zeros(32, np.uint32)
    k(out, grid=1, block=32)
    np.testing.assert_array_equal(out[0::2], 0x55555555)
    odd = sum(1 << t for t in range(32) if t % 2 and t > 10)
    np.testing.assert_array_equal(out[1::2], odd)


SYNC_VOTES = K(r"""
extern "C" __global__ void votes(const int* x, int* out) {
    int t = threadIdx.x;
    int c = __syncthreads_count(x[t] > 0);
    int a = __syncthreads_and(x[t] > -100);
    int o = __syncthreads_or(x[t] > 50);
    if (t == 0) { out[0] = c; out[1] = a; out[2] = o; }
}
""")


def test_syncthreads_count_and_or(engine):
    x = np.arange(-20, 80, dtype=np.int32)
    _, out = launch(engine, SYNC_VOTES, x, np.zeros(3, np.int32), grid=1, block=100)
    np.testing.assert_array_equal(out, [79, 1, 1])


def test_partial_last_warp_shuffle_reading_a_missing_lane_is_caught():
    k = K(r"""
extern "C" __global__ void block_sum(const float* x, float* out) {
    float v = x[threadIdx.x];
    unsigned mask = __ballot_sync(0xffffffffu, 1);
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_down_sync(mask, v, o);
        if ((threadIdx.x & 31) + o < 32 && threadIdx.x + o < blockDim.x) v += u;
    }
    if ((threadIdx.x & 31) == 0) out[threadIdx.x / 32] = v;
}
""")
    x = np.arange(40, dtype=np.float32)
    out = np.zeros(2, np.float32)
    with pytest.raises(InactiveLaneError, match=r"reads lane 16, which does not exist \(this warp "
                       r"has 8 threads\)[\s\S]*thread \(32,0,0\)"):
        k(x, out, grid=1, block=40)


# ---------------------------------------------------------------------------------------------
# Atomics, types, templates, sources
# ---------------------------------------------------------------------------------------------

ATOMICS = K(r"""
extern "C" __global__ void atomics(int n, int* i32, unsigned* u32, unsigned long long* u64,
                                   float* f32, double* f64) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    atomicAdd(&i32[0], 2);
    atomicSub(i32 + 1, 1);
    atomicMin(&i32[2], -t);
    atomicMax(&i32[3], t);
    atomicAnd(&u32[0], ~(1u << (t % 32)));
    atomicOr(&u32[1], 1u << (t % 32));
    atomicXor(&u32[2], 1u);
    atomicInc(&u32[3], 9u);                      // counts 0..9 and wraps
    atomicDec(&u32[4], 9u);
    atomicAdd(&u64[0], 1ull << 33);
    atomicExch(&u64[1], 7ull);
    atomicAdd(&f32[0], 0.5f);
    atomicAdd(&f64[0], 0.25);
    int old = i32[4], seen;                      // an increment built from atomicCAS
    do { seen = old; old = atomicCAS(&i32[4], seen, seen + 1); } while (old != seen);
    if (atomicCAS(&i32[5], 0, 1) == 0) atomicAdd(&i32[5], 10);   // the first thread only
}
""")


def test_atomics_for_every_type(engine):
    n = 300
    i32 = np.array([0, 0, 1 << 30, -(1 << 30), 0, 0], np.int32)
    u32 = np.array([0xFFFFFFFF, 0, 0, 0, 0], np.uint32)
    u64 = np.zeros(2, np.uint64)
    f32 = np.zeros(1, np.float32)
    f64 = np.zeros(1, np.float64)
    _, i32, u32, u64, f32, f64 = launch(engine, ATOMICS, n, i32, u32, u64, f32, f64, grid=3,
                                        block=128)
    np.testing.assert_array_equal(i32, [2 * n, -n, -(n - 1), n - 1, n, 11])
    np.testing.assert_array_equal(u32, [0, 0xFFFFFFFF, 0, n % 10, 9 - (n - 1) % 10])
    np.testing.assert_array_equal(u64, [n << 33, 7])
    assert f32[0] == 0.5 * n and f64[0] == 0.25 * n


def test_template_kernel_namespace_shared_and_defines(engine, tmp_path):
    (tmp_path / "helpers.cuh").write_text(
        "#pragma once\n__device__ inline float twice(float v) { return 2.0f * v; }\n"
    )
    k = K(r"""
#include <cuda_runtime.h>
#include "helpers.cuh"
__shared__ float stage[BLOCK];
extern __shared__ unsigned char raw[];

template <typename T, int N>
__global__ void __launch_bounds__(BLOCK) fill(T* __restrict__ y, T bias) {
    stage[threadIdx.x] = twice((float)threadIdx.x);
    T* dyn = reinterpret_cast<T*>(raw);
    dyn[threadIdx.x] = bias;
    __syncthreads();
    y[blockIdx.x * blockDim.x + threadIdx.x] = (T)stage[BLOCK - 1 - threadIdx.x] * N + dyn[threadIdx.x];
}
""", "fill", template_args=(np.float64, 3), options=("-DBLOCK=32",), include_dirs=[tmp_path])
    y, _ = launch(engine, k, np.zeros(64, np.float64), 0.5, grid=2, block=32, shared_mem=32 * 8)
    expected = np.tile(2.0 * np.arange(32)[::-1] * 3 + 0.5, 2)
    np.testing.assert_array_equal(y, expected)


def test_kernel_named_like_a_c_library_function():
    k = K(r"""
extern "C" int abs(int);  // a C library declaration stays C
extern "C" {
__global__ void div(int n, const int* a, int* q) {
    int i = threadIdx.x;
    if (i < n) q[i] = a[i] / 3 + min(i, 2) + max(0u, 1u) + __clz(1) + __ffs(8) + __brev(1u) / (1u << 31);
}
}
""", "div")
    q = np.zeros(10, np.int32)
    k(10, np.arange(10, dtype=np.int32) * 3, q)
    np.testing.assert_array_equal(q, np.arange(10) + np.minimum(np.arange(10), 2) + 1 + 31 + 4 + 1)


def test_vector_types_math_and_intrinsics():
    k = K(r"""
extern "C" __global__ void vec(int n, const float* x, float* y) {
    int i = threadIdx.x;
    if (i >= n) return;
    float4 v = make_float4(x[i], 1.0f, 2.0f, 3.0f);
    int2 p = make_int2(i, 2 * i);
    dim3 b = blockDim;
    float s, c;
    sincosf(v.x, &s, &c);
    y[i] = rsqrtf(v.w + 1.0f) * 4.0f + __fdividef(v.x, 2.0f) + fmaxf(s * s + c * c, 0.0f)
           + __int_as_float(__float_as_int(1.5f)) + (float)(p.y - p.x) + (float)(b.x == 16)
           + __half2float(__float2half(0.5f)) + (float)__popc(7u) + __expf(0.0f);
}
""")
    x = np.linspace(-1, 1, 16).astype(np.float32)
    y = np.zeros(16, np.float32)
    k(16, x, y, grid=1, block=16)
    expected = 2.0 + x / 2 + 1.0 + 1.5 + np.arange(16) + 1 + 0.5 + 3 + 1
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_cuda_only_math_functions(engine):
    import math

    k = K(r"""
extern "C" __global__ void special(int n, const double* x, double* inv, double* cdf) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { inv[i] = erfinv(x[i]); cdf[i] = normcdf(x[i]) + (double)normcdfinvf(0.5f); }
}
""")
    x = np.linspace(-0.999, 0.999, 101)
    _, _, inv, cdf = launch(engine, k, 101, x, np.zeros(101), np.zeros(101))
    np.testing.assert_allclose([math.erf(v) for v in inv], x, rtol=1e-12, atol=1e-14)
    expected = [0.5 * math.erfc(-v / math.sqrt(2)) for v in x]
    np.testing.assert_allclose(cdf, expected, rtol=1e-12, atol=1e-7)


def test_values_of_struct_and_vector_types_without_signature_checks():
    k = K(r"""
struct Params { float a; int b; };
extern "C" __global__ void byval(float4 v, Params p, float* y) {
    y[threadIdx.x] = v.x + v.y + v.z + v.w + p.a * p.b;
}
""", "byval", check_signature=False)
    params = np.array((0.5, 4), np.dtype([("a", np.float32), ("b", np.int32)]))
    y = np.zeros(4, np.float32)
    k(np.array([1, 2, 3, 4], np.float32), params, y, grid=1, block=4)
    np.testing.assert_array_equal(y, 12.0)
    with pytest.raises(EmulationError, match=r"argument 'v' holds 12 bytes but its parameter's "
                                             r"C type has 16"):
        k(np.array([1, 2, 3], np.float32), params, y, grid=1, block=4)


def test_out_of_bounds_inside_a_device_function_names_the_kernel_argument():
    k = K(r"""
template <class T> __device__ T at(const T* p, int i) { return p[i]; }
__device__ void put(float* __restrict__ out, int i, float v) { out[i] = v; }
extern "C" __global__ void helpers(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) put(y, i, at(x, i + 1));
}
""")
    y = np.zeros(8, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[8\]\): index 8 out of "
                                               r"bounds \(size 8\) at thread \(7,0,0\) block "
                                               r"\(0,0,0\), helpers.cu:2$"):
        k(8, np.arange(8, dtype=np.float32), y)
    np.testing.assert_array_equal(y, [1, 2, 3, 4, 5, 6, 7, 0])


def test_device_templates_deduce_from_raw_and_checked_pointers():
    import warnings

    from cunumpy.emulation import OutOfBoundsError
    from cunumpy.emulation.cuda import run_cuda

    k = K(r"""
template <class T> __device__ T load(const T* p, int i) { return p[i]; }
template <class T, class U> __device__ void stats(const T* x, int n, U& mean, U* buf) {
    mean = U(0);
    for (int j = 0; j < n; ++j) mean += U(x[j]) / U(n);
    buf[threadIdx.x] = mean;
}
extern "C" __global__ void total(int n, const float* x, float* y) {
    __shared__ float part[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float m;
    stats(x, n, m, part);                 // checked pointer and shared array
    y[i] = load(&x[0], i) + load(x, i) + load(y, i) * 0.0f + part[threadIdx.x] - m;
}
""")
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to raw pointers
        run_cuda(k, (128, x, y), (2, 1, 1), (64, 1, 1))
    np.testing.assert_array_equal(y, 2 * x)
    # the template's own accesses stay checked: n past the end is reported inside stats
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[128\]\): index 128"):
        run_cuda(k, (129, x, y), (2, 1, 1), (64, 1, 1))


def test_member_template_on_raw_pointers_falls_back_with_a_warning():
    from cunumpy.emulation import EmulatorWarning
    from cunumpy.emulation.cuda import run_cuda

    k = K(r"""
struct Loader {
    template <class T> __device__ static T load(const T* p, int i) { return p[i]; }
};
__device__ float block_total(float v) {
    __shared__ float part[64];
    part[threadIdx.x] = v;
    __syncthreads();
    float s = 0.0f;
    for (int j = 0; j < blockDim.x; ++j) s += part[j];
    return s;
}
extern "C" __global__ void total(int n, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float t = block_total(Loader::load(&x[0], i));
    if (i < n) y[i] = t + x4[0].y;
}
""")
    y = np.zeros(128, np.float32)
    with pytest.warns(EmulatorWarning, match=r"\[emu-cuda kernel 'total'\] bounds checks of "
                                             r"pointer parameters of __device__ functions are off"):
        run_cuda(k, (128, np.arange(128, dtype=np.float32), y), (2, 1, 1), (64, 1, 1))
    np.testing.assert_array_equal(y, np.repeat([63 * 32 + 1, 64 * 64 + 63 * 32 + 1], 64))


def test_printf_goes_to_stdout(capfd):
    k = K(r"""
extern "C" __global__ void hello(int n) {
    if (threadIdx.x == 0) printf("block %d of %d says %d\n", blockIdx.x, gridDim.x, n);
}
""")
    k(42, grid=2, block=4)
    assert capfd.readouterr().out.splitlines() == ["block 0 of 2 says 42", "block 1 of 2 says 42"]


def test_compile_error_names_the_users_file_and_line():
    k = K(r"""
extern "C" __global__ void broken(float* y) {
    y[threadIdx.x] = not_declared;
}
""")
    with pytest.raises(KernelCompileError) as info:
        k(np.zeros(4, np.float32), grid=1, block=4)
    assert isinstance(info.value, CudaCompileError)
    text = str(info.value)
    assert "broken.cu:3:" in text and "not_declared" in text
    assert "   3 |     y[threadIdx.x] = not_declared;" in text


def test_barrier_behind_a_macro_runs_and_shared_behind_a_macro_is_explained():
    k = K(r"""
#define SYNC() __syncthreads()
extern "C" __global__ void mirror(float* y) {
    __shared__ float s[32];
    s[threadIdx.x] = threadIdx.x;
    SYNC();
    y[threadIdx.x] = s[31 - threadIdx.x];
}
""")
    y = np.zeros(32, np.float32)
    k(y, grid=1, block=32)
    np.testing.assert_array_equal(y, np.arange(32)[::-1])
    bad = K(r"""
#define TILE(name) __shared__ float name[32]
extern "C" __global__ void hidden(float* y) {
    TILE(s);
    y[threadIdx.x] = 0.0f;
}
""")
    with pytest.raises(KernelCompileError, match=r"declarations made by a macro"):
        bad(y, grid=1, block=32)


def test_compile_errors_in_and_after_an_included_file_keep_their_lines(tmp_path):
    (tmp_path / "bad.cuh").write_text("#pragma once\n__device__ float f() { return oops; }\n")
    k = K('#include "bad.cuh"\nextern "C" __global__ void g(float* y) {\n    y[0] = nope;\n}\n',
          include_dirs=[tmp_path])
    with pytest.raises(KernelCompileError) as info:
        k(np.zeros(1, np.float32))
    text = str(info.value)
    assert "bad.cuh:2:" in text and "   2 | __device__ float f() { return oops; }" in text
    assert "g.cu:3:" in text and "   3 |     y[0] = nope;" in text


@pytest.mark.parametrize(
    ("snippet", "feature"),
    [
        ('asm volatile("cp.async.wait_all;");', "inline PTX 'cp.async.wait_all'"),
        ("cudaSurfaceObject_t t = 0; (void)t;", "surface objects"),
    ],
)
def test_unsupported_features_are_refused(snippet, feature):
    k = K('extern "C" __global__ void nope(float* y) { ' + snippet + " }")
    with pytest.raises(NotImplementedError, match=rf"\[emu-cuda kernel 'nope'\] uses {feature}"):
        k(np.zeros(4, np.float32))


def test_unsupported_library_is_refused():
    k = K('#include <cub/device/device_scan.cuh>\nextern "C" __global__ void cg(float* y) {}')
    with pytest.raises(NotImplementedError, match=r"CUB algorithms other than BlockReduce, "
                       r".* are not supported by the CUDA emulator \(emu-cuda\)"):
        k(np.zeros(4, np.float32))


# ---------------------------------------------------------------------------------------------
# Engine selection and emulate_cuda_kernel
# ---------------------------------------------------------------------------------------------

SAXPY_SRC = r"""
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def test_environment_selects_the_emulator(monkeypatch):
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")
    k = CudaKernel(SAXPY_SRC, "saxpy")
    x = np.arange(300, dtype=np.float32)
    y = np.ones(300, np.float32)
    k(300, 2.0, x, y)
    np.testing.assert_array_equal(y, 2 * x + 1)
    with pytest.raises(TypeError, match=r"\[emu-cuda kernel 'saxpy'\] argument 'x' \(float64"
                                        r"\[300\]\) has dtype float64"):
        k(300, 2.0, x.astype(np.float64), y)


def test_emulate_cuda_kernel_runs_any_kernel_with_options():
    k = CudaKernel(SAXPY_SRC, "saxpy", engine="cupy")
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros(1000, np.float32)
    emulate_cuda_kernel(k, 1000, 0.5, x, y, block=64,
                        options=EmulatorOptions(random_order=True, seed=3))
    np.testing.assert_array_equal(y, 0.5 * x)
    with pytest.raises(TypeError, match="takes a CudaKernel"):
        emulate_cuda_kernel(SAXPY_SRC, 1, 1.0, x, y)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"block \(2048, 1, 1\) has 2048 threads"):
        emulate_cuda_kernel(k, 1000, 0.5, x, y, block=2048)


def test_isolated_launch_writes_back_outputs():
    x = np.arange(50, dtype=np.float32)
    y = np.ones(50, np.float32)
    k = K(SAXPY_SRC, "saxpy")
    emulate_cuda_kernel(k, 50, 2.0, x, y, options=EmulatorOptions(isolated=True))
    np.testing.assert_array_equal(y, 2 * x + 1)
