"""Transfer accounting: counters, nesting, reports, assert_no_transfers, conversions."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import profiling


def test_no_counter_means_recording_is_off():
    assert profiling._active == []


def test_record_counts_kinds_and_bytes():
    with profiling.count_transfers() as c:
        profiling._record("to_device", 100, "x")
        profiling._record("to_host", 40, "y")
        profiling._record("to_device", 8, "z")
    assert (c.to_device, c.to_host, c.bytes_to_device, c.bytes_to_host) == (2, 1, 108, 40)
    assert c.transfers == 3
    assert [e.kind for e in c.events] == ["to_device", "to_host", "to_device"]
    assert c.events[0].site.startswith(__file__)
    assert "test_record_counts_kinds_and_bytes" in c.events[0].site


def test_unknown_kind_is_refused():
    with profiling.count_transfers(), pytest.raises(ValueError, match="to_device"):
        profiling._record("sideways", 1, "x")


def test_counters_nest():
    with profiling.count_transfers() as outer:
        profiling._record("to_device", 1, "a")
        with profiling.count_transfers() as inner:
            profiling._record("to_host", 2, "b")
        profiling._record("to_device", 4, "c")
    assert outer.transfers == 3 and inner.transfers == 1
    assert inner.events[0].description == "b"


def test_counter_removed_when_block_raises():
    with pytest.raises(ZeroDivisionError), profiling.count_transfers():
        1 / 0  # noqa: B018
    assert profiling._active == []


def test_decorator_accumulates_over_calls():
    counter = profiling.count_transfers()

    @counter
    def step():
        profiling._record("to_device", 10, "step")

    step()
    step()
    assert counter.to_device == 2 and counter.bytes_to_device == 20
    assert profiling._active == []


def test_report_groups_by_call_site():
    with profiling.count_transfers() as c:
        for _ in range(2):
            profiling._record("to_device", 2048, "input 'x'")
        profiling._record("to_host", 10, "output 'y'")
        profiling._record("fallback", 0, "kernel 'push' ran on the host")
    text = c.report()
    first, *rest = text.splitlines()
    assert first == "2 to_device (4.0 KiB), 1 to_host (10 B), 1 fallback"
    sites = [line for line in rest if line.startswith("  ") and not line.startswith("    ")]
    assert len(sites) == 3  # one per recording line; the loop's two events share one site
    assert rest[1:3] == ["    to_device 2.0 KiB  input 'x'"] * 2
    assert "    to_device 2.0 KiB  input 'x'" in text
    assert "    fallback   kernel 'push' ran on the host" in text


def test_assert_no_transfers_passes_and_fails():
    with profiling.assert_no_transfers():
        profiling._record("fallback", 0, "not a copy")
    with pytest.raises(AssertionError, match="1 to_device") as info:
        with profiling.assert_no_transfers():
            profiling._record("to_device", 4, "oops")
    assert "oops" in str(info.value)


def test_assert_no_transfers_lets_block_errors_through():
    with pytest.raises(KeyError), profiling.assert_no_transfers():
        profiling._record("to_device", 4, "x")
        raise KeyError("own error")


def test_assert_no_transfers_as_decorator():
    @profiling.assert_no_transfers()
    def clean():
        return xp.to_numpy(np.ones(3)).sum()

    assert clean() == 3.0


def test_numpy_conversions_copy_nothing():
    a = np.arange(5.0)
    with xp.use_backend("numpy"), profiling.assert_no_transfers():
        assert xp.to_numpy(a) is a
        assert xp.to_cunumpy(a) is a
        assert isinstance(xp.to_numpy([1, 2]), np.ndarray)


def test_to_cupy_without_gpu_says_why(monkeypatch):
    from cunumpy import _backend

    monkeypatch.setattr(_backend, "_cupy_status", (False, "no CUDA device (test)"))
    with pytest.raises(RuntimeError, match="to_cupy needs a working CuPy: no CUDA device"):
        xp.to_cupy(np.ones(2))


@pytest.mark.requires_cuda
def test_cupy_conversions_are_counted_once():
    import cupy

    a = np.arange(1000, dtype=np.float32)
    with profiling.count_transfers() as c:
        d = xp.to_cupy(a)
        assert xp.to_cupy(d) is d
        back = xp.to_numpy(d)
    assert isinstance(d, cupy.ndarray)
    np.testing.assert_array_equal(back, a)
    assert (c.to_device, c.to_host) == (1, 1)
    assert c.bytes_to_device == c.bytes_to_host == 4000
    with xp.use_backend("cupy", strict=True), profiling.count_transfers() as c2:
        assert xp.to_cunumpy(d) is d
        xp.to_cunumpy(a)
    assert c2.to_device == 1


def test_mlx_conversion_is_counted():
    mx = pytest.importorskip("mlx.core", reason="MLX not installed")
    m = mx.array(np.arange(4, dtype=np.float32))
    with profiling.count_transfers() as c:
        host = xp.to_numpy(m)
    assert xp.get_array_backend(m) == "mlx"
    np.testing.assert_array_equal(host, np.arange(4, dtype=np.float32))
    assert (c.to_host, c.bytes_to_host) == (1, 16)
