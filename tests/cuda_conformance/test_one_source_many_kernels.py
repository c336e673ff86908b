"""Several kernels taken from one source each run their own function, on every CUDA engine.

Regression: the cupy engine's compile cache once keyed on ``(device, code, options,
expression)`` only, and ``expression`` is ``None`` for ``extern "C"`` kernels, so
``CudaKernel(src, "k_mul")`` ran ``k_add`` when both came from ``src``.
"""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy
from cunumpy.kernels import CudaKernel, get_cuda_engine

SOURCE = r"""
extern "C" __global__ void k_add(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 2.0f;
}
extern "C" __global__ void k_mul(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 3.0f;
}
extern "C" __global__ void k_neg(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = -x[i];
}
template <int K>
__global__ void k_scale(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * K;
}
"""

# (name, template_args) -> expected y for x
EXPECTED = {
    ("k_add", None): lambda x: x + 2,
    ("k_mul", None): lambda x: x * 3,
    ("k_neg", None): lambda x: -x,
    ("k_scale", (4,)): lambda x: x * 4,
    ("k_scale", (5,)): lambda x: x * 5,
}


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_each_kernel_of_one_source_runs_its_own_function(cuda_engine: str, order: str) -> None:
    eng = get_cuda_engine(cuda_engine)
    names = list(EXPECTED) if order == "forward" else list(reversed(EXPECTED))
    x_host = np.arange(1, 101, dtype=np.float32)
    to_side = cunumpy.to_cupy if eng.array_space == "device" else (lambda a: a)
    x = to_side(x_host)
    for name, template_args in names:
        kernel = CudaKernel(SOURCE, name, engine=eng, template_args=template_args)
        y = to_side(np.zeros_like(x_host))
        kernel(y, x, np.int32(x_host.size))
        np.testing.assert_array_equal(
            cunumpy.to_numpy(y),
            EXPECTED[name, template_args](x_host),
            err_msg=f"{name} {template_args} on {cuda_engine}",
        )
