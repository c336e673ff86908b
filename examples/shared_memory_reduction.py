"""Debugging a shared-memory reduction with the CUDA emulator's checks.

A block reduction is the classic kernel with shared memory: each block of 256 threads loads 256
elements into a ``__shared__`` array and halves it step by step, with a barrier between steps,
until thread 0 holds the block's sum. Two slips are easy to make and, on a GPU, silent: a
barrier inside the ``if`` that only half the threads take (a hang or garbage), and a first step
that reads past the end of the shared array (garbage). The CPU emulator stops at each with the
kernel, the line, the array and the thread, so this script shows both being caught, then checks
the fixed kernel against its host version with ``assert_kernels_agree``.

Run it with ``python3 examples/shared_memory_reduction.py``; it needs a C++ compiler (the
emulator builds the kernels as C++), not a GPU.
"""

from __future__ import annotations

import numpy as np

import cunumpy as xp
from cunumpy.emulation import BarrierDivergenceError, OutOfBoundsError
from cunumpy.testing import assert_kernels_agree

BLOCK = 256

# The correct kernel. The two buggy versions below differ from it in one line each.
FIXED = r"""
#define BLOCK 256
extern "C" __global__ void block_sums(int n, const float* x, float* partial)
{
    __shared__ float tile[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    tile[t] = i < n ? x[i] : 0.0f;          // threads past the end add zero
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s) {
            tile[t] += tile[t + s];
        }
        __syncthreads();                    // every thread of the block reaches it
    }
    if (t == 0) partial[blockIdx.x] = tile[0];
}
"""

# Bug 1: the barrier moved into the branch that only threads t < s take.
BARRIER_IN_BRANCH = FIXED.replace(
    """            tile[t] += tile[t + s];
        }
        __syncthreads();                    // every thread of the block reaches it""",
    """            tile[t] += tile[t + s];
            __syncthreads();                // only the threads with t < s get here
        }""",
)

# Bug 2: the first step starts at the full block instead of half of it.
READS_PAST_TILE = FIXED.replace("for (int s = BLOCK / 2;", "for (int s = BLOCK;")


def host_block_sums(n: int, x: np.ndarray, partial: np.ndarray) -> None:
    """The host version: the sum of each run of BLOCK elements, in float32."""
    padded = np.zeros(partial.size * BLOCK, dtype=np.float32)
    padded[:n] = x[:n]
    partial[:] = padded.reshape(partial.size, BLOCK).sum(axis=1, dtype=np.float32)


def launch(kernel: xp.kernels.CudaKernel, x: np.ndarray) -> np.ndarray:
    blocks = -(-x.size // BLOCK)
    partial = np.zeros(blocks, dtype=np.float32)
    kernel(x.size, x, partial, grid=blocks, block=BLOCK)
    return partial


def main() -> None:
    rng = np.random.default_rng(7)
    x = rng.random(1000, dtype=np.float32)  # not a multiple of the block: the tail is padded

    # 1. The barrier in a branch: on a GPU a hang or wrong sums; here, the barrier's line.
    buggy = xp.kernels.CudaKernel(BARRIER_IN_BRANCH, engine="emulator")
    try:
        launch(buggy, x)
    except BarrierDivergenceError as exc:
        print("bug 1 caught:", exc)
    else:
        raise AssertionError("the emulator should have reported the divergent barrier")

    # 2. Reading past the shared tile: on a GPU garbage; here, the array, index and thread.
    buggy = xp.kernels.CudaKernel(READS_PAST_TILE, engine="emulator")
    try:
        launch(buggy, x)
    except OutOfBoundsError as exc:
        message = str(exc)
        print("bug 2 caught:", message)
        assert "tile" in message and "index 256" in message, message
    else:
        raise AssertionError("the emulator should have reported tile[256]")

    # 3. The fix agrees with the host version and with NumPy's float64 sum.
    fixed = xp.kernels.CudaKernel(FIXED, engine="emulator", block_size=BLOCK)
    partial = launch(fixed, x)
    total = float(partial.sum(dtype=np.float64))
    print(f"fixed kernel: {partial.size} block sums, total {total:.6f} "
          f"(NumPy float64: {x.sum(dtype=np.float64):.6f})")
    assert abs(total - x.sum(dtype=np.float64)) < 1e-4 * x.size

    kernel = xp.kernels.Kernel(host_block_sums, cuda=fixed)

    def make_args(backend: str, seed: int) -> tuple:
        data = np.random.default_rng(seed).random(3000, dtype=np.float32)
        return data.size, data, np.zeros(-(-data.size // BLOCK), dtype=np.float32)

    ran = assert_kernels_agree(kernel, make_args, ports=["cuda"])
    print(f"assert_kernels_agree: the CUDA port agrees with the host version ({ran})")


if __name__ == "__main__":
    main()
