"""The plugin's one engine fixture: every engine of the table, selected for the test (its ids
are checked in test_table.py)."""

from __future__ import annotations

import numpy as np

from cunumpy import config
from cunumpy._engines._table import engine_status, row, select


def test_the_selected_engine_runs_a_kernel(kernel_engine):
    """Only ready engines get here (the others skip with the table's reason); the fixture has
    selected this one for its dialect, and a kernel of that dialect runs on it."""
    r = row(kernel_engine)
    assert engine_status(kernel_engine).ok
    setting = config.cuda_engine() if r.dialect == "cuda" else config.metal_engine()
    assert select(r.dialect, setting) == kernel_engine
    import cunumpy
    from cunumpy.kernels import CudaKernel, MetalKernel

    x = np.arange(64, dtype=np.float32)
    if r.dialect == "cuda":
        k = CudaKernel('extern "C" __global__ void twice(int n, const float* x, float* y) {'
                       " int i = blockIdx.x * blockDim.x + threadIdx.x;"
                       " if (i < n) y[i] = 2.0f * x[i]; }")
        xs = cunumpy.to_cupy(x) if r.array_space == "device" else x
        ys = cunumpy.to_cupy(np.zeros_like(x)) if r.array_space == "device" else np.zeros_like(x)
        k(64, xs, ys)
        y = cunumpy.to_numpy(ys)
    else:
        k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = 2.0f * x[i];",
                        inputs=["x"], outputs=["y"], name="twice")
        y = np.zeros_like(x)
        k(x, out=y)
    np.testing.assert_array_equal(y, 2 * x)
