"""Large host/device copies through a pool of pinned staging buffers.

A copy between pageable host memory and the GPU goes through the driver's own small staging
buffer, one thread, and (for a fresh NumPy array) one page fault per 4 KiB page: on the H200 host
that is 3.7 GB/s device-to-host into a fresh array and 9.7 GB/s host-to-device, against about
55 GB/s for pinned memory. This module copies large arrays in chunks through two pinned buffers
(double-buffered): while the GPU fills (or drains) one buffer, several host threads copy the
other one to (or from) the NumPy array, which also spreads the destination's first touch over the
threads. NumPy asks the kernel for transparent huge pages on large allocations, which removes
most page faults where the system allows it (``/sys/kernel/mm/transparent_hugepage/enabled``).

The pipeline itself (:func:`device_to_host`, :func:`host_to_device`) is written against two
callables so that it can be tested without a GPU; :class:`CupyStaging` binds it to CuPy.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

__all__ = [
    "CHUNK_BYTES",
    "CupyStaging",
    "device_to_host",
    "host_copy",
    "host_to_device",
    "spans",
]

CHUNK_BYTES = 64 << 20
"""Size of one pinned staging buffer (two are kept per process, allocated at first use).

Chosen on the H200 host (``benchmarks/bench_transfers.py --sweep``): 64 MiB chunks with 16 host
threads beat 16 and 32 MiB chunks for 256 MiB copies in all three directions."""

MIN_CHUNK_BYTES = 4 << 20
"""Smallest chunk: a copy is cut in at least four chunks (so it pipelines) down to this size."""

_MIN_SLICE = 2 << 20
"""Host copies are split over threads in slices of at least this many bytes."""


class Event(Protocol):
    """What an enqueued copy returns: something to wait on."""

    def synchronize(self) -> None: ...


def chunk_for(nbytes: int, buffer_bytes: int) -> int:
    """The chunk size for a copy of ``nbytes`` through buffers of ``buffer_bytes``: a quarter of
    the copy (so that device and host work overlap), within ``[MIN_CHUNK_BYTES, buffer_bytes]``."""
    return max(min(MIN_CHUNK_BYTES, buffer_bytes), min(buffer_bytes, -(-nbytes // 4)))


def spans(nbytes: int, chunk: int) -> list[tuple[int, int]]:
    """``(offset, length)`` of each chunk of a copy of ``nbytes`` bytes."""
    if chunk <= 0:
        raise ValueError(f"chunk must be positive, got {chunk}")
    return [(offset, min(chunk, nbytes - offset)) for offset in range(0, nbytes, chunk)]


MAX_THREADS = 16
"""Host threads that share one chunk's copy (at most; fewer on smaller machines)."""

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_thread_count = max(1, min(MAX_THREADS, os.cpu_count() or 1))


def _threads() -> int:
    return _thread_count


def set_threads(n: int) -> None:
    """Use ``n`` host threads per copy from now on (for benchmarks and tuning)."""
    global _executor, _thread_count
    with _executor_lock:
        if _executor is not None:
            _executor.shutdown(wait=True)
            _executor = None
        _thread_count = max(1, int(n))


def _pool() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(_threads(), thread_name_prefix="cunumpy-copy")
    return _executor


