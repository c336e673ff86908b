"""Metal conformance cases: reductions, scans and SIMD/quad functions, histograms and atomics, stencils. Registered in ``CASES`` of :mod:`._case` on import."""


from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._case import Launch, _add, _blocks, _ceil_to, _f32

# =============================================================================================
# Reductions
# =============================================================================================

# 1. Threadgroup-memory tree reduction, one partial sum per threadgroup. The grid is rounded up
# to whole threadgroups, and threads past n contribute 0.
_TREE_N = 5000
_add(
    name="tg_tree_sum",
    source="""
    threadgroup float partial[256];
    uint lid = thread_index_in_threadgroup;
    uint i = thread_position_in_grid.x;
    partial[lid] = (i < uint(n[0])) ? x[i] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint stride = threads_per_threadgroup.x / 2; stride > 0; stride >>= 1) {
        if (lid < stride) {
            partial[lid] += partial[lid + stride];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) {
        sums[threadgroup_position_in_grid.x] = partial[0];
    }
    """,
    inputs=("x", "n"),
    outputs=("sums",),
    make_args=lambda rng: Launch(
        (_f32(rng, _TREE_N), _TREE_N),
        (np.empty(_ceil_to(_TREE_N, 256) // 256, np.float32),),
        _ceil_to(_TREE_N, 256),
    ),
    reference=lambda x, n: (_blocks(x.astype(np.float64), 256).sum(axis=1),),
    rtol=1e-5,
    atol=1e-5,
    features=("threadgroup-array", "threadgroup_barrier", "tree-reduction"),
)

# 2. Two-level SIMD reduction (simd_sum within each SIMD group, then across the groups of a
# threadgroup through threadgroup memory), finished with one float atomic add per threadgroup.
# The grid is exactly n threads, so the last threadgroup and its last SIMD group are partial.
_SIMD_N = 10_000
_add(
    name="simd_sum_atomic_total",
    source="""
    threadgroup float simd_partials[32];
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    float s = simd_sum(x[thread_position_in_grid.x]);
    if (lane == 0) {
        simd_partials[sg] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float t = lane < simdgroups_per_threadgroup ? simd_partials[lane] : 0.0f;
        t = simd_sum(t);
        if (lane == 0) {
            atomic_fetch_add_explicit(total, t, memory_order_relaxed);
        }
    }
    """,
    inputs=("x",),
    outputs=("total",),
    make_args=lambda rng: Launch((_f32(rng, _SIMD_N),), (np.empty(1, np.float32),), _SIMD_N),
    reference=lambda x: (np.array([x.astype(np.float64).sum()]),),
    atomic_outputs=True,
    init_value=0.0,
    rtol=1e-4,
    atol=2e-3,
    features=("simd_sum", "two-level-reduction", "atomic-float", "partial-threadgroup"),
)

# 3. Row minimum and maximum, one threadgroup of 128 threads per row, templated on the element
# type T and the row length N (MLX style: Limits<T> gives the identity).
_ROWS_SRC = """
    threadgroup T tg_min[32];
    threadgroup T tg_max[32];
    uint row = threadgroup_position_in_grid.y;
    uint lid = thread_index_in_threadgroup;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    T lo = Limits<T>::max;
    T hi = Limits<T>::min;
    for (uint j = lid; j < uint(N); j += threads_per_threadgroup.x) {
        T v = x[row * N + j];
        lo = min(lo, v);
        hi = max(hi, v);
    }
    lo = simd_min(lo);
    hi = simd_max(hi);
    if (lane == 0) {
        tg_min[sg] = lo;
        tg_max[sg] = hi;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        uint nsg = simdgroups_per_threadgroup;
        lo = simd_min(lane < nsg ? tg_min[lane] : Limits<T>::max);
        hi = simd_max(lane < nsg ? tg_max[lane] : Limits<T>::min);
        if (lane == 0) {
            row_min[row] = lo;
            row_max[row] = hi;
        }
    }
"""


def _rows_args(dtype: Any, rows: int, cols: int) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        if np.dtype(dtype).kind == "f":
            x = _f32(rng, (rows, cols), -100.0, 100.0)
        else:
            x = rng.integers(-(2**31), 2**31 - 1, (rows, cols), dtype=np.int64).astype(dtype)
        return Launch((x,), (np.empty(rows, dtype), np.empty(rows, dtype)), (128, rows))

    return make


for _dtype, _cols, _tag in ((np.float32, 300, "f32"), (np.int32, 77, "i32")):
    _add(
        name=f"row_minmax_{_tag}",
        source=_ROWS_SRC,
        inputs=("x",),
        outputs=("row_min", "row_max"),
        make_args=_rows_args(_dtype, 19, _cols),
        reference=lambda x: (x.min(axis=1), x.max(axis=1)),
        threadgroup=(128, 1),
        template={"T": _dtype, "N": _cols},
        features=("simd_min", "simd_max", "template-type", "template-int", "Limits"),
    )

# 4. Maximum |x| as float bits: for non-negative floats the order of the uint bit patterns is the
# order of the values, so atomic_fetch_max_explicit on uint finds a float maximum.
_add(
    name="absmax_atomic_bits",
    source="""
    float a = fabs(x[thread_position_in_grid.x]);
    float m = simd_max(a);
    if (simd_is_first()) {
        atomic_fetch_max_explicit(result, as_type<uint>(m), memory_order_relaxed);
    }
    """,
    inputs=("x",),
    outputs=("result",),
    make_args=lambda rng: Launch(
        (_f32(rng, 3001, -50.0, 50.0),), (np.empty(1, np.uint32),), 3001
    ),
    reference=lambda x: (np.array([np.abs(x).max()], np.float32).view(np.uint32),),
    atomic_outputs=True,
    init_value=0,
    features=("simd_max", "simd_is_first", "atomic-max-uint", "as_type"),
)

# =============================================================================================
# Prefix sums, shuffles, votes, quads
# =============================================================================================

# 5. Exclusive scan inside each threadgroup: simd_prefix_exclusive_sum within SIMD groups, the
# SIMD-group totals scanned again by the first SIMD group. Also writes each group's total.
_SCAN_N = 3000


def _scan_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    blocks = _blocks(x.astype(np.int64), 256)
    inclusive = np.cumsum(blocks, axis=1)
    exclusive = (inclusive - blocks).reshape(-1)[: x.size]
    return exclusive.astype(np.int32), inclusive[:, -1].astype(np.int32)


_add(
    name="block_exclusive_scan",
    source="""
    threadgroup int simd_totals[32];
    threadgroup int simd_offsets[32];
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    int v = x[thread_position_in_grid.x];
    int before = simd_prefix_exclusive_sum(v);
    int total = simd_sum(v);
    if (lane == 0) {
        simd_totals[sg] = total;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        int t = lane < simdgroups_per_threadgroup ? simd_totals[lane] : 0;
        int offset = simd_prefix_exclusive_sum(t);
        if (lane < simdgroups_per_threadgroup) {
            simd_offsets[lane] = offset;
        }
        int group_total = simd_sum(t);
        if (lane == 0) {
            block_totals[threadgroup_position_in_grid.x] = group_total;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[thread_position_in_grid.x] = simd_offsets[sg] + before;
    """,
    inputs=("x",),
    outputs=("y", "block_totals"),
    make_args=lambda rng: Launch(
        (rng.integers(-50, 100, _SCAN_N).astype(np.int32),),
        (np.empty(_SCAN_N, np.int32), np.empty(_ceil_to(_SCAN_N, 256) // 256, np.int32)),
    ),
    reference=_scan_reference,
    features=("simd_prefix_exclusive_sum", "simd_sum", "two-level-scan", "partial-threadgroup"),
)

# 6. Butterfly all-reduce with simd_shuffle_xor: every lane ends with its SIMD group's sum and
# maximum, then centres its value on the group mean.
_add(
    name="butterfly_shuffle_xor",
    source="""
    uint i = thread_position_in_grid.x;
    float v = x[i];
    float s = v;
    float m = v;
    for (ushort mask = 16; mask > 0; mask >>= 1) {
        s += simd_shuffle_xor(s, mask);
        m = max(m, simd_shuffle_xor(m, mask));
    }
    centred[i] = v - s / float(threads_per_simdgroup);
    group_max[i] = m;
    """,
    inputs=("x",),
    outputs=("centred", "group_max"),
    make_args=lambda rng: Launch(
        (_f32(rng, 2048),), (np.empty(2048, np.float32), np.empty(2048, np.float32))
    ),
    reference=lambda x: (
        (x.reshape(-1, 32) - x.reshape(-1, 32).astype(np.float64).mean(axis=1, keepdims=True)
         ).reshape(-1),
        np.repeat(x.reshape(-1, 32).max(axis=1), 32),
    ),
    rtol=1e-5,
    atol=1e-6,
    features=("simd_shuffle_xor", "butterfly"),
)

# 7. Stream compaction: simd_ballot gives the lanes that keep their value, popcount of the lower
# lanes' bits their rank; one atomic add per SIMD group reserves its slots in the output. Slot
# order depends on the order SIMD groups run, so results are compared sorted.
_COMPACT_N = 4000


def _compact_canonical(outs: tuple[np.ndarray, ...]) -> tuple[Any, ...]:
    kept, count = outs
    k = int(count[0])
    return np.array([k], np.int32), np.sort(kept[:k]), kept[k:]


def _compact_reference(x: np.ndarray, threshold: float) -> tuple[Any, ...]:
    sel = np.sort(x[x > np.float32(threshold)])
    return np.array([sel.size], np.int32), sel, np.zeros(x.size - sel.size, np.float32)


_add(
    name="ballot_compaction",
    source="""
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    float v = x[i];
    bool keep = v > threshold[0];
    uint votes = uint(static_cast<simd_vote::vote_t>(simd_ballot(keep)));
    uint rank = popcount(votes & ((1u << lane) - 1u));
    int base = 0;
    if (simd_is_first()) {
        base = atomic_fetch_add_explicit(count, int(popcount(votes)), memory_order_relaxed);
    }
    base = simd_broadcast_first(base);
    if (keep) {
        atomic_store_explicit(kept + (base + int(rank)), v, memory_order_relaxed);
    }
    """,
    inputs=("x", "threshold"),
    outputs=("kept", "count"),
    make_args=lambda rng: Launch(
        (_f32(rng, _COMPACT_N), 0.3),
        (np.empty(_COMPACT_N, np.float32), np.empty(1, np.int32)),
    ),
    reference=_compact_reference,
    canonical=_compact_canonical,
    atomic_outputs=True,
    init_value=0,
    features=("simd_ballot", "popcount", "simd_broadcast_first", "simd_is_first",
              "atomic-int", "atomic-store"),
)

# 8. Quad-group functions: each quad (4 consecutive threads) centres its values on the quad mean,
# swaps neighbours with quad_shuffle_xor and keeps the quad maximum.
_add(
    name="quad_ops",
    source="""
    uint i = thread_position_in_grid.x;
    float v = x[i];
    float mean = quad_sum(v) * 0.25f;
    float m = quad_max(v);
    centred[i] = v - mean;
    swapped[i] = quad_shuffle_xor(v, 1);
    if (thread_index_in_quadgroup == 0) {
        quad_max_out[i / 4] = m;
    }
    """,
    inputs=("x",),
    outputs=("centred", "swapped", "quad_max_out"),
    make_args=lambda rng: Launch(
        (_f32(rng, 1000),),
        (np.empty(1000, np.float32), np.empty(1000, np.float32), np.empty(250, np.float32)),
    ),
    reference=lambda x: (
        (x.reshape(-1, 4) - x.reshape(-1, 4).astype(np.float64).mean(axis=1, keepdims=True)
         ).reshape(-1),
        x.reshape(-1, 2)[:, ::-1].reshape(-1),
        x.reshape(-1, 4).max(axis=1),
    ),
    rtol=1e-5,
    atol=1e-6,
    features=("quad_sum", "quad_max", "quad_shuffle_xor", "thread_index_in_quadgroup"),
)

# =============================================================================================
# Histograms and deposition (atomics)
# =============================================================================================

# 9. Global histogram with device int atomics; the grid is rounded up and the extra threads
# return early.
_HIST_N = 20_000
_add(
    name="histogram_atomic_int",
    source="""
    uint i = thread_position_in_grid.x;
    if (i >= uint(n[0])) {
        return;
    }
    int b = min(int(values[i] * float(NBINS)), NBINS - 1);
    atomic_fetch_add_explicit(counts + b, 1, memory_order_relaxed);
    """,
    inputs=("values", "n"),
    outputs=("counts",),
    make_args=lambda rng: Launch(
        (rng.random(_HIST_N, dtype=np.float32), _HIST_N),
        (np.empty(40, np.int32),),
        _ceil_to(_HIST_N, 256),
    ),
    reference=lambda v, n: (
        np.bincount(np.minimum((v * np.float32(40)).astype(np.int64), 39), minlength=40),
    ),
    template={"NBINS": 40},
    atomic_outputs=True,
    init_value=0,
    features=("atomic-int", "early-return", "template-int"),
)

# 10. Byte histogram privatised in threadgroup memory: threadgroup atomic_uint bins, a
# grid-stride loop over the data, then one device atomic per non-empty bin.
_BYTES_N = 20_000
_add(
    name="histogram_threadgroup_atomic",
    source="""
    threadgroup atomic_uint local_bins[256];
    uint lid = thread_index_in_threadgroup;
    for (uint b = lid; b < 256; b += threads_per_threadgroup.x) {
        atomic_store_explicit(&local_bins[b], 0u, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = thread_position_in_grid.x; i < uint(n[0]); i += threads_per_grid.x) {
        atomic_fetch_add_explicit(&local_bins[data[i]], 1u, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint b = lid; b < 256; b += threads_per_threadgroup.x) {
        uint c = atomic_load_explicit(&local_bins[b], memory_order_relaxed);
        if (c != 0) {
            atomic_fetch_add_explicit(hist + b, c, memory_order_relaxed);
        }
    }
    """,
    inputs=("data", "n"),
    outputs=("hist",),
    make_args=lambda rng: Launch(
        (rng.binomial(255, 0.4, _BYTES_N).astype(np.uint8), _BYTES_N),
        (np.empty(256, np.uint32),),
        4 * 128,
    ),
    reference=lambda data, n: (np.bincount(data, minlength=256).astype(np.uint32),),
    threadgroup=128,
    atomic_outputs=True,
    init_value=0,
    features=("threadgroup-atomic", "atomic-uint", "grid-stride-loop", "uint8-input"),
)

# 11. Cloud-in-cell charge deposition on a periodic 1-D grid: every particle adds its weight to
# the two nearest nodes with float atomics.
_CIC_NP, _CIC_NG, _CIC_L = 3000, 64, 8.0


def _cic_reference(pos: np.ndarray, q: np.ndarray, inv_dx: float) -> tuple[np.ndarray]:
    xg = pos.astype(np.float64) * np.float32(inv_dx)
    j = np.minimum(np.floor(xg).astype(np.int64), _CIC_NG - 1)
    f = xg - j
    rho = np.zeros(_CIC_NG)
    np.add.at(rho, j, (1 - f) * q)
    np.add.at(rho, (j + 1) % _CIC_NG, f * q)
    return (rho,)


_add(
    name="cic_deposit_atomic_float",
    source="""
    uint p = thread_position_in_grid.x;
    float xg = pos[p] * inv_dx[0];
    float cell = floor(xg);
    int j = min(int(cell), NG - 1);
    float f = xg - float(j);
    float w = q[p];
    atomic_fetch_add_explicit(rho + j, (1.0f - f) * w, memory_order_relaxed);
    atomic_fetch_add_explicit(rho + (j + 1) % NG, f * w, memory_order_relaxed);
    """,
    inputs=("pos", "q", "inv_dx"),
    outputs=("rho",),
    make_args=lambda rng: Launch(
        (rng.uniform(0, _CIC_L, _CIC_NP).astype(np.float32), _f32(rng, _CIC_NP, 0.5, 1.5),
         _CIC_NG / _CIC_L),
        (np.empty(_CIC_NG, np.float32),),
        _CIC_NP,
    ),
    reference=_cic_reference,
    template={"NG": _CIC_NG},
    atomic_outputs=True,
    init_value=0.0,
    rtol=1e-4,
    atol=1e-4,
    features=("atomic-float", "particle-deposition", "template-int"),
)

# =============================================================================================
# Stencils
# =============================================================================================

# 12. 5-point Laplacian on a 2-D grid with a (TILE+2)^2 tile (halo included) in threadgroup
# memory, loaded cooperatively; zero outside the domain. The grid is exactly the domain, so edge
# threadgroups are partial and load only what they need.
_LAP_NY, _LAP_NX = 45, 70


def _laplacian_reference(f: np.ndarray, h2inv: float) -> tuple[np.ndarray]:
    g = np.pad(f.astype(np.float64), 1)
    lap = g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] - 4 * g[1:-1, 1:-1]
    return (lap * h2inv,)


_add(
    name="laplacian_5pt_tile",
    header="#define TILE 16\n",
    source="""
    threadgroup float tile[TILE + 2][TILE + 2];
    uint2 t = thread_position_in_threadgroup.xy;
    int2 origin = int2(threadgroup_position_in_grid.xy * uint2(TILE));
    uint lid = thread_index_in_threadgroup;
    uint nthreads = threads_per_threadgroup.x * threads_per_threadgroup.y;
    for (uint k = lid; k < (TILE + 2) * (TILE + 2); k += nthreads) {
        int ty = int(k) / (TILE + 2);
        int tx = int(k) % (TILE + 2);
        int gy = origin.y + ty - 1;
        int gx = origin.x + tx - 1;
        bool inside = gx >= 0 && gx < NX && gy >= 0 && gy < NY;
        tile[ty][tx] = inside ? f[gy * NX + gx] : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint cx = t.x + 1;
    uint cy = t.y + 1;
    float lap = tile[cy - 1][cx] + tile[cy + 1][cx] + tile[cy][cx - 1] + tile[cy][cx + 1]
              - 4.0f * tile[cy][cx];
    uint2 g = thread_position_in_grid.xy;
    out[g.y * NX + g.x] = lap * h2inv[0];
    """,
    inputs=("f", "h2inv"),
    outputs=("out",),
    make_args=lambda rng: Launch(
        (_f32(rng, (_LAP_NY, _LAP_NX)), 4.0),
        (np.empty((_LAP_NY, _LAP_NX), np.float32),),
        (_LAP_NX, _LAP_NY),
    ),
    reference=_laplacian_reference,
    threadgroup=(16, 16),
    template={"NX": _LAP_NX, "NY": _LAP_NY},
    rtol=1e-5,
    atol=1e-5,
    features=("2d-grid", "threadgroup-2d-array", "halo", "header-define", "swizzle",
              "partial-threadgroup"),
)

# 13. Explicit diffusion steps on a periodic 1-D rod, one halo cell on each side in threadgroup
# memory; the last (partial) threadgroup loads its right halo from its own last thread.
_DIFF_N = 1000


def _diffusion_reference(u: np.ndarray, alpha: float) -> tuple[np.ndarray]:
    v = u.astype(np.float64)
    return (v + alpha * (np.roll(v, 1) - 2 * v + np.roll(v, -1)),)


_add(
    name="diffusion_1d_halo",
    source="""
    threadgroup float s[256 + 2];
    uint i = thread_position_in_grid.x;
    uint l = thread_position_in_threadgroup.x;
    uint n = threads_per_grid.x;
    s[l + 1] = u[i];
    if (l == 0) {
        s[0] = u[(i + n - 1) % n];
    }
    if (l == threads_per_threadgroup.x - 1) {
        s[l + 2] = u[(i + 1) % n];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    u_next[i] = s[l + 1] + alpha[0] * (s[l] - 2.0f * s[l + 1] + s[l + 2]);
    """,
    inputs=("u", "alpha"),
    outputs=("u_next",),
    make_args=lambda rng: Launch((_f32(rng, _DIFF_N), 0.2), (np.empty(_DIFF_N, np.float32),)),
    reference=_diffusion_reference,
    rtol=1e-5,
    atol=1e-6,
    features=("halo", "periodic", "partial-threadgroup"),
)
