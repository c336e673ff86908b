"""The CuPy stand-in's ``cupy._util`` (used directly, without installing it as cupy; the installed
``import cupy._util`` is in test_cupy_on_cpu_install.py)."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import cunumpy.testing.cupy_on_cpu as cp
from cunumpy.profiling import count_transfers
from cunumpy.testing.cupy_on_cpu import _util, wrap

CUPY_NAMES = ("memoize", "clear_memo", "experimental", "PerformanceWarning", "check_array",
              "is_shutting_down", "bf16_loop", "ENABLE_SLICE_COPY", "CUDA_ARRAY_INTERFACE_SYNC",
              "CUDA_ARRAY_INTERFACE_EXPORT_VERSION", "DLPACK_EXPORT_VERSION")
"""The public names of CuPy's ``cupy/_util.pyx`` the stand-in provides (``cython_build_ver``
is left out: nothing here is built with Cython)."""


def test_all_lists_cupys_names():
    assert sorted(_util.__all__) == sorted({*CUPY_NAMES, "read_settings"})
    assert all(hasattr(_util, name) for name in CUPY_NAMES)
    assert set(CUPY_NAMES) <= set(dir(_util))


def test_one_memoize_behind_cupy_memoize_and_cupy_util_memoize():
    assert cp.memoize is _util.memoize
    assert cp.clear_memo is _util.clear_memo


def test_memoize_caches_per_arguments_until_clear_memo():
    calls = []

    @_util.memoize(for_each_device=True)
    def make(n, scale=1):
        """Build a kernel."""
        calls.append((n, scale))
        return [n * scale]

    assert make(2) is make(2) and calls == [(2, 1)]
    assert make(2, scale=3) is make(2, scale=3) and calls == [(2, 1), (2, 3)]
    assert make.__name__ == "make" and make.__doc__ == "Build a kernel."
    _util.clear_memo()
    make(2)
    assert calls == [(2, 1), (2, 3), (2, 1)]


def test_memoize_without_device_and_unhashable_arguments():
    @_util.memoize()
    def double(x):
        return x * 2

    assert double(4) == 8
    with pytest.raises(TypeError, match="unhashable"):
        double([1])  # as on CuPy: the arguments are the key


def test_memoize_without_parentheses_is_refused():
    with pytest.raises(TypeError, match=r"@memoize\(\).*'f'"):
        @_util.memoize
        def f():
            return 1


def test_memoize_gives_every_thread_the_first_stored_result():
    gate = threading.Barrier(4)

    @_util.memoize()
    def build(n):
        gate.wait()
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(build(1))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r) for r in results}) == 1 and build(1) is results[0]


def test_experimental_warns_at_the_caller_unless_disabled(monkeypatch):
    def api():
        _util.experimental("cupyx.foo.bar")

    with pytest.warns(FutureWarning,
                      match=r"^cupyx\.foo\.bar is experimental\. The interface can change") as got:
        api()
    assert got[0].filename == __file__
    monkeypatch.setattr(cp, "disable_experimental_feature_warning", True, raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        api()


def test_performance_warning_and_check_array():
    assert issubclass(_util.PerformanceWarning, RuntimeWarning)
    _util.check_array(cp.arange(3), arg_name="a")
    with pytest.raises(TypeError, match=r"'a' must be a cupy\.ndarray object, not .*numpy"):
        _util.check_array(np.arange(3), arg_name="a")


def test_is_shutting_down_and_bf16_loop():
    assert _util.is_shutting_down() is False
    assert _util.bf16_loop() == () and _util.bf16_loop(2, 1, "out0 = in0 + in1") == ()


def test_environment_defaults():
    assert (_util.CUDA_ARRAY_INTERFACE_SYNC, _util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION,
            _util.DLPACK_EXPORT_VERSION) == (True, 3, (0, 6))


def test_slice_copy_follows_enable_slice_copy(monkeypatch):
    a = wrap(np.zeros((2, 3)))
    host = np.arange(6.0).reshape(2, 3)
    monkeypatch.setattr(_util, "ENABLE_SLICE_COPY", False)
    with pytest.raises(TypeError, match="Unsupported type"):
        a[:] = host
    monkeypatch.setattr(_util, "ENABLE_SLICE_COPY", True)
    with count_transfers() as c:
        a[:] = host
    assert (c.to_device, c.bytes_to_device) == (1, 48)
    assert a.get().tolist() == host.tolist()
    with pytest.raises(ValueError, match=r"float32\[2,3\] must have the shape and dtype of "
                                         r"float64\[2,3\]"):
        a[:] = host.astype(np.float32)
    with pytest.raises(ValueError, match="contiguous"):
        a[:, ::2][:] = np.zeros((2, 2))
    with pytest.raises(TypeError, match="Unsupported type"):
        a[0] = host[0]  # only `a[:]` takes a NumPy array
