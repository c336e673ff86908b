"""The stand-in's device memory bookkeeping: pointers, the memory pools, the one device.

Kept apart from :mod:`._array` and :mod:`._cuda` (both use it) so that neither imports the other.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy

COMPUTE_CAPABILITY = "90"
"""``Device(0).compute_capability``: the H200 (sm_90) this project measures CuPy on."""


class MemoryPointer:
    """Where an array's data lives: ``ptr`` is the address of the NumPy buffer behind it.

    Stands in for ``cupy.cuda.MemoryPointer``: ``ptr``, ``device_id`` (always 0), ``mem``
    (the allocation, with ``size``) and ``+`` an offset in bytes.
    """

    def __init__(self, owner: numpy.ndarray, offset: int = 0) -> None:
        self._owner = owner
        base = owner
        while isinstance(base.base, numpy.ndarray):
            base = base.base
        self.mem = _Memory(base)
        self.ptr = int(owner.__array_interface__["data"][0]) + int(offset)
        self.device_id = 0

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self._owner, self.ptr - self._base_ptr() + int(offset))

    def _base_ptr(self) -> int:
        return int(self._owner.__array_interface__["data"][0])

    def __int__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        return f"<MemoryPointer 0x{self.ptr:x} device=0 (cupy stand-in)>"


class _Memory:
    """The allocation behind a :class:`MemoryPointer` (``size`` in bytes, ``ptr``)."""

    def __init__(self, base: numpy.ndarray) -> None:
        self.size = int(base.nbytes)
        self.ptr = int(base.__array_interface__["data"][0])
        self.device_id = 0


class MemoryPool:
    """``cupy.cuda.MemoryPool``: counts the bytes of live stand-in arrays that own memory."""

    def __init__(self) -> None:
        self._used = 0
        self._limit = 0

    def used_bytes(self) -> int:
        """Bytes held by live arrays."""
        return self._used

    def total_bytes(self) -> int:
        """Bytes held by the pool (the stand-in frees at once: the same as ``used_bytes``)."""
        return self._used

    def free_bytes(self) -> int:
        """Bytes cached but unused (always 0: freed memory goes back to the host at once)."""
        return 0

    def free_all_blocks(self, stream: Any = None) -> None:
        """Release cached blocks (none are cached)."""

    def n_free_blocks(self) -> int:
        """Number of cached blocks (0)."""
        return 0

    def set_limit(self, size: int | None = None, fraction: float | None = None) -> None:
        """Limit on the pool's bytes: allocations past it raise ``OutOfMemoryError``."""
        if fraction is not None:
            raise NotImplementedError("MemoryPool.set_limit(fraction=...) in the cupy stand-in: "
                                      "give size= in bytes (there is no device size)")
        self._limit = int(size or 0)

    def get_limit(self) -> int:
        """The limit set by :meth:`set_limit` (0: none)."""
        return self._limit


_default_pool = MemoryPool()


class PinnedMemoryPool:
    """``cupy.cuda.PinnedMemoryPool``: the stand-in has no pinned memory; nothing is held."""

    def free_all_blocks(self) -> None:
        """Release cached blocks (none)."""

    def n_free_blocks(self) -> int:
        """Number of cached blocks (0)."""
        return 0


_default_pinned_pool = PinnedMemoryPool()


def get_default_memory_pool() -> MemoryPool:
    """``cupy.get_default_memory_pool()``: the pool counting the stand-in's arrays."""
    return _default_pool


def get_default_pinned_memory_pool() -> PinnedMemoryPool:
    """``cupy.get_default_pinned_memory_pool()``."""
    return _default_pinned_pool


def _release(nbytes: int) -> None:
    _default_pool._used -= nbytes


def track_allocation(array: Any, nbytes: int) -> None:
    """Count ``nbytes`` for ``array`` in the default pool until it is collected."""
    pool = _default_pool
    if pool._limit and pool._used + nbytes > pool._limit:
        raise OutOfMemoryError(nbytes, pool._used, pool._limit)
    pool._used += nbytes
    weakref.finalize(array, _release, nbytes)


class OutOfMemoryError(MemoryError):
    """``cupy.cuda.memory.OutOfMemoryError``: an allocation past the pool's limit."""

    def __init__(self, size: int, total: int, limit: int = 0) -> None:
        super().__init__(
            f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes"
            + (f", limit set to: {limit:,} bytes" if limit else "") + ")."
        )


class CUDARuntimeError(RuntimeError):
    """``cupy.cuda.runtime.CUDARuntimeError``: a runtime call the stand-in refuses, with a code."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"{message}")


def _not_emulated(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what} is not emulated by cunumpy's CuPy stand-in (a CPU has no such hardware); "
        "test this code path on a GPU"
    )


class Device:
    """``cupy.cuda.Device``: only device 0 exists.

    Parameters
    ----------
    device : int, optional
        The device id; anything but 0 raises ``CUDARuntimeError`` (invalid device ordinal).
    """

    def __init__(self, device: int | None = None) -> None:
        ident = 0 if device is None else int(device)
        if ident != 0:
            raise CUDARuntimeError(101, "cudaErrorInvalidDevice: invalid device ordinal "
                                        "(the CuPy stand-in has one device, 0)")
        self.id = ident
        self._previous: list[int] = []

    compute_capability = COMPUTE_CAPABILITY

    def use(self) -> None:
        """Make it the current device (it always is)."""

    def synchronize(self) -> None:
        """Wait for the device's work (all of it is done already)."""

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __int__(self) -> int:
        return self.id

    def __index__(self) -> int:
        return self.id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("cupy-stand-in-device", self.id))

    def can_access_peer(self, peer: int) -> bool:
        """Peer access: raises ``NotImplementedError`` (one device, no peers)."""
        raise _not_emulated("peer access between devices")

    @property
    def mem_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes: the H200's 141 GB minus the stand-in's live arrays."""
        total = 141 * 10**9
        return total - _default_pool.used_bytes(), total

    @property
    def attributes(self) -> dict[str, int]:
        """A few device attributes with the H200's values."""
        return {"MaxThreadsPerBlock": 1024, "WarpSize": 32, "MultiProcessorCount": 132,
                "MaxSharedMemoryPerBlock": 49152, "ComputeCapabilityMajor": 9,
                "ComputeCapabilityMinor": 0}

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"
