"""A host-side CUDA engine that records launches, and the kernels the CudaKernel tests use.

The engine is registered through the same seam the CPU emulator uses (``register_cuda_engine``)
and records what it is given instead of running the kernel; ``conftest.py`` makes the ``rec``
and ``saxpy`` fixtures from it.
"""

from __future__ import annotations

import numpy as np

from cunumpy._engines._cuda import DEFAULT_LIMITS, CudaLimits
from cunumpy.kernels import (
    CudaEngine,
)

SAXPY = r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

TYPES = r"""
extern "C" __global__ void types(bool b, unsigned int u, long long q, double d, short s,
                                 unsigned char c, const double* in, double* out) {}
"""


class SyncFailure(Exception):
    """What the recording engine's synchronize raises when told to fail."""


class RecordingEngine(CudaEngine):
    """A host-side engine that records launches: the seam as the CPU emulator will use it."""

    name = "host-record"
    array_space = "host"

    def __init__(self, limits: CudaLimits = DEFAULT_LIMITS) -> None:
        self.calls: list[tuple] = []
        self.syncs = 0
        self.fail_sync = False
        self.write_nan: tuple[int, int] | None = None
        self._limits = limits

    def array_types(self):
        return (np.ndarray,)

    def limits(self):
        return self._limits

    def launch(self, kernel, args, grid, block, shared_mem, stream):
        self.calls.append((kernel.name, args, grid, block, shared_mem, stream))
        if self.write_nan is not None:
            index, position = self.write_nan
            args[index].reshape(-1)[position] = np.nan

    def synchronize(self, stream):
        self.syncs += 1
        if self.fail_sync:
            raise SyncFailure("an illegal memory access was encountered")

    def sync_errors(self):
        return (SyncFailure,)


def f32(n):
    return np.arange(n, dtype=np.float32)
