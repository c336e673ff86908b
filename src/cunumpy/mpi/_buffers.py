"""What to hand to mpi4py for an array: the array itself, or a staged copy in pinned memory.

A host array (and a device array when the MPI library is CUDA-aware) goes to MPI as it is, once
the kernels that write it have finished. A device array on a library that is not CUDA-aware is
copied into a pinned host buffer (one DMA at the bus's speed), MPI works on that buffer, and
what MPI received is copied back to the device. The pinned buffers come from a pool and are used
again by later calls (pinning memory costs far more than a copy). Every copy between host and
device is recorded as a transfer (``cunumpy.profiling``), at the caller's line.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cunumpy import profiling
from cunumpy.mpi._device import check_device, is_device, local_cuda_aware, synchronize

__all__ = ["Buffer", "PinnedPool", "buffer", "from_pinned", "pinned_pool", "to_pinned"]

MIN_BLOCK = 64 << 10
"""Smallest pinned block (bytes); a request takes the next power of two at or above it."""

KEEP_BYTES = 4 << 30
"""Free pinned blocks kept for later calls, at most (beyond that a returned block is freed)."""


def _block_size(nbytes: int) -> int:
    return max(MIN_BLOCK, 1 << max(0, int(nbytes) - 1).bit_length())


class PinnedPool:
    """Pinned host blocks kept for reuse, by power-of-two size.

    Parameters
    ----------
    allocate
        ``allocate(nbytes)`` returns a 1-d ``uint8`` NumPy array of ``nbytes`` in pinned memory.
    keep_bytes
        The most bytes of free blocks kept; a block returned beyond that is dropped (freed).
    """

    def __init__(self, allocate: Callable[[int], np.ndarray], keep_bytes: int = KEEP_BYTES) -> None:
        self._allocate = allocate
        self.keep_bytes = keep_bytes
        self._free: dict[int, list[np.ndarray]] = {}
        self._lock = threading.Lock()
        self.allocations = 0
        """Blocks allocated so far (a warm pool allocates none)."""
        self.kept_bytes = 0

    def take(self, nbytes: int) -> np.ndarray:
        """A block of at least ``nbytes`` (``uint8``; slice it), from the pool when one is free."""
        size = _block_size(nbytes)
        with self._lock:
            free = self._free.get(size)
            if free:
                self.kept_bytes -= size
                return free.pop()
            self.allocations += 1
        return self._allocate(size)

    def give(self, block: np.ndarray) -> None:
        """Return a block that :meth:`take` gave (nothing may still read or write it)."""
        size = block.nbytes
        with self._lock:
            if self.kept_bytes + size <= self.keep_bytes:
                self._free.setdefault(size, []).append(block)
                self.kept_bytes += size

    @contextlib.contextmanager
    def lease(self, nbytes: int) -> Iterator[np.ndarray]:
        """A block of ``nbytes`` (exactly, as a view), returned to the pool at the end."""
        block = self.take(nbytes)
        try:
            yield block[:nbytes]
        finally:
            self.give(block)


_pool: PinnedPool | None = None
_pool_lock = threading.Lock()


def pinned_pool() -> PinnedPool:
    """The process's pool of pinned buffers for MPI staging (CuPy's pinned allocator)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                import cupy

                def allocate(nbytes: int) -> np.ndarray:
                    memory = cupy.cuda.alloc_pinned_memory(nbytes)
                    return np.frombuffer(memory, dtype=np.uint8, count=nbytes)

                _pool = PinnedPool(allocate)
    return _pool


def _describe(a: Any) -> str:
    return f"{np.dtype(a.dtype).name}{list(a.shape)}"


def to_pinned(device: Any, host: np.ndarray, what: str) -> None:
    """Copy the contiguous device array ``device`` into the host array ``host`` (same shape and
    dtype, pinned), recorded as one ``to_host`` transfer described by ``what``."""
    device.get(out=host)
    if profiling._active:
        profiling._record("to_host", host.nbytes, what)


def from_pinned(host: np.ndarray, device: Any, what: str) -> None:
    """Copy ``host`` into the contiguous device array ``device``, recorded as one ``to_device``
    transfer described by ``what``."""
    device.set(host)
    if profiling._active:
        profiling._record("to_device", host.nbytes, what)


