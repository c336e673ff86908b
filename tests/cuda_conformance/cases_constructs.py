"""Conformance kernels for the constructs of issue 25, written for this suite: inline PTX of the
forms real kernels use, ``enum`` and typedef'd pointer parameters, kernels stamped out by
function-like macros, the toolkit's version macros and the host overload set nvcc gives device
code (``fmax(0.0, x)`` with a float ``x``). Every case runs on both engines: the GPU (``cupy``,
through NVRTC) and the emulator give the same values.
"""

from __future__ import annotations

import numpy as np

from .cases import Args, Case, _f32

CASES: list[Case] = []


def case(**kwargs) -> None:
    CASES.append(Case(**kwargs))


# 1. inline PTX: special registers, shfl.sync, ld.global.nc, cvt, prmt, lop3, bfe, mov pack ------
PTX_SOURCE = r"""
__device__ __forceinline__ unsigned lane_id() {
    unsigned r;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
    return r;
}
__device__ __forceinline__ float4 load_nc(const float4* p) {
    float4 v;
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ float butterfly_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        float t;
        asm volatile("shfl.sync.bfly.b32 %0, %1, %2, %3, %4;"
                     : "=f"(t) : "f"(v), "r"(o), "r"(0x1f), "r"(0xffffffff));
        v += t;
    }
    return v;
}
extern "C" __global__ void ptx_forms(const float* x, unsigned* u, float* f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane = lane_id(), lt, sm;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm("mov.u32 %0, %%smid;" : "=r"(sm));
    float4 q = load_nc(reinterpret_cast<const float4*>(x) + (i % (n / 4)));
    float s = butterfly_sum(x[i]);
    unsigned short h;
    unsigned bf2, p, l, e, lo, hi;
    int r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x[i]));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(bf2) : "f"(x[i]), "f"(q.y));
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(r) : "f"(x[i] * 1000.0f));
    unsigned a = 0x11223344u + 977u * i, b = 0x8566f788u * (i + 1);
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(p) : "r"(a), "r"(b), "r"(0x5d40u + (i & 0xff)));
    asm("lop3.b32 %0, %1, %2, %3, 0xe8;" : "=r"(l) : "r"(a), "r"(b), "r"(lane * 0x01010101u));
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(e) : "r"(b), "r"(i & 15), "r"(7));
    unsigned long long packed;
    asm("mov.b64 %0, {%1, %2};" : "=l"(packed) : "r"(a), "r"(b));
    asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "l"(packed));
    unsigned* o = u + 10 * i;
    o[0] = lane; o[1] = lt; o[2] = h; o[3] = bf2; o[4] = (unsigned)r;
    o[5] = p; o[6] = l; o[7] = e; o[8] = (lo == a) + 2 * (hi == b); o[9] = sm < 132u;
    f[2 * i] = s;
    f[2 * i + 1] = q.x + q.y + q.z + q.w;
}
"""


def _prmt(a: int, b: int, c: int) -> int:
    tmp = (b << 32) | a
    d = 0
    for k in range(4):
        sel = (c >> (4 * k)) & 0xF
        byte = (tmp >> (8 * (sel & 7))) & 0xFF
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        d |= byte << (8 * k)
    return d


