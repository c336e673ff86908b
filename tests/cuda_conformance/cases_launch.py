"""CUDA conformance cases 16 onwards: gathers and scatters, templates, dynamic shared memory,
launch shapes and scalar types, C++ linkage and headers. Same :class:`~cases.Case` shape as
``cases.py``, run by ``test_conformance.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cases import INCLUDE_DIR, KERNEL_DIR, Args, Case, _blocks, _f32

CASES: list[Case] = []


def case(**kwargs: Any) -> None:
    CASES.append(Case(**kwargs))


# 16. gather: linear interpolation at particle positions ------------------------------------
def _interp_inputs(rng: np.random.Generator) -> Args:
    ng, L = 64, 8.0
    return [
        5000,
        ng,
        np.float32(L / ng),
        _f32(rng, 5000, 0, L),
        _f32(rng, ng),
        np.zeros(5000, np.float32),
    ]


def _interp_reference(a: Args) -> dict[int, np.ndarray]:
    _, ng, dx, xp, field_, _ = a
    s = xp / np.float32(dx)
    j = np.floor(s).astype(np.int64)
    w = (s - j).astype(np.float64)
    j0 = j % ng
    j1 = (j0 + 1) % ng
    return {5: (1 - w) * field_[j0] + w * field_[j1]}


case(
    id="gather_linear_interp",
    name="interp",
    source=r"""
extern "C" __global__ void interp(int np_, int ng, float dx, const float* xp, const float* field,
                                  float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= np_) return;
    float s = xp[i] / dx;
    int j = (int)floorf(s);
    float w = s - j;
    int j0 = ((j % ng) + ng) % ng;
    int j1 = (j0 + 1) % ng;
    out[i] = (1.0f - w) * field[j0] + w * field[j1];
}
""",
    inputs=_interp_inputs,
    reference=_interp_reference,
    rtol=1e-5,
    atol=1e-5,
    features=("gather",),
)


# 17. scatter: cloud-in-cell deposition with float atomicAdd ---------------------------------
def _deposit_reference(a: Args) -> dict[int, np.ndarray]:
    _, ng, dx, xp, rho = a
    s = xp / np.float32(dx)
    j = np.floor(s).astype(np.int64)
    w = (s - j).astype(np.float64)
    j0 = j % ng
    j1 = (j0 + 1) % ng
    out = rho.astype(np.float64)
    np.add.at(out, j0, 1 - w)
    np.add.at(out, j1, w)
    return {4: out}


case(
    id="scatter_cic_atomicadd_float",
    name="deposit",
    source=r"""
extern "C" __global__ void deposit(int np_, int ng, float dx, const float* xp, float* rho) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= np_) return;
    float s = xp[i] / dx;
    int j = (int)floorf(s);
    float w = s - j;
    int j0 = ((j % ng) + ng) % ng;
    int j1 = (j0 + 1) % ng;
    atomicAdd(&rho[j0], 1.0f - w);
    atomicAdd(&rho[j1], w);
}
""",
    inputs=lambda rng: [
        8000,
        32,
        np.float32(0.25),
        _f32(rng, 8000, 0, 8.0),
        np.zeros(32, np.float32),
    ],
    reference=_deposit_reference,
    rtol=1e-4,
    atol=1e-3,
    features=("atomics", "scatter"),
)

# 18-19. templates through template_args ----------------------------------------------------
TEMPLATE_SOURCE = r"""
template <typename T, int N>
__global__ void scale_pow(const T* x, T* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T v = x[i];
        T r = 1;
        for (int k = 0; k < N; ++k) r *= v;
        y[i] = r;
    }
}
"""

case(
    id="template_double_3",
    name="scale_pow",
    source=TEMPLATE_SOURCE,
    inputs=lambda rng: [rng.uniform(-2, 2, 3000), np.zeros(3000), 3000],
    reference=lambda a: {1: a[0] ** 3},
    kernel_kwargs={"template_args": (np.float64, 3)},
    rtol=1e-14,
    features=("template", "float64"),
)

case(
    id="template_float_2_by_name",
    name="scale_pow",
    source=TEMPLATE_SOURCE,
    inputs=lambda rng: [_f32(rng, 3000, -2, 2), np.zeros(3000, np.float32), 3000],
    reference=lambda a: {1: a[0] * a[0]},
    kernel_kwargs={"template_args": {"T": "float", "N": 2}},
    rtol=1e-6,
    features=("template",),
)


# 20. dynamic extern __shared__ sized by shared_mem= ----------------------------------------
def _reverse_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1]
    out = np.concatenate([x[i : i + 256][::-1] for i in range(0, x.size, 256)])
    return {2: out}


case(
    id="reverse_dynamic_shared",
    name="reverse_blocks",
    source=r"""
