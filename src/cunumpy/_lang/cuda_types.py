"""C types of CUDA kernel parameters beyond plain numbers: aliases, vectors, complex, structs.

:func:`collect_declarations` reads the ``typedef``/``using`` aliases and the ``struct``/``class``
definitions of a source (comments, strings and inactive preprocessor branches already blanked);
:func:`resolve` turns one parameter type into a :class:`Resolved`: its NumPy dtype and its CUDA
size and alignment, or the reason it has none.

- Scalars: :data:`~cunumpy._lang.c_types.C_TYPES`, plus ``__half``/``half``
  (float16) and ``__nv_bfloat16``/``nv_bfloat16`` (``ml_dtypes.bfloat16``, when installed).
- Vector types (``float4``, ``int2``, ``uchar3``, ``double2``, ``__half2`` ...): structured
  dtypes with fields ``x, y, z, w``, CUDA's size and alignment (:data:`VECTOR_TYPES`):
  ``float4`` is 16 bytes, 16-byte aligned; ``float3`` 12 bytes, 4-byte aligned.
- ``cuFloatComplex``/``cuDoubleComplex``/``cuComplex``, ``complex<float|double>`` (``thrust::``,
  ``cuda::std::``): complex64/complex128.
- Structs: the C layout of their members (natural alignment, ``__align__(n)``/``alignas(n)``),
  as a structured dtype with those offsets and that size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cunumpy._lang.c_types import _QUALIFIERS, C_TYPES, _normalise_type

__all__ = [
    "TOOLKIT_STRUCTS",
    "VECTOR_TYPES",
    "Declarations",
    "Resolved",
    "collect_declarations",
    "cuda_dtype",
    "layout_matches",
    "resolve",
]

_LANES = "xyzw"

# (base C type, base dtype, {lanes: alignment})
_VECTOR_BASES: dict[str, tuple[str, Any, dict[int, int]]] = {
    "char": ("signed char", np.int8, {1: 1, 2: 2, 3: 1, 4: 4}),
    "uchar": ("unsigned char", np.uint8, {1: 1, 2: 2, 3: 1, 4: 4}),
    "short": ("short", np.int16, {1: 2, 2: 4, 3: 2, 4: 8}),
    "ushort": ("unsigned short", np.uint16, {1: 2, 2: 4, 3: 2, 4: 8}),
    "int": ("int", np.int32, {1: 4, 2: 8, 3: 4, 4: 16}),
    "uint": ("unsigned int", np.uint32, {1: 4, 2: 8, 3: 4, 4: 16}),
    "long": ("long", np.int64, {1: 8, 2: 16, 3: 8, 4: 16}),
    "ulong": ("unsigned long", np.uint64, {1: 8, 2: 16, 3: 8, 4: 16}),
    "longlong": ("long long", np.int64, {1: 8, 2: 16, 3: 8, 4: 16}),
    "ulonglong": ("unsigned long long", np.uint64, {1: 8, 2: 16, 3: 8, 4: 16}),
    "float": ("float", np.float32, {1: 4, 2: 8, 3: 4, 4: 16}),
    "double": ("double", np.float64, {1: 8, 2: 16, 3: 8, 4: 16}),
}


def _vector_dtype(base: Any, lanes: int) -> np.dtype:
    b = np.dtype(base)
    return np.dtype({
        "names": list(_LANES[:lanes]),
        "formats": [b] * lanes,
        "offsets": [k * b.itemsize for k in range(lanes)],
        "itemsize": lanes * b.itemsize,
    })


VECTOR_TYPES: dict[str, tuple[np.dtype, int, np.dtype, int]] = {}
"""CUDA vector type -> (structured dtype, alignment in bytes, base dtype, lanes)."""
for _name, (_c, _base, _aligns) in _VECTOR_BASES.items():
    for _n, _a in _aligns.items():
        VECTOR_TYPES[f"{_name}{_n}"] = (_vector_dtype(_base, _n), _a, np.dtype(_base), _n)
for _name in ("double", "long", "ulong", "longlong", "ulonglong"):  # CUDA 13 spellings
    _c, _base, _ = _VECTOR_BASES[_name]
    for _a in (16, 32):
        VECTOR_TYPES[f"{_name}4_{_a}a"] = (_vector_dtype(_base, 4), _a, np.dtype(_base), 4)
for _name in ("__half2", "half2"):
    VECTOR_TYPES[_name] = (_vector_dtype(np.float16, 2), 4, np.dtype(np.float16), 2)
VECTOR_TYPES["dim3"] = (_vector_dtype(np.uint32, 3), 4, np.dtype(np.uint32), 3)

_COMPLEX = {
    "cuFloatComplex": np.complex64,
    "cuComplex": np.complex64,
    "cuDoubleComplex": np.complex128,
    "complex<float>": np.complex64,
    "complex<double>": np.complex128,
}
_HALF = ("__half", "half")
_TAG = re.compile(r"^(?:bool_constant<[^<>]*>|integral_constant<[^<>]*>|true_type|false_type)$")
_TOOLKIT = {
    # <sys/types.h>, <time.h>, <stdint.h> names that copied kernels use without a typedef
    "uint": np.uint32, "ushort": np.uint16, "ulong": np.uint64, "clock_t": np.int64,
    "intptr_t": np.int64, "uintptr_t": np.uint64, "ssize_t": np.int64,
    # CUDA runtime/driver handles passed by value (64-bit integers)
    "cudaTextureObject_t": np.uint64, "cudaSurfaceObject_t": np.uint64,
    "CUtexObject": np.uint64, "CUsurfObject": np.uint64,
    "cudaGraphConditionalHandle": np.uint64,
    # cuFFT's element types
    "cufftReal": np.float32, "cufftDoubleReal": np.float64,
    "cufftComplex": np.complex64, "cufftDoubleComplex": np.complex128,
}
"""Names the toolkit or the C library defines, used when the source has no alias of its own."""


def _curand_state(fields: list[tuple[str, Any, int]], size: int) -> np.dtype:
    return np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields],
                     "offsets": [f[2] for f in fields], "itemsize": size})


_XORWOW = _curand_state([("d", np.uint32, 0), ("v", (np.uint32, 5), 4),
                         ("boxmuller_flag", np.int32, 24), ("boxmuller_flag_double", np.int32, 28),
                         ("boxmuller_extra", np.float32, 32),
                         ("boxmuller_extra_double", np.float64, 40)], 48)
_PHILOX = _curand_state([("ctr", (np.uint32, 4), 0), ("output", (np.uint32, 4), 16),
                         ("key", (np.uint32, 2), 32), ("STATE", np.uint32, 40),
                         ("boxmuller_flag", np.int32, 44), ("boxmuller_flag_double", np.int32, 48),
                         ("boxmuller_extra", np.float32, 52),
                         ("boxmuller_extra_double", np.float64, 56)], 64)
_MRG = _curand_state([("s1", (np.uint32, 3), 0), ("s2", (np.uint32, 3), 12),
                      ("boxmuller_flag", np.int32, 24), ("boxmuller_flag_double", np.int32, 28),
                      ("boxmuller_extra", np.float32, 32),
                      ("boxmuller_extra_double", np.float64, 40)], 48)
TOOLKIT_STRUCTS: dict[str, tuple[np.dtype, int]] = {
    **{n: (_XORWOW, 8) for n in ("curandState", "curandState_t", "curandStateXORWOW",
                                 "curandStateXORWOW_t")},
    **{n: (_PHILOX, 16) for n in ("curandStatePhilox4_32_10", "curandStatePhilox4_32_10_t")},
    **{n: (_MRG, 8) for n in ("curandStateMRG32k3a", "curandStateMRG32k3a_t")},
}
"""Structs of the toolkit's device libraries (cuRAND's generator states): the GPU's layout as a
structured dtype, and its alignment."""
_BF16 = ("__nv_bfloat16", "nv_bfloat16", "__bfloat16")


def _bfloat16() -> np.dtype | None:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True)
class Resolved:
    """A parameter's C type as cunumpy passes it.

    ``dtype`` is None when the type cannot be checked; ``reason`` then says why. ``kind`` is
    ``"scalar"``, ``"vector"``, ``"complex"``, ``"struct"``, ``"tag"`` (an empty class such as
    ``std::bool_constant<B>``, passed as one byte) or ``"unknown"``; vectors also give
    their ``base`` dtype and ``lanes``.
    """

    dtype: np.dtype | None
    align: int = 0
    kind: str = "scalar"
    base: np.dtype | None = None
    lanes: int = 1
    reason: str = ""
    spelled: str = ""


@dataclass
class Declarations:
    """Aliases (``typedef``/``using``) and struct definitions found in a source."""

    aliases: dict[str, list[str]] = field(default_factory=dict)
    structs: dict[str, list[str]] = field(default_factory=dict)
    """Struct name -> bodies found (more than one: defined in branches that may both be kept)."""
    struct_align: dict[str, int] = field(default_factory=dict)


_TYPEDEF = re.compile(r"\btypedef\b([^;{}]*?)\b([A-Za-z_]\w*)\s*;")
_USING = re.compile(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);")
_STRUCT = re.compile(
    r"\b(?P<typedef>typedef\s+)?(?P<kw>struct|class|union)\s+"
    r"(?P<attrs>(?:(?:__align__|alignas|__attribute__|__builtin_align__)\s*\((?:[^()]|\([^()]*\))*\)\s*)*)"
    r"(?P<name>[A-Za-z_]\w*)?\s*(?P<spec><[^<>{};]*>)?\s*(?P<bases>:[^{;]*)?\{"
)
_ENUM = re.compile(
    r"\benum\s+(?:class\s+|struct\s+)?([A-Za-z_]\w*)\s*(?::\s*([A-Za-z_][\w\s:]*?))?\s*\{"
)
_ALIGN_ATTR = re.compile(r"(?:__align__|alignas|__builtin_align__)\s*\(\s*(\d+)\s*\)|aligned\s*\(\s*(\d+)\s*\)")


def _close_brace(text: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(text)):
        c = text[k]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return k
    return -1


def collect_declarations(*texts: str) -> Declarations:
    """Aliases and struct definitions of ``texts`` (cleaned source, headers after it)."""
    decls = Declarations()
    for text in texts:
        masked = text
        for m in _STRUCT.finditer(text):
            if re.search(r"\benum\s*$", text[: m.start("kw")]):
                continue  # enum class: read below
            close = _close_brace(text, m.end() - 1)
            if close < 0:
                continue
            body = text[m.end(): close]
            name = m.group("name")
            tail = re.match(r"\s*(?:__attribute__\s*\(\([^)]*\)\)\s*)?([A-Za-z_]\w*)?\s*;",
                            text[close + 1:])
            typedef_name = tail.group(1) if (m.group("typedef") and tail) else None
            key = name or typedef_name
            if key is None:
                continue
            if m.group("spec") and name:  # template <> struct vec4<double> { ... }
                key = name + "<" + ",".join(p.strip() for p in m.group("spec")[1:-1].split(",")) + ">"
            if m.group("kw") == "union":
                body = "\0union"
            elif m.group("bases"):
                body = "\0bases"
            align = 0
            for am in _ALIGN_ATTR.finditer(m.group("attrs") or ""):
                align = max(align, int(am.group(1) or am.group(2)))
            for am in _ALIGN_ATTR.finditer(text[close + 1: close + 80].split(";")[0]):
                align = max(align, int(am.group(1) or am.group(2)))
            for k in {key, typedef_name} - {None}:
                decls.structs.setdefault(k, [])
                if body not in decls.structs[k]:
                    decls.structs[k].append(body)
                if align:
                    decls.struct_align[k] = align
            # Hide the body from the alias scan (member typedefs are not global aliases).
            masked = masked[: m.start()] + " " * (close + 1 - m.start()) + masked[close + 1:]
        for m in _ENUM.finditer(masked):  # an enum passes as its underlying type
            _add_alias(decls, m.group(1), " ".join((m.group(2) or "int").split()))
        for m in _TYPEDEF.finditer(masked):
            target = " ".join(m.group(1).split())
            if "(" in target or not target:
                continue
            _add_alias(decls, m.group(2), target)
        for m in _USING.finditer(masked):
            _add_alias(decls, m.group(1), " ".join(m.group(2).split()))
    return decls


def _add_alias(decls: Declarations, name: str, target: str) -> None:
    targets = decls.aliases.setdefault(name, [])
    if target not in targets:
        targets.append(target)


def _strip_namespace(text: str) -> str:
    for prefix in ("::", "cuda::std::", "std::", "thrust::", "cuda::"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text


def resolve(
    ctype: str,
    decls: Declarations | None = None,
    scalars: Mapping[str, np.dtype] | None = None,
    _depth: int = 0,
) -> Resolved:
    """The dtype, alignment and kind of the normalised C type ``ctype``."""
    decls = decls or Declarations()
    scalars = C_TYPES if scalars is None else scalars
    name = _strip_namespace(ctype)
    if name.startswith("struct "):
        name = name[7:]
    if name in scalars:
        dt = scalars[name]
        return Resolved(dt, dt.itemsize, "complex" if dt.kind == "c" else "scalar", spelled=ctype)
    if name in VECTOR_TYPES:
        dt, align, base, lanes = VECTOR_TYPES[name]
        return Resolved(dt, align, "vector", base, lanes, spelled=ctype)
    if name in _COMPLEX:
        dt = np.dtype(_COMPLEX[name])
        return Resolved(dt, dt.itemsize, "complex", spelled=ctype)
    if name in _HALF:
        return Resolved(np.dtype(np.float16), 2, "scalar", spelled=ctype)
    if name in _BF16:
        bf = _bfloat16()
        if bf is None:
            return Resolved(None, 2, "unknown", reason=(
                f"{ctype} maps to bfloat16, which needs the ml_dtypes package "
                "(pip install ml_dtypes)"), spelled=ctype)
        return Resolved(bf, 2, "scalar", spelled=ctype)
    if _TAG.match(name):
        # An empty tag class (llm.c passes std::bool_constant<B>{}): one byte, value unused.
        return Resolved(np.dtype(np.uint8), 1, "tag", spelled=ctype)
    if _depth > 16:
        return Resolved(None, kind="unknown", reason=f"alias {ctype!r} refers to itself")
    targets = decls.aliases.get(name)
    if targets:
        found = [resolve(_normalise_type(t.split()), decls, scalars, _depth + 1) for t in targets]
        first = found[0]
        if all(f.dtype is not None and f.dtype == first.dtype and f.align == first.align
               for f in found):
            return Resolved(first.dtype, first.align, first.kind, first.base, first.lanes,
                            spelled=ctype)
        if len(targets) > 1:
            return Resolved(None, kind="unknown", reason=(
                f"{ctype!r} is defined as {' and as '.join(repr(t) for t in targets)} in "
                "preprocessor branches that cunumpy cannot decide; define the macro that selects "
                "one (options=('-DNAME=1',))"), spelled=ctype)
        return Resolved(None, kind="unknown", reason=first.reason or
                        f"{ctype!r} is an alias of {targets[0]!r}, which cunumpy cannot check",
                        spelled=ctype)
    member = _MEMBER_TYPE.match(name)
    if member:
        return _member_type(member, decls, scalars, _depth, ctype)
    bodies = decls.structs.get(name)
    if bodies:
        if len(bodies) > 1:
            return Resolved(None, kind="unknown", reason=(
                f"struct {name!r} has several definitions in preprocessor branches cunumpy "
                "cannot decide"), spelled=ctype)
        return _struct(name, bodies[0], decls, scalars, _depth, ctype)
    if name in TOOLKIT_STRUCTS:
        dt, align = TOOLKIT_STRUCTS[name]
        return Resolved(dt, align, "struct", spelled=ctype)
    if name in _TOOLKIT:
        dt = np.dtype(_TOOLKIT[name])
        return Resolved(dt, dt.itemsize, "complex" if dt.kind == "c" else "scalar",
                        spelled=ctype)
    return Resolved(None, kind="unknown", reason=(
        f"type {ctype!r} is not a type cunumpy knows (no typedef or struct of that name in the "
        "source)"), spelled=ctype)


_MEMBER_TYPE = re.compile(r"^([A-Za-z_]\w*)<([^<>]*)>::([A-Za-z_]\w*)$")


def _member_type(m: re.Match, decls: Declarations, scalars: Mapping[str, np.dtype],
                 depth: int, spelled: str) -> Resolved:
    """``vec4<float>::Type``: the member alias of a class template, in the specialisation for
    those arguments if the source has one, else in the primary template."""
    owner, args, member = m.group(1), m.group(2), m.group(3)
    key = owner + "<" + ",".join(a.strip() for a in args.split(",")) + ">"
    bodies = decls.structs.get(key) or decls.structs.get(owner) or []
    for body in bodies[:1]:
        alias = re.search(r"\btypedef\s+([^;{}]+?)\s+" + member + r"\s*;", body) or re.search(
            r"\busing\s+" + member + r"\s*=\s*([^;{}]+);", body)
        if alias:
            r = resolve(_normalise_type(alias.group(1).split()), decls, scalars, depth + 1)
            return Resolved(r.dtype, r.align, r.kind, r.base, r.lanes, r.reason, spelled)
    return Resolved(None, kind="unknown", reason=(
        f"{spelled!r}: no member type {member!r} found in {key} or {owner}"), spelled=spelled)


_MEMBER_SKIP = frozenset({"static", "constexpr", "friend", "using", "typedef", "template",
                          "enum", "operator", "virtual"})


def _struct(name: str, body: str, decls: Declarations, scalars: Mapping[str, np.dtype],
            depth: int, spelled: str) -> Resolved:
    def refuse(why: str) -> Resolved:
        return Resolved(None, kind="unknown", reason=f"struct {name!r}: {why}", spelled=spelled)

    if body == "\0union":
        return refuse("unions are not checked")
    if body == "\0bases":
        return refuse("structs with base classes are not checked")
    # Drop member function bodies and nested braces, then split into member declarations.
    flat, k = [], 0
    while k < len(body):
        if body[k] == "{":
            end = _close_brace(body, k)
            if end < 0:
                return refuse("unbalanced braces")
            flat.append(";")
            k = end + 1
            continue
        flat.append(body[k])
        k += 1
    text = "".join(flat)
    text = re.sub(r"\b(?:public|private|protected)\s*:", ";", text)
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    offset = 0
    align = 1
    for stmt in text.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt:
            continue
        words = set(re.findall(r"[A-Za-z_]\w*", stmt))
        if words & _MEMBER_SKIP or "(" in stmt:
            continue  # member functions, static members, nested declarations
        if re.search(r":\s*\d", stmt):
            return refuse(f"bit-field {stmt!r} is not checked")
        extra_align = 0
        for am in _ALIGN_ATTR.finditer(stmt):
            extra_align = max(extra_align, int(am.group(1) or am.group(2)))
        stmt = re.sub(r"(?:__align__|alignas|__attribute__)\s*\((?:[^()]|\([^()]*\))*\)", " ", stmt)
        stmt = re.sub(r"=[^,]*", "", stmt)  # default member initialisers
        parts = [p.strip() for p in stmt.split(",")]
        first = parts[0]
        m = re.match(r"^(.*?)([*&\s]*)\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$", first)
        if not m:
            return refuse(f"cannot read member {first!r}")
        type_words = [w for w in re.findall(r"[A-Za-z_][\w:]*(?:\s*<[^>]*>)?", m.group(1))
                      if w not in _QUALIFIERS]
        declarators = [(m.group(2), m.group(3), m.group(4))]
        for extra in parts[1:]:
            dm = re.match(r"^([*&\s]*)([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$", extra)
            if not dm:
                return refuse(f"cannot read member {extra!r}")
            declarators.append((dm.group(1), dm.group(2), dm.group(3)))
        base_type = _normalise_type(type_words)
        for stars, member, dims in declarators:
            if "&" in stars:
                return refuse(f"reference member {member!r} is not checked")
            if "*" in stars:
                mt = Resolved(np.dtype(np.uint64), 8, "scalar")
            else:
                mt = resolve(base_type, decls, scalars, depth + 1)
            if mt.dtype is None:
                return refuse(f"member {member!r}: {mt.reason}")
            shape = []
            for d in re.findall(r"\[([^\]]*)\]", dims):
                try:
                    shape.append(int(d.strip().rstrip("uUlL"), 0))
                except ValueError:
                    return refuse(f"member {member!r} has array extent {d!r}, not a number")
            malign = max(mt.align, extra_align, 1)
            offset = -(-offset // malign) * malign
            names.append(member)
            formats.append((mt.dtype, tuple(shape)) if shape else mt.dtype)
            offsets.append(offset)
            offset += mt.dtype.itemsize * int(np.prod(shape or [1]))
            align = max(align, malign)
    if not names:
        return refuse("no data members")
    align = max(align, decls.struct_align.get(name, 0))
    size = -(-offset // align) * align
    dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})
    return Resolved(dt, align, "struct", spelled=spelled)


def _leaves(dt: np.dtype, base: int = 0) -> list[tuple[int, str]]:
    """(offset, dtype string) of every scalar in ``dt``, in offset order."""
    if dt.subdtype is not None:
        sub, shape = dt.subdtype
        out = []
        for k in range(int(np.prod(shape))):
            out += _leaves(sub, base + k * sub.itemsize)
        return out
    if dt.fields:
        out = []
        for name in dt.names:
            sub, off = dt.fields[name][:2]
            out += _leaves(sub, base + off)
        return sorted(out)
    return [(base, dt.str)]


def layout_matches(given: np.dtype, expected: np.dtype) -> bool:
    """True when ``given`` has ``expected``'s size and the same scalar types at the same
    offsets (field names do not matter)."""
    if given == expected:
        return True
    if given.itemsize != expected.itemsize:
        return False
    return _leaves(given) == _leaves(expected)


def cuda_dtype(ctype: str) -> np.dtype:
    """The NumPy dtype cunumpy uses for the CUDA type ``ctype``.

    Parameters
    ----------
    ctype : str
        A scalar, vector or complex CUDA type: ``"float"``, ``"float4"``, ``"int2"``,
        ``"double3"``, ``"__half"``, ``"__half2"``, ``"cuDoubleComplex"``.

    Returns
    -------
    numpy.dtype
        Vector types give structured dtypes with fields ``x, y, z, w`` and CUDA's size.

    Examples
    --------
    >>> from cunumpy.kernels import cuda_dtype
    >>> cuda_dtype("float4").itemsize, cuda_dtype("float4").names
    (16, ('x', 'y', 'z', 'w'))
    """
    r = resolve(_normalise_type(ctype.split()))
    if r.dtype is None:
        raise TypeError(r.reason)
    return r.dtype