def _bf16_bits(v: np.ndarray) -> np.ndarray:
    u = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def _ptx_reference(args: Args) -> dict[int, np.ndarray]:
    x, n = args[0], args[3]
    i = np.arange(n)
    lane = i % 32
    q = x.reshape(-1, 4).astype(np.float64).sum(axis=1)[i % (n // 4)]
    qy = x.reshape(-1, 4)[i % (n // 4), 1]
    u = np.zeros((n, 10), np.uint64)
    u[:, 0] = lane
    u[:, 1] = (1 << lane) - 1
    u[:, 2] = x.astype(np.float16).view(np.uint16)
    u[:, 3] = (_bf16_bits(x) << 16) | _bf16_bits(qy)
    u[:, 4] = np.rint(x * np.float32(1000.0)).astype(np.int64).astype(np.uint32)
    a = (0x11223344 + 977 * i) & 0xFFFFFFFF
    b = (0x8566F788 * (i + 1)) & 0xFFFFFFFF
    c = lane * 0x01010101
    u[:, 5] = [_prmt(int(aa), int(bb), 0x5D40 + (k & 0xFF)) for k, (aa, bb) in enumerate(zip(a, b))]
    u[:, 6] = (a & b) | (a & c) | (b & c)  # 0xe8: the majority of three
    u[:, 7] = (b >> (i & 15)) & 0x7F
    u[:, 8] = 3
    u[:, 9] = 1
    warp = x.astype(np.float64).reshape(-1, 32).sum(axis=1)
    f = np.stack([np.repeat(warp, 32), q], axis=1)
    return {1: u.astype(np.uint32).reshape(-1), 2: f.reshape(-1).astype(np.float32)}


case(
    id="inline_ptx_forms",
    name="ptx_forms",
    source=PTX_SOURCE,
    inputs=lambda rng: [_f32(rng, 256), np.zeros(2560, np.uint32), np.zeros(512, np.float32), 256],
    reference=_ptx_reference,
    launch=lambda a: {"grid": 4, "block": 64},
    rtol=1e-5,
    atol=1e-5,
    features=("inline-ptx", "warp"),
)


# 2. enum, enum class and typedef'd pointer parameters -----------------------------------------
case(
    id="enum_and_pointer_typedef_params",
    name="apply_mode",
    source=r"""
enum Mode { SCALE = 0, SHIFT = 1, CLAMP = 2 };
enum class Rounding : unsigned char { Down, Up };
typedef float* fptr;
typedef const float* cfptr;
using index_t = int;

extern "C" __global__ void apply_mode(const enum Mode mode, Rounding r, cfptr x, fptr y,
                                      const index_t n, const fptr z) {
    index_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (mode == SCALE) v *= 3.0f;
    else if (mode == SHIFT) v += 1.0f;
    else v = fminf(fmaxf(v, -0.5f), 0.5f);
    y[i] = r == Rounding::Down ? floorf(v * 8.0f) / 8.0f : ceilf(v * 8.0f) / 8.0f;
    z[i] = (float)mode;
}
""",
    inputs=lambda rng: [1, np.uint8(1), _f32(rng, 300), np.zeros(300, np.float32), 300,
                        np.zeros(300, np.float32)],
    reference=lambda a: {3: np.ceil((a[2] + np.float32(1.0)) * 8) / 8,
                         5: np.ones(300, np.float32)},
    features=("enum", "typedef-pointer"),
)


# 3. kernels stamped out by function-like macros (token pasting, stringizing, __VA_ARGS__) --------
MACRO_SOURCE = r"""
#define CN_PASTE(a, b) a##b
#define BLOCK_REDUCE(NAME, T, OP, INIT)                                                  \
extern "C" __global__ void CN_PASTE(block_, NAME)(const T* __restrict__ x, T* out, int n) {\
    __shared__ T part[128];                                                               \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                        \
    part[threadIdx.x] = i < n ? x[i] : INIT;                                              \
    __syncthreads();                                                                      \
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {                                        \
        if (threadIdx.x < s) part[threadIdx.x] = OP(part[threadIdx.x], part[threadIdx.x + s]); \
        __syncthreads();                                                                  \
    }                                                                                     \
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];                                      \
}
#define ADD(a, b) ((a) + (b))
#define ELEMENTWISE(NAME, EXPR, ...)                                                      \
extern "C" __global__ void NAME(__VA_ARGS__, int n) {                                     \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                        \
    if (i < n) y[i] = EXPR;                                                               \
}
BLOCK_REDUCE(sum_f32, float, ADD, 0.0f)
BLOCK_REDUCE(max_i32, int, max, -2147483647 - 1)
ELEMENTWISE(axpb, a * x[i] + b, const float* x, float* y, float a, float b)
"""


def _block_reduce(x: np.ndarray, width: int, op) -> np.ndarray:
    return op(x.reshape(-1, width), axis=1)


case(
    id="macro_kernel_reduce",
    name="block_sum_f32",
    source=MACRO_SOURCE,
    inputs=lambda rng: [_f32(rng, 1024), np.zeros(8, np.float32), 1024],
    reference=lambda a: {1: _block_reduce(a[0].astype(np.float64), 128, np.sum)},
    launch=lambda a: {"grid": 8, "block": 128},
    rtol=1e-5,
    atol=1e-5,
    features=("macro-kernel", "shared"),
)
case(
    id="macro_kernel_reduce_checked_max",
    name="block_max_i32",
    source=MACRO_SOURCE,
    inputs=lambda rng: [rng.integers(-10**6, 10**6, 1000).astype(np.int32),
                        np.zeros(8, np.int32), 1000],
    reference=lambda a: {1: np.array([a[0][k * 128:(k + 1) * 128].max() for k in range(8)],
                                     np.int32)},
    launch=lambda a: {"grid": 8, "block": 128},
    features=("macro-kernel", "shared"),
)
case(
    id="macro_kernel_variadic",
    name="axpb",
    source=MACRO_SOURCE,
    inputs=lambda rng: [_f32(rng, 500), np.zeros(500, np.float32), 2.5, -1.0, 500],
    reference=lambda a: {1: np.float32(2.5) * a[0] + np.float32(-1.0)},
    rtol=1e-5,  # the GPU contracts a * x + b into one FMA
    atol=1e-6,
    features=("macro-kernel",),
)


# 4. the toolkit's version macros pick the modern branch on both engines -------------------------
case(
    id="toolkit_version_macros",
    name="versions",
    source=r"""
#include <cuda.h>
#include <cuda_runtime.h>
extern "C" __global__ void versions(int* out) {
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12000
    out[0] = 1;
#else
    out[0] = -1;
#endif
#if defined(CUDA_VERSION) && CUDA_VERSION >= 12000 && CUDA_VERSION == CUDART_VERSION
    out[1] = 1;
#else
    out[1] = -1;
#endif
#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 12
    out[2] = 1;
#else
    out[2] = -1;
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    out[3] = 1;   // a compute-capability 9.0 GPU (H100/H200), as the emulator presents itself
#else
    out[3] = -1;
#endif
}
""",
    inputs=lambda rng: [np.zeros(4, np.int32)],
    reference=lambda a: {0: np.ones(4, np.int32)},
    launch=lambda a: {"grid": 1, "block": 1},
    features=("version-macros",),
)


# 5. nvcc's host overload set: mixed-type and integer arguments of the math functions ------------
case(
    id="host_overloads_mixed_math",
    name="lltm_like",
    source=r"""
template <typename scalar_t>
__device__ __forceinline__ scalar_t sigmoid(scalar_t z) { return 1.0 / (1.0 + exp(-z)); }
template <typename scalar_t>
__device__ __forceinline__ scalar_t elu(scalar_t z, scalar_t alpha = 1.0) {
    return fmax(0.0, z) + fmin(0.0, alpha * (exp(z) - 1.0));
}
extern "C" __global__ void lltm_like(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float z = x[i];
    uint k = (uint)i;
    y[i] = elu(z) + sigmoid(z) + pow(z, 2.0) * 0.25f + sqrt(4) + (float)min(k, 3u)
         + (z < -100.0f ? INFINITY : 0.0f) + std::fabs(z);
}
""",
    inputs=lambda rng: [_f32(rng, 400, -3, 3), np.zeros(400, np.float32), 400],
    reference=lambda a: {1: (
        np.maximum(0.0, a[0].astype(np.float64))
        + np.minimum(0.0, np.expm1(a[0].astype(np.float64)))
        + 1.0 / (1.0 + np.exp(-a[0].astype(np.float64)))
        + a[0].astype(np.float64) ** 2 * 0.25 + 2.0 + np.minimum(np.arange(400), 3)
        + np.abs(a[0].astype(np.float64))).astype(np.float32)},
    rtol=1e-5,
    atol=1e-5,
    features=("nvrtc-overloads",),
)


# 6. grid-wide synchronisation of a cooperative launch (every block resident) -----------------
case(
    id="cooperative_grid_sync",
    name="normalise_in_one_launch",
    source=r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void normalise_in_one_launch(const float* x, float* partial, float* y,
                                                   float* total, int n) {
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ float s[128];
    float acc = 0.0f;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) acc += x[i];
    s[block.thread_rank()] = acc;
    block.sync();
    for (int k = block.size() / 2; k > 0; k >>= 1) {
        if (block.thread_rank() < k) s[block.thread_rank()] += s[block.thread_rank() + k];
        block.sync();
    }
    if (block.thread_rank() == 0) partial[blockIdx.x] = s[0];
    grid.sync();                                   // every block's partial sum is written
    if (grid.thread_rank() == 0) {
        float t = 0.0f;
        for (int b = 0; b < gridDim.x; ++b) t += partial[b];
        total[0] = t;
    }
    cg::sync(grid);                                // the total is written
    for (int i = grid.thread_rank(); i < n; i += grid.size()) y[i] = x[i] / total[0];
}
""",
    inputs=lambda rng: [_f32(rng, 5000, 0.0, 1.0), np.zeros(12, np.float32),
                        np.zeros(5000, np.float32), np.zeros(1, np.float32), 5000],
    reference=lambda a: {2: (a[0] / a[0].astype(np.float64).sum()).astype(np.float32),
                         3: np.array([a[0].astype(np.float64).sum()], np.float32)},
    launch=lambda a: {"grid": 12, "block": 128},
    rtol=1e-5,
    atol=1e-7,
    features=("cooperative-groups", "grid-sync"),
)


# 7. texture objects: tex2D with linear and point filtering, normalised coordinates, every address
#    mode, a uchar4 texture read as normalised floats, tex1Dfetch of linear memory, tex3D ---------
TEX_SOURCE = r"""
extern "C" __global__ void tex_sample(cudaTextureObject_t lin_border, cudaTextureObject_t wrap_mirror,
                                      cudaTextureObject_t rgba, cudaTextureObject_t fetch,
                                      cudaTextureObject_t vol, const float* coords, float* out,
                                      int n, int w, int h) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float u = coords[2 * i], v = coords[2 * i + 1];
    float* o = out + 8 * i;
    o[0] = tex2D<float>(lin_border, u, v);
    o[1] = tex2D<float>(wrap_mirror, u / w, v / h);
    float4 c = tex2D<float4>(rgba, u, v);
    o[2] = c.x; o[3] = c.y; o[4] = c.z; o[5] = c.w;
    o[6] = (float)tex1Dfetch<int>(fetch, i - 5);
    tex3D(&o[7], vol, u * 0.5f, v * 0.5f, 1.5f);
}
"""

_TW, _TH, _TN = 7, 5, 96


def _tex_address(i: int, n: int, mode: str) -> int | None:
    if 0 <= i < n:
        return i
    if mode == "wrap":
        return i % n
    if mode == "mirror":
        m = i % (2 * n)
        return m if m < n else 2 * n - 1 - m
    if mode == "border":
        return None
    return min(max(i, 0), n - 1)


def _tex_sample(texels: np.ndarray, coord, modes, linear: bool, border: float = 0.0) -> np.ndarray:
    """The reference texture unit: texels (..., C) over len(coord) dims, x first in coord."""
    dims = texels.shape[: len(coord)][::-1]  # width, height, depth

    def tap(at):
        idx = []
        for k, a in enumerate(at):
            j = _tex_address(a, dims[k], modes[k])
            if j is None:
                return np.full(texels.shape[-1], border)
            idx.append(j)
        return texels[tuple(idx[::-1])].astype(np.float64)

    if not linear:
        return tap([int(np.floor(c)) for c in coord])
    base, alpha = [], []
    for c in coord:
        x = np.float32(c) - np.float32(0.5)
        f = np.floor(x)
        base.append(int(f))
        alpha.append(int(np.floor((x - f) * 256.0 + 0.5)))  # 9-bit fixed point, ties up
    if len(coord) == 2:  # the H200's corner weights (cn_cuda_tex.h)
        q = (alpha[0] * alpha[1] + 128) >> 8
        weights = [256 - alpha[0] - alpha[1] + q, alpha[0] - q, alpha[1] - q, q]
    else:
        weights = []
        for corner in range(1 << len(coord)):
            w = 1.0
            for k in range(len(coord)):
                w *= alpha[k] if (corner >> k) & 1 else 256 - alpha[k]
            weights.append(w / 256.0 ** (len(coord) - 1))
    total = np.zeros(texels.shape[-1])
    for corner in range(1 << len(coord)):
        at = [base[k] + ((corner >> k) & 1) for k in range(len(coord))]
        total += weights[corner] / 256.0 * tap(at)
    return total


def _tex_inputs(rng: np.random.Generator) -> Args:
    from cunumpy.kernels import Texture

    img = rng.uniform(-1, 1, (_TH, _TW)).astype(np.float32)
    rgba = rng.integers(0, 256, (_TH, _TW, 4)).astype(np.uint8)
    ints = rng.integers(-1000, 1000, 64).astype(np.int32)
    vol = rng.uniform(0, 1, (3, _TH // 2 + 1, _TW // 2 + 1)).astype(np.float32)
    coords = np.stack([rng.uniform(-2, _TW + 2, _TN), rng.uniform(-2, _TH + 2, _TN)], 1)
    coords[:6] = [[0.5, 0.5], [1.0, 1.0], [3.25, 2.75], [_TW, _TH], [-0.5, 2.0], [2.0 + 1 / 1024, 1]]
    return [
        Texture(img, filter="linear", address="border", border=0.25),
        Texture(img, filter="linear", address=("wrap", "mirror"), normalized_coords=True),
        Texture(rgba, channels=4, filter="linear", read_mode="normalized_float"),
        Texture(ints),
        Texture(vol),
        coords.astype(np.float32).reshape(-1),
        np.zeros(8 * _TN, np.float32),
        _TN, _TW, _TH,
    ]


def _tex_reference(a: Args) -> dict[int, np.ndarray]:
    img = a[0].data[..., None]
    rgba = a[2].data.astype(np.float64) / 255.0
    ints, vol = a[3].data, a[4].data[..., None]
    coords = a[5].reshape(-1, 2)
    out = np.zeros((_TN, 8))
    for i, (u, v) in enumerate(coords):
        out[i, 0] = _tex_sample(img, (u, v), ("border",) * 2, True, 0.25)[0]
        nu = np.float32(np.float32(u) / np.float32(_TW)) * np.float32(_TW)
        nv = np.float32(np.float32(v) / np.float32(_TH)) * np.float32(_TH)
        out[i, 1] = _tex_sample(img, (nu, nv), ("wrap", "mirror"), True)[0]
        out[i, 2:6] = _tex_sample(rgba, (u, v), ("clamp",) * 2, True)
        out[i, 6] = ints[i - 5] if 0 <= i - 5 < ints.size else 0
        out[i, 7] = _tex_sample(vol, (np.float32(u) * np.float32(0.5),
                                      np.float32(v) * np.float32(0.5), 1.5),
                                ("clamp",) * 3, False)[0]
    return {6: out.reshape(-1).astype(np.float32)}


case(
    id="texture_objects",
    name="tex_sample",
    source=TEX_SOURCE,
    inputs=_tex_inputs,
    reference=_tex_reference,
    launch=lambda a: {"grid": 3, "block": 32},
    # An H200 filters 8-bit normalised reads to about 2^-17 (measured); weight ties are
    # checked against the recorded GPU in tests/kernels/test_texture_h200.py.
    rtol=1e-5,
    atol=1e-5,
    features=("texture",),
)
