"""Conformance kernels in the style of CUDA code found in public projects (issue 11): headers,
types and builtins.

Each case is written for this suite: ``<cuComplex.h>``, CuPy's ``<cupy/complex.cuh>`` and its
other headers, ``<cuda_bf16.h>`` and ``<cuda_fp16.h>``, CUB's block and warp collectives,
typedefs of the C library's type names, casts of ``__shared__`` arrays, cache-hint loads and
stores on vector types, compiler builtins and toolkit includes. The same expected values hold on
a GPU (``cupy``) and on the emulator (``emu-cuda``).
"""

from __future__ import annotations

import numpy as np

from .cases import Args, Case, _f32

CASES: list[Case] = []


def case(**kwargs) -> None:
    CASES.append(Case(**kwargs))


# 1. <cuComplex.h>: double and float complex arithmetic on complex128 data --------------------
def _cucomplex_inputs(rng: np.random.Generator) -> Args:
    n = 700
    a = rng.uniform(-2, 2, (n, 2))
    b = rng.uniform(0.5, 2, (n, 2)) * rng.choice([-1, 1], (n, 2))
    return [n, a.reshape(-1), b.reshape(-1), np.zeros(2 * n), np.zeros(n, np.float32)]


def _cucomplex_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1].view(np.complex128)
    y = a[2].view(np.complex128)
    r = x * y + x / y
    r = x * y + r
    r = r - np.conj(x)
    xf = x.astype(np.complex64)
    f = np.abs(xf) + xf.real * np.float32(2.0) - np.abs(xf * xf.conj())
    return {3: r.view(np.float64), 4: f.astype(np.float32)}


case(
    id="cucomplex_double_and_float",
    name="cx_ops",
    source=r"""
#include <cuComplex.h>

extern "C" __global__ void cx_ops(int n, const double* a, const double* b, double* out,
                                  float* mag) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const cuDoubleComplex* A = reinterpret_cast<const cuDoubleComplex*>(a);
    const cuDoubleComplex* B = (const cuDoubleComplex*)b;
    cuDoubleComplex x = A[i], y = B[i];
    cuDoubleComplex r = cuCadd(cuCmul(x, y), cuCdiv(x, y));
    r = cuCfma(x, y, r);
    reinterpret_cast<cuDoubleComplex*>(out)[i] = cuCsub(r, cuConj(x));
    cuFloatComplex f = cuComplexDoubleToFloat(x);
    cuComplex two = make_cuComplex(0.0f, 2.0f);
    mag[i] = cuCabsf(f) + cuCrealf(f) * cuCimagf(two)
             - cuCrealf(cuCmulf(f, cuConjf(f))) + cuCimag(cuComplexFloatToDouble(make_cuFloatComplex(0.0f, 0.0f)));
}
""",
    inputs=_cucomplex_inputs,
    reference=_cucomplex_reference,
    rtol=1e-5,
    atol=1e-5,
    features=("cucomplex", "reinterpret-cast"),
)


# 2. CuPy's <cupy/complex.cuh>: thrust::complex operators and functions -----------------------
def _thrust_inputs(rng: np.random.Generator) -> Args:
    n = 500
    z = rng.uniform(0.2, 1.5, (n, 2)) * rng.choice([-1, 1], (n, 2))
    return [n, z.reshape(-1), np.zeros(2 * n, np.float32), np.zeros(n)]


def _thrust_reference(a: Args) -> dict[int, np.ndarray]:
    z = a[1].view(np.complex128)
    w = np.exp(z) * 2.0 + np.sqrt(z) / (1.0 + z) - z**2 + np.conj(z) * 1j
    w = w + np.power(z, 0.5 + 0.25j) - 3.0 * np.tanh(z)
    s = np.abs(z) + np.angle(z) + np.abs(z) ** 2 + np.log(z).imag + np.sin(z).real + np.cos(z).imag
    return {2: w.astype(np.complex64).view(np.float32), 3: s}


case(
    id="cupy_thrust_complex_math",
    name="thrust_cx",
    source=r"""
#include <cupy/complex.cuh>

extern "C" __global__ void thrust_cx(int n, const double* zin, float* wout, double* sout) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const complex<double>* zs = reinterpret_cast<const complex<double>*>(zin);
    complex<double> z = zs[i];
    complex<double> w = exp(z) * 2.0 + sqrt(z) / (1.0 + z) - thrust::pow(z, 2.0)
                        + conj(z) * complex<double>(0.0, 1.0);
    w += pow(z, complex<double>(0.5, 0.25));
    w -= 3.0 * tanh(z);
    reinterpret_cast<complex<float>*>(wout)[i] = complex<float>(w);
    sout[i] = abs(z) + arg(z) + norm(z) + log(z).imag() + sin(z).real() + cos(z).imag();
}
""",
    inputs=_thrust_inputs,
    reference=_thrust_reference,
    rtol=1e-5,
    atol=1e-5,
    features=("thrust-complex", "cupy-header"),
)


