"""Metal conformance cases: particle pushers, interpolation and gathers, matrix tiles, row-wise (MLX-style) kernels, sorting. Registered in ``CASES`` of :mod:`._case` on import."""


from __future__ import annotations

import numpy as np

from ._case import Launch, _add, _ceil_to, _f32

# =============================================================================================
# Particle pushers
# =============================================================================================

# 14. Boris push: positions with charge-to-mass in w (float4, swizzles), velocities read and
# written through packed_float3, uniform E and B. NSTEPS steps in registers.
_BORIS_N, _BORIS_STEPS = 777, 8


def _boris_reference(xq: np.ndarray, v: np.ndarray, fields: np.ndarray,
                     dt: float) -> tuple[np.ndarray, np.ndarray]:
    x = xq.astype(np.float64).copy()
    vel = v.astype(np.float64).copy()
    e, b = fields[0:3].astype(np.float64), fields[4:7].astype(np.float64)
    h = 0.5 * x[:, 3:4] * dt
    for _ in range(_BORIS_STEPS):
        vm = vel + h * e
        t = h * b
        s = 2 * t / (1 + (t * t).sum(axis=1, keepdims=True))
        vp = vm + np.cross(vm, t)
        vel = vm + np.cross(vp, s) + h * e
        x[:, :3] += vel * dt
    return x, vel


_add(
    name="boris_push",
    source="""
    uint p = thread_position_in_grid.x;
    float4 xq = float4(xq_in[4 * p], xq_in[4 * p + 1], xq_in[4 * p + 2], xq_in[4 * p + 3]);
    const device packed_float3* v3 = (const device packed_float3*)v_in;
    float3 vel = float3(v3[p]);
    float3 E = float3(fields[0], fields[1], fields[2]);
    float3 B = float3(fields[4], fields[5], fields[6]);
    float h = 0.5f * xq.w * dt[0];
    for (int step = 0; step < NSTEPS; ++step) {
        float3 v_minus = vel + h * E;
        float3 t = h * B;
        float3 s = 2.0f * t / (1.0f + dot(t, t));
        float3 v_prime = v_minus + cross(v_minus, t);
        vel = v_minus + cross(v_prime, s) + h * E;
        xq.xyz += vel * dt[0];
    }
    xq_out[4 * p] = xq.x;
    xq_out[4 * p + 1] = xq.y;
    xq_out[4 * p + 2] = xq.z;
    xq_out[4 * p + 3] = xq.w;
    device packed_float3* v_out3 = (device packed_float3*)v_out;
    v_out3[p] = packed_float3(vel);
    """,
    inputs=("xq_in", "v_in", "fields", "dt"),
    outputs=("xq_out", "v_out"),
    make_args=lambda rng: Launch(
        (
            np.column_stack([_f32(rng, (_BORIS_N, 3), -1, 1),
                             _f32(rng, _BORIS_N, -2.0, 2.0)]).astype(np.float32),
            _f32(rng, (_BORIS_N, 3)),
            np.array([0.3, -0.2, 0.1, 0.0, 0.5, 1.5, -1.0, 0.0], np.float32),
            0.05,
        ),
        (np.empty((_BORIS_N, 4), np.float32), np.empty((_BORIS_N, 3), np.float32)),
    ),
    reference=_boris_reference,
    template={"NSTEPS": _BORIS_STEPS},
    rtol=1e-4,
    atol=2e-5,
    features=("float4", "float3", "packed_float3", "swizzle", "cross", "dot",
              "pointer-cast", "particle-pusher"),
)

# 15. All-pairs gravitational accelerations with softening, positions and masses staged through
# a threadgroup float4 tile (the GPU Gems n-body pattern).
_NBODY_N, _NBODY_TILE = 384, 64


def _nbody_reference(pm: np.ndarray, eps2: float) -> tuple[np.ndarray]:
    p = pm.astype(np.float64)
    d = p[None, :, :3] - p[:, None, :3]
    r2 = (d * d).sum(axis=2) + eps2
    w = p[None, :, 3] / r2**1.5
    return ((d * w[:, :, None]).sum(axis=1),)


