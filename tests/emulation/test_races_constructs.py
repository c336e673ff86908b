"""Race checking of the constructs beyond plain subscripts, each racy kernel with its twin (CUDA):
``__device__`` variables, ``memcpy``/``memset`` calls (and struct copies), sub-word accesses
(adjacent bytes and halves of one word are different memory), spin locks built from
``atomicCAS``/``atomicExch`` and ``__threadfence`` (with the fences a critical section needs, and
block scope), block-scoped atomics, and the refusal of a spin-wait that cannot end
in the emulator.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from cunumpy.emulation import DataRaceError, EmulationError, EmulatorOptions, emulate_cuda_kernel
from cunumpy.kernels import CudaKernel

RACES = EmulatorOptions(races=True)

HEAD = """
#include <cstring>
struct Item { int a, b, c; };
__device__ int counter;
__device__ float table[16];
__device__ int lock;
extern "C" __global__ void k(int* y, short* h, Item* items) {
    __shared__ int s[64];
    __shared__ Item sh[64];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
"""

# id -> (racy body, fixed body, regex the report must match)
CASES = {
    "device_variable_written_by_all": (
        "counter = i;",
        "if (i == 0) counter = 5; atomicAdd(&counter, 1);",
        r"data race on __device__ variable 'counter', index 0: write by thread \(\d+,0,0\) "
        r"block \(\d,0,0\) at k\.cu:12 and write by thread",
    ),
    "device_array_read_across_blocks": (
        "if (i < 16) table[i] = 1.0f; __syncthreads(); y[i] = (int)table[(i + 1) % 16];",
        "if (blockIdx.x == 0 && t < 16) table[t] = 1.0f; __syncthreads();"
        " if (blockIdx.x == 0) y[i] = (int)table[(t + 1) % 16];",
        r"__device__ variable 'table', index \d+: read by thread \(\d+,0,0\) block \(1,0,0\) .*"
        r"different blocks are never ordered",
    ),
    "memset_without_barrier": (
        "if (t == 0) memset(s, 0, sizeof(s)); y[i] = s[t];",
        "if (t == 0) memset(s, 0, sizeof(s)); __syncthreads(); y[i] = s[t];",
        r"shared array 's' \(int\[64\]\), index \d+: (read|write) by thread .* k\.cu:12",
    ),
    "memcpy_of_structs_in_shared_memory": (
        "Item v = {t, t, t}; memcpy(&sh[t], &v, sizeof(Item));"
        " memcpy(&items[i], &sh[63 - t], sizeof(Item));",
        "Item v = {t, t, t}; memcpy(&sh[t], &v, sizeof(Item)); __syncthreads();"
        " memcpy(&items[i], &sh[63 - t], sizeof(Item));",
        r"shared array 'sh' \(Item\[64\]\), index (31|32): (read|write) by thread",
    ),
    "memcpy_into_a_buffer": (
        "std::memcpy(&y[i / 2], &t, sizeof(int));",
        "std::memcpy(&y[i], &t, sizeof(int));",
        r"argument 'y' \(int32\[\d+\]\), index \d+: write by thread .* and write by thread",
    ),
    "struct_copy_in_shared_memory": (
        "sh[t] = items[i]; items[i] = sh[(t + 1) % 64];",
        "sh[t] = items[i]; __syncthreads(); items[i] = sh[(t + 1) % 64];",
        r"shared array 'sh' \(Item\[64\]\), index \d+: (read|write) by thread",
    ),
    "bytes_of_one_word": (
        "((unsigned char*)y)[i / 2] = (unsigned char)(t + 1);",
        "((unsigned char*)y)[i] = (unsigned char)(t + 1);",
        r"argument 'y' \(int32\[\d+\]\), index \d+( \(byte \d\))?: write by thread \(\d+,0,0\)",
    ),
    "halves_of_one_word_in_shared_memory": (
        "((short*)s)[t] = (short)t; y[i] = ((short*)s)[t ^ 1];",
        "((short*)s)[t] = (short)t; __syncthreads(); y[i] = ((short*)s)[t ^ 1];",
        r"shared array 's' \(int\[64\]\), index \d+( \(byte 2\))?: (read|write) by thread",
    ),
    "short_elements_named_exactly": (
        "h[i / 2] = (short)t;",
        "h[i] = (short)t;",
        r"argument 'h' \(int16\[\d+\]\), index (\d+): write by thread \(\d+,0,0\)",
    ),
    "spin_lock_protects_a_critical_section": (
        "if (t == 0) { y[0] += 1; }",
        "if (t == 0) { while (atomicCAS(&lock, 0, 1) != 0) {} __threadfence(); y[0] += 1;"
        " __threadfence(); atomicExch(&lock, 0); }",
        r"argument 'y' .*index 0: (read|write) by thread \(0,0,0\) block \(1,0,0\)",
    ),
    "spin_lock_released_by_a_plain_store": (
        "if (t == 0) { while (atomicCAS(&lock, 0, 1) != 0) {} __threadfence(); y[0] += 1;"
        " __threadfence(); atomicExch(&lock, 0); y[1] += 1; }",
        "if (t == 0) { while (atomicExch(&lock, 1) != 0) {} __threadfence(); y[0] += 1; y[1] += 1;"
        " __threadfence(); *(volatile int*)&lock = 0; }",
        r"argument 'y' .*index 1: (read|write) by thread \(0,0,0\) block \(1,0,0\)",
    ),
    # Atomics are relaxed: a critical section orders its accesses only with a fence after the
    # lock is taken and one before it is released.
    "critical_section_without_fences": (
        "if (t == 0) { while (atomicCAS(&lock, 0, 1) != 0) {} y[2] += 1; atomicExch(&lock, 0); }",
        "if (t == 0) { while (atomicCAS(&lock, 0, 1) != 0) {} __threadfence(); y[2] += 1;"
        " __threadfence(); atomicExch(&lock, 0); }",
        r"argument 'y' .*index 2: (read|write) by thread \(0,0,0\) block \(1,0,0\)",
    ),
    "critical_section_without_release_fence": (
        "if (t == 0) { while (atomicCAS(&lock, 0, 1) != 0) {} __threadfence(); y[3] += 1;"
        " atomicExch(&lock, 0); }",
        "if (t == 0) { while (atomicCAS(&lock, 0, 1) != 0) {} __threadfence(); y[3] += 1;"
        " __threadfence(); atomicExch(&lock, 0); }",
        r"argument 'y' .*index 3: (read|write) by thread \(0,0,0\) block \(1,0,0\)",
    ),
    # Block scope: atomicCAS_block and __threadfence_block order only the threads of one block.
    "block_scoped_lock_between_blocks": (
        "if (t == 0) { while (atomicCAS_block(&lock, 0, 1) != 0) {} __threadfence_block();"
        " y[4] += 1; __threadfence_block(); atomicExch_block(&lock, 0); }",
        "if (t == 0) { while (atomicCAS(&lock, 0, 1) != 0) {} __threadfence(); y[4] += 1;"
        " __threadfence(); atomicExch(&lock, 0); }",
        r"(__device__ variable 'lock', index 0|argument 'y' .*index 4): (atomic )?(read|write) by "
        r"thread \(0,0,0\) block \(1,0,0\).*block-scoped atomics",
    ),
    "block_scoped_lock_within_a_block": (
        "if (t == 0) { s[0] = 0; s[1] = 0; } __syncthreads(); if (t % 32 == 0) {"
        " while (atomicCAS_block(&s[0], 0, 1) != 0) {} s[1] += 1; atomicExch_block(&s[0], 0); }",
        "if (t == 0) { s[0] = 0; s[1] = 0; } __syncthreads(); if (t % 32 == 0) {"
        " while (atomicCAS_block(&s[0], 0, 1) != 0) {} __threadfence_block(); s[1] += 1;"
        " __threadfence_block(); atomicExch_block(&s[0], 0); }",
        r"shared array 's' .*index 1: (read|write) by thread \(32,0,0\) block \(\d,0,0\)",
    ),
    "block_scoped_atomics_between_blocks": (
        "if (t == 0) atomicAdd_block(&y[5], 1);",
        "if (t == 0) atomicAdd(&y[5], 1);",
        r"argument 'y' .*index 5: atomic (read|write) by thread \(0,0,0\) block \(1,0,0\) .*"
        r"atomic (read|write) by thread \(0,0,0\) block \(0,0,0\).*block-scoped atomics",
    ),
}


def _launch(body: str, y: np.ndarray, h: np.ndarray, items: np.ndarray) -> None:
    src = HEAD + "    " + body + "\n}\n"
    emulate_cuda_kernel(CudaKernel(src, "k"), y, h, items, grid=2, block=64, options=RACES)


def _arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    item = np.dtype([("a", "<i4"), ("b", "<i4"), ("c", "<i4")])
    return np.zeros(128, np.int32), np.zeros(128, np.int16), np.zeros(128, item)


@pytest.mark.parametrize("case", sorted(CASES))
def test_racy_construct_is_reported(case: str) -> None:
    racy, _, match = CASES[case]
    with pytest.raises(DataRaceError) as info:
        _launch(racy, *_arrays())
    msg = str(info.value)
    assert re.search(match, msg), msg
    assert len(re.findall(r" at k\.cu:\d+", msg)) == 2, msg


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixed_construct_runs_clean(case: str) -> None:
    y, h, items = _arrays()
    _launch(CASES[case][1], y, h, items)
    if case == "spin_lock_protects_a_critical_section":
        assert y[0] == 2
    if case == "bytes_of_one_word":
        assert y.view(np.uint8)[1] == 2
    if case == "short_elements_named_exactly":
        assert h[1] == 1 and h[64] == 0


def test_spin_wait_on_a_later_block_is_refused_not_hung() -> None:
    # Block 0 waits for a flag block 1 sets: the emulator runs block 0 first, so it cannot end.
    src = """extern "C" __global__ void wait(int* y, int* flag) {
    if (blockIdx.x == 0) { while (atomicAdd(flag, 0) == 0) {} y[0] = 1; }
    else if (threadIdx.x == 0) atomicExch(flag, 1);
}"""
    with pytest.raises(EmulationError, match=r"repeated an atomic operation \d+ times on device "
                                             r"memory and saw the same value"):
        emulate_cuda_kernel(CudaKernel(src, "wait"), np.zeros(1, np.int32),
                            np.zeros(1, np.int32), grid=2, block=32, options=RACES)


def test_flag_published_with_a_fence_is_not_a_race() -> None:
    # Block 0 writes data, fences, raises a flag; block 1 (run later) waits for it, then reads.
    src = """extern "C" __global__ void pub(int* y, int* flag) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        y[5] = 42; __threadfence(); atomicExch(flag, 1);
    } else if (blockIdx.x == 1 && threadIdx.x == 0) {
        while (atomicAdd(flag, 0) == 0) {}
        y[6] = y[5];
    }
}"""
    y = np.zeros(8, np.int32)
    emulate_cuda_kernel(CudaKernel(src, "pub"), y, np.zeros(1, np.int32), grid=2, block=32,
                        options=RACES)
    assert y[6] == 42


MESSAGE = """
extern "C" __global__ void mp(int* y) {
    int t = threadIdx.x, b = blockIdx.x;
    if (b == 0 && t == 0) { y[0] = 5; FENCE atomicExch(&y[127], 1); }
    else if (b == READER && t == TR) { while (atomicAdd(&y[127], 0) == 0) {} y[1] = y[0]; }
}
"""


@pytest.mark.parametrize(("reader", "fence", "racy"), [
    ((0, 32), "", True),
    ((0, 32), "__threadfence_block();", False),
    ((0, 32), "__threadfence();", False),
    ((1, 0), "", True),
    ((1, 0), "__threadfence_block();", True),
    ((1, 0), "__threadfence();", False),
], ids=["warps-no-fence", "warps-block-fence", "warps-fence", "blocks-no-fence",
        "blocks-block-fence", "blocks-fence"])
def test_message_passing_through_a_flag(reader: tuple[int, int], fence: str, racy: bool) -> None:
    # A write, a fence, then an atomic that raises a flag: a thread that sees the flag through
    # an atomic reads the write ordered, when the fence's scope reaches it.
    src = (MESSAGE.replace("FENCE", fence).replace("READER", str(reader[0]))
           .replace("TR", str(reader[1])))
    y = np.zeros(128, np.int32)
    run = lambda: emulate_cuda_kernel(CudaKernel(src, "mp"), y, grid=2, block=64,  # noqa: E731
                                      options=RACES)
    if racy:
        with pytest.raises(DataRaceError, match=r"argument 'y' .*index 0: read by thread"):
            run()
    else:
        run()
        assert y[1] == 5
