"""Pinned-buffer staging of large copies: the pipeline (with a simulated device) and ``out=``.

The pipeline is tested against a fake device whose queued copies all run, in order, whenever an
event is waited for (a stream that got as far ahead as it could): a buffer refilled before it
was drained would corrupt the result. The CuPy binding is tested on the GPU (``requires_cuda``).
"""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import _staging, config
from cunumpy.profiling import count_transfers


class FakeStream:
    """Copies that run in order when an event is waited for; waiting runs every copy queued so
    far (the device got as far ahead as it can), so a buffer refilled too early is caught."""

    def __init__(self) -> None:
        self.queue: list = []
        self.done = 0

    def enqueue(self, action) -> FakeEvent:
        self.queue.append(action)
        return FakeEvent(self, len(self.queue))

    def run_until(self, n: int) -> None:
        while self.done < n:
            self.queue[self.done]()
            self.done += 1


class FakeEvent:
    def __init__(self, stream: FakeStream, position: int) -> None:
        self.stream, self.position = stream, position

    def synchronize(self) -> None:
        self.stream.run_until(len(self.stream.queue))


def _buffers(chunk: int, depth: int = 2) -> list[np.ndarray]:
    return [np.full(chunk, 0xAB, dtype=np.uint8) for _ in range(depth)]


def test_spans_cover_every_byte_once():
    assert _staging.spans(10, 4) == [(0, 4), (4, 4), (8, 2)]
    assert _staging.spans(8, 4) == [(0, 4), (4, 4)]
    assert _staging.spans(0, 4) == []
    with pytest.raises(ValueError, match="chunk"):
        _staging.spans(10, 0)


@pytest.mark.parametrize("nbytes", [1, 999, 4096, 4097, 3 * 4096, 10 * 4096 + 17])
def test_device_to_host_pipeline_delivers_every_byte(nbytes):
    rng = np.random.default_rng(nbytes)
    device = rng.integers(0, 256, nbytes, dtype=np.uint8)
    host = np.zeros(nbytes, dtype=np.uint8)
    buffers = _buffers(4096)
    stream = FakeStream()

    def enqueue(b, offset, length):
        def copy():
            buffers[b][:length] = device[offset : offset + length]

        return stream.enqueue(copy)

    _staging.device_to_host(host, buffers, enqueue)
    np.testing.assert_array_equal(host, device)


@pytest.mark.parametrize("nbytes", [1, 4096, 4097, 10 * 4096 + 17])
def test_host_to_device_pipeline_delivers_every_byte_across_calls(nbytes):
    rng = np.random.default_rng(nbytes)
    buffers = _buffers(4096)
    stream = FakeStream()
    in_flight = [None, None]
    devices = []
    for _ in range(2):  # the second call must wait for the first one's last copies
        host = rng.integers(0, 256, nbytes, dtype=np.uint8)
        device = np.zeros(nbytes, dtype=np.uint8)

        def enqueue(b, offset, length, device=device):
            data = buffers[b]

            def copy():
                device[offset : offset + length] = data[:length]

            return stream.enqueue(copy)

        _staging.host_to_device(host, buffers, enqueue, in_flight)
        devices.append((host.copy(), device))
    stream.run_until(len(stream.queue))
    for host, device in devices:
        np.testing.assert_array_equal(device, host)


def test_chunks_pipeline_small_copies_and_fill_large_buffers():
    mib = 1 << 20
    assert _staging.chunk_for(16 * mib, 64 * mib) == 4 * mib
    assert _staging.chunk_for(1 * mib, 64 * mib) == 4 * mib
    assert _staging.chunk_for(1024 * mib, 64 * mib) == 64 * mib
    assert _staging.chunk_for(100 * mib, 64 * mib) == 25 * mib
    assert _staging.chunk_for(10, 4096) == 4096  # buffers smaller than the minimum chunk


def test_host_copy_splits_large_copies_and_matches():
    src = np.random.default_rng(1).integers(0, 256, (9 << 20) + 5, dtype=np.uint8)
    dst = np.zeros_like(src)
    _staging.host_copy(dst, src)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", 16 << 20), ("off", None), ("0", None), ("1048576", 1 << 20), ("64M", 64 << 20),
     ("2g", 2 << 30), ("512K", 512 << 10)],
)
def test_staging_threshold_setting(monkeypatch, value, expected):
    monkeypatch.setenv("CUNUMPY_STAGING_THRESHOLD", value)
    assert config.staging_threshold() == expected


