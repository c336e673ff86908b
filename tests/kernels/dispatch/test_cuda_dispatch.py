"""Kernel calls that reach a real CudaKernel: on a GPU (cupy backend), or on the CPU emulator."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernels import CudaKernel, Kernel, MetalKernel, use_port
from cunumpy.testing import assert_kernels_agree

SAXPY_CU = r"""
extern "C" __global__ void saxpy(const float* x, float a, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
FORGETFUL_CU = r"""
extern "C" __global__ void scale(const float* x, float a, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i != 3) y[i] = a * x[i];
}
"""


def saxpy(x, a, y, n):
    y[:n] += a * x[:n]


def scale(x, a, y, n):
    y[:n] = a * x[:n]


def saxpy_args(backend, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.random(300, dtype=np.float32), rng.random(300, dtype=np.float32)
    if backend == "cupy":
        x, y = xp.to_cupy(x), xp.to_cupy(y)
    return x, 1.5, y, 300


def scale_args(backend, seed):
    x, a, _, n = saxpy_args(backend, seed)
    return x, a, xp.zeros_like(x) if backend == "cupy" else np.zeros_like(x), n


@pytest.mark.requires_cuda
def test_cupy_backend_runs_the_cuda_port():
    k = Kernel(saxpy, CudaKernel(SAXPY_CU, "saxpy"))
    with xp.use_backend("cupy", strict=True):
        x, a, y, n = saxpy_args("cupy", 0)
        expected = xp.to_numpy(y) + np.float32(a) * xp.to_numpy(x)
        with xp.profiling.assert_no_transfers():
            k(x, a, y, n)
        np.testing.assert_allclose(xp.to_numpy(y), expected, rtol=1e-6)


@pytest.mark.requires_cuda
def test_cuda_port_agrees_on_the_gpu(monkeypatch):
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
    k = Kernel(saxpy, CudaKernel(SAXPY_CU, "saxpy"))
    assert assert_kernels_agree(k, saxpy_args, ports=["cuda"]) == {"cuda": "cupy"}


@pytest.mark.requires_cuda
def test_forgetful_cuda_port_fails_on_the_gpu(monkeypatch):
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
    k = Kernel(scale, CudaKernel(FORGETFUL_CU, "scale"))
    with pytest.raises(AssertionError, match=r"port 'cuda' \(cupy\) output 'y'.*index \(3,\).*"
                                             r"still the poison value"):
        assert_kernels_agree(k, scale_args, ports=["cuda"])


def test_forced_cuda_port_runs_on_the_emulator_with_numpy_arrays(emu_cuda):
    k = Kernel(saxpy, CudaKernel(SAXPY_CU, "saxpy"))
    x, a, y, n = saxpy_args("numpy", 0)
    expected = y + np.float32(a) * x
    assert k.which(x, a, y, n) == "host"
    with use_port("cuda"):
        assert k.which(x, a, y, n) == "cuda"
        k(x, a, y, n)
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_cuda_port_agrees_on_the_emulator(emu_cuda, emu_metal):
    metal = MetalKernel("uint i = thread_position_in_grid.x; y_out[i] = a[0] * x[i] + y[i];",
                        inputs=["x", "a", "y"], outputs=["y_out"], name="saxpy")
    k = Kernel(saxpy, CudaKernel(SAXPY_CU, "saxpy"), metal)
    assert assert_kernels_agree(k, saxpy_args) == {"cuda": "emu-cuda", "metal": "emu-metal"}


def test_forgetful_cuda_port_fails_on_the_emulator(emu_cuda):
    k = Kernel(scale, CudaKernel(FORGETFUL_CU, "scale"))
    with pytest.raises(AssertionError, match=r"port 'cuda' \(emu-cuda\) output 'y'.*index \(3,\).*"
                                             r"still the poison value"):
        assert_kernels_agree(k, scale_args, ports=["cuda"])
