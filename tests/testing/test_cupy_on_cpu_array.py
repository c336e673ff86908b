"""The CuPy stand-in's arrays and namespace (used directly, without installing it as cupy)."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy.testing.cupy_on_cpu as cp
from cunumpy.profiling import assert_no_transfers, count_transfers
from cunumpy.testing.cupy_on_cpu import _names, ndarray, unwrap, wrap


def test_contract_wrap_unwrap_share_memory_and_count_nothing():
    host = np.arange(6.0).reshape(2, 3)
    with assert_no_transfers():
        a = wrap(host)
        assert unwrap(a) is host
    assert not isinstance(a, np.ndarray)
    assert (a.shape, a.dtype, a.strides, a.size, a.ndim, a.itemsize, a.nbytes) == (
        (2, 3), np.float64, (24, 8), 6, 2, 8, 48)
    assert a.data.ptr == host.ctypes.data
    fresh = ndarray((4,), np.float32)
    assert fresh.shape == (4,) and fresh.dtype == np.float32


def test_numpy_conversion_is_refused_with_cupys_message():
    a = cp.arange(3)
    with pytest.raises(TypeError, match=r"Implicit conversion to a NumPy array is not allowed"):
        np.asarray(a)


def test_numpy_functions_dispatch_or_refuse():
    a = cp.arange(4.0)
    assert isinstance(np.sum(a), ndarray) and float(np.sum(a)) == 6.0  # CuPy's dispatch
    assert isinstance(np.exp(a), ndarray)
    with pytest.raises(TypeError, match=r"\.get\(\) or cupy\.asnumpy"):
        np.busday_count(a, a)  # CuPy has no busday_count


@pytest.mark.parametrize("call", [
    lambda a, h: a + h,
    lambda a, h: h + a,
    lambda a, h: cp.add(a, h),
    lambda a, h: cp.concatenate([a, h]),
    lambda a, h: np.add(a, h),
    lambda a, h: a.__setitem__(0, h[:1]),
])
def test_numpy_arrays_are_rejected_as_cupy_does(call):
    a, h = cp.arange(3.0), np.ones(3)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy.ndarray'>"):
        call(a, h)


def test_reductions_and_scalar_indexing_give_0d_arrays():
    a = cp.arange(6).reshape(2, 3)
    for value in (a.sum(), cp.max(a), a[1, 2], cp.linalg.norm(a.astype("f8")), cp.mean(a)):
        assert isinstance(value, ndarray) and value.ndim == 0
    assert int(a[1, 2]) == 5


def test_transfers_are_counted_by_kind():
    with count_transfers() as c:
        a = cp.asarray(np.arange(4.0))         # to_device
        a.set(np.ones(4))                      # to_device
        _ = a.get()                            # to_host
        _ = cp.asnumpy(a)                      # to_host
        _ = float(a.sum()), a[0].item(), bool(a[1]), int(a[2]), a.tolist()  # 5 implicit
        _ = a * 2 + cp.sin(a)                  # stays on the device
    assert (c.to_device, c.to_host, c.implicit_to_host) == (2, 2, 5)
    assert c.bytes_to_device == 64


def test_assert_no_transfers_catches_an_implicit_read():
    a = cp.ones(3)
    with pytest.raises(AssertionError, match="implicit_to_host"):
        with assert_no_transfers():
            if a.sum() > 2:  # a synchronising read a GPU makes too
                pass


def test_views_write_through_and_out_is_in_place():
    a = cp.zeros(6)
    v = a.reshape(2, 3)
    v[0, :] = 1
    cp.add(a, 1, out=a)
    assert a.get().tolist() == [2, 2, 2, 1, 1, 1]
    assert v.base is a


def test_namespace_follows_cupys_names():
    assert {"asnumpy", "RawKernel", "ElementwiseKernel", "fuse", "get_array_module"} <= set(dir(cp))
    assert "asnumpy" not in dir(np)
    with pytest.raises(AttributeError):
        cp.busday_count  # noqa: B018 - NumPy has it, CuPy does not
    assert len(_names.FUNCTIONS) + len(_names.UFUNCS) > 300
    assert cp.get_array_module(cp.ones(1)) is not np
    assert cp.get_array_module(np.ones(1)) is np


def test_ufunc_methods_and_fft_random():
    a = cp.arange(1.0, 5.0)
    assert float(cp.add.reduce(a)) == 10.0
    assert cp.multiply.outer(a, a).shape == (4, 4)
    assert isinstance(cp.fft.fft(a), ndarray)
    assert isinstance(cp.random.rand(3), ndarray)
    assert cp.random.RandomState(0).normal(size=(2,)).shape == (2,)


def test_cuda_streams_events_devices_pools():
    cuda = cp.cuda
    s = cuda.Stream()
    with s:
        assert cuda.get_current_stream() is s
    assert cuda.get_current_stream() is cuda.Stream.null
    start, end = cuda.Event(), cuda.Event()
    start.record()
    end.record()
    end.synchronize()
    assert cuda.get_elapsed_time(start, end) >= 0.0
    with pytest.raises(cuda.runtime.CUDARuntimeError):
        cuda.get_elapsed_time(cuda.Event(), end)
    assert cuda.runtime.getDeviceCount() == 1 and cuda.Device(0).compute_capability == "90"
    with pytest.raises(cuda.runtime.CUDARuntimeError, match="invalid device"):
        cuda.Device(1)
    pool = cp.get_default_memory_pool()
    before = pool.used_bytes()
    big = cp.empty(1 << 20, dtype=np.uint8)
    assert pool.used_bytes() - before == 1 << 20
    del big
    assert pool.used_bytes() == before


@pytest.mark.parametrize("call, what", [
    (lambda c: c.Graph(), "CUDA graphs"),
    (lambda c: c.texture.TextureObject(), "textures"),
    (lambda c: c.Device(0).can_access_peer(1), "peer access"),
    (lambda c: c.Stream().begin_capture(), "graph capture"),
])
def test_what_a_cpu_cannot_be_raises_naming_it(call, what):
    with pytest.raises(NotImplementedError, match=what):
        call(cp.cuda)
