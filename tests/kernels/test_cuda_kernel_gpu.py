"""CudaKernel on the CuPy engine: its message without CuPy, and real launches on an NVIDIA GPU.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _cuda_recording import SAXPY

import cunumpy
from cunumpy.kernels import (
    CudaKernel,
    CudaLaunchError,
    get_cuda_engine,
)


# -- the CuPy engine without CuPy ---------------------------------------------------------------
def test_cupy_engine_unavailable_message():
    from cunumpy._engines._status import cupy_engine_status

    if cupy_engine_status().ok:
        pytest.skip("CuPy works here; this checks the message when it does not")
    kernel = CudaKernel('extern "C" __global__ void k(int n) {}', "k", engine="cupy")
    with pytest.raises(
        RuntimeError, match="\\[cupy kernel 'k'\\] cannot launch: .*CUNUMPY_CUDA_ENGINE=emulator"
    ):
        kernel(1, n_threads=1)


# ============================================================================================
# On an NVIDIA GPU (CuPy)
# ============================================================================================
@pytest.fixture
def cp():
    import cupy

    return cupy


@pytest.mark.requires_gpu
def test_gpu_saxpy_runs_without_transfers(cp):
    kernel = CudaKernel(SAXPY, "saxpy")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, dtype=cp.float32)
    with cunumpy.profiling.count_transfers() as counter:
        kernel(1000, 2.0, x, y)
    assert counter.to_device == 0 and counter.to_host == 0
    np.testing.assert_allclose(y.get(), 2 * np.arange(1000) + 1)


@pytest.mark.requires_gpu
def test_gpu_argument_checks(cp):
    kernel = CudaKernel(SAXPY, "saxpy", engine="cupy")
    x = cp.zeros(8, cp.float32)
    with pytest.raises(
        TypeError, match="argument 'y' \\(float32\\[8\\]\\) is a NumPy \\(host\\) array"
    ):
        kernel(8, 1.0, x, np.zeros(8, np.float32))
    with pytest.raises(TypeError, match="argument 'x' \\(float64\\[8\\]\\) has dtype float64"):
        kernel(8, 1.0, cp.zeros(8), x)
    with pytest.raises(ValueError, match="argument 'x' \\(float32\\[4\\]\\) is not C-contiguous"):
        kernel(4, 1.0, x[::2], x[:4])
    kernel(4, 1.0, x[4:], x[:4])  # contiguous views are fine


@pytest.mark.requires_gpu
def test_gpu_foreign_device_array_is_viewed_not_copied(cp):
    class Foreign:
        def __init__(self, a):
            self._a = a
            self.dtype = a.dtype
            self.shape = a.shape

        @property
        def __cuda_array_interface__(self):
            return self._a.__cuda_array_interface__

    kernel = CudaKernel(SAXPY, "saxpy")
    y = cp.zeros(64, cp.float32)
    kernel(64, 1.0, Foreign(cp.ones(64, cp.float32)), Foreign(y))
    assert float(y.sum()) == 64.0


@pytest.mark.requires_gpu
def test_gpu_stream(cp):
    kernel = CudaKernel(SAXPY, "saxpy")
    x = cp.ones(1 << 16, cp.float32)
    y = cp.zeros_like(x)
    stream = cp.cuda.Stream(non_blocking=True)
    kernel(x.size, 3.0, x, y, stream=stream)
    stream.synchronize()
    assert float(y.sum()) == 3.0 * x.size


@pytest.mark.requires_gpu
def test_gpu_limits_and_zero_size(cp):
    kernel = CudaKernel(SAXPY, "saxpy")
    x = cp.zeros(8, cp.float32)
    with pytest.raises(
        ValueError, match="\\[cupy kernel 'saxpy'\\] block \\(2048, 1, 1\\) has 2048 threads"
    ):
        kernel(8, 1.0, x, x, block=2048)
    with pytest.raises(ValueError, match="exceeds the device limit 65535"):
        kernel(8, 1.0, x, x, grid=(1, 1, 70000))
    empty = cp.zeros(0, cp.float32)
    kernel(0, 1.0, empty, empty)
    kernel(8, 1.0, x, x, grid=0)
    limits = get_cuda_engine("cupy").limits()
    assert limits.max_threads_per_block == 1024 and limits.max_shared_mem_optin >= 48 * 1024


@pytest.mark.requires_gpu
def test_gpu_large_dynamic_shared_memory_opt_in(cp):
    src = r"""
    extern "C" __global__ void big_shared(int n, float* out) {
        extern __shared__ float s[];
        for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = (float)i;
        __syncthreads();
        if (threadIdx.x == 0) { double acc = 0; for (int i = 0; i < n; ++i) acc += s[i]; out[0] = acc; }
    }
    """
    kernel = CudaKernel(src, "big_shared")
    n = 24 * 1024  # 96 KiB of floats: over the 48 KiB default
    out = cp.zeros(1, cp.float32)
    kernel(n, out, grid=1, block=256, shared_mem=n * 4)
    assert float(out[0]) == pytest.approx(n * (n - 1) / 2, rel=1e-6)


@pytest.mark.requires_gpu
def test_gpu_check_finite(cp):
    src = r"""
    extern "C" __global__ void poison(int n, int where, const float* x, float* y) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = (i == where) ? x[i] / 0.0f : x[i];
    }
    """
    kernel = CudaKernel(src, "poison")
    x = cp.ones(1000, cp.float32)
    y = cp.zeros(1000, cp.float32)
    kernel(1000, -1, x, y, check_finite=True)
    with pytest.raises(
        FloatingPointError,
        match="argument 'y' \\(float32\\[1000\\]\\) holds 1 non-finite value\\(s\\).*first at flat index 7",
    ):
        kernel(1000, 7, x, y, check_finite=True)


@pytest.mark.requires_gpu
def test_gpu_launch_error_names_kernel_grid_block(cp):
    src = r"""
    extern "C" __global__ void __launch_bounds__(64) small(float* y) { y[threadIdx.x] = 1.0f; }
    """
    kernel = CudaKernel(src, "small")
    y = cp.zeros(1024, cp.float32)
    with pytest.raises(
        CudaLaunchError,
        match="\\[cupy kernel 'small'\\] launch failed with grid \\(1, 1, 1\\), block \\(512, 1, 1\\)",
    ):
        kernel(y, grid=1, block=512)
    kernel(y, grid=1, block=64)
    assert float(y.sum()) == 64.0


@pytest.mark.requires_gpu
def test_gpu_debug_mode_reports_a_fault_in_a_subprocess():
    code = textwrap.dedent(
        r"""
        import cupy, cunumpy
        from cunumpy.kernels import CudaKernel, CudaLaunchError
        k = CudaKernel('extern "C" __global__ void bad(int* p, long long off) '
                       '{ p[off + threadIdx.x] = 1; }', "bad", debug=True)
        p = cupy.zeros(4, cupy.int32)
        try:
            k(p, 1 << 40, grid=3, block=32)
        except CudaLaunchError as e:
            print("CAUGHT", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (
        "CAUGHT [cupy kernel 'bad'] failed while running with grid (3, 1, 1), block (32, 1, 1)"
        in out.stdout
    ), out.stderr


@pytest.mark.requires_gpu
def test_gpu_compile_error():
    import cupy as cp

    from cunumpy.kernels import CudaCompileError

    kernel = CudaKernel(
        'extern "C" __global__ void broken(float* y) { y[0] = undefined_name; }', "broken"
    )
    with pytest.raises(
        CudaCompileError, match="\\[cupy kernel 'broken'\\] NVRTC could not compile"
    ) as info:
        kernel(cp.zeros(1, cp.float32))
    assert "undefined_name" in info.value.log


@pytest.mark.requires_gpu
def test_gpu_header_change_invalidates_the_cache(tmp_path, cp):
    (tmp_path / "value.cuh").write_text("#define VALUE 1.0f\n")
    (tmp_path / "k.cu").write_text(
        '#include "value.cuh"\nextern "C" __global__ void setv(float* y) { y[threadIdx.x] = VALUE; }\n'
    )
    y = cp.zeros(32, cp.float32)
    CudaKernel.from_file(tmp_path / "k.cu")(y, grid=1, block=32)
    assert float(y[0]) == 1.0
    (tmp_path / "value.cuh").write_text("#define VALUE 2.0f\n")
    CudaKernel.from_file(tmp_path / "k.cu")(y, grid=1, block=32)
    assert float(y[0]) == 2.0


@pytest.mark.requires_gpu
def test_gpu_compiled_once_per_device_and_variant(cp):
    engine = get_cuda_engine("cupy")
    src = SAXPY.replace("saxpy", "saxpy_once")
    x = cp.ones(10, cp.float32)
    before = len(engine._compiled)
    CudaKernel(src, "saxpy_once")(10, 1.0, x, x)
    CudaKernel(src, "saxpy_once")(10, 1.0, x, x)
    assert len(engine._compiled) == before + 1
    CudaKernel(src, "saxpy_once", options=("-DUNUSED=1",))(10, 1.0, x, x)
    assert len(engine._compiled) == before + 2