_add(
    name="nbody_tiled",
    source="""
    threadgroup float4 tile[64];
    uint i = thread_position_in_grid.x;
    uint l = thread_index_in_threadgroup;
    float3 me = float3(pm[4 * i], pm[4 * i + 1], pm[4 * i + 2]);
    float3 acc = float3(0.0f);
    for (uint base = 0; base < uint(N); base += 64) {
        uint j = base + l;
        tile[l] = float4(pm[4 * j], pm[4 * j + 1], pm[4 * j + 2], pm[4 * j + 3]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (int k = 0; k < 64; ++k) {
            float4 other = tile[k];
            float3 d = other.xyz - me;
            float inv_r = rsqrt(dot(d, d) + eps2[0]);
            acc += d * (other.w * inv_r * inv_r * inv_r);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    acc_out[3 * i] = acc.x;
    acc_out[3 * i + 1] = acc.y;
    acc_out[3 * i + 2] = acc.z;
    """,
    inputs=("pm", "eps2"),
    outputs=("acc_out",),
    make_args=lambda rng: Launch(
        (np.column_stack([_f32(rng, (_NBODY_N, 3)), _f32(rng, _NBODY_N, 0.1, 1.0)]
                         ).astype(np.float32), 0.01),
        (np.empty((_NBODY_N, 3), np.float32),),
    ),
    reference=_nbody_reference,
    threadgroup=_NBODY_TILE,
    template={"N": _NBODY_N},
    rtol=1e-4,
    atol=1e-3,
    features=("threadgroup-float4", "rsqrt", "swizzle", "particle-pusher"),
)

# =============================================================================================
# Interpolation and gathers
# =============================================================================================

# 16. Linear interpolation in a uniformly spaced table, clamped at both ends; the table length
# comes from table_shape (MLX passes it because the body names it).
_add(
    name="interp_linear_table",
    source="""
    uint i = thread_position_in_grid.x;
    int ntab = table_shape[0];
    float u = (xq[i] - x0[0]) * inv_dx[0];
    u = clamp(u, 0.0f, float(ntab - 1));
    int j = min(int(u), ntab - 2);
    float f = u - float(j);
    y[i] = mix(table[j], table[j + 1], f);
    """,
    inputs=("xq", "table", "x0", "inv_dx"),
    outputs=("y",),
    make_args=lambda rng: Launch(
        (_f32(rng, 1500, -2.5, 12.5), np.sin(np.linspace(0, 10, 101)).astype(np.float32),
         0.0, 10.0),
        (np.empty(1500, np.float32),),
    ),
    reference=lambda xq, table, x0, inv_dx: (
        np.interp(xq.astype(np.float64), np.linspace(0, 10, 101), table.astype(np.float64)),
    ),
    rtol=1e-5,
    atol=1e-5,
    features=("mix", "clamp", "shape-param", "gather"),
)

# 17. Bilinear interpolation of a periodic 2-D field at particle positions (in cell units),
# with float2/int2 vector arithmetic.
_BIL_NY, _BIL_NX, _BIL_NP = 24, 40, 1200


def _bilinear_reference(field: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray]:
    p = pos.astype(np.float64)
    fl = np.floor(p)
    f = p - fl
    x0, y0 = fl[:, 0].astype(int), fl[:, 1].astype(int)
    x1, y1 = (x0 + 1) % _BIL_NX, (y0 + 1) % _BIL_NY
    g = field.astype(np.float64)
    fx, fy = f[:, 0], f[:, 1]
    top = (1 - fx) * g[y0, x0] + fx * g[y0, x1]
    bottom = (1 - fx) * g[y1, x0] + fx * g[y1, x1]
    return ((1 - fy) * top + fy * bottom,)


_add(
    name="bilinear_gather",
    source="""
    uint p = thread_position_in_grid.x;
    float2 r = float2(pos[2 * p], pos[2 * p + 1]);
    float2 cell = floor(r);
    float2 f = r - cell;
    int2 c0 = int2(cell);
    int2 c1 = (c0 + 1) % int2(NX, NY);
    float f00 = field[c0.y * NX + c0.x];
    float f01 = field[c0.y * NX + c1.x];
    float f10 = field[c1.y * NX + c0.x];
    float f11 = field[c1.y * NX + c1.x];
    out[p] = mix(mix(f00, f01, f.x), mix(f10, f11, f.x), f.y);
    """,
    inputs=("field", "pos"),
    outputs=("out",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_BIL_NY, _BIL_NX)),
         np.column_stack([rng.uniform(0, _BIL_NX, _BIL_NP),
                          rng.uniform(0, _BIL_NY, _BIL_NP)]).astype(np.float32)),
        (np.empty(_BIL_NP, np.float32),),
    ),
    reference=_bilinear_reference,
    template={"NX": _BIL_NX, "NY": _BIL_NY},
    rtol=1e-5,
    atol=1e-5,
    features=("float2", "int2", "vector-modulo", "gather", "periodic"),
)

