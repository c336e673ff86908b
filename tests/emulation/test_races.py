"""Data-race detection on both emulators: each race kind of the memory model, with its corrected
twin, written once in CUDA and once in Metal (side by side in :data:`PAIRS`).

A racy kernel must raise :class:`DataRaceError`; its twin (the same kernel with the missing
synchronisation, atomic or guard added) must run clean and give the right result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from cunumpy.emulation import DataRaceError, EmulatorOptions, emulate_cuda_kernel
from cunumpy.emulation.metal import run_metal
from cunumpy.kernels import CudaKernel

RACES = EmulatorOptions(races=True)


@dataclass(frozen=True)
class Pair:
    """One race kind: CUDA and Metal versions of the racy kernel and of its fix."""

    id: str
    cuda: str                 # CUDA source with RACY/FIXED markers: `/*R*/racy/*F*/fixed/*E*/`
    metal: str                # Metal body, same markers
    threads: int = 64         # threads in all
    group: int = 64           # threads per group
    out: int = 64             # elements of the int32 output `y`
    match: str = ""           # regex the race report must match (both dialects)
    expect: dict = field(default_factory=dict)  # index -> value of the fixed kernel's output


def _pick(text: str, racy: bool) -> str:
    out = []
    rest = text
    while "/*R*/" in rest:
        head, _, rest = rest.partition("/*R*/")
        r, _, rest = rest.partition("/*F*/")
        f, _, rest = rest.partition("/*E*/")
        out.append(head + (r if racy else f))
    out.append(rest)
    return "".join(out)


PAIRS = [
    Pair(
        "shared_read_after_write",
        cuda="""
extern "C" __global__ void k(int* y) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t;
    /*R*//*F*/__syncthreads();/*E*/
    y[t] = s[(t + 1) % 64];
}""",
        metal="""
threadgroup int s[64];
uint t = thread_position_in_threadgroup.x;
s[t] = int(t);
/*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
y[t] = s[(t + 1) % 64];
""",
        match=r"data race on (shared|threadgroup) array 's' \(int\[64\]\), index 1: write by "
              r"thread \(1,0,0\) .* and read by thread \(0,0,0\)",
        expect={0: 1, 63: 0},
    ),
    Pair(
        "shared_write_after_read",
        cuda="""
extern "C" __global__ void k(int* y) {
    __shared__ int s[65];
    int t = threadIdx.x;
    s[t] = t;
    if (t == 0) s[64] = 64;
    __syncthreads();
    int v = s[t + 1];
    /*R*//*F*/__syncthreads();/*E*/
    s[t] = v;
    __syncthreads();
    y[t] = s[t];
}""",
        metal="""
threadgroup int s[65];
uint t = thread_position_in_threadgroup.x;
s[t] = int(t);
if (t == 0) s[64] = 64;
threadgroup_barrier(mem_flags::mem_threadgroup);
int v = s[t + 1];
/*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
s[t] = v;
threadgroup_barrier(mem_flags::mem_threadgroup);
y[t] = s[t];
""",
        match=r"index 1: write by thread \(1,0,0\) .* and read by thread \(0,0,0\)",
        expect={0: 1, 63: 64},
    ),
    Pair(
        "shared_write_after_write",
        cuda="""
extern "C" __global__ void k(int* y) {
    __shared__ int a;
    /*R*/a = threadIdx.x;/*F*/if (threadIdx.x == 0) a = 7;/*E*/
    __syncthreads();
    y[threadIdx.x] = a;
}""",
        metal="""
threadgroup int a;
/*R*/a = int(thread_position_in_threadgroup.x);/*F*/if (thread_position_in_threadgroup.x == 0) a = 7;/*E*/
threadgroup_barrier(mem_flags::mem_threadgroup);
y[thread_position_in_threadgroup.x] = a;
""",
        match=r"'a' \(int\), index 0: write by thread \(1,0,0\) .* and write by thread \(0,0,0\)",
        expect={0: 7, 63: 7},
    ),
    Pair(
        "device_within_a_group",
        cuda="""
extern "C" __global__ void k(int* y) {
    int t = threadIdx.x;
    y[t] = t;
    /*R*//*F*/__syncthreads();/*E*/
    int v = y[(t + 1) % 64];
    __syncthreads();
    y[t] = v;
}""",
        # Metal: a threadgroup-memory barrier does not order device memory.
        metal="""
uint t = thread_position_in_threadgroup.x;
y[t] = int(t);
threadgroup_barrier(/*R*/mem_flags::mem_threadgroup/*F*/mem_flags::mem_device/*E*/);
int v = y[(t + 1) % 64];
threadgroup_barrier(mem_flags::mem_device);
y[t] = v;
""",
        match=r"output|argument",
        expect={0: 1, 63: 0},
    ),
    Pair(
        "device_across_groups",
        cuda="""
