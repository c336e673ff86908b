"""Dtypes of Metal kernels: what Metal takes, bfloat16 through ``ml_dtypes``, MSL type names.

NumPy has no bfloat16; ``ml_dtypes`` (the package JAX uses) adds one. It is optional: without it
everything else works, and a bfloat16 array or template value raises an ImportError that says
what to install. MLX arrays of bfloat16 become NumPy arrays of ``ml_dtypes.bfloat16`` (a
bit-for-bit view through ``uint16``), and back.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = [
    "BFLOAT16_HINT",
    "MSL_TYPE_NAMES",
    "bfloat16",
    "is_bfloat16",
    "msl_dtype",
    "supported_dtypes",
]

BFLOAT16_HINT = (
    "bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes, or the cunumpy[metal] / "
    "cunumpy[test] extras); or convert the array to float32"
)

MSL_TYPE_NAMES: dict[str, str] = {
    "bool": "bool",
    "char": "int8", "int8_t": "int8",
    "uchar": "uint8", "uint8_t": "uint8",
    "short": "int16", "int16_t": "int16",
    "ushort": "uint16", "uint16_t": "uint16",
    "int": "int32", "int32_t": "int32",
    "uint": "uint32", "uint32_t": "uint32", "unsigned": "uint32",
    "long": "int64", "int64_t": "int64",
    "ulong": "uint64", "uint64_t": "uint64",
    "half": "float16", "float16_t": "float16",
    "bfloat": "bfloat16", "bfloat16_t": "bfloat16",
    "float": "float32",
    "complex64_t": "complex64",
    "double": "float64",
}
"""Metal Shading Language type names (and MLX's ``*_t`` spellings) -> NumPy dtype names."""

_BASE = tuple(
    np.dtype(t)
    for t in (
        np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
        np.uint64, np.float16, np.float32, np.complex64,
    )
)


@functools.cache
def _bfloat16_or_none() -> np.dtype | None:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def bfloat16() -> np.dtype:
    """NumPy's bfloat16 dtype from ``ml_dtypes``.

    Raises
    ------
    ImportError
        ``ml_dtypes`` is not installed (the message says what to do).
    """
    dtype = _bfloat16_or_none()
    if dtype is None:
        raise ImportError(BFLOAT16_HINT)
    return dtype


def is_bfloat16(dtype: Any) -> bool:
    """True for ``ml_dtypes.bfloat16`` (False when ``ml_dtypes`` is not installed)."""
    bf = _bfloat16_or_none()
    return bf is not None and dtype == bf


@functools.cache
def supported_dtypes() -> frozenset[np.dtype]:
    """The array dtypes Metal kernels take here (bfloat16 only with ``ml_dtypes``)."""
    bf = _bfloat16_or_none()
    return frozenset(_BASE + ((bf,) if bf is not None else ()))


def msl_dtype(name: str) -> np.dtype | None:
    """The NumPy dtype of an MSL or NumPy type name (``"float"``, ``"half"``, ``"float32"``).

    Returns None when the string names no type. ``"bfloat"`` needs ``ml_dtypes``.
    """
    key = name.strip()
    mapped = MSL_TYPE_NAMES.get(key)
    if mapped == "bfloat16" or key == "bfloat16":
        return bfloat16()
    if mapped is not None:
        return np.dtype(mapped)
    if key in ("float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8",
               "uint16", "uint32", "uint64", "complex64", "bool_"):
        return np.dtype(key)
    return None
