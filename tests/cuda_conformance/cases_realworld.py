"""Conformance kernels in the style of CUDA code found in public projects (issue 11): cooperative
groups.

Each case is written for this suite: blocks, static and dynamic tiles (also tiles larger than a
warp), coalesced groups, labeled and binary partitions under divergence, ``cg::reduce``, scans,
the type-erased ``thread_group`` and ``memcpy_async``. The same expected values hold on a GPU
(``cupy``) and on the emulator (``emu-cuda``): results that depend on the order of floating-point
operations are compared with a tolerance, everything else exactly. Library headers, types and
builtins are in ``cases_headers.py``.
"""

from __future__ import annotations

import numpy as np

from .cases import Args, Case, _blocks, _f32

CASES: list[Case] = []


def case(**kwargs) -> None:
    CASES.append(Case(**kwargs))


# 1. cooperative groups: block + tile<32> reduction (shfl_down, shared memory, cg::reduce) ----
case(
    id="cg_block_reduce_tile32",
    name="cg_block_sum",
    source=r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cg_block_sum(int n, const float* x, float* sums, float* warp_sums) {
    __shared__ float partial[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    unsigned int i = block.group_index().x * block.size() + block.thread_rank();
    float v = i < n ? x[i] : 0.0f;
    float w = cg::reduce(tile, v, cg::plus<float>());
    for (int offset = tile.size() / 2; offset > 0; offset /= 2)
        v += tile.shfl_down(v, offset);
    if (tile.thread_rank() == 0) {
        partial[tile.meta_group_rank()] = v;
        warp_sums[blockIdx.x * tile.meta_group_size() + tile.meta_group_rank()] = w;
    }
    block.sync();
    if (tile.meta_group_rank() == 0) {
        float s = tile.thread_rank() < tile.meta_group_size() ? partial[tile.thread_rank()] : 0.0f;
        s = cg::reduce(tile, s, cg::plus<float>());
        if (block.thread_rank() == 0) sums[blockIdx.x] = s;
    }
}
""",
    inputs=lambda rng: [3000, _f32(rng, 3000), np.zeros(12, np.float32), np.zeros(96, np.float32)],
    reference=lambda a: {
        2: _blocks(a[1].astype(np.float64), 256).sum(axis=1),
        3: _blocks(_blocks(a[1].astype(np.float64), 3072).reshape(-1), 32).sum(axis=1),
    },
    launch=lambda a: {"n_threads": a[0], "block": 256},
    rtol=1e-5,
    atol=1e-5,
    features=("cooperative-groups", "cg-reduce", "shared"),
)


# 2. cg::reduce with every operator, static tile<16> and a dynamic tiled_partition(block, 8) ---
def _reduce_ops_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1]
    t16 = x.reshape(-1, 16)
    t8 = x.reshape(-1, 8)
    out = np.stack([
        np.repeat(t16.sum(axis=1), 16),
        np.repeat(t16.max(axis=1), 16),
        np.repeat(t16.min(axis=1), 16),
        np.repeat(np.bitwise_xor.reduce(t16, axis=1), 16),
        np.repeat(np.bitwise_and.reduce(t8 | 0x100, axis=1), 8),
        np.repeat(np.bitwise_or.reduce(t8 & 0xFF, axis=1), 8),
    ], axis=1)
    return {2: out.astype(np.int32)}


case(
    id="cg_reduce_operators_tiles",
    name="cg_reduce_ops",
    source=r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cg_reduce_ops(int n, const int* x, int* out) {
    auto block = cg::this_thread_block();
    auto t16 = cg::tiled_partition<16>(block);
    cg::thread_group t8 = cg::tiled_partition(block, 8);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    int* o = out + 6 * i;
    o[0] = cg::reduce(t16, v, cg::plus<int>());
    o[1] = cg::reduce(t16, v, cg::greater<int>());
    o[2] = cg::reduce(t16, v, cg::less<int>());
    o[3] = cg::reduce(t16, v, cg::bit_xor<int>());
    auto tile8 = cg::tiled_partition<8>(block);
    o[4] = cg::reduce(tile8, v | 0x100, cg::bit_and<int>());
    o[5] = cg::reduce(tile8, v & 0xFF, cg::bit_or<int>());
    t8.sync();
    cg::sync(block);
}
""",
    inputs=lambda rng: [
        512, rng.integers(-1000, 1000, 512).astype(np.int32), np.zeros(512 * 6, np.int32)
    ],
    reference=_reduce_ops_reference,
    launch=lambda a: {"n_threads": a[0], "block": 128},
    features=("cooperative-groups", "cg-reduce", "dynamic-tile"),
)


# 3. tile votes and shuffles on a 2-D block: ballot/any/all/shfl/shfl_up/shfl_xor --------------
def _tile_votes_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[0]  # one block of 16 x 8 threads, linear rank = y * 16 + x
    t = x.reshape(-1, 8)  # tiles of 8 consecutive ranks
    pred = t > 0
    bits = (pred.astype(np.int64) << np.arange(8)).sum(axis=1)
    rank = np.arange(8)
    out = np.zeros((t.shape[0], 8, 7), np.int64)
    out[:, :, 0] = bits[:, None]
    out[:, :, 1] = pred.any(axis=1)[:, None]
    out[:, :, 2] = pred.all(axis=1)[:, None]
    out[:, :, 3] = t[:, 5][:, None]
    up = np.where(rank >= 2, np.roll(t, 2, axis=1), t)
    out[:, :, 4] = up
    out[:, :, 5] = t[:, rank ^ 3]
    out[:, :, 6] = np.arange(t.shape[0])[:, None] * 100 + rank
    return {1: out.reshape(-1).astype(np.int32)}


case(
    id="cg_tile_votes_shuffles_2d_block",
    name="cg_votes",
    source=r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ void tile_ops(cg::thread_block_tile<8> t, int v, int* o) {
    o[0] = (int)t.ballot(v > 0);
    o[1] = t.any(v > 0);
    o[2] = t.all(v > 0);
    o[3] = t.shfl(v, 5);
    o[4] = t.shfl_up(v, 2);
    o[5] = t.shfl_xor(v, 3);
    o[6] = (int)(t.meta_group_rank() * 100 + t.thread_rank());
}

extern "C" __global__ void cg_votes(const int* x, int* out) {
    cg::thread_block b = cg::this_thread_block();
    int r = threadIdx.y * blockDim.x + threadIdx.x;
    cg::thread_block_tile<8> t = cg::tiled_partition<8>(b);
    tile_ops(t, x[r], out + 7 * b.thread_rank());
}
""",
    inputs=lambda rng: [rng.integers(-3, 12, 128).astype(np.int32), np.zeros(128 * 7, np.int32)],
    reference=_tile_votes_reference,
    launch=lambda a: {"grid": 1, "block": (16, 8)},
    features=("cooperative-groups", "tile-votes", "2d-block"),
)


# 4. coalesced groups: warp-aggregated atomics inside a branch --------------------------------
def _coalesced_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1]
    pred = (x % 3 == 0).reshape(-1, 32)
    ranks = np.cumsum(pred, axis=1) - 1
    sizes = pred.sum(axis=1, keepdims=True)
    info = np.where(pred, ranks + 100 * sizes, -1).reshape(-1)
    sums = np.where(pred, (x.reshape(-1, 32) * pred).sum(axis=1, keepdims=True), 0).reshape(-1)
    return {2: info.astype(np.int32), 3: np.array([pred.sum()], np.int32), 4: sums.astype(np.int32)}


case(
    id="cg_coalesced_aggregated_atomics",
    name="cg_coalesced",
    source=r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__device__ int aggregated_increment(int* counter) {
    cg::coalesced_group active = cg::coalesced_threads();
    int base = 0;
    if (active.thread_rank() == 0) base = atomicAdd(counter, (int)active.size());
    return active.shfl(base, 0) + active.thread_rank();
}

extern "C" __global__ void cg_coalesced(int n, const int* x, int* info, int* counter, int* sums) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    info[i] = -1;
    sums[i] = 0;
    if (x[i] % 3 == 0) {
        cg::coalesced_group g = cg::coalesced_threads();
        info[i] = (int)(g.thread_rank() + 100 * g.size());
        sums[i] = cg::reduce(g, x[i], cg::plus<int>());
        aggregated_increment(counter);
    }
}
""",
    inputs=lambda rng: [
        1024, rng.integers(0, 50, 1024).astype(np.int32), np.zeros(1024, np.int32),
        np.zeros(1, np.int32), np.zeros(1024, np.int32),
    ],
    reference=_coalesced_reference,
    launch=lambda a: {"n_threads": a[0], "block": 128},
    features=("cooperative-groups", "coalesced-group", "atomics"),
)


# 5. tile scans (<cooperative_groups/scan.h>) ------------------------------------------------
case(
    id="cg_tile_inclusive_exclusive_scan",
    name="cg_scan",
    source=r"""
#include <cooperative_groups.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cg_scan(const int* x, int* inc, int* exc) {
    auto tile = cg::tiled_partition<32>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    inc[i] = cg::inclusive_scan(tile, x[i]);
    exc[i] = cg::exclusive_scan(tile, x[i], cg::plus<int>());
}
""",
    inputs=lambda rng: [
        rng.integers(-9, 10, 256).astype(np.int32), np.zeros(256, np.int32),
        np.zeros(256, np.int32),
    ],
    reference=lambda a: {
        1: np.cumsum(a[0].reshape(-1, 32), axis=1).reshape(-1).astype(np.int32),
        2: (np.cumsum(a[0].reshape(-1, 32), axis=1) - a[0].reshape(-1, 32))
        .reshape(-1).astype(np.int32),
    },
    launch=lambda a: {"grid": 4, "block": 64},
    features=("cooperative-groups", "cg-scan"),
)


# 6. the type-erased thread_group passed to a helper, and memcpy_async into shared memory ------
def _thread_group_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[0].reshape(-1, 128).astype(np.int64)
    block = x.sum(axis=1)
    tiles = x.reshape(x.shape[0], -1, 16).sum(axis=2)
    out = np.concatenate([block[:, None], tiles], axis=1)
    return {1: out.reshape(-1).astype(np.int32)}


case(
    id="cg_thread_group_helper_memcpy_async",
    name="cg_group_sum",
    source=r"""
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;

// Sum of `val` over the group, through shared scratch of one int per member of the group.
__device__ int group_sum(cg::thread_group g, int* scratch, int val) {
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        scratch[lane] = val;
        g.sync();
        if (lane < i) val += scratch[lane + i];
        g.sync();
    }
    return val;
}

extern "C" __global__ void cg_group_sum(const int* x, int* out) {
    __shared__ int staged[128];
    __shared__ int scratch[128];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, staged, x + blockIdx.x * 128, sizeof(int) * 128);
    cg::wait(block);
    int v = staged[block.thread_rank()];
    int total = group_sum(block, scratch, v);
    block.sync();
    cg::thread_group tile = cg::tiled_partition(block, 16);
    int base = block.thread_rank() - tile.thread_rank();
    int part = group_sum(tile, scratch + base, v);
    if (block.thread_rank() == 0) out[blockIdx.x * 9] = total;
    if (tile.thread_rank() == 0) out[blockIdx.x * 9 + 1 + block.thread_rank() / 16] = part;
}
""",
    inputs=lambda rng: [rng.integers(-50, 50, 384).astype(np.int32), np.zeros(27, np.int32)],
    reference=_thread_group_reference,
    launch=lambda a: {"grid": 3, "block": 128},
    features=("cooperative-groups", "thread-group", "memcpy-async"),
)


# 7. partitions of a tile by label and by predicate, in a grid-stride loop with divergence ----
def _partition_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1]
    n = a[0]
    stride = 2 * 128  # grid x block of the launch
    counts = np.zeros(4, np.int64)
    sums = np.zeros(2, np.int64)
    for start in range(0, n, stride):
        chunk = x[start:start + stride]
        for w in range(0, chunk.size, 32):
            lanes = chunk[w:w + 32]
            for label in range(4):
                counts[label] += (lanes % 4 == label).sum()
            sums[0] += lanes[lanes % 2 == 1].sum()
            sums[1] += lanes[lanes % 2 == 0].sum()
    maxes = np.array([x[x % 4 == k].max() for k in range(4)], np.int64)
    return {2: counts.astype(np.int32), 3: sums.astype(np.int32), 4: maxes.astype(np.int32)}