extern "C" __global__ void k(int* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = i;
    __syncthreads();
    if (threadIdx.x == 0 && blockIdx.x > 0) y[i] += /*R*/y[i - 1]/*F*/y[i + 1]/*E*/;
}""",
        metal="""
uint i = thread_position_in_grid.x;
y[i] = int(i);
threadgroup_barrier(mem_flags::mem_device);
if (thread_position_in_threadgroup.x == 0 && i > 0) y[i] += /*R*/y[i - 1]/*F*/y[i + 1]/*E*/;
""",
        threads=128, group=32, out=128,
        match=r"index (31|63|95): (read|write) by thread \(0,0,0\) (block|threadgroup) \(\d,0,0\)"
              r".*by thread \(31,0,0\).*different (block|threadgroup)s are never ordered",
        expect={32: 65, 1: 1},
    ),
    Pair(
        "warp_lanes",
        cuda="""
extern "C" __global__ void k(int* y) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t * 3;
    /*R*//*F*/__syncwarp();/*E*/
    y[t] = s[t ^ 1];
}""",
        metal="""
threadgroup int s[64];
uint t = thread_position_in_threadgroup.x;
s[t] = int(t) * 3;
/*R*//*F*/simdgroup_barrier(mem_flags::mem_threadgroup);/*E*/
y[t] = s[t ^ 1];
""",
        match=r"index 1: write by thread \(1,0,0\).* and read by thread \(0,0,0\).*not ordered.*"
              r"(__syncwarp|simdgroup_barrier)",
        expect={0: 3, 1: 0, 63: 186},
    ),
    Pair(
        "lane_sync_does_not_order_other_warps",
        cuda="""
extern "C" __global__ void k(int* y) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t;
    /*R*/__syncwarp();/*F*/__syncthreads();/*E*/
    y[t] = s[63 - t];
}""",
        metal="""
threadgroup int s[64];
uint t = thread_position_in_threadgroup.x;
s[t] = int(t);
/*R*/simdgroup_barrier(mem_flags::mem_threadgroup);/*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
y[t] = s[63 - t];
""",
        match=r"index (63|0): (read|write) by thread \((0|63),0,0\).* and (write|read) by thread "
              r"\((63|0),0,0\)",
        expect={0: 63, 63: 0},
    ),
    Pair(
        "warp_shuffle_orders_lanes",
        cuda="""
extern "C" __global__ void k(int* y) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t;
    int v = /*R*/t/*F*/__shfl_xor_sync(0xffffffffu, t, 1)/*E*/;
    y[t] = s[t ^ 1] + v - v;
}""",
        metal="""
threadgroup int s[64];
uint t = thread_position_in_threadgroup.x;
s[t] = int(t);
int v = /*R*/int(t)/*F*/simd_shuffle_xor(int(t), 1)/*E*/;
y[t] = s[t ^ 1] + v - v;
""",
        match=r"index 1: write by thread \(1,0,0\) .* and read by thread \(0,0,0\)",
        expect={0: 1, 1: 0},
    ),
    Pair(
        "atomic_against_plain",
        cuda="""
extern "C" __global__ void k(int* y) {
    atomicAdd(&y[0], 1);
    if (threadIdx.x == 5) /*R*/y[0] += 100/*F*/atomicAdd(&y[0], 100)/*E*/;
}""",
        metal="""
device atomic_int* c = (device atomic_int*)&y[0];
atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
if (thread_position_in_threadgroup.x == 5) /*R*/y[0] += 100/*F*/atomic_fetch_add_explicit(c, 100, memory_order_relaxed)/*E*/;
""",
        out=1, match=r"index 0: atomic (read|write) by thread \(6,0,0\) .* and write by thread "
                     r"\(5,0,0\)",
        expect={0: 164},
    ),
    Pair(
        "histogram_atomics_across_groups",
        cuda="""
extern "C" __global__ void k(int* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    /*R*/y[i % 4] += 1/*F*/atomicAdd(&y[i % 4], 1)/*E*/;
}""",
        metal="""
uint i = thread_position_in_grid.x;
/*R*/y[i % 4] += 1/*F*/atomic_fetch_add_explicit((device atomic_int*)&y[i % 4], 1, memory_order_relaxed)/*E*/;
""",
        threads=256, group=64, out=4, match=r"index [0-3]: (read|write) by thread",
        expect={0: 64, 3: 64},
    ),
    Pair(
        "cast_shared_bytes",
        cuda="""