# 3. <cuda_bf16.h> and <cuda_fp16.h>: conversions, rounding, arithmetic -----------------------
def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, rounding to nearest even (inputs are finite)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _bf16_float(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _low_precision_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1]
    b = _bf16_bits(x)
    bf = _bf16_float(b)
    prod = _bf16_float(_bf16_bits(bf * bf))
    c = _bf16_float(_bf16_bits(prod + np.float32(1.0)))
    h = x.astype(np.float16)
    hh = (h * h).astype(np.float16)
    hs = np.sqrt(np.abs(h).astype(np.float32)).astype(np.float16)
    y = c + hh.astype(np.float32) + hs.astype(np.float32)
    return {2: y.astype(np.float32), 3: b}


case(
    id="bf16_fp16_rounding_arithmetic",
    name="low_precision",
    source=r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void low_precision(int n, const float* x, float* y, unsigned short* bits) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_bfloat16 b = __float2bfloat16(x[i]);
    // __hmul_rn: the GPU may contract __hmul + __hadd into one FMA (one rounding fewer)
    __nv_bfloat16 c = __hadd(__hmul_rn(b, b), __float2bfloat16(1.0f));
    __half h = __float2half(x[i]);
    __half hh = __hmul_rn(h, h);
    y[i] = __bfloat162float(c) + __half2float(hh) + __half2float(hsqrt(__habs(h)));
    bits[i] = __bfloat16_as_ushort(b);
}
""",
    inputs=lambda rng: [
        800,
        (rng.uniform(0.5, 2.0, 800) * rng.choice([-1, 1], 800)).astype(np.float32),
        np.zeros(800, np.float32),
        np.zeros(800, np.uint16),
    ],
    reference=_low_precision_reference,
    rtol=2e-3,
    atol=2e-3,
    features=("bfloat16", "half"),
)


# 4. typedefs of the C library's type names, as written for NVRTC -----------------------------
def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


case(
    id="nvrtc_style_typedefs_uint64",
    name="splitmix",
    source=r"""
typedef unsigned long long uint64_t;
typedef long long int64_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned char uint8_t;

__device__ uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

extern "C" __global__ void splitmix(int32_t n, const uint64_t* seeds, uint64_t* out,
                                    uint32_t* low, int64_t* neg, uint8_t* byte) {
    int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t h = mix(seeds[i]);
    out[i] = h;
    low[i] = (uint32_t)h;
    neg[i] = -(int64_t)(h >> 33);
    byte[i] = (uint8_t)(h >> 56);
}
""",
    inputs=lambda rng: [
        600, rng.integers(0, 2**63, 600, dtype=np.int64).astype(np.uint64),
        np.zeros(600, np.uint64), np.zeros(600, np.uint32), np.zeros(600, np.int64),
        np.zeros(600, np.uint8),
    ],
    reference=lambda a: {
        2: _splitmix(a[1]),
        3: (_splitmix(a[1]) & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        4: -((_splitmix(a[1]) >> np.uint64(33)).astype(np.int64)),
        5: (_splitmix(a[1]) >> np.uint64(56)).astype(np.uint8),
    },
    features=("typedef-clash", "uint64"),
)


# 5. casts of __shared__ arrays: bytes as words, float2 as floats, dynamic memory as float4 ---
def _shared_cast_reference(a: Args) -> dict[int, np.ndarray]:
    words = a[0].reshape(-1, 64)
    b = words.view(np.uint8).reshape(words.shape[0], -1)  # little-endian bytes of each block
    byte_sums = b.reshape(words.shape[0], 64, 4).sum(axis=2).astype(np.uint32)
    rev = words[:, ::-1]
    out = (byte_sums + rev).reshape(-1)
    t = np.arange(64, dtype=np.float32)
    f = np.tile(1.5 * t + 0.5 + t + 1.0, words.shape[0])
    return {1: out.astype(np.uint32), 2: f.astype(np.float32)}


case(
    id="shared_array_casts",
    name="shared_casts",
    source=r"""
