"""C/CUDA scalar type spellings: the canonical names and their NumPy dtypes.

Shared by :mod:`.cuda_signature` (parameters) and :mod:`.cuda_types` (typedefs, structs).
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["C_TYPES"]

C_TYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "char": np.dtype(np.int8),
    "signed char": np.dtype(np.int8),
    "unsigned char": np.dtype(np.uint8),
    "short": np.dtype(np.int16),
    "unsigned short": np.dtype(np.uint16),
    "int": np.dtype(np.int32),
    "unsigned int": np.dtype(np.uint32),
    "long": np.dtype(np.int64),
    "unsigned long": np.dtype(np.uint64),
    "long long": np.dtype(np.int64),
    "unsigned long long": np.dtype(np.uint64),
    "int8_t": np.dtype(np.int8),
    "int16_t": np.dtype(np.int16),
    "int32_t": np.dtype(np.int32),
    "int64_t": np.dtype(np.int64),
    "uint8_t": np.dtype(np.uint8),
    "uint16_t": np.dtype(np.uint16),
    "uint32_t": np.dtype(np.uint32),
    "uint64_t": np.dtype(np.uint64),
    "size_t": np.dtype(np.uint64),
    "ptrdiff_t": np.dtype(np.int64),
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
    "complex<float>": np.dtype(np.complex64),
    "complex<double>": np.dtype(np.complex128),
}
"""Canonical C/CUDA type spelling -> NumPy dtype, for a 64-bit Linux (LP64) device ABI.

``char`` is taken as signed (``int8``), as nvcc does on x86-64 and aarch64 hosts. ``long`` is 64
bits. ``complex<float>`` covers ``thrust::complex<float>`` and ``cuda::std::complex<float>``
(the namespace is dropped before lookup). Spellings such as ``unsigned``, ``long int``,
``signed int`` and ``std::int32_t`` are normalised to these keys.
"""

_QUALIFIERS = frozenset(
    {"const", "volatile", "__restrict__", "__restrict", "restrict", "register", "struct"}
)
_INT_WORDS = frozenset({"signed", "unsigned", "short", "long", "int", "char"})

def _normalise_type(words: list[str]) -> str:
    """Join type words into a canonical spelling (``long int`` -> ``long``)."""
    if words and all(w in _INT_WORDS for w in words):
        unsigned = "unsigned" in words
        longs = words.count("long")
        if "char" in words:
            base = "char"
            if unsigned:
                return "unsigned char"
            if "signed" in words:
                return "signed char"
            return "char"
        if "short" in words:
            base = "short"
        elif longs >= 2:
            base = "long long"
        elif longs == 1:
            base = "long"
        else:
            base = "int"
        return f"unsigned {base}" if unsigned else base
    text = " ".join(words)
    text = re.sub(r"\s*(<|>|,|::)\s*", r"\1", text)
    for prefix in ("std::", "::", "cuda::std::", "thrust::"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text
