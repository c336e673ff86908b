"""Sizes, alignments and NumPy dtypes of Metal Shading Language types, and struct layouts.

The Metal Shading Language Specification gives every scalar and vector type a size and an
alignment (section 2, tables 2.1-2.4): a 3-component vector has the size and alignment of the
4-component one (``float3`` is 16 bytes), ``packed_float3`` is 12 bytes aligned like ``float``,
a matrix ``floatCxR`` holds C column vectors of R components, atomics have the size of their
value type, ``size_t`` and ``ptrdiff_t`` are 64 bits, ``bool`` is one byte. Struct members are
laid out in order, each at the next multiple of its alignment; the struct's alignment is its
largest member's, and its size a multiple of that. :func:`layout` applies these rules to the
structs of a library, which the front end compares with a NumPy structured dtype before it
binds one to a ``constant Struct&`` parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["SCALARS", "Field", "TypeInfo", "layout", "type_info"]

SCALARS: dict[str, tuple[int, str]] = {
    "bool": (1, "bool"),
    "char": (1, "int8"), "int8_t": (1, "int8"), "signed char": (1, "int8"),
    "uchar": (1, "uint8"), "uint8_t": (1, "uint8"), "unsigned char": (1, "uint8"),
    "short": (2, "int16"), "int16_t": (2, "int16"),
    "ushort": (2, "uint16"), "uint16_t": (2, "uint16"), "unsigned short": (2, "uint16"),
    "int": (4, "int32"), "int32_t": (4, "int32"),
    "uint": (4, "uint32"), "uint32_t": (4, "uint32"), "unsigned": (4, "uint32"),
    "unsigned int": (4, "uint32"),
    "long": (8, "int64"), "int64_t": (8, "int64"), "ptrdiff_t": (8, "int64"),
    "ulong": (8, "uint64"), "uint64_t": (8, "uint64"), "size_t": (8, "uint64"),
    "unsigned long": (8, "uint64"),
    "half": (2, "float16"), "float16_t": (2, "float16"),
    "bfloat": (2, "bfloat16"), "bfloat16_t": (2, "bfloat16"),
    "float": (4, "float32"),
    "double": (8, "float64"),
}
"""Metal scalar spellings: size in bytes and the NumPy dtype name (``bfloat16`` is ml_dtypes')."""

RAW_BYTES = frozenset({"char", "uchar", "int8_t", "uint8_t", "void", "signed char",
                       "unsigned char"})
"""Pointee types that view memory as bytes: any array binds to them."""

_VECTOR = re.compile(r"(packed_)?([a-z]+?)([234])$")
_MATRIX = re.compile(r"([a-z]+?)([234])x([234])$")
_VEC_TEMPLATE = re.compile(r"(?:metal::)?vec<\s*([\w:]+)\s*,\s*([234])\s*>$")
_ATOMIC = re.compile(r"(?:metal::)?atomic(?:_(int|uint|float|bool|ulong|long)|<\s*([\w:]+)\s*>)$")
_FIXED_SCALARS = {"int8": "int8_t", "uint8": "uint8_t"}


@dataclass(frozen=True)
class TypeInfo:
    """What the front end needs to know of one type."""

    size: int
    align: int
    scalar: str | None
    """The NumPy dtype name of its elements (``float32`` for ``float4``), None for structs."""
    lanes: int = 1
    """Elements per value (4 for ``float4``; 1 for scalars and structs)."""
    struct: str | None = None
    """The struct's name, for a struct."""


@dataclass(frozen=True)
class Field:
    """One member of a struct as laid out."""

    name: str
    offset: int
    type: str
    info: TypeInfo
    count: int = 1
    """Array length (1 for a plain member)."""


def _clean(text: str) -> str:
    text = re.sub(r"\b(const|volatile|constant|device|thread|threadgroup|struct|typename)\b",
                  " ", text)
    text = " ".join(text.split())
    text = re.sub(r"\s*([<>,:])\s*", r"\1", text)
    text = text.replace("metal::", "")
    return _FIXED_SCALARS.get(text, text)


def type_info(
    text: str,
    structs: Mapping[str, Sequence[tuple[str, str, tuple[str, ...]]]] | None = None,
    aliases: Mapping[str, str] | None = None,
    _depth: int = 0,
) -> TypeInfo | None:
    """Size, alignment and element dtype of a Metal type spelled ``text``; None if unknown.

    ``structs`` maps struct names to their members ``(type, name, array dims)``; ``aliases``
    maps typedef and ``using`` names to the types they stand for.
    """
    if _depth > 20:
        return None
    name = _clean(text)
    aliases = aliases or {}
    structs = structs or {}
    if name in SCALARS:
        size, dtype = SCALARS[name]
        return TypeInfo(size, size, dtype)
    if name in aliases and aliases[name] != text:
        return type_info(aliases[name], structs, aliases, _depth + 1)
    m = _ATOMIC.fullmatch(name)
    if m:
        inner = type_info(m.group(1) or m.group(2), structs, aliases, _depth + 1)
        return inner
    m = _VEC_TEMPLATE.fullmatch(name)
    if m:
        return _vector(m.group(1), int(m.group(2)), False, structs, aliases, _depth)
    m = _MATRIX.fullmatch(name)
    if m:
        col = _vector(m.group(1), int(m.group(3)), False, structs, aliases, _depth)
        if col is None:
            return None
        cols = int(m.group(2))
        return TypeInfo(col.size * cols, col.align, col.scalar, col.lanes * cols)
    m = _VECTOR.fullmatch(name)
    if m and m.group(2) in SCALARS:
        return _vector(m.group(2), int(m.group(3)), bool(m.group(1)), structs, aliases, _depth)
    if name in structs:
        fields = layout(name, structs, aliases, _depth + 1)
        if fields is None:
            return None
        size, align = fields
        return TypeInfo(size, align, None, 1, name)
    return None


def _vector(elem: str, n: int, packed: bool, structs: Mapping, aliases: Mapping,
            depth: int) -> TypeInfo | None:
    base = type_info(elem, structs, aliases, depth + 1)
    if base is None or base.lanes != 1 or base.scalar is None:
        return None
    if packed:
        return TypeInfo(base.size * n, base.size, base.scalar, n)
    slots = 4 if n == 3 else n
    return TypeInfo(base.size * slots, base.size * slots, base.scalar, n)


def _dim(text: str) -> int | None:
    try:
        return int(text.replace("'", "").rstrip("uUlL"), 0)
    except ValueError:
        return None


def fields(
    name: str,
    structs: Mapping[str, Sequence[tuple[str, str, tuple[str, ...]]]],
    aliases: Mapping[str, str] | None = None,
    _depth: int = 0,
) -> list[Field] | None:
    """The members of struct ``name`` with their offsets; None if a member type is unknown."""
    out: list[Field] = []
    offset = 0
    for ctype, member, dims in structs[name]:
        info = type_info(ctype, structs, aliases, _depth + 1)
        if info is None:
            return None
        count = 1
        for d in dims:
            n = _dim(d)
            if n is None:
                return None
            count *= n
        offset = -(-offset // info.align) * info.align
        out.append(Field(member, offset, ctype, info, count))
        offset += info.size * count
    return out


def layout(
    name: str,
    structs: Mapping[str, Sequence[tuple[str, str, tuple[str, ...]]]],
    aliases: Mapping[str, str] | None = None,
    _depth: int = 0,
) -> tuple[int, int] | None:
    """(size, alignment) of struct ``name``; None if a member type is unknown."""
    members = fields(name, structs, aliases, _depth)
    if members is None:
        return None
    align = max((f.info.align for f in members), default=1)
    end = max((f.offset + f.info.size * f.count for f in members), default=0)
    return -(-max(end, 1 if not members else end) // align) * align, align


def dtype_of(info: TypeInfo, bfloat16: Callable[[], np.dtype | None]) -> np.dtype | None:
    """The NumPy dtype of one element of ``info`` (None for structs or an unknown bfloat16)."""
    if info.scalar is None:
        return None
    if info.scalar == "bfloat16":
        return bfloat16()
    return np.dtype(info.scalar)