extern "C" __global__ void shared_casts(const unsigned int* words, unsigned int* out, float* f) {
    __shared__ __align__(16) unsigned char bytes[64 * 4];
    __shared__ float2 pairs[64];
    extern __shared__ __align__(16) char dyn[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    ((unsigned int*)bytes)[t] = words[i];
    reinterpret_cast<float*>(pairs)[2 * t] = 1.5f * t;
    reinterpret_cast<float*>(pairs)[2 * t + 1] = 0.5f;
    float4* d4 = (float4*)dyn;
    d4[t] = make_float4(1.0f, 2.0f, 3.0f, (float)t);
    __syncthreads();
    unsigned int s = bytes[4 * t] + bytes[4 * t + 1] + bytes[4 * t + 2] + bytes[4 * t + 3];
    out[i] = s + ((const unsigned int*)bytes)[63 - t];
    f[i] = pairs[t].x + pairs[t].y + reinterpret_cast<const float4*>(dyn)[t].w + d4[t].x;
}
""",
    inputs=lambda rng: [
        rng.integers(0, 2**32, 192, dtype=np.uint64).astype(np.uint32),
        np.zeros(192, np.uint32), np.zeros(192, np.float32),
    ],
    reference=_shared_cast_reference,
    launch=lambda a: {"grid": 3, "block": 64, "shared_mem": 64 * 16},
    features=("shared-cast", "dynamic-shared"),
)


def _pairs_reference(a: Args) -> np.ndarray:
    """pairs[k] (k = idx / 4, one per thread) = a2[idx/2] + a2[idx/2 + 1], as float2; the
    array holds 512 floats, of which the first 2 * 256 are written."""
    q = a[1].reshape(-1, 4)
    return (q[:, :2] + q[:, 2:]).reshape(-1)


# 6. cache-hint loads/stores on int4 (a Packed128 in the style of LLM training kernels) ------
case(
    id="packed128_cache_hint_loads_stores",
    name="residual_packed",
    source=r"""
template <class T>
struct alignas(16) Packed128 {
    static constexpr int size = sizeof(int4) / sizeof(T);
    T payload[size];
    Packed128() = default;
    __device__ explicit Packed128(int4 bits) {
        const T* p = reinterpret_cast<const T*>(&bits);
        for (int k = 0; k < size; ++k) payload[k] = p[k];
    }
    __device__ T& operator[](int k) { return payload[k]; }
    __device__ const T& operator[](int k) const { return payload[k]; }
    __device__ int4 get_bits() const {
        int4 bits;
        T* p = reinterpret_cast<T*>(&bits);
        for (int k = 0; k < size; ++k) p[k] = payload[k];
        return bits;
    }
};

template <class T>
__device__ Packed128<T> load128cs(const T* address) {
    return Packed128<T>{__ldcs(reinterpret_cast<const int4*>(address))};
}
template <class T>
__device__ Packed128<T> load128(const T* address) {
    return Packed128<T>{*reinterpret_cast<const int4*>(address)};
}
template <class T>
__device__ void store128cs(T* target, Packed128<T> value) {
    __stcs(reinterpret_cast<int4*>(target), value.get_bits());
}

extern "C" __global__ void residual_packed(int n, const float* a, const float* b, float* out,
                                           float* pair_floats, float* scalar) {
    float2* pairs = reinterpret_cast<float2*>(pair_floats);
    int idx = (blockIdx.x * blockDim.x + threadIdx.x) * Packed128<float>::size;
    __builtin_assume(n % 4 == 0);
    if (__builtin_expect(idx >= n, 0)) return;
    Packed128<float> x = load128cs(a + idx);
    Packed128<float> y = load128(b + idx);
    Packed128<float> r;
    for (int k = 0; k < Packed128<float>::size; ++k) r[k] = x[k] + y[k];
    store128cs(out + idx, r);
    const float2* a2 = reinterpret_cast<const float2*>(a);
    float2 p = __ldg(a2 + idx / 2);
    float2 q = __ldcg(a2 + idx / 2 + 1);
    __stwt(pairs + idx / 4, make_float2(p.x + q.x, p.y + q.y));
    float s = __ldca(b + idx) + __ldlu(b + idx + 1) + __ldcv(b + idx + 2) + __ldg(b + idx + 3);
    __stcg(scalar + idx / 4, s);
    __stwb(scalar + idx / 4, __ldcs(scalar + idx / 4) * 2.0f);
}
""",
    inputs=lambda rng: [
        1024, _f32(rng, 1024), _f32(rng, 1024), np.zeros(1024, np.float32),
        np.zeros(512, np.float32), np.zeros(256, np.float32),
    ],
    reference=lambda a: {
        3: a[1] + a[2],
        4: _pairs_reference(a),
        5: 2.0 * a[2].reshape(-1, 4).sum(axis=1),
    },
    launch=lambda a: {"n_threads": a[0] // 4, "block": 64},
    rtol=1e-5,
    atol=1e-6,
    features=("cache-hints", "vector-types", "builtins"),
)


# 7. toolkit includes at the top of a copied kernel file ------------------------------------
case(
    id="toolkit_includes_math_constants",
    name="phase",
    source=r"""
#include <cuda_runtime.h>
#include <device_launch_parameters.h>
#include <math_constants.h>

extern "C" __global__ void phase(int n, const float* x, float* y, double* yd) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = sinf(CUDART_PI_F * x[i]) + CUDART_SQRT_HALF_F;
        yd[i] = cos(CUDART_PI * (double)x[i]);
    }
}
""",
    inputs=lambda rng: [900, _f32(rng, 900), np.zeros(900, np.float32), np.zeros(900)],
    reference=lambda a: {
        2: np.sin(np.float32(np.pi) * a[1]) + np.float32(np.sqrt(0.5)),
        3: np.cos(np.pi * a[1].astype(np.float64)),
    },
    rtol=1e-5,
    atol=1e-5,
    features=("toolkit-includes", "math-constants"),
)


# 8. CuPy's own headers as cupyx kernels include them: math constants, carray, float16 --------
def _cupy_headers_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1]
    h = x.astype(np.float16)
    s = (h.astype(np.float32) * h.astype(np.float32)).astype(np.float16)  # one rounding
    y = np.where(x > 0, s.astype(np.float32), np.float32(-1.0))
    flags = np.isinf(np.float32(np.inf)).astype(np.int32) * 1 + np.isnan(np.float32(np.nan)) * 2
    return {2: y.astype(np.float32), 3: np.full(x.size, flags, np.int32)}


case(
    id="cupy_headers_math_constants_float16",
    name="cupy_headers",
    source=r"""
