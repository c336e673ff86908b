"""Metal conformance kernels: MSL bodies written as a Metal programmer would, each with its
arguments and a NumPy reference.

A :class:`Case` is engine-neutral. ``make_args(rng)`` draws the inputs (NumPy arrays, Python
numbers) and the output arrays; ``reference(*inputs)`` computes the expected outputs on host
copies of the inputs. ``harness.py`` launches the case through :class:`cunumpy.kernels.MetalKernel`
on whichever engine is active (MLX on an Apple GPU, the CPU emulator elsewhere), so the same
text is checked by both.

Assumptions about the hardware that a kernel relies on are stated next to it: SIMD groups of 32
lanes (every Apple GPU), quad groups of 4, ``dispatchThreads`` semantics (exactly ``n_threads``
threads, partial edge threadgroups).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CASES", "Case", "Launch"]


@dataclass(frozen=True)
class Launch:
    """The arguments of one launch: inputs in ``Case.inputs`` order, one array per output."""

    inputs: tuple[Any, ...]
    outputs: tuple[np.ndarray, ...]
    n_threads: int | tuple[int, ...] | None = None


@dataclass(frozen=True)
class Case:
    """One Metal kernel, one launch, one NumPy reference.

    Attributes
    ----------
    name : str
        Kernel name (``MetalKernel(name=...)``) and test id.
    source : str
        The MSL body.
    inputs, outputs : tuple of str
        Argument names, in call order.
    make_args : callable
        ``rng -> Launch``.
    reference : callable
        ``*inputs -> tuple`` of expected outputs (after ``canonical``), computed on host copies.
    header : str
        MSL text placed before the kernel (``#define``, helper functions).
    threadgroup : int or tuple of int
        Threads per threadgroup.
    template : mapping, optional
        Compile-time constants (ints, bools, NumPy dtypes as types).
    atomic_outputs, init_value, ensure_row_contiguous
        Passed to :class:`MetalKernel` unchanged.
    canonical : callable, optional
        ``outputs -> tuple``: a canonical form of the kernel's outputs, for results that are
        correct in any order (atomically appended elements are sorted, for instance).
    rtol, atol : float
        Tolerances for floating-point outputs; integer outputs must match exactly.
    features : tuple of str
        The MSL features the kernel exercises (checked against its text by the tests).
    emulator_gap : str, optional
        Why the CPU emulator cannot run this (valid MSL) kernel yet; its emulator runs are
        expected to fail (strict xfail) until the gap is closed.
    """

    name: str
    source: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    make_args: Callable[[np.random.Generator], Launch]
    reference: Callable[..., tuple[Any, ...]]
    header: str = ""
    threadgroup: int | tuple[int, ...] = 256
    template: Mapping[str, Any] | None = None
    atomic_outputs: bool = False
    init_value: float | None = None
    ensure_row_contiguous: bool = True
    canonical: Callable[[tuple[np.ndarray, ...]], tuple[Any, ...]] | None = None
    rtol: float = 1e-6
    atol: float = 0.0
    features: tuple[str, ...] = field(default_factory=tuple)
    emulator_gap: str | None = None

    def kernel_kwargs(self) -> dict[str, Any]:
        """Keywords of :class:`MetalKernel` besides ``emulator_options``."""
        return {
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "name": self.name,
            "header": self.header,
            "threadgroup": self.threadgroup,
            "atomic_outputs": self.atomic_outputs,
            "init_value": self.init_value,
            "ensure_row_contiguous": self.ensure_row_contiguous,
        }


CASES: list[Case] = []


def _add(**kwargs: Any) -> Case:
    c = Case(**kwargs)
    CASES.append(c)
    return c


def _f32(rng: np.random.Generator, shape: Any, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _f64(*arrays: Any) -> list[np.ndarray]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _blocks(x: np.ndarray, width: int, fill: Any = 0) -> np.ndarray:
    """Pad a 1-D array with ``fill`` to a multiple of ``width`` and reshape to (-1, width)."""
    n = -(-x.size // width) * width
    padded = np.full(n, fill, dtype=x.dtype)
    padded[: x.size] = x
    return padded.reshape(-1, width)


def _ceil_to(n: int, m: int) -> int:
    return -(-n // m) * m


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
