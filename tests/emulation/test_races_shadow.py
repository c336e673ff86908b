"""The race checker's shadow memory: the compact words of loop-mode launches (one thread per
granule until a second thread, an atomic or a partial access moves the granule into a full
entry), shadow reused from launch to launch with other sizes and kinds, and launch numbers that
wrap. Each racy kernel must raise :class:`DataRaceError` naming both accesses; each twin must run
clean.
"""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation import DataRaceError, EmulatorOptions, emulate_cuda_kernel
from cunumpy.emulation.metal import run_metal
from cunumpy.kernels import CudaKernel

RACES = EmulatorOptions(races=True)

# Thread 0 writes y[0] then reads it back (its own write: nothing new to record); the other
# threads read y[0] too (racy) or not (fixed). No barrier: a loop-mode launch.
OWN_WRITE = """extern "C" __global__ void own(int* y) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t == 0) y[0] = 5;
    int v = READ;
    y[1 + t] = v;
}"""


def test_read_of_another_threads_write_names_the_write() -> None:
    y = np.zeros(65, np.int32)
    k = CudaKernel(OWN_WRITE.replace("READ", "y[0]"), "own")
    with pytest.raises(DataRaceError) as info:
        emulate_cuda_kernel(k, y, grid=2, block=32, options=RACES)
    msg = str(info.value)
    assert "'y'" in msg and "index 0: read by thread (1,0,0) block (0,0,0) at own.cu:4" in msg, msg
    assert "write by thread (0,0,0) block (0,0,0) at own.cu:3" in msg, msg


def test_own_write_read_back_runs_clean() -> None:
    y = np.zeros(65, np.int32)
    k = CudaKernel(OWN_WRITE.replace("READ", "t == 0 ? y[0] : 0"), "own")
    emulate_cuda_kernel(k, y, grid=2, block=32, options=RACES)
    assert y[0] == 5 and y[1] == 5 and y[2] == 0


def test_metal_read_of_another_threads_write(metal_sig) -> None:
    body = """
uint t = thread_position_in_grid.x;
if (t == 0) y[0] = 5;
int v = READ;
y[1 + t] = v;
"""
    for racy in (True, False):
        y = np.zeros(65, np.int32)
        text = body.replace("READ", "y[0]" if racy else "t == 0 ? y[0] : 0")
        sig = metal_sig(f"own_write_{int(racy)}", text, [], [("y", y)])
        if racy:
            with pytest.raises(DataRaceError, match=r"index 0: read by thread \(1,0,0\) "
                               r"threadgroup \(0,0,0\) at body:4 and write by thread \(0,0,0\) "
                               r"threadgroup \(0,0,0\) at body:3"):
                run_metal(sig, [], [y], (64, 1, 1), (32, 1, 1), init_value=0, options=RACES)
        else:
            run_metal(sig, [], [y], (64, 1, 1), (32, 1, 1), init_value=0, options=RACES)
            assert y[1] == 5 and y[2] == 0


# Part of a granule (the 4 bytes of an int): thread 0 writes y[1] whole, thread 1 a byte of it
# (racy) or of y[2] (fixed); thread 2 and 3 write the two halves of y[3] (different bytes of one
# granule never race).
PARTIAL = """extern "C" __global__ void part(int* y) {
    int t = threadIdx.x;
    if (t == 0) y[1] = 7;
    if (t == 1) ((unsigned char*)y)[BYTE] = 1;
    if (t == 2 || t == 3) ((unsigned short*)y)[6 + (t - 2)] = (unsigned short)t;
}"""


def test_byte_write_into_another_threads_element_races() -> None:
    k = CudaKernel(PARTIAL.replace("BYTE", "5"), "part")
    with pytest.raises(DataRaceError, match=r"index 1: write by thread \(1,0,0\) .*part\.cu:4 "
                       r"and write by thread \(0,0,0\) .*part\.cu:3"):
        emulate_cuda_kernel(k, np.zeros(4, np.int32), grid=1, block=4, options=RACES)


def test_writes_of_different_bytes_of_one_element_run_clean() -> None:
    y = np.zeros(4, np.int32)
    emulate_cuda_kernel(CudaKernel(PARTIAL.replace("BYTE", "8"), "part"), y, grid=1, block=4,
                        options=RACES)
    assert y[1] == 7 and y[2] == 1 and y[3] == 2 | (3 << 16)


INCREMENT = """extern "C" __global__ void inc(int n, int* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[INDEX] += 1;
}"""

TREE = """extern "C" __global__ void tree(int n, int* y) {
    __shared__ int s[64];
    int t = threadIdx.x, i = blockIdx.x * 64 + t;
    s[t] = i < n ? y[i] : 0;
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0 && i < n) y[i] = s[0];
}"""


def test_shadow_reused_across_sizes_and_launch_kinds() -> None:
    # Loop-mode and fiber-mode launches over buffers of other sizes, one after another, reuse
    # each other's shadow memory: no record of one may be read as live by the next.
    clean = CudaKernel(INCREMENT.replace("INDEX", "i"), "inc")
    tree = CudaKernel(TREE, "tree")
    for n in (1000, 64, 4097, 7, 300, 64, 1000):
        y = np.arange(n, dtype=np.int32)
        emulate_cuda_kernel(clean, np.int32(n), y, grid=(n + 63) // 64, block=64, options=RACES)
        emulate_cuda_kernel(tree, np.int32(n), y, grid=(n + 63) // 64, block=64, options=RACES)
        assert y[0] == sum(range(1, min(n, 64) + 1)) and y[1] == 2, (n, y[:4])
    racy = CudaKernel(INCREMENT.replace("INDEX", "i / 2"), "inc")
    with pytest.raises(DataRaceError, match=r"'y' .*index 0: (read|write) by thread \(1,0,0\)"):
        emulate_cuda_kernel(racy, np.int32(64), np.zeros(64, np.int32), grid=1, block=64,
                            options=RACES)


def test_races_found_after_launch_numbers_wrap() -> None:
    # Records carry an 8-bit launch number instead of being cleared: 300 launches wrap it.
    clean = CudaKernel(INCREMENT.replace("INDEX", "i"), "inc")
    racy = CudaKernel(INCREMENT.replace("INDEX", "i / 2"), "inc")
    y = np.zeros(128, np.int32)
    for _ in range(300):
        emulate_cuda_kernel(clean, np.int32(128), y, grid=2, block=64, options=RACES)
    assert (y == 300).all()
    with pytest.raises(DataRaceError):
        emulate_cuda_kernel(racy, np.int32(128), y, grid=2, block=64, options=RACES)