# =============================================================================================
# Matrix tiles
# =============================================================================================

# 18. C = A @ B with 16x16 threadgroup tiles on a 2-D grid. The grid is rounded up to whole
# tiles (every thread helps load), loads and the store are guarded.
_MM_M, _MM_K, _MM_N = 50, 45, 37

_add(
    name="matmul_tiled",
    header="#define TS 16\n",
    source="""
    threadgroup float As[TS][TS];
    threadgroup float Bs[TS][TS];
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    float acc = 0.0f;
    for (uint k0 = 0; k0 < uint(K); k0 += TS) {
        uint ka = k0 + tx;
        uint kb = k0 + ty;
        As[ty][tx] = (row < uint(M) && ka < uint(K)) ? a[row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < uint(K) && col < uint(N)) ? b[kb * N + col] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TS; ++k) {
            acc = fma(As[ty][k], Bs[k][tx], acc);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (row < uint(M) && col < uint(N)) {
        c[row * N + col] = acc;
    }
    """,
    inputs=("a", "b"),
    outputs=("c",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_MM_M, _MM_K)), _f32(rng, (_MM_K, _MM_N))),
        (np.empty((_MM_M, _MM_N), np.float32),),
        (_ceil_to(_MM_N, 16), _ceil_to(_MM_M, 16)),
    ),
    reference=lambda a, b: (a.astype(np.float64) @ b.astype(np.float64),),
    threadgroup=(16, 16),
    template={"M": _MM_M, "K": _MM_K, "N": _MM_N},
    rtol=1e-5,
    atol=1e-5,
    features=("2d-grid", "threadgroup-2d-array", "fma", "matrix-tile", "header-define"),
)

# 19. Transpose through a padded 32x33 tile, threadgroups of 32x8 threads that each move four
# rows (the classic shared-memory transpose), grid rounded up, guarded.
_TR_NY, _TR_NX = 45, 70

_add(
    name="transpose_tile",
    source="""
    threadgroup float tile[32][33];
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    uint bx = threadgroup_position_in_grid.x * 32;
    uint by = threadgroup_position_in_grid.y * 32;
    for (uint r = ty; r < 32; r += 8) {
        uint x = bx + tx;
        uint y = by + r;
        if (x < uint(NX) && y < uint(NY)) {
            tile[r][tx] = src[y * NX + x];
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint r = ty; r < 32; r += 8) {
        uint x = by + tx;
        uint y = bx + r;
        if (x < uint(NY) && y < uint(NX)) {
            dst[y * NY + x] = tile[tx][r];
        }
    }
    """,
    inputs=("src",),
    outputs=("dst",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_TR_NY, _TR_NX)),),
        (np.empty((_TR_NX, _TR_NY), np.float32),),
        (_ceil_to(_TR_NX, 32), _ceil_to(_TR_NY, 32) // 4),
    ),
    reference=lambda src: (src.T,),
    threadgroup=(32, 8),
    template={"NX": _TR_NX, "NY": _TR_NY},
    features=("2d-grid", "threadgroup-2d-array", "padded-tile", "matrix-tile"),
)

# =============================================================================================
# Row-wise kernels (MLX style)
# =============================================================================================

# 20. Softmax over the last axis, one threadgroup per row: simd_max then simd_sum, combined
# across SIMD groups through threadgroup memory, metal::fast::exp.
_SM_ROWS, _SM_COLS = 23, 300


def _softmax_reference(x: np.ndarray) -> tuple[np.ndarray]:
    v = x.astype(np.float64)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True),)


