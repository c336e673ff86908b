"""Pinning the destination arrays that ``to_numpy(a, out=h)`` fills again and again.

A copy into pinned host memory runs at the bus's speed (about 55 GB/s on the H200 host) in one
DMA; a copy into pageable memory goes through staging buffers and a host-side copy (about 27
GB/s). A program that copies into the same preallocated array in a loop gains from pinning that
array in place (``cudaHostRegister``) once, which costs about as much as a few copies: so an
array is pinned the second time it is seen as a destination, kept pinned while it lives (it is
unpinned when its memory is freed), and the bytes pinned this way are capped.

The policy (:class:`Pinned`) is written against three callables (register, unregister and the
copy) so that it can be tested without a GPU; :func:`cupy_pinned` binds it to CuPy.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MIN_BYTES", "Pinned", "cupy_pinned"]

MIN_BYTES = 32 << 20
"""Destinations smaller than this are never pinned (the staging path is as fast for them)."""

CAP_BYTES = 8 << 30
"""At most this many bytes of user arrays are pinned at a time."""


def _owner(arr: np.ndarray) -> Any:
    """The object that owns ``arr``'s memory (the root of its ``base`` chain)."""
    owner: Any = arr
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    return owner


class Pinned:
    """Which destination arrays are pinned, and the copies into them.

    Parameters
    ----------
    register, unregister
        ``register(address, nbytes)`` pins host memory in place (raises when it cannot);
        ``unregister(address)`` undoes it.
    min_bytes, cap_bytes
        Smallest array pinned, and the most bytes pinned at once.
    """

    def __init__(self, register: Callable[[int, int], None], unregister: Callable[[int], None],
                 min_bytes: int = MIN_BYTES, cap_bytes: int = CAP_BYTES) -> None:
        self._register = register
        self._unregister = unregister
        self.min_bytes = min_bytes
        self.cap_bytes = cap_bytes
        self._seen: dict[tuple[int, int], weakref.ref] = {}
        self._pinned: dict[tuple[int, int], weakref.finalize] = {}
        self._refused: set[tuple[int, int]] = set()
        self.pinned_bytes = 0
        self._lock = threading.Lock()

    def is_pinned(self, arr: np.ndarray) -> bool:
        """Whether ``arr``'s memory is pinned by this object."""
        return (arr.ctypes.data, arr.nbytes) in self._pinned

    def prepare(self, arr: np.ndarray) -> bool:
        """Note ``arr`` as a copy's destination; True when it is pinned (now or before).

        The first time an array (its address, size and owner) is seen it is only remembered;
        the second time it is pinned, unless that would pass the cap or pinning fails (then
        it is never tried again).
        """
        nbytes = arr.nbytes
        if nbytes < self.min_bytes or not arr.flags.c_contiguous or not arr.flags.writeable:
            return False
        key = (arr.ctypes.data, nbytes)
        if key in self._pinned:
            return True
        if key in self._refused:
            return False
        owner = _owner(arr)
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or seen() is not owner:
                try:
                    self._seen[key] = weakref.ref(owner)
                except TypeError:  # memory owned by something without weak references
                    self._refused.add(key)
                return False
            if self.pinned_bytes + nbytes > self.cap_bytes:
                return False
            try:
                self._register(key[0], nbytes)
            except Exception:  # locked-memory limits, memory the user pinned already, ...
                self._refused.add(key)
                return False
            del self._seen[key]
            self.pinned_bytes += nbytes
            # Unpinned before the owner's memory is freed (weak references are cleared first).
            self._pinned[key] = weakref.finalize(owner, self._release, key)
            return True

    def _release(self, key: tuple[int, int]) -> None:
        with self._lock:
            if self._pinned.pop(key, None) is None:
                return
            self.pinned_bytes -= key[1]
        try:
            self._unregister(key[0])
        except Exception:  # the context is gone (interpreter exit): nothing left to undo
            pass

    def release_all(self) -> None:
        """Unpin every array (tests, and before the CUDA context goes away)."""
        for fin in list(self._pinned.values()):
            fin()


_cupy: Pinned | None = None
_cupy_lock = threading.Lock()


def cupy_pinned(cupy: Any) -> Pinned:
    """The process's :class:`Pinned` bound to CuPy's runtime (created at first use)."""
    global _cupy
    if _cupy is None:
        with _cupy_lock:
            if _cupy is None:
                runtime = cupy.cuda.runtime
                _cupy = Pinned(lambda address, nbytes: runtime.hostRegister(address, nbytes, 0),
                               runtime.hostUnregister)
    return _cupy
