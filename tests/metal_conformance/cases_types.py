"""Metal conformance cases: layouts, precisions and types; SIMD-group matrices and matrix types. Registered in ``CASES`` of :mod:`._case` on import."""


from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._case import Launch, _add, _blocks, _ceil_to, _f32

# =============================================================================================
# Layouts, precisions and types
# =============================================================================================

# 23. Strided inputs without copies (ensure_row_contiguous=False): a transposed, sliced 2-D view
# read through elem_to_loc with a flat index, and a 3-D view read through elem_to_loc with a
# uint3 position.
_STRIDED_BASE2 = (40, 60)
_STRIDED_BASE3 = (6, 10, 12)


def _strided_args(rng: np.random.Generator) -> Launch:
    a = _f32(rng, _STRIDED_BASE2).T[::2, 3:38]  # (30, 35), strides (1, 60) elements
    b = _f32(rng, _STRIDED_BASE3)[1:5, ::3, ::2].transpose(2, 0, 1)[:, :, 1:]  # (6, 4, 3)
    assert not a.flags.c_contiguous and not b.flags.c_contiguous
    return Launch(
        (a, b),
        (np.empty(a.shape, np.float32), np.empty(b.shape, np.float32)),
        (a.size,),
    )


_add(
    name="strided_elem_to_loc",
    source="""
    uint i = thread_position_in_grid.x;
    a_out[i] = 2.0f * a[elem_to_loc(i, a_shape, a_strides, a_ndim)] + 1.0f;
    uint nb = uint(b_shape[0] * b_shape[1] * b_shape[2]);
    if (i < nb) {
        uint nx = uint(b_shape[2]);
        uint ny = uint(b_shape[1]);
        uint3 pos = uint3(i % nx, (i / nx) % ny, i / (nx * ny));
        b_out[i] = -b[elem_to_loc(pos, b_shape, b_strides, b_ndim)];
    }
    """,
    inputs=("a", "b"),
    outputs=("a_out", "b_out"),
    make_args=_strided_args,
    reference=lambda a, b: (2 * a + 1, -b),
    ensure_row_contiguous=False,
    features=("elem_to_loc", "shape-param", "strides-param", "ndim-param", "strided-view"),
)

# 24. Half-precision matrix-vector product with float accumulation: one SIMD group per row,
# float16 arrays in and out, a half literal.
_GEMV_M, _GEMV_K = 40, 200


def _gemv_reference(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray]:
    acc = a.astype(np.float64) @ x.astype(np.float64)
    return ((acc * 0.5).astype(np.float16),)


_add(
    name="gemv_half_float_acc",
    source="""
    uint row = thread_position_in_grid.y;
    uint lane = thread_index_in_simdgroup;
    float acc = 0.0f;
    for (uint k = lane; k < uint(K); k += 32) {
        acc += float(a[row * K + k]) * float(x[k]);
    }
    acc = simd_sum(acc);
    if (lane == 0) {
        half scale = 0.5h;
        y[row] = half(acc) * scale;
    }
    """,
    inputs=("a", "x"),
    outputs=("y",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_GEMV_M, _GEMV_K)).astype(np.float16), _f32(rng, _GEMV_K).astype(np.float16)),
        (np.empty(_GEMV_M, np.float16),),
        (32, _GEMV_M),
    ),
    reference=_gemv_reference,
    threadgroup=(32, 4),
    template={"K": _GEMV_K},
    rtol=2e-3,
    atol=2e-3,
    features=("half", "float16-arrays", "half-literal", "simd_sum", "float-accumulation"),
)


# 25. bfloat16 weights, stored as raw uint16 bits (NumPy has no bfloat16), reinterpreted with
# as_type<bfloat16_t>, dotted with float activations in float; the result rounded to bfloat16
# and written back as bits.
def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def _f32_to_bf16(x: np.ndarray) -> np.ndarray:
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


_BF_M, _BF_K = 24, 64


def _bf16_args(rng: np.random.Generator) -> Launch:
    w_bits = _f32_to_bf16(_f32(rng, (_BF_M, _BF_K)))
    return Launch((w_bits, _f32(rng, _BF_K)), (np.empty(_BF_M, np.uint16),), _BF_M)


def _bf16_reference(w_bits: np.ndarray, x: np.ndarray) -> tuple[np.ndarray]:
    acc = _bf16_to_f32(w_bits).astype(np.float64) @ x.astype(np.float64)
    return (_bf16_to_f32(_f32_to_bf16(acc.astype(np.float32))),)