def test_staging_threshold_setting_refuses_nonsense(monkeypatch):
    monkeypatch.setenv("CUNUMPY_STAGING_THRESHOLD", "lots")
    with pytest.raises(ValueError, match="CUNUMPY_STAGING_THRESHOLD"):
        config.staging_threshold()


def test_to_numpy_out_fills_a_host_array_without_a_transfer():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.empty((2, 3), np.float32)
    with count_transfers() as c:
        got = xp.to_numpy(a, out=out)
    assert got is out
    np.testing.assert_array_equal(out, a)
    assert c.transfers == 0


@pytest.mark.parametrize(
    ("out", "match"),
    [
        (np.empty((3, 2), np.float32), "same shape and dtype"),
        (np.empty((2, 3), np.float64), "same shape and dtype"),
        (np.empty((3, 2), np.float32).T, "C-contiguous"),
        ([0.0] * 6, "numpy.ndarray"),
    ],
)
def test_to_numpy_out_is_checked(out, match):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises((TypeError, ValueError), match=match):
        xp.to_numpy(a, out=out)


def test_to_numpy_out_must_be_writeable():
    a = np.arange(6, dtype=np.float32)
    out = np.empty(6, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        xp.to_numpy(a, out=out)


SIZES = [0, 1, 1000, (16 << 20) // 4 - 1, (16 << 20) // 4, (64 << 20) // 4 + 3, (200 << 20) // 4]


@pytest.mark.requires_gpu
@pytest.mark.parametrize("n", SIZES)
def test_staged_round_trip_on_the_gpu(n):
    import cupy

    host = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    with count_transfers() as c:
        d = xp.to_cupy(host)
        back = xp.to_numpy(d)
        out = np.empty_like(host)
        again = xp.to_numpy(d, out=out)
    assert isinstance(d, cupy.ndarray)
    np.testing.assert_array_equal(back, host)
    assert again is out
    np.testing.assert_array_equal(out, host)
    assert (c.to_device, c.to_host) == (1, 2)
    assert (c.bytes_to_device, c.bytes_to_host) == (host.nbytes, 2 * host.nbytes)


@pytest.mark.requires_gpu
def test_staged_copies_of_views_and_dtypes_on_the_gpu(monkeypatch):
    import cupy

    monkeypatch.setenv("CUNUMPY_STAGING_THRESHOLD", "64K")
    host = np.arange(3 * 200_000, dtype=np.int64).reshape(3, 200_000)
    d = xp.to_cupy(host)
    np.testing.assert_array_equal(xp.to_numpy(d[:, ::2]), host[:, ::2])
    np.testing.assert_array_equal(xp.to_numpy(d.T), host.T)
    np.testing.assert_array_equal(cupy.asnumpy(xp.to_cupy(host[:, ::3])), host[:, ::3])
    c16 = (np.arange(100_000) * (1 + 2j)).astype(np.complex128)
    np.testing.assert_array_equal(xp.to_numpy(xp.to_cupy(c16)), c16)
    monkeypatch.setenv("CUNUMPY_STAGING_THRESHOLD", "off")
    np.testing.assert_array_equal(xp.to_numpy(xp.to_cupy(c16)), c16)


@pytest.mark.requires_gpu
def test_a_reused_out_array_is_pinned_and_unpinned_on_the_gpu():
    import gc

    import cupy

    from cunumpy._pinning import cupy_pinned

    pinned = cupy_pinned(cupy)
    n = (64 << 20) // 4
    host = np.random.default_rng(7).integers(0, 1000, n).astype(np.float32)  # sums are exact
    d = xp.to_cupy(host)
    out = np.empty_like(host)
    with count_transfers() as c:
        for k in range(3):
            d += 1
            assert xp.to_numpy(d, out=out) is out
            np.testing.assert_array_equal(out, host + np.float32(k + 1))
    assert pinned.is_pinned(out)
    assert (c.to_host, c.bytes_to_host) == (3, 3 * host.nbytes)
    before = pinned.pinned_bytes
    del out
    gc.collect()
    assert pinned.pinned_bytes == before - host.nbytes