def host_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """Copy the 1-d byte array ``src`` into ``dst`` (same length), split over host threads.

    NumPy releases the GIL while it copies plain bytes, so the slices run in parallel; each
    thread also takes the page faults of its own slice of a fresh destination.
    """
    n = dst.nbytes
    parts = max(1, min(_threads(), n // _MIN_SLICE))
    if parts == 1:
        np.copyto(dst, src)
        return
    step = -(-n // parts)
    bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    futures = [
        _pool().submit(np.copyto, dst[lo:hi], src[lo:hi]) for lo, hi in bounds[1:]
    ]
    lo, hi = bounds[0]
    np.copyto(dst[lo:hi], src[lo:hi])
    for future in futures:
        future.result()


def device_to_host(
    dst: np.ndarray,
    buffers: Sequence[np.ndarray],
    enqueue: Callable[[int, int, int], Event],
    copy: Callable[[np.ndarray, np.ndarray], None] = host_copy,
) -> None:
    """Fill the byte array ``dst`` from the device through the staging ``buffers``.

    ``enqueue(b, offset, length)`` starts the device-to-host copy of bytes
    ``[offset, offset + length)`` into ``buffers[b]`` and returns an event. While the device
    fills one buffer, ``copy`` drains the other into ``dst``; a buffer is refilled only after it
    was drained.
    """
    work = spans(dst.nbytes, chunk_for(dst.nbytes, buffers[0].nbytes))
    depth = len(buffers)
    pending: dict[int, Event] = {}
    for i in range(min(depth, len(work))):
        pending[i] = enqueue(i % depth, *work[i])
    for i, (offset, length) in enumerate(work):
        b = i % depth
        pending.pop(i).synchronize()
        copy(dst[offset : offset + length], buffers[b][:length])
        ahead = i + depth
        if ahead < len(work):
            pending[ahead] = enqueue(b, *work[ahead])


def host_to_device(
    src: np.ndarray,
    buffers: Sequence[np.ndarray],
    enqueue: Callable[[int, int, int], Event],
    in_flight: list[Event | None],
    copy: Callable[[np.ndarray, np.ndarray], None] = host_copy,
) -> None:
    """Send the byte array ``src`` to the device through the staging ``buffers``.

    ``copy`` fills one buffer from ``src`` while the device reads the other
    (``enqueue(b, offset, length)`` starts the copy of ``buffers[b]`` to device bytes
    ``[offset, offset + length)``). ``in_flight[b]`` is the last copy still reading buffer ``b``:
    waited for before the buffer is refilled, and left set on return, so that the next transfer
    through the same buffers waits for it (the caller need not wait for the last chunk).
    """
    depth = len(buffers)
    for i, (offset, length) in enumerate(spans(src.nbytes, chunk_for(src.nbytes, buffers[0].nbytes))):
        b = i % depth
        previous = in_flight[b]
        if previous is not None:
            previous.synchronize()
            in_flight[b] = None
        copy(buffers[b][:length], src[offset : offset + length])
        in_flight[b] = enqueue(b, offset, length)


class CupyStaging:
    """The pinned staging pool of one process, bound to CuPy (created at first large copy).

    Thread-safe: a transfer holds the pool for its duration; a transfer that finds the pool
    busy (another thread is copying) takes CuPy's ordinary path instead of waiting.
    """

    def __init__(self, cupy: Any, chunk: int = CHUNK_BYTES, depth: int = 2) -> None:
        self._cupy = cupy
        self._memory = [cupy.cuda.alloc_pinned_memory(chunk) for _ in range(depth)]
        self._buffers = [np.frombuffer(m, dtype=np.uint8, count=chunk) for m in self._memory]
        self._addresses = [int(m.ptr) for m in self._memory]
        self._events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(depth)]
        self._in_flight: list[Event | None] = [None] * depth
        self.lock = threading.Lock()

    def _enqueue(self, b: int, dst: int, src: int, length: int, kind: int) -> Event:
        cupy = self._cupy
        stream = cupy.cuda.get_current_stream()
        cupy.cuda.runtime.memcpyAsync(dst, src, length, kind, stream.ptr)
        event = self._events[b]
        event.record(stream)
        return event

    def to_host(self, device: Any, host: np.ndarray) -> None:
        """Copy the C-contiguous CuPy array ``device`` into the C-contiguous ``host`` array."""
        runtime = self._cupy.cuda.runtime
        base = int(device.data.ptr)
        dst = host.reshape(-1).view(np.uint8)
        self._drain()
        try:
            device_to_host(
                dst,
                self._buffers,
                lambda b, offset, length: self._enqueue(
                    b, self._addresses[b], base + offset, length, runtime.memcpyDeviceToHost
                ),
            )
        finally:
            for event in self._events:  # nothing may still write a buffer (also after Ctrl-C)
                event.synchronize()

    def to_device(self, host: np.ndarray, device: Any) -> None:
        """Copy the C-contiguous ``host`` array into the C-contiguous CuPy array ``device``."""
        runtime = self._cupy.cuda.runtime
        base = int(device.data.ptr)
        src = host.reshape(-1).view(np.uint8)
        try:
            host_to_device(
                src,
                self._buffers,
                lambda b, offset, length: self._enqueue(
                    b, base + offset, self._addresses[b], length, runtime.memcpyHostToDevice
                ),
                self._in_flight,
            )
        except BaseException:
            self._drain()
            raise

    def _drain(self) -> None:
        for b, event in enumerate(self._in_flight):
            if event is not None:
                event.synchronize()
                self._in_flight[b] = None