extern "C" __global__ void k(int* y) {
    __shared__ unsigned char buf[256];
    int t = threadIdx.x;
    ((unsigned int*)buf)[t] = 0x01010101u * t;  // a C-style cast of the shared array
    /*R*//*F*/__syncthreads();/*E*/
    y[t] = buf[((t + 1) % 64) * 4];
}""",
        metal="""
threadgroup uchar buf[256];
uint t = thread_position_in_threadgroup.x;
((threadgroup uint*)buf)[t] = 0x01010101u * t;
/*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
y[t] = buf[((t + 1) % 64) * 4];
""",
        match=r"'buf' \(u(nsigned )?char\[256\]\), index 4: write by thread \(1,0,0\) .* and "
              r"read by thread \(0,0,0\)",
        expect={0: 1, 62: 63, 63: 0},
    ),
    Pair(
        "derived_pointer_tree_reduction",
        cuda="""
__device__ void step(int* s, int t, int k) { if (t < k) s[t] += s[t + k]; }
extern "C" __global__ void k(int* y) {
    __shared__ int tile[64];
    int* s = tile;
    int t = threadIdx.x;
    s[t] = 1;
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        step(s, t, k);
        /*R*//*F*/__syncthreads();/*E*/
    }
    if (t == 0) y[blockIdx.x] = s[0];
}""",
        metal="""