extern "C" __global__ void reverse_blocks(int n, const int* x, int* y) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    if (base + t < n) s[t] = x[base + t];
    __syncthreads();
    int m = min((int)blockDim.x, n - base);
    if (t < m) y[base + t] = s[m - 1 - t];
}
""",
    inputs=lambda rng: [
        1000,
        rng.integers(0, 1 << 30, 1000).astype(np.int32),
        np.zeros(1000, np.int32),
    ],
    reference=_reverse_reference,
    launch=lambda a: {"n_threads": a[0], "block": 256, "shared_mem": 256 * 4},
    features=("dynamic-shared",),
)

# 21. grid-stride loop with a fixed small grid ----------------------------------------------
case(
    id="grid_stride_loop",
    name="gridstride",
    source=r"""
extern "C" __global__ void gridstride(long long n, const float* x, float* y) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = sqrtf(fabsf(x[i])) + 1.0f;
}
""",
    inputs=lambda rng: [100_000, _f32(rng, 100_000, -4, 4), np.zeros(100_000, np.float32)],
    reference=lambda a: {2: np.sqrt(np.abs(a[1])) + np.float32(1)},
    launch=lambda a: {"grid": 7, "block": 64},
    rtol=1e-6,
    features=("grid-stride",),
)

# 22. double-precision math -----------------------------------------------------------------
case(
    id="double_math",
    name="damped",
    source=r"""
extern "C" __global__ void damped(int n, double omega, const double* t, double* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = exp(-0.1 * t[i]) * sin(omega * t[i]);
}
""",
    inputs=lambda rng: [4096, 2.718281828459045, rng.uniform(0, 20, 4096), np.zeros(4096)],
    reference=lambda a: {3: np.exp(-0.1 * a[2]) * np.sin(a[1] * a[2])},
    rtol=1e-12,
    atol=1e-14,
    features=("float64",),
)

# 23. int64 indices -------------------------------------------------------------------------
case(
    id="gather_int64_indices",
    name="take",
    source=r"""
extern "C" __global__ void take(long long n, const long long* idx, const double* src,
                                double* dst) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[idx[i]];
}
""",
    inputs=lambda rng: [
        6000,
        rng.integers(0, 777, 6000).astype(np.int64),
        rng.standard_normal(777),
        np.zeros(6000),
    ],
    reference=lambda a: {3: a[2][a[1]]},
    rtol=0.0,
    features=("int64",),
)

# 24. 3-D launch ----------------------------------------------------------------------------
case(
    id="fill3d",
    name="fill3d",
    source=r"""
extern "C" __global__ void fill3d(int nx, int ny, int nz, int* out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) out[(z * ny + y) * nx + x] = x + 100 * y + 10000 * z;
}
""",
    inputs=lambda rng: [33, 9, 5, np.zeros((5, 9, 33), np.int32)],
    reference=lambda a: {
        3: (
            np.arange(33)[None, None, :]
            + 100 * np.arange(9)[None, :, None]
            + 10000 * np.arange(5)[:, None, None]
        ).astype(np.int32)
    },
    launch=lambda a: {"n_threads": (a[0], a[1], a[2])},
    features=("3d-launch",),
)


# 25. unsigned 32-bit wraparound hash -------------------------------------------------------
def _hash_reference(a: Args) -> dict[int, np.ndarray]:
    n, seed = a[0], np.uint32(a[1])
    with np.errstate(over="ignore"):
        h = np.arange(n, dtype=np.uint32) * np.uint32(2654435761) + seed
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return {2: h}


case(
    id="hash_uint32_wraparound",
    name="hash32",
    source=r"""