_add(
    name="bf16_dot_float_acc",
    source="""
    uint row = thread_position_in_grid.x;
    float acc = 0.0f;
    for (uint k = 0; k < uint(K); ++k) {
        bfloat16_t w = as_type<bfloat16_t>(w_bits[row * K + k]);
        acc += float(w) * x[k];
    }
    y_bits[row] = as_type<ushort>(bfloat16_t(acc));
    """,
    inputs=("w_bits", "x"),
    outputs=("y_bits",),
    make_args=_bf16_args,
    reference=_bf16_reference,
    # Compared as values, not bits: float accumulation in another order may round to the
    # neighbouring bfloat16 (one bfloat16 step is 2**-7 relative at most).
    canonical=lambda outs: (_bf16_to_f32(outs[0]),),
    template={"K": _BF_K},
    rtol=2**-7,
    atol=1e-6,
    features=("bfloat16_t", "as_type", "float-accumulation"),
)

# 26. Complex twiddle rotation (one FFT butterfly stage): z * exp(-2 pi i k n / N) with
# complex64_t, sincos, and the squared magnitude as a second, real output.
_TW_N = 1024


def _twiddle_reference(z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.arange(z.size)
    r = z.astype(np.complex128) * np.exp(-2j * np.pi * ((k * n) % z.size) / z.size)
    return r, np.abs(r) ** 2


_add(
    name="complex_twiddle",
    source="""
    uint i = thread_position_in_grid.x;
    uint n = threads_per_grid.x;
    uint m = (uint(k[0]) * i) % n;
    float c;
    float s = sincos(-2.0f * M_PI_F * float(m) / float(n), c);
    complex64_t w = complex64_t(c, s);
    complex64_t r = z[i] * w;
    out[i] = r;
    power[i] = r.real * r.real + r.imag * r.imag;
    """,
    inputs=("z", "k"),
    outputs=("out", "power"),
    make_args=lambda rng: Launch(
        ((_f32(rng, _TW_N) + 1j * _f32(rng, _TW_N)).astype(np.complex64), 7),
        (np.empty(_TW_N, np.complex64), np.empty(_TW_N, np.float32)),
    ),
    reference=_twiddle_reference,
    rtol=1e-5,
    atol=1e-6,
    features=("complex64_t", "sincos", "M_PI_F"),
)


# 27. Integer intrinsics on uint32: popcount, clz, ctz, reverse_bits, rotate, extract_bits.
def _bits_args(rng: np.random.Generator) -> Launch:
    v = rng.integers(0, 2**32, 1000, dtype=np.uint64).astype(np.uint32)
    v[:6] = [0, 1, 0x80000000, 0xFFFFFFFF, 0x00010000, 0x7FFFFFFF]
    v[6:40] >>= rng.integers(0, 32, 34).astype(np.uint32)  # many leading zeros
    return Launch((v,), tuple(np.empty(1000, np.uint32) for _ in range(5)))


def _bits_reference(v: np.ndarray) -> tuple[np.ndarray, ...]:
    bits = (v[:, None] >> np.arange(32, dtype=np.uint32)) & 1  # bit k in column k
    ones = bits.sum(axis=1)
    lengths = np.where(v == 0, 0, 32 - np.argmax(bits[:, ::-1], axis=1))
    clz = 32 - lengths
    ctz = np.where(v == 0, 32, np.argmax(bits, axis=1))
    rev = (bits[:, ::-1].astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
    v64 = v.astype(np.uint64)
    rot = ((v64 << 5) | (v64 >> 27)) & 0xFFFFFFFF
    field_ = (v >> 4) & 0xFFF
    return tuple(a.astype(np.uint32) for a in (ones, clz, ctz, rev, rot + field_))


_add(
    name="integer_intrinsics",
    source="""
    uint i = thread_position_in_grid.x;
    uint v = x[i];
    ones[i] = popcount(v);
    lead[i] = clz(v);
    trail[i] = ctz(v);
    rev[i] = reverse_bits(v);
    mixed[i] = rotate(v, 5u) + extract_bits(v, 4, 12);
    """,
    inputs=("x",),
    outputs=("ones", "lead", "trail", "rev", "mixed"),
    make_args=_bits_args,
    reference=_bits_reference,
    features=("popcount", "clz", "ctz", "reverse_bits", "rotate", "extract_bits"),
)


# 28. Float bit tricks with as_type: an order-preserving uint sort key (radix-sort style), the
# unbiased exponent, and the classic rsqrt bit-hack refined by one Newton step.
def _float_bits_args(rng: np.random.Generator) -> Launch:
    x = (_f32(rng, 999, -1, 1) * np.float32(10.0) ** rng.integers(-6, 6, 999)).astype(np.float32)
    x[:3] = [0.0, -0.0, 1.0]
    return Launch(
        (x,), (np.empty(999, np.uint32), np.empty(999, np.int32), np.empty(999, np.float32))
    )


def _float_bits_reference(x: np.ndarray) -> tuple[np.ndarray, ...]:
    u = x.view(np.uint32)
    key = np.where(u & 0x80000000, ~u, u | 0x80000000).astype(np.uint32)
    expo = ((u >> 23) & 0xFF).astype(np.int32) - 127
    ax = np.abs(x)
    y = (np.uint32(0x5F3759DF) - (ax.view(np.uint32) >> 1)).view(np.float32)
    y = y * (np.float32(1.5) - np.float32(0.5) * ax * y * y)
    approx = np.where(ax > 0, y, 0).astype(np.float32)
    return key, expo, approx


_add(
    name="float_bit_tricks",
    source="""
    uint i = thread_position_in_grid.x;
    float v = x[i];
    uint u = as_type<uint>(v);
    key[i] = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    expo[i] = int((u >> 23) & 0xFFu) - 127;
    float a = fabs(v);
    float y = as_type<float>(0x5F3759DFu - (as_type<uint>(a) >> 1));
    y = y * (1.5f - 0.5f * a * y * y);
    rsqrt_approx[i] = a > 0.0f ? y : 0.0f;
    """,
    inputs=("x",),
    outputs=("key", "expo", "rsqrt_approx"),
    make_args=_float_bits_args,
    reference=_float_bits_reference,
    rtol=1e-6,
    atol=0.0,
    features=("as_type", "bit-tricks"),
)

# 29-30. a*x + b*y templated on the element type T, the elements per thread U and a bool
# (SQUARE: square the result). Each distinct template set compiles its own variant.
_AXPBY_SRC = """
    uint base = thread_position_in_grid.x * U;
    for (int k = 0; k < U; ++k) {
        uint i = base + k;
        if (i < uint(n[0])) {
            T r = T(alpha[0]) * x[i] + T(beta[0]) * y[i];
            out[i] = SQUARE ? r * r : r;
        }
    }
"""


def _axpby_args(dtype: Any, n: int, u: int) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        if np.dtype(dtype).kind == "f":
            x, y = _f32(rng, n), _f32(rng, n)
        else:
            x, y = (rng.integers(-1000, 1000, n).astype(dtype) for _ in range(2))
        return Launch((x, y, 3.0, -2.0, n), (np.empty(n, dtype),), -(-n // u))

    return make


def _axpby_reference(square: bool) -> Callable[..., tuple[np.ndarray]]:
    def ref(x: np.ndarray, y: np.ndarray, alpha: float, beta: float, n: int) -> tuple[Any]:
        r = (alpha * x.astype(np.float64) + beta * y.astype(np.float64)).astype(x.dtype)
        return (r.astype(np.float64) ** 2 if square else r,)

    return ref


for _dtype, _u, _square, _tag in ((np.float32, 4, False, "f32_u4"),
                                  (np.int32, 3, True, "i32_u3_square")):
    _add(
        name=f"axpby_template_{_tag}",
        source=_AXPBY_SRC,
        inputs=("x", "y", "alpha", "beta", "n"),
        outputs=("out",),
        make_args=_axpby_args(_dtype, 1001, _u),
        reference=_axpby_reference(_square),
        threadgroup=64,
        template={"T": _dtype, "U": _u, "SQUARE": _square},
        rtol=1e-6,
        atol=1e-6,
        features=("template-type", "template-int", "template-bool", "early-return"),
    )

# 31. SPH density summation with helper functions from the header: a cubic-spline kernel and a
# loader that takes a device pointer.
_SPH_N = 300
_SPH_HEADER = """
#define SPH_H 0.15f

inline float cubic_spline(float r, float h) {
    float q = r / h;
    float sigma = 10.0f / (7.0f * M_PI_F * h * h);
    if (q < 1.0f) {
        return sigma * (1.0f - 1.5f * q * q + 0.75f * q * q * q);
    }
    if (q < 2.0f) {
        float t = 2.0f - q;
        return sigma * 0.25f * t * t * t;
    }
    return 0.0f;
}

inline float2 load_position(const device float* xy, uint i) {
    return float2(xy[2 * i], xy[2 * i + 1]);
}
"""


def _sph_reference(xy: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray]:
    p = xy.astype(np.float64)
    r = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(axis=2))
    h = 0.15
    q = r / h
    sigma = 10.0 / (7.0 * np.pi * h * h)
    w = np.where(q < 1, sigma * (1 - 1.5 * q**2 + 0.75 * q**3),
                 np.where(q < 2, sigma * 0.25 * np.clip(2 - q, 0, None) ** 3, 0.0))
    return (w @ mass.astype(np.float64),)


_add(
    name="sph_density_header",
    header=_SPH_HEADER,
    source="""
    uint i = thread_position_in_grid.x;
    float2 me = load_position(xy, i);
    float rho = 0.0f;
    for (uint j = 0; j < uint(N); ++j) {
        rho += mass[j] * cubic_spline(distance(me, load_position(xy, j)), SPH_H);
    }
    density[i] = rho;
    """,
    inputs=("xy", "mass"),
    outputs=("density",),
    make_args=lambda rng: Launch(
        (rng.random((_SPH_N, 2), dtype=np.float32), _f32(rng, _SPH_N, 0.5, 1.5)),
        (np.empty(_SPH_N, np.float32),),
    ),
    reference=_sph_reference,
    template={"N": _SPH_N},
    rtol=1e-4,
    atol=1e-3,
    features=("header-function", "header-device-pointer", "distance", "M_PI_F"),
)

# 32. A 3-D grid with partial edge threadgroups in every dimension; every thread writes the
# thread attributes Metal gives it. Assumes Metal's non-uniform threadgroups: edge groups are
# smaller (threads_per_threadgroup), thread_index_in_threadgroup counts x fastest over the
# group's actual size, SIMD groups are runs of 32 consecutive thread indices.
_G3 = (13, 6, 3)
_TG3 = (8, 4, 2)
_NATTR = 30


def _attributes_reference() -> tuple[np.ndarray]:
    gx, gy, gz = _G3
    out = np.zeros((gz, gy, gx, _NATTR), np.int32)
    ngroups = [-(-g // t) for g, t in zip(_G3, _TG3)]
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                pos = (x, y, z)
                tid = [p % t for p, t in zip(pos, _TG3)]
                gid = [p // t for p, t in zip(pos, _TG3)]
                size = [min(t, g - i * t) for t, g, i in zip(_TG3, _G3, gid)]
                lin = tid[0] + size[0] * (tid[1] + size[1] * tid[2])
                nthreads = size[0] * size[1] * size[2]
                row = [
                    *pos, *tid, *gid, *size, *ngroups, *_G3, *_TG3,
                    lin, lin // 32, lin % 32, -(-nthreads // 32), 32, 32, lin // 4, lin % 4,
                    -(-(_TG3[0] * _TG3[1] * _TG3[2]) // 32),
                ]
                out[z, y, x] = row
    return (out,)


_add(
    name="attributes_3d_partial",
    source="""
    uint3 p = thread_position_in_grid;
    uint3 g = threads_per_grid;
    uint base = ((p.z * g.y + p.y) * g.x + p.x) * NATTR;
    uint3 values[7] = {
        thread_position_in_grid, thread_position_in_threadgroup, threadgroup_position_in_grid,
        threads_per_threadgroup, threadgroups_per_grid, threads_per_grid,
        dispatch_threads_per_threadgroup,
    };
    for (int k = 0; k < 7; ++k) {
        attrs[base + 3 * k] = int(values[k].x);
        attrs[base + 3 * k + 1] = int(values[k].y);
        attrs[base + 3 * k + 2] = int(values[k].z);
    }
    attrs[base + 21] = int(thread_index_in_threadgroup);
    attrs[base + 22] = int(simdgroup_index_in_threadgroup);
    attrs[base + 23] = int(thread_index_in_simdgroup);
    attrs[base + 24] = int(simdgroups_per_threadgroup);
    attrs[base + 25] = int(threads_per_simdgroup);
    attrs[base + 26] = int(thread_execution_width);
    attrs[base + 27] = int(quadgroup_index_in_threadgroup);
    attrs[base + 28] = int(thread_index_in_quadgroup);
    attrs[base + 29] = int(dispatch_simdgroups_per_threadgroup);
    """,
    inputs=(),
    outputs=("attrs",),
    make_args=lambda rng: Launch((), (np.empty((*_G3[::-1], _NATTR), np.int32),), _G3),
    reference=_attributes_reference,
    threadgroup=_TG3,
    template={"NATTR": _NATTR},
    features=("3d-grid", "partial-threadgroup", "thread-attributes"),
)

# =============================================================================================
# SIMD-group matrices, matrix types and a templated threadgroup-pointer helper (cases that once
# were emulator gaps, strict xfails on the emulator engine)
# =============================================================================================

# 33. C = A @ B with simdgroup_matrix: one SIMD group per 8x8 tile of C, simdgroup_load /
# simdgroup_multiply_accumulate / simdgroup_store (the building block of MLX's GEMMs).
_SGM_M, _SGM_K, _SGM_N = 24, 40, 32

_add(
    name="matmul_simdgroup_matrix",
    source="""
    uint tile_n = threadgroup_position_in_grid.x;
    uint tile_m = threadgroup_position_in_grid.y;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 ma;
    simdgroup_float8x8 mb;
    for (uint k = 0; k < uint(K); k += 8) {
        simdgroup_load(ma, a + tile_m * 8 * K + k, K);
        simdgroup_load(mb, b + k * N + tile_n * 8, N);
        simdgroup_multiply_accumulate(acc, ma, mb, acc);
    }
    simdgroup_store(acc, c + tile_m * 8 * N + tile_n * 8, N);
    """,
    inputs=("a", "b"),
    outputs=("c",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_SGM_M, _SGM_K)), _f32(rng, (_SGM_K, _SGM_N))),
        (np.empty((_SGM_M, _SGM_N), np.float32),),
        (32 * (_SGM_N // 8), _SGM_M // 8),
    ),
    reference=lambda a, b: (a.astype(np.float64) @ b.astype(np.float64),),
    threadgroup=(32, 1),
    template={"M": _SGM_M, "K": _SGM_K, "N": _SGM_N},
    rtol=1e-5,
    atol=1e-5,
    features=("simdgroup_matrix", "matrix-tile"),
)


# 34. Rigid rotation of particles with a float3x3 (column-major, built from three columns),
# and back with its transpose.
def _rotation(rng: np.random.Generator) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return q.astype(np.float32)


_add(
    name="rotate_float3x3",
    source="""
    uint i = thread_position_in_grid.x;
    float3x3 R = float3x3(float3(rot[0], rot[3], rot[6]),
                          float3(rot[1], rot[4], rot[7]),
                          float3(rot[2], rot[5], rot[8]));
    float3 p = float3(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]);
    float3 q = R * p;
    float3 back = transpose(R) * q;
    rotated[3 * i] = q.x;
    rotated[3 * i + 1] = q.y;
    rotated[3 * i + 2] = q.z;
    restored[3 * i] = back.x;
    restored[3 * i + 1] = back.y;
    restored[3 * i + 2] = back.z;
    """,
    inputs=("pos", "rot"),
    outputs=("rotated", "restored"),
    make_args=lambda rng: Launch(
        (_f32(rng, (500, 3)), _rotation(rng)),
        (np.empty((500, 3), np.float32), np.empty((500, 3), np.float32)),
    ),
    reference=lambda pos, rot: (pos.astype(np.float64) @ rot.T.astype(np.float64), pos),
    rtol=1e-5,
    atol=1e-5,
    features=("float3x3", "transpose"),
)


# 35. A templated block reduction in the header, MLX style: it takes a threadgroup scratch
# array and is instantiated for float (sums) and int (counts) in one kernel.
_TGT_N = 3000
_TGT_HEADER = """
template <typename T>
METAL_FUNC T threadgroup_sum(threadgroup T* scratch, T value, uint lane, uint sg, uint nsg) {
    T s = simd_sum(value);
    if (lane == 0) {
        scratch[sg] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    T total = simd_sum(lane < nsg ? scratch[lane] : T(0));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return total;
}
"""


def _tg_template_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    blocks = _blocks(x.astype(np.float64), 256)
    return blocks.sum(axis=1), (blocks > 0).sum(axis=1).astype(np.int32)


_add(
    name="threadgroup_template_helper",
    header=_TGT_HEADER,
    source="""
    threadgroup float fscratch[32];
    threadgroup int iscratch[32];
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint nsg = simdgroups_per_threadgroup;
    float v = x[thread_position_in_grid.x];
    float s = threadgroup_sum(fscratch, v, lane, sg, nsg);
    int c = threadgroup_sum(iscratch, int(v > 0.0f), lane, sg, nsg);
    if (thread_index_in_threadgroup == 0) {
        sums[threadgroup_position_in_grid.x] = s;
        positives[threadgroup_position_in_grid.x] = c;
    }
    """,
    inputs=("x",),
    outputs=("sums", "positives"),
    make_args=lambda rng: Launch(
        (_f32(rng, _TGT_N),),
        (np.empty(_ceil_to(_TGT_N, 256) // 256, np.float32),
         np.empty(_ceil_to(_TGT_N, 256) // 256, np.int32)),
        _TGT_N,
    ),
    reference=_tg_template_reference,
    rtol=1e-5,
    atol=1e-5,
    features=("header-template", "threadgroup-pointer-param", "METAL_FUNC", "simd_sum"),
)


# 50. Swizzles of swizzles: read (v.xy.yx, v.xyz.zy, c.rgb.r, a chain of three, through a
# pointer and a subscript), assigned (w.xyz.zy = ..., compound w.wzyx.x += ...), in a header
# helper and in half precision.
_SWZ_N = 300

_SWZ_HEADER = """
inline float3 reversed_rgb(float4 c) { return c.rgba.bgr; }
"""


def _swizzle_reference(x: np.ndarray) -> tuple[np.ndarray]:
    v = x.astype(np.float64)
    X, Y, Z, W = v[:, 0], v[:, 1], v[:, 2], v[:, 3]
    out = np.empty((x.shape[0], 8))
    out[:, 0] = Y + 2 * X                  # a = v.xy.yx: (y, x)
    out[:, 1] = Z - Y                      # b = v.xyz.zy: (z, y)
    out[:, 2] = X + Z                      # v.rgb.r + v.wzyx.xy.y
    out[:, 3] = W + 10                     # w.wzyx.x += ..: w.w
    out[:, 4] = 7 + Y                      # w.xyz.zy = (7, v.y): w.z
    out[:, 5] = Y * 3                      # w.y through the chain, then * 3
    out[:, 6] = Z + 2 * Y + 3 * X          # reversed_rgb(v) = (z, y, x), header helper
    out[:, 7] = W + Z                      # half: h.zw.yx = (w, z) summed
    return (out.astype(np.float32),)


_add(
    name="swizzle_of_swizzle",
    header=_SWZ_HEADER,
    source="""
    uint i = thread_position_in_grid.x;
    const device float4* rows = (const device float4*)x;
    float4 v = rows[i];
    float2 a = v.xy.yx;
    float2 b = v.xyz
        .zy;
    float c = v.rgb.r + v.wzyx.xy.y;
    float4 w = float4(0.0f, 1.0f, 2.0f, v.w);
    w.wzyx.x += 10.0f;
    w.xyz.zy = float2(7.0f + v.y, v.y);
    w.xyzw.xy.y *= 3.0f;
    float3 r = reversed_rgb(v);
    half4 h = half4(v);
    half2 hs = h.zw.yx;
    device float* o = y + 8 * i;
    o[0] = a.x + 2.0f * a.y;
    o[1] = b.x - b.y;
    o[2] = c;
    o[3] = w.w;
    o[4] = w.z;
    o[5] = w.y;
    o[6] = r.x + 2.0f * r.y + 3.0f * r.z;
    o[7] = float(hs.x) + float(hs.y);
    """,
    inputs=("x",),
    outputs=("y",),
    make_args=lambda rng: Launch(
        (np.round(_f32(rng, (_SWZ_N, 4), -4, 4) * 8) / 8,),  # exact in half
        (np.empty((_SWZ_N, 8), np.float32),),
        _SWZ_N,
    ),
    reference=_swizzle_reference,
    rtol=1e-6,
    atol=1e-6,
    features=("swizzle", "swizzle-of-swizzle", "half", "header-helper"),
)
