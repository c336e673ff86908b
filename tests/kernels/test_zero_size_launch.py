"""One rule for a zero-size launch on both front ends: arguments are checked, nothing runs.

``n_threads=0`` (or an extent of 0, or no ``n_threads`` with an empty first array) launches no
thread. ``CudaKernel`` and ``MetalKernel`` both validate the call exactly as for a real launch
(wrong dtypes, arity and the like still raise) and then return without compiling, copying or
running anything. A ``MetalKernel`` returns ``out`` untouched, or fresh outputs holding
``init_value`` (0 without one) when it was asked to create them.
"""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.kernels import CudaKernel, MetalKernel
from cunumpy.profiling import count_transfers

_NEVER_COMPILES = "this is not Metal and must never be compiled;"


def _metal(**kw):
    # A body that cannot compile proves that a zero-size launch compiles nothing.
    return MetalKernel(_NEVER_COMPILES, inputs=["x", "a"], outputs=["y"], name="zero", **kw)


@pytest.mark.parametrize("n_threads", [0, (0,), (4, 0), (3, 2, 0)])
def test_metal_zero_threads_is_a_no_op_returning_out(n_threads):
    x = np.ones(4, np.float32)
    y = np.full(4, 7.0, np.float32)
    with count_transfers() as c:
        got = _metal()(x, 2.0, out=y, n_threads=n_threads, engine="emulator")
    assert got is y
    np.testing.assert_array_equal(y, 7.0)  # untouched: no thread ran
    assert c.transfers == 0


def test_metal_empty_output_without_n_threads_is_a_no_op():
    for shape in [(0,), (0, 3), (3, 0)]:
        y = np.empty(shape, np.float32)
        assert _metal()(np.ones(4, np.float32), 2.0, out=y, engine="emulator") is y


def test_metal_zero_size_launch_still_checks_arguments():
    k = _metal()
    y = np.empty(4, np.float32)
    with pytest.raises(TypeError, match="float64"):
        k(np.ones(4), 2.0, out=y, n_threads=0, engine="emulator")
    with pytest.raises(TypeError, match="takes 2 inputs"):
        k(np.ones(4, np.float32), out=y, n_threads=0, engine="emulator")
    with pytest.raises(TypeError, match="read-only"):
        ro = np.empty(4, np.float32)
        ro.flags.writeable = False
        k(np.ones(4, np.float32), 2.0, out=ro, n_threads=0, engine="emulator")
    with pytest.raises(ValueError, match="n_threads"):
        k(np.ones(4, np.float32), 2.0, out=y, n_threads=-1, engine="emulator")


@pytest.mark.parametrize(("init_value", "fill"), [(None, 0.0), (1.5, 1.5)])
def test_metal_zero_size_launch_creates_the_outputs_it_was_asked_for(init_value, fill):
    from cunumpy import to_numpy
    from cunumpy.kernels import EmulatedDeviceArray

    k = _metal(init_value=init_value)
    got = k(np.ones(4, np.float32), 2.0, output_shapes=(5,), output_dtypes=np.float32,
            n_threads=0, engine="emulator")
    assert isinstance(got, EmulatedDeviceArray)
    host = to_numpy(got)
    assert host.shape == (5,) and host.dtype == np.float32
    np.testing.assert_array_equal(host, fill)


def test_metal_zero_size_launch_creates_every_output():
    from cunumpy import to_numpy

    k = MetalKernel(_NEVER_COMPILES, inputs=["x"], outputs=["a", "b"], name="two")
    a, b = k(np.ones(2, np.float32), output_shapes=[(2, 3), (0,)],
             output_dtypes=[np.int32, np.float32], n_threads=0, engine="emulator")
    assert to_numpy(a).shape == (2, 3) and to_numpy(a).dtype == np.int32
    assert to_numpy(b).shape == (0,)


# --------------------------------------------------------------------------------------- CUDA
_CUDA_NEVER_COMPILES = (
    'extern "C" __global__ void zero(int n, const float* x, float* y) { this is not CUDA; }'
)


@pytest.fixture
def cuda_emulator(monkeypatch):
    from cunumpy.kernels import get_cuda_engine

    try:
        get_cuda_engine("emulator")
    except RuntimeError as exc:
        pytest.skip(f"the CUDA emulator cannot run here: {exc}")
    return "emulator"


@pytest.mark.parametrize("launch", [{"n_threads": 0}, {"n_threads": (4, 0)}, {"grid": (0, 1)}])
def test_cuda_zero_size_launch_is_a_no_op(cuda_emulator, launch):
    k = CudaKernel(_CUDA_NEVER_COMPILES, "zero", engine=cuda_emulator)
    y = np.full(4, 7.0, np.float32)
    with count_transfers() as c:
        assert k(4, np.ones(4, np.float32), y, **launch) is None
    np.testing.assert_array_equal(y, 7.0)
    assert c.transfers == 0


def test_cuda_zero_size_launch_still_checks_arguments(cuda_emulator):
    k = CudaKernel(_CUDA_NEVER_COMPILES, "zero", engine=cuda_emulator)
    with pytest.raises(TypeError, match="float64"):
        k(4, np.ones(4), np.empty(4, np.float32), n_threads=0)
    with pytest.raises(ValueError, match="n_threads"):
        k(4, np.ones(4, np.float32), np.empty(4, np.float32), n_threads=-1)