extern "C" __global__ void hash32(unsigned int n, unsigned int seed, unsigned int* out) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int h = i * 2654435761u + seed;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    out[i] = h;
}
""",
    inputs=lambda rng: [5000, 0xDEADBEEF, np.zeros(5000, np.uint32)],
    reference=_hash_reference,
    launch=lambda a: {"n_threads": a[0]},
    features=("uint32",),
)

# 26. bool mask and int16 -------------------------------------------------------------------
case(
    id="masked_fill_bool_int16",
    name="masked_fill",
    source=r"""
extern "C" __global__ void masked_fill(int n, const bool* mask, short value, short* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && mask[i]) out[i] = value;
}
""",
    inputs=lambda rng: [
        3000,
        rng.random(3000) < 0.3,
        -1234,
        rng.integers(-100, 100, 3000).astype(np.int16),
    ],
    reference=lambda a: {3: np.where(a[1], np.int16(a[2]), a[3]).astype(np.int16)},
    features=("bool", "int16"),
)

# 27. warp inclusive scan with __shfl_up_sync ------------------------------------------------
case(
    id="warp_scan_shfl_up",
    name="warp_scan",
    source=r"""
extern "C" __global__ void warp_scan(int n, const int* x, int* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = (i < n) ? x[i] : 0;
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    if (i < n) y[i] = v;
}
""",
    inputs=lambda rng: [
        1500,
        rng.integers(-9, 10, 1500).astype(np.int32),
        np.zeros(1500, np.int32),
    ],
    reference=lambda a: {
        2: np.cumsum(_blocks(a[1], 32), axis=1).reshape(-1)[:1500].astype(np.int32)
    },
    features=("warp-shuffle", "scan"),
)

# 28. C++ linkage, __launch_bounds__, comments in the signature, header from include_dirs ----
case(
    id="cpp_linkage_header_launch_bounds",
    name="clamp_kernel",
    source=r"""
#include "conformance_helpers.cuh"
// Not extern "C": the name is looked up through NVRTC's lowered (mangled) name.
__global__ void __launch_bounds__(256)
clamp_kernel(/* count */ int n,
             const float* __restrict__ x,   // input
             float lo, float hi,
             float* __restrict__ y)          /* output */
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = cn_clamp(x[i] * CN_SCALE, lo, hi);
}
""",
    inputs=lambda rng: [2000, _f32(rng, 2000), -1.5, 2.0, np.zeros(2000, np.float32)],
    reference=lambda a: {4: np.clip(a[1] * np.float32(3.0), np.float32(-1.5), np.float32(2.0))},
    kernel_kwargs={"include_dirs": [str(INCLUDE_DIR)], "block_size": 256},
    features=("cpp-linkage", "include", "launch-bounds"),
)

# 29. integer atomicMin / atomicMax ---------------------------------------------------------
case(
    id="atomic_min_max_int",
    name="int_minmax",
    source=r"""
extern "C" __global__ void int_minmax(int n, const int* x, int* result) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(&result[0], x[i]);
        atomicMax(&result[1], x[i]);
    }
}
""",
    inputs=lambda rng: [
        10_000,
        rng.integers(-(10**9), 10**9, 10_000).astype(np.int32),
        np.array([2**31 - 1, -(2**31)], np.int32),
    ],
    reference=lambda a: {2: np.array([a[1].min(), a[1].max()], np.int32)},
    features=("atomics",),
)


# 30. a kernel file loaded with from_file, with an include beside it ------------------------
def _rotate_reference(a: Args) -> dict[int, np.ndarray]:
    n, angle, xy, _ = a
    c, s = np.cos(angle), np.sin(angle)
    p = xy.reshape(n, 2).astype(np.float64)
    out = np.stack([c * p[:, 0] - s * p[:, 1], s * p[:, 0] + c * p[:, 1]], axis=1)
    return {3: out.reshape(-1)}


case(
    id="from_file_rotate",
    name=None,
    file=KERNEL_DIR / "rotate.cu",
    inputs=lambda rng: [2500, 0.7, _f32(rng, 5000), np.zeros(5000, np.float32)],
    reference=_rotate_reference,
    launch=lambda a: {"n_threads": a[0]},
    rtol=1e-5,
    atol=1e-5,
    features=("from-file", "include"),
)