def _host_view(block: np.ndarray, like: Any) -> np.ndarray:
    return block.view(np.dtype(like.dtype)).reshape(like.shape)


def buffer(array: Any, *, send: bool = True, recv: bool = False, comm: Any = None) -> Buffer:
    """What to hand to mpi4py for ``array``: a context manager.

    Inside the ``with`` block, pass the yielded object to mpi4py (``comm.Send(buf, ...)``,
    ``comm.Recv(buf, ...)``, or ``[buf, MPI.FLOAT]``) and complete the communication (wait for
    a non-blocking request) before the block ends.

    - A C-contiguous NumPy array is yielded as it is; a non-contiguous one as a contiguous copy
      (copied back into ``array`` at the end when ``recv``).
    - A CuPy array on a CUDA-aware MPI library (:func:`cuda_aware`) is yielded as it is, after
      waiting for every kernel and copy queued on the device (MPI reads memory directly: a
      buffer that a kernel is still writing would be sent half-written, silently).
    - A CuPy array otherwise is staged: copied (when ``send``) into a pinned host buffer taken
      from a pool that later calls use again, which is yielded; at the end (when ``recv``) the
      buffer is copied back to ``array``. Each copy is a transfer counted by
      :func:`cunumpy.profiling.count_transfers`, at the line of the ``with`` statement.

    When the block raises, nothing is copied back.

    Parameters
    ----------
    array
        A NumPy or CuPy array.
    send
        MPI reads the buffer (its data must be there when the block starts).
    recv
        MPI writes the buffer (copied back into ``array`` when the block ends).
    comm
        Not used for the decision itself (no collective call happens here); accepted so that
        the call reads like the other functions of :mod:`cunumpy.mpi`.
    """
    if not (send or recv):
        raise ValueError("buffer: at least one of send=True or recv=True is needed")
    if isinstance(array, np.ndarray):
        if recv and not array.flags.writeable:
            raise ValueError("buffer: argument 'array' is read-only but recv=True (MPI would "
                             "write it); pass a writeable array")
        return Buffer(array, send, recv, "host")
    if not is_device(array):
        raise TypeError(
            f"buffer: argument 'array' must be a NumPy or CuPy array, got {type(array).__name__}"
        )
    problem = check_device(array)
    if problem:
        raise ValueError(f"buffer: argument 'array' {_describe(array)}: {problem}")
    return Buffer(array, send, recv, "direct" if local_cuda_aware() else "staged")


class Buffer:
    """The context manager :func:`buffer` returns (a class, so that the copies it makes are
    recorded at the caller's ``with`` line)."""

    def __init__(self, array: Any, send: bool, recv: bool, how: str) -> None:
        self.array, self.send, self.recv, self.how = array, send, recv, how
        self._contiguous: Any = None
        self._block: np.ndarray | None = None
        self._host: Any = None

    def _contiguous_copy(self, xp: Any) -> Any:
        a = self.array
        if a.flags.c_contiguous:
            return a
        return xp.ascontiguousarray(a) if self.send else xp.empty(a.shape, a.dtype)

    def __enter__(self) -> Any:
        if self.how == "host":
            self._contiguous = self._contiguous_copy(np)
            return self._contiguous
        import cupy

        self._contiguous = self._contiguous_copy(cupy)
        if self.how == "direct":
            synchronize()
            return self._contiguous
        self._block = pinned_pool().take(self.array.nbytes)
        self._host = _host_view(self._block[:self.array.nbytes], self.array)
        if self.send:
            synchronize()
            to_pinned(self._contiguous, self._host, self._what())
        return self._host

    def _what(self) -> str:
        return f"cunumpy.mpi.buffer {_describe(self.array)} staged through pinned host memory"

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None and self.recv:
                if self.how == "staged":
                    from_pinned(self._host, self._contiguous, self._what())
                if self._contiguous is not self.array:
                    self.array[...] = self._contiguous
        finally:
            if self._block is not None:
                pinned_pool().give(self._block)
                self._block = None
