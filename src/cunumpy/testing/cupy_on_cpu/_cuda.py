"""``cupy.cuda`` of the stand-in (filled in below the memory pool)."""

from __future__ import annotations

import weakref
from typing import Any


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
