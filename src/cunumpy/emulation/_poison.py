"""Poison patterns for outputs: fill before a launch, find elements still holding them after.

Floats get a quiet NaN with a distinctive payload (a computed NaN does not carry it), integers and
bools a repeated ``0xA5`` byte. One- and two-byte types can legitimately hold their pattern, so
:func:`unwritten` confirms their suspects by a second launch with a different pattern (``0x5A``).

Given the kernel's library, both run in its C helpers (``cn_fill``, ``cn_count`` in ``cn_core.h``):
the check is one read pass that counts the elements still holding the pattern, and only when
some do are their indices found with NumPy. Large arrays are split over the emulator's worker
threads (``CUNUMPY_EMULATOR_THREADS``).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

__all__ = ["needs_confirmation", "poison", "unwritten"]

_FLOAT_PATTERNS = {
    "float16": 0x7E5A,
    "bfloat16": 0x7FDA,
    "float32": 0x7FDEAD42,
    "float64": 0x7FF8DEAD0BADF00D,
    "complex64": 0x7FDEAD427FDEAD42,
    "complex128": None,
}

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _pattern(dtype: np.dtype, variant: int) -> tuple[np.dtype, int] | None:
    size = dtype.itemsize
    if size not in _UINT:
        return None
    view = np.dtype(_UINT[size])
    special = _FLOAT_PATTERNS.get(dtype.name)
    if special is not None:
        return view, special
    byte = 0xA5 if variant == 0 else 0x5A
    return view, int.from_bytes(bytes([byte]) * size, "little")


PARALLEL_BYTES = 4 << 20
"""Arrays from this size on are poisoned and checked by several workers."""


def _helpers(lib: Any) -> tuple[Any, Any] | None:
    if lib is None:
        return None
    found = lib.__dict__.get("poison_helpers")
    if found is None:
        try:
            fill, count = lib.cdll.cn_fill, lib.cdll.cn_count
        except AttributeError:
            return None
        fill.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_uint64]
        fill.restype = None
        count.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_uint64]
        count.restype = ctypes.c_int64
        found = lib.__dict__["poison_helpers"] = (fill, count)
    return found


def _spread(fn: Any, arr: np.ndarray, value: int) -> list[int]:
    """``fn(address, n, itemsize, value)`` over ``arr`` (C-contiguous), in parts on the workers
    when it is large."""
    from cunumpy import config
    from cunumpy.emulation import _workers

    n, item, base = arr.size, arr.itemsize, arr.ctypes.data
    parts = 1
    if arr.nbytes >= PARALLEL_BYTES:
        parts = min(config.emulator_threads(), 16)
    if parts <= 1:
        return [fn(base, n, item, value)]
    step = -(-n // parts)
    calls = [functools.partial(fn, base + k * item, min(step, n - k), item, value)
             for k in range(0, n, step)]
    # Each part is short (memory-bound): nothing to cancel, only to wait for (keep: the array).
    return _workers.spread(calls[1:], calls[0], lambda: None, keep=arr)


def poison(arr: np.ndarray, variant: int = 0, lib: Any = None) -> bool:
    """Fill ``arr`` (C-contiguous) with its dtype's pattern; False when the dtype has none.

    ``lib``: the kernel's library, whose C helper fills it (in parts, when it is large)."""
    p = _pattern(arr.dtype, variant)
    if p is None:
        return False
    view, value = p
    helpers = _helpers(lib)
    if helpers is not None and arr.flags.c_contiguous and arr.size:
        _spread(helpers[0], arr, value)
        return True
    arr.reshape(-1).view(view)[...] = value
    return True


def unwritten(arr: np.ndarray, variant: int = 0, lib: Any = None) -> np.ndarray:
    """Flat indices of ``arr`` that still hold the pattern.

    ``lib``: the kernel's library, whose C helper counts them first (one read pass; the indices
    are looked for only when there are some)."""
    p = _pattern(arr.dtype, variant)
    if p is None:
        return np.zeros(0, dtype=np.intp)
    view, value = p
    helpers = _helpers(lib)
    if helpers is not None and arr.flags.c_contiguous and arr.size:
        if sum(_spread(helpers[1], arr, value)) == 0:
            return np.zeros(0, dtype=np.intp)
    return np.flatnonzero(arr.reshape(-1).view(view) == value)


def needs_confirmation(dtype: np.dtype) -> bool:
    """Whether a suspect element of this dtype may be a legitimately written value."""
    return dtype.name not in _FLOAT_PATTERNS and dtype.itemsize <= 2