threadgroup int tile[64];
threadgroup int* s = tile;
uint t = thread_position_in_threadgroup.x;
s[t] = 1;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint k = 32; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    /*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
}
if (t == 0) y[threadgroup_position_in_grid.x] = s[0];
""",
        out=1, match=r"'tile' \(int\[64\]\)",
        expect={0: 64},
    ),
]


def _cuda_run(pair: Pair, racy: bool, y: np.ndarray, make_signature=None) -> None:
    k = CudaKernel(_pick(pair.cuda, racy), "k")
    emulate_cuda_kernel(k, y, grid=(pair.threads // pair.group, 1, 1), block=(pair.group, 1, 1),
                        options=RACES)


def _metal_run(pair: Pair, racy: bool, y: np.ndarray, make_signature=None) -> None:
    body = _pick(pair.metal, racy)
    sig = make_signature(f"{pair.id}_{int(racy)}", body, [], [("y", y)])
    run_metal(sig, [], [y], (pair.threads, 1, 1), (pair.group, 1, 1), init_value=0,
              options=RACES)


RUNNERS = {"cuda": _cuda_run, "metal": _metal_run}


@pytest.mark.parametrize("dialect", ["cuda", "metal"])
@pytest.mark.parametrize("pair", PAIRS, ids=[p.id for p in PAIRS])
def test_racy_kernel_is_reported(pair: Pair, dialect: str, metal_sig) -> None:
    y = np.zeros(pair.out, np.int32)
    with pytest.raises(DataRaceError) as info:
        RUNNERS[dialect](pair, True, y, metal_sig)
    msg = str(info.value)
    engine = "emu-cuda" if dialect == "cuda" else "emu-metal"
    assert msg.startswith(f"[{engine} kernel '"), msg
    assert re.search(pair.match, msg), msg
    # Both source lines are named.
    assert len(re.findall(r" at (k\.cu|body):\d+", msg)) == 2, msg


@pytest.mark.parametrize("dialect", ["cuda", "metal"])
@pytest.mark.parametrize("pair", PAIRS, ids=[p.id for p in PAIRS])
def test_corrected_twin_runs_clean(pair: Pair, dialect: str, metal_sig) -> None:
    y = np.zeros(pair.out, np.int32)
    RUNNERS[dialect](pair, False, y, metal_sig)
    for i, v in pair.expect.items():
        assert y[i] == v, (i, y[:8])


def test_report_names_both_threads_kinds_and_lines() -> None:
    src = """extern "C" __global__ void tree(const float* x, float* out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
    }
    if (t == 0) out[0] = s[0];
}"""
    k = CudaKernel(src, "tree")
    with pytest.raises(DataRaceError) as info:
        emulate_cuda_kernel(k, np.ones(64, np.float32), np.zeros(1, np.float32), grid=1,
                            block=64, options=RACES)
    msg = str(info.value)
    assert msg.startswith(
        "[emu-cuda kernel 'tree'] data race on shared array 's' (float[64]), index 32: "
        "read by thread (0,0,0) block (0,0,0) at tree.cu:7 and write by thread (32,0,0) "
        "block (0,0,0) at tree.cu:4"
    ) or "tree.cu:7" in msg, msg
    assert "further failure" in msg
    assert isinstance(info.value, DataRaceError)


def test_same_value_writes_are_tolerated() -> None:
    k = CudaKernel("""extern "C" __global__ void flag(const int* x, int* found) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (x[i] > 2) found[0] = 1;
}""", "flag")
    found = np.zeros(1, np.int32)
    emulate_cuda_kernel(k, np.arange(256, dtype=np.int32), found, grid=4, block=64,
                        options=RACES)
    assert found[0] == 1


def test_dynamic_shared_memory_race() -> None:
    src = """extern "C" __global__ void dyn(int* y) {
    extern __shared__ int s[];
    s[threadIdx.x] = threadIdx.x;
    SYNC
    y[threadIdx.x] = s[63 - threadIdx.x];
}"""
    y = np.zeros(64, np.int32)
    with pytest.raises(DataRaceError, match=r"shared array 's'"):
        emulate_cuda_kernel(CudaKernel(src.replace("SYNC", ""), "dyn"), y, grid=1, block=64,
                            shared_mem=256, options=RACES)
    emulate_cuda_kernel(CudaKernel(src.replace("SYNC", "__syncthreads();"), "dyn"), y, grid=1,
                        block=64, shared_mem=256, options=RACES)
    assert y[0] == 63


def test_fence_and_atomic_publish_between_blocks() -> None:
    # The last block to finish reads every block's partial result (threadFenceReduction style).
    src = """extern "C" __global__ void last(const float* x, float* partial, unsigned* count,
                                     float* total) {
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = x[blockIdx.x];
        __threadfence();
        unsigned done = atomicInc(count, gridDim.x);
        is_last = (done == gridDim.x - 1);
    }
    __syncthreads();
    if (is_last && threadIdx.x == 0) {
        float s = 0;
        for (int b = 0; b < gridDim.x; ++b) s += partial[b];
        total[0] = s;
    }
}"""
    total = np.zeros(1, np.float32)
    emulate_cuda_kernel(CudaKernel(src, "last"), np.ones(8, np.float32), np.zeros(8, np.float32),
                        np.zeros(1, np.uint32), total, grid=8, block=32, options=RACES)
    assert total[0] == 8


def test_races_off_by_default_and_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    k = CudaKernel("""extern "C" __global__ void w(int* y) { y[0] = threadIdx.x; }""", "w")
    y = np.zeros(1, np.int32)
    monkeypatch.delenv("CUNUMPY_EMULATOR_RACES", raising=False)
    emulate_cuda_kernel(k, y, grid=1, block=4)  # no race checking here
    monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "1")
    with pytest.raises(DataRaceError):
        emulate_cuda_kernel(k, y, grid=1, block=4)
    with pytest.raises(DataRaceError):
        emulate_cuda_kernel(k, y, grid=1, block=4, options=EmulatorOptions(checks=False))
    emulate_cuda_kernel(k, y, grid=1, block=4, options=EmulatorOptions(races=False))



def test_barrier_divergence_is_reported_before_the_races_it_causes(metal_sig) -> None:
    from cunumpy.emulation import BarrierDivergenceError

    body = """
threadgroup int tmp[8];
uint t = thread_position_in_threadgroup.x;
tmp[t] = int(t);
if (t < 4) { threadgroup_barrier(mem_flags::mem_threadgroup); }
y[t] = tmp[7 - t];
"""
    y = np.zeros(8, np.int32)
    sig = metal_sig("skip", body, [], [("y", y)])
    with pytest.raises(BarrierDivergenceError, match="4 of 8 threads wait at the barrier"):
        run_metal(sig, [], [y], (8, 1, 1), (8, 1, 1), init_value=0, options=RACES)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_races_between_groups_are_found_in_any_group_order(seed: int) -> None:
    # Block b reads the element block b - 1 wrote: whichever block runs first, the pair races.
    k = CudaKernel("""extern "C" __global__ void nb(int* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = i;
    if (threadIdx.x == 0 && blockIdx.x > 0) y[i] += y[i - 1];
}""", "nb")
    with pytest.raises(DataRaceError, match=r"different blocks are never ordered"):
        emulate_cuda_kernel(k, np.zeros(256, np.int32), grid=8, block=32,
                            options=EmulatorOptions(races=True, random_order=True, seed=seed))


def test_race_default_follows_the_context_and_the_environment(monkeypatch) -> None:
    from cunumpy import config
    from cunumpy.emulation._options import checking_races, resolve_options

    monkeypatch.delenv("CUNUMPY_EMULATOR_RACES", raising=False)
    assert resolve_options(None).races is False
    with checking_races():
        assert resolve_options(None).races is True
        assert resolve_options(EmulatorOptions()).races is True
        assert resolve_options(EmulatorOptions(races=False)).races is False
    monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "0")
    with checking_races():
        assert resolve_options(None).races is False
    monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "maybe")
    with pytest.raises(ValueError, match="CUNUMPY_EMULATOR_RACES"):
        config.emulator_races()