#include <cupy/math_constants.h>
#include <cupy/carray.cuh>
#include <cupy/complex.cuh>
#include <cupy/float16.cuh>

extern "C" __global__ void cupy_headers(int n, const float* x, float* y, int* flags) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float16 h = x[i];
    float16 sq = (float)h * (float)h;
    y[i] = x[i] > 0 ? (float)sq : -1.0f;
    flags[i] = (isinf(CUDART_INF) ? 1 : 0) + (isnan(CUDART_NAN_F) ? 2 : 0);
}
""",
    inputs=lambda rng: [500, _f32(rng, 500, -4.0, 4.0), np.zeros(500, np.float32),
                        np.zeros(500, np.int32)],
    reference=_cupy_headers_reference,
    rtol=1e-6,
    features=("cupy-headers", "float16", "math-constants"),
)


# 9. CUB's block and warp collectives called from device code --------------------------------
def _cub_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[0].reshape(-1, 128).astype(np.float64)
    c = a[1].reshape(-1, 128).astype(np.int64)
    block = np.stack([x.sum(axis=1), x.max(axis=1)], axis=1).reshape(-1)
    inc = np.cumsum(c, axis=1)
    warp = x.reshape(-1, 32).sum(axis=1)
    return {2: block, 3: inc.reshape(-1).astype(np.int32),
            4: (inc - c).reshape(-1).astype(np.int32), 5: warp,
            6: np.repeat(c.sum(axis=1), 128).astype(np.int32)}


case(
    id="cub_block_and_warp_collectives",
    name="cub_collectives",
    source=r"""
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>

struct MaxOp {
    __device__ float operator()(float a, float b) const { return a < b ? b : a; }
};

template <int BLOCK>
__global__ void cub_collectives(const float* x, const int* c, double* block_out, int* inc,
                                int* exc, double* warp_out, int* totals) {
    typedef cub::BlockReduce<float, BLOCK> BlockReduce;
    typedef cub::BlockScan<int, BLOCK> BlockScan;
    typedef cub::WarpReduce<float> WarpReduce;
    __shared__ typename BlockReduce::TempStorage reduce_storage;
    __shared__ typename BlockScan::TempStorage scan_storage;
    __shared__ typename WarpReduce::TempStorage warp_storage[BLOCK / 32];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = x[i];
    float sum = BlockReduce(reduce_storage).Sum(v);
    __syncthreads();
    float mx = BlockReduce(reduce_storage).Reduce(v, MaxOp());
    if (threadIdx.x == 0) {
        block_out[2 * blockIdx.x] = sum;
        block_out[2 * blockIdx.x + 1] = mx;
    }
    int total;
    BlockScan(scan_storage).InclusiveSum(c[i], inc[i]);
    __syncthreads();
    BlockScan(scan_storage).ExclusiveSum(c[i], exc[i], total);
    totals[i] = total;
    float w = WarpReduce(warp_storage[threadIdx.x / 32]).Sum(v);
    if (threadIdx.x % 32 == 0) warp_out[i / 32] = w;
}
""",
    inputs=lambda rng: [
        _f32(rng, 384), rng.integers(-5, 20, 384).astype(np.int32), np.zeros(6),
        np.zeros(384, np.int32), np.zeros(384, np.int32), np.zeros(12), np.zeros(384, np.int32),
    ],
    reference=_cub_reference,
    launch=lambda a: {"grid": 3, "block": 128},
    kernel_kwargs={"template_args": (128,)},
    rtol=1e-5,
    atol=1e-5,
    features=("cub", "block-reduce", "block-scan", "warp-reduce"),
)