case(
    id="cg_labeled_binary_partition",
    name="cg_partitions",
    source=r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cg_partitions(int n, const int* x, int* counts, int* sums, int* maxes) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int v = x[i];
        auto parity = cg::binary_partition(warp, v & 1);
        if (v & 1) {
            int s = cg::reduce(parity, v, cg::plus<int>());
            if (parity.thread_rank() == 0) atomicAdd(&sums[0], s);
        } else {
            int s = cg::reduce(parity, v, cg::plus<int>());
            if (parity.thread_rank() == 0) atomicAdd(&sums[1], s);
        }
        cg::coalesced_group active = cg::coalesced_threads();
        auto same = cg::labeled_partition(active, v % 4);
        int m = cg::reduce(same, v, cg::greater<int>());
        if (same.thread_rank() == 0) {
            atomicAdd(&counts[v % 4], (int)same.size());
            atomicMax(&maxes[v % 4], m);
        }
        cg::sync(warp);
    }
}
""",
    inputs=lambda rng: [
        1024, rng.integers(0, 1000, 1024).astype(np.int32), np.zeros(4, np.int32),
        np.zeros(2, np.int32), np.zeros(4, np.int32),
    ],
    reference=_partition_reference,
    launch=lambda a: {"grid": 2, "block": 128},
    features=("cooperative-groups", "labeled-partition", "binary-partition", "divergence"),
)


# 8. tiles of more than a warp: tile<64> and tile<128> reductions and ranks -------------------
def _large_tiles_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[0].astype(np.int64)
    t64 = np.repeat(x.reshape(-1, 64).sum(axis=1), 64)
    t128 = np.repeat(x.reshape(-1, 128).sum(axis=1), 128)
    r = np.arange(x.size) % 256
    meta = (r // 64) * 10 + (r // 128)
    return {1: t64.astype(np.int32), 2: t128.astype(np.int32), 3: meta.astype(np.int32)}


case(
    id="cg_tiles_larger_than_a_warp",
    name="cg_large_tiles",
    source=r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cg_large_tiles(const int* x, int* s64, int* s128, int* meta) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<64> t64 = cg::tiled_partition<64>(block);
    cg::thread_block_tile<128> t128 = cg::tiled_partition<128>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    s64[i] = cg::reduce(t64, v, cg::plus<int>());
    t64.sync();
    s128[i] = cg::reduce(t128, v, cg::plus<int>());
    meta[i] = (int)(t64.meta_group_rank() * 10 + t128.meta_group_rank());
}
""",
    inputs=lambda rng: [
        rng.integers(-100, 100, 768).astype(np.int32), np.zeros(768, np.int32),
        np.zeros(768, np.int32), np.zeros(768, np.int32),
    ],
    reference=_large_tiles_reference,
    launch=lambda a: {"grid": 3, "block": 256},
    features=("cooperative-groups", "large-tiles"),
)