_add(
    name="softmax_rows",
    source="""
    threadgroup float scratch[32];
    uint row = threadgroup_position_in_grid.x;
    uint lid = thread_index_in_threadgroup;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint nsg = simdgroups_per_threadgroup;
    uint step = threads_per_threadgroup.x;
    uint offset = row * uint(L);

    float m = -INFINITY;
    for (uint j = lid; j < uint(L); j += step) {
        m = max(m, x[offset + j]);
    }
    m = simd_max(m);
    if (lane == 0) {
        scratch[sg] = m;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float t = simd_max(lane < nsg ? scratch[lane] : -INFINITY);
        if (lane == 0) {
            scratch[0] = t;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    m = scratch[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);

    float s = 0.0f;
    for (uint j = lid; j < uint(L); j += step) {
        s += metal::fast::exp(x[offset + j] - m);
    }
    s = simd_sum(s);
    if (lane == 0) {
        scratch[sg] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float t = simd_sum(lane < nsg ? scratch[lane] : 0.0f);
        if (lane == 0) {
            scratch[0] = t;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float inv = 1.0f / scratch[0];
    for (uint j = lid; j < uint(L); j += step) {
        y[offset + j] = metal::fast::exp(x[offset + j] - m) * inv;
    }
    """,
    inputs=("x",),
    outputs=("y",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_SM_ROWS, _SM_COLS), -8.0, 8.0),),
        (np.empty((_SM_ROWS, _SM_COLS), np.float32),),
        128 * _SM_ROWS,
    ),
    reference=_softmax_reference,
    threadgroup=128,
    template={"L": _SM_COLS},
    rtol=1e-5,
    atol=1e-7,
    features=("simd_max", "simd_sum", "fast::exp", "INFINITY", "two-level-reduction"),
)

# 21. Layer norm with one SIMD group per row (threadgroups of 32x4 threads: four rows), two-pass
# mean and variance with simd_sum, affine weight and bias. 37 rows: the last threadgroup is
# partial in y.
_LN_ROWS, _LN_D = 37, 96


def _layernorm_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray,
                         eps: float) -> tuple[np.ndarray]:
    v = x.astype(np.float64)
    mean = v.mean(axis=1, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=1, keepdims=True)
    return ((v - mean) / np.sqrt(var + eps) * w + b,)


_add(
    name="layer_norm_simd",
    source="""
    uint row = thread_position_in_grid.y;
    uint lane = thread_index_in_simdgroup;
    const uint offset = row * D;
    float s = 0.0f;
    for (uint j = lane; j < D; j += 32) {
        s += x[offset + j];
    }
    float mean = simd_sum(s) / float(D);
    float q = 0.0f;
    for (uint j = lane; j < D; j += 32) {
        float d = x[offset + j] - mean;
        q += d * d;
    }
    float inv_std = rsqrt(simd_sum(q) / float(D) + eps[0]);
    for (uint j = lane; j < D; j += 32) {
        y[offset + j] = (x[offset + j] - mean) * inv_std * w[j] + b[j];
    }
    """,
    inputs=("x", "w", "b", "eps"),
    outputs=("y",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_LN_ROWS, _LN_D), -3, 5), _f32(rng, _LN_D, 0.5, 1.5), _f32(rng, _LN_D),
         1e-5),
        (np.empty((_LN_ROWS, _LN_D), np.float32),),
        (32, _LN_ROWS),
    ),
    reference=_layernorm_reference,
    threadgroup=(32, 4),
    template={"D": _LN_D},
    rtol=1e-4,
    atol=1e-5,
    features=("simd_sum", "rsqrt", "2d-grid", "partial-threadgroup"),
)

# =============================================================================================
# Sorting
# =============================================================================================

# 22. Bitonic sort of 256 keys (with their indices as payload) inside each threadgroup.
_SORT_N = 2048


def _bitonic_reference(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    blocks = keys.reshape(-1, 256)
    order = np.argsort(blocks, axis=1, kind="stable")
    idx = order + 256 * np.arange(blocks.shape[0])[:, None]
    return np.take_along_axis(blocks, order, axis=1).reshape(-1), idx.reshape(-1)


_add(
    name="bitonic_sort_threadgroup",
    source="""
    threadgroup float k_s[256];
    threadgroup int i_s[256];
    uint l = thread_index_in_threadgroup;
    uint g = thread_position_in_grid.x;
    k_s[l] = keys[g];
    i_s[l] = int(g);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 2; k <= 256; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            uint partner = l ^ j;
            if (partner > l) {
                bool ascending = (l & k) == 0;
                float a = k_s[l];
                float b = k_s[partner];
                if ((a > b) == ascending) {
                    k_s[l] = b;
                    k_s[partner] = a;
                    int t = i_s[l];
                    i_s[l] = i_s[partner];
                    i_s[partner] = t;
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
    sorted_keys[g] = k_s[l];
    order[g] = i_s[l];
    """,
    inputs=("keys",),
    outputs=("sorted_keys", "order"),
    make_args=lambda rng: Launch(
        (rng.permutation(_SORT_N).astype(np.float32) * np.float32(0.5),),
        (np.empty(_SORT_N, np.float32), np.empty(_SORT_N, np.int32)),
    ),
    reference=_bitonic_reference,
    features=("bitonic-sort", "threadgroup-array", "threadgroup_barrier"),
)
