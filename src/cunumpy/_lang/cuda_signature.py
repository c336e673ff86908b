"""Parse the parameter list of a CUDA ``__global__`` function, and map C types to NumPy dtypes.

The parser reads CUDA C++ source as text: it removes comments and string literals, finds the
``__global__`` functions, and splits the parameter list of the chosen one. It understands
``extern "C"``, ``template <...>`` heads, ``__launch_bounds__(...)``, the qualifiers ``const``,
``volatile``, ``__restrict__`` (and ``__restrict``), pointers and ``T x[]`` parameters. Of the
preprocessor it runs the conditionals (:mod:`cunumpy._lang.cuda_preprocess`) and the macros that
define kernels (:mod:`cunumpy._lang.cuda_macros`: a kernel stamped out by a function-like
macro is found, with its parameters); any other parameter list built by a macro cannot be
parsed, and such a kernel must be created with ``check_signature=False``.

A parameter is either a *pointer* (an array argument: C-contiguous, exactly the pointee's dtype)
or a *scalar* (a number converted to the C type). Types outside :data:`C_TYPES` (vector types
such as ``float4``, structs, ``__half``) are recorded with ``dtype=None``; the front end refuses
them with a message that names the parameter.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cunumpy._lang.c_types import _INT_WORDS, _QUALIFIERS, C_TYPES, _normalise_type
from cunumpy._lang.cuda_macros import expand_kernel_macros
from cunumpy._lang.cuda_preprocess import active_text, macro_types
from cunumpy._lang.cuda_types import (
    VECTOR_TYPES,
    Declarations,
    Resolved,
    collect_declarations,
    resolve,
)

__all__ = [
    "C_TYPES",
    "CudaParam",
    "CudaSignature",
    "TemplateParam",
    "c_type_name",
    "find_global_functions",
    "format_template_args",
    "parse_signature",
    "split_template_name",
    "strip_comments",
]

_C_NAMES: dict[str, str] = {
    "bool": "bool",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "uint16": "unsigned short",
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "long long",
    "uint64": "unsigned long long",
    "float32": "float",
    "float64": "double",
    "complex64": "complex<float>",
    "complex128": "complex<double>",
    "float16": "__half",
    "bfloat16": "__nv_bfloat16",
}

_IDENT = re.compile(r"[A-Za-z_]\w*")
_GLOBAL = re.compile(r"\b__global__\b")


def c_type_name(dtype: Any) -> str:
    """The C type that holds one element of ``dtype`` (``float32`` -> ``"float"``).

    Used to write template arguments and messages: ``float16`` is ``__half`` and ml_dtypes'
    ``bfloat16`` is ``__nv_bfloat16`` (the kernel includes ``<cuda_fp16.h>`` or
    ``<cuda_bf16.h>``). Raises TypeError for dtypes with no CUDA C counterpart (strings,
    objects, ``float128``).
    """
    dt = np.dtype(dtype)
    try:
        return _C_NAMES[dt.name]
    except KeyError:
        raise TypeError(f"dtype {dt.name} has no CUDA C type that cunumpy knows") from None


@dataclass(frozen=True)
class CudaParam:
    """One parameter of a ``__global__`` function.

    Attributes
    ----------
    name : str
        The parameter name as written (``"p3"`` style names are made up for unnamed ones).
    ctype : str
        The normalised base type without qualifiers or ``*`` (``"unsigned int"``, ``"T"``).
    pointer : bool
        True for ``T*`` and ``T x[]``.
    const : bool
        True when the pointee (for a pointer) or the value is ``const``. A non-const pointer is
        an output: ``check_finite`` scans it.
    dtype : numpy.dtype or None
        The element dtype (pointers) or value dtype (scalars); None for ``void*`` and for types
        outside :data:`C_TYPES`.
    text : str
        The parameter as written in the source, whitespace collapsed.
    kind : str
        ``"scalar"``, ``"vector"`` (``float4``...), ``"complex"``, ``"struct"`` or
        ``"unknown"`` (no dtype: see ``reason``).
    align : int
        The C type's alignment in bytes (0 when unknown).
    base : numpy.dtype or None
        For vector types, the dtype of one component (``float32`` for ``float4``).
    lanes : int
        For vector types, the number of components; 1 otherwise.
    reason : str
        Why ``dtype`` is None (empty otherwise).
    concrete : str
        The C type after template substitution (``"float4"`` for ``T`` with ``T=float4``);
        ``ctype`` otherwise.
    """

    name: str
    ctype: str
    pointer: bool
    const: bool
    dtype: np.dtype | None
    text: str
    kind: str = "scalar"
    align: int = 0
    base: np.dtype | None = field(default=None, compare=False)
    lanes: int = 1
    reason: str = field(default="", compare=False)
    concrete: str = field(default="", compare=False)

    @property
    def type_name(self) -> str:
        """The C type for messages: the template argument when ``ctype`` is a template type."""
        return self.concrete or self.ctype

    def describe(self) -> str:
        """``"const float* x"`` style description used in messages."""
        return self.text


@dataclass(frozen=True)
class TemplateParam:
    """One parameter of a ``template <...>`` head: ``typename T`` (kind ``"type"``) or
    ``int N`` (kind ``"value"`` with its C type in ``ctype``); ``default`` is the text after
    ``=`` when there is one."""

    name: str
    kind: str
    ctype: str | None = None
    default: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CudaSignature:
    """A parsed ``__global__`` function: name, parameters, template head, linkage."""

    name: str
    params: tuple[CudaParam, ...]
    template: tuple[TemplateParam, ...] = ()
    extern_c: bool = False
    text: str = field(default="", compare=False)

    @property
    def is_template(self) -> bool:
        return bool(self.template)

    def param(self, name: str) -> CudaParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def __str__(self) -> str:
        head = ""
        if self.template:
            parts = [
                (f"typename {t.name}" if t.kind == "type" else f"{t.ctype} {t.name}")
                for t in self.template
            ]
            head = f"template <{', '.join(parts)}> "
        return f"{head}__global__ void {self.name}({', '.join(p.text for p in self.params)})"


def strip_comments(source: str) -> str:
    """Blank out comments, preprocessor lines, string and character literals, keeping every
    newline and offset.

    Each removed character becomes a space (newlines stay), so positions in the result match
    positions in ``source``. String and character literals keep their quotes (``extern "C"``
    stays recognisable). The text is read with the emulator's tokenizer
    (:func:`cunumpy._lang.tokens.tokenize`), so digit separators (``1'024``), raw strings
    and line continuations are read as the compiler reads them.
    """
    from cunumpy._lang.tokens import tokenize

    out: list[str] = []
    for tok in tokenize(source):
        kind, text = tok.kind, tok.text
        if kind in ("comment", "pp"):
            out.append(_BLANK.sub(" ", text))
        elif kind in ("string", "char") and len(text) >= 2:
            q = text.index(text[-1])  # the opening quote (after a u8/L/R prefix)
            out.append(text[: q + 1] + _BLANK.sub(" ", text[q + 1 : -1]) + text[-1])
        else:
            out.append(text)
    return "".join(out)


_BLANK = re.compile(r"[^\n]")


def _match_close(text: str, start: int, open_c: str, close_c: str) -> int:
    """Index just after the bracket that closes the one at ``start``; -1 if unbalanced."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _split_top(text: str) -> list[str]:
    """Split on commas outside (), <>, [] and {}."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    last = "".join(cur)
    if last.strip() or parts:
        parts.append(last)
    return [p.strip() for p in parts]


@dataclass(frozen=True)
class _Found:
    name: str
    start: int  # offset of the __global__ keyword
    params_text: str
    template_text: str | None
    extern_c: bool


_SCOPE = re.compile(
    r"\bnamespace\s+(?P<ns>[A-Za-z_][\w:]*)?\s*(?:__attribute__\s*\(\([^)]*\)\)\s*)?\{"
    r"|(?P<open>\{)|(?P<close>\})|(?P<glob>\b__global__\b)"
)


def _namespaces(clean: str) -> dict[int, str]:
    """Offset of each ``__global__`` keyword -> the namespaces around it (``"a::b"``, or "")."""
    stack: list[str | None] = []
    out: dict[int, str] = {}
    for m in _SCOPE.finditer(clean):
        if m.group("glob"):
            out[m.start()] = "::".join(s for s in stack if s)
        elif m.group("close"):
            if stack:
                stack.pop()
        elif m.group("open"):
            stack.append(None)
        else:
            stack.append(m.group("ns") or "")  # anonymous: no qualifier
    return out


def _find_all(clean: str) -> list[_Found]:
    found = []
    scopes = _namespaces(clean)
    for m in _GLOBAL.finditer(clean):
        # The function name is the last identifier before the first '(' that is not part of
        # __launch_bounds__(...) or __declspec/__attribute__ style decorations.
        i = m.end()
        name = None
        paren = -1
        while i < len(clean):
            id_m = _IDENT.match(clean, i)
            if id_m:
                word = id_m.group(0)
                j = id_m.end()
                k = j
                while k < len(clean) and clean[k].isspace():
                    k += 1
                if word in (
                    "__launch_bounds__",
                    "__attribute__",
                    "__declspec",
                    "__maxnreg__",
                    "__cluster_dims__",
                    "alignas",
                ):
                    if k < len(clean) and clean[k] == "(":
                        end = _match_close(clean, k, "(", ")")
                        if end < 0:
                            break
                        i = end
                        continue
                if k < len(clean) and clean[k] == "(":
                    name, paren = word, k
                    break
                i = j
                continue
            c = clean[i]
            if c in ";{}":
                break
            i += 1
        if name is None:
            continue
        end = _match_close(clean, paren, "(", ")")
        if end < 0:
            continue
        params_text = clean[paren + 1 : end - 1]
        before = clean[: m.start()]
        template_text = _template_before(before)
        extern_c = _extern_c_before(before)
        scope = scopes.get(m.start(), "")
        qualified = f"{scope}::{name}" if scope else name
        found.append(_Found(qualified, m.start(), params_text, template_text, extern_c))
    return found


def _template_before(before: str) -> str | None:
    """The ``<...>`` text of a ``template`` head that directly precedes a __global__ keyword."""
    stripped = before[-8192:].rstrip()  # a template head is near; the regex below is O(n^2)
    # Allow words such as 'static', 'inline' or 'extern "C"' between the head and __global__.
    tail = re.search(r"((?:\b(?:static|inline|__forceinline__|extern\s*\"\s*\")\s*)*)$", stripped)
    core = stripped[: tail.start()] if tail else stripped
    core = core.rstrip()
    if not core.endswith(">"):
        return None
    depth = 0
    for i in range(len(core) - 1, -1, -1):
        c = core[i]
        if c == ">":
            depth += 1
        elif c == "<":
            depth -= 1
            if depth == 0:
                head = core[:i].rstrip()
                if re.search(r"\btemplate$", head):
                    return core[i + 1 : -1]
                return None
    return None


def _extern_c_before(before: str) -> bool:
    """True when the __global__ sits in ``extern "C"`` (a prefix or an open ``extern "C" {``)."""
    stripped = before.rstrip()
    if re.search(r"extern\s*\"\s*\"\s*$", stripped) or re.search(
        r"extern\s*\"\s*\"\s*(?:static\s+|inline\s+)*$", stripped
    ):
        # The literal's contents were blanked by strip_comments; an extern with a one-letter
        # literal directly before __global__ is extern "C" in practice (checked on the raw text
        # by the caller).
        return True
    # Inside an extern "C" { ... } block: find the last such opening and check it is not closed.
    for m in reversed(list(re.finditer(r"extern\s*\"\s*\"\s*\{", before))):
        brace = m.end() - 1
        end = _match_close(before + "}", brace, "{", "}")
        return end == len(before) + 1
    return False


def find_global_functions(source: str) -> list[str]:
    """Names of the ``__global__`` functions in ``source``, in order of appearance."""
    return [f.name for f in _prepared(source, ())[1]]


def _parse_param(
    text: str,
    index: int,
    template_types: Mapping[str, Any],
    decls: Declarations | None = None,
) -> CudaParam:
    original = " ".join(text.split())
    if "=" in text.split(">")[-1]:
        text = text[: text.rindex("=")]
    if "&" in text:
        raise NotImplementedError(
            f"parameter {index} ({original}) is a C++ reference; kernel parameters must be "
            "pointers or values"
        )
    if "*" not in text and decls is not None:
        text = _pointer_alias(text, decls)
    array = False
    bracket = re.search(r"\[\s*\]\s*$", text)
    if bracket:
        array = True
        text = text[: bracket.start()]
    stars = text.count("*")
    if stars > 1:
        raise NotImplementedError(
            f"parameter {index} ({original}) is a pointer to a pointer; cunumpy passes flat "
            "arrays only"
        )
    pointer = stars == 1 or array
    # Tokenise: identifiers (with ::), template brackets kept with their base word.
    text = re.sub(r"\btypename\s+", "", text)
    tokens = re.findall(r"[A-Za-z_][\w:]*(?:\s*<[^>]*>)?(?:\s*::\s*[A-Za-z_]\w*)*|\*", text)
    words = [t for t in tokens if t != "*"]
    const = False
    if pointer:
        # 'const' before the '*' qualifies the pointee; after it, the pointer itself.
        star = text.find("*") if stars else len(text)
        const = bool(re.search(r"\bconst\b", text[:star]))
    else:
        const = "const" in words
    words = [w for w in words if w not in _QUALIFIERS]
    if not words:
        raise ValueError(f"cannot parse kernel parameter {index}: {original!r}")
    # The last word is the name, unless the parameter is unnamed (only type words remain).
    # The last word is the name unless every word is a type word (``unsigned int``) or there
    # is only one (``float4``, ``MyStruct``: an unnamed parameter).
    if len(words) >= 2 and not all(w in _INT_WORDS for w in words):
        name = words[-1]
        type_words = words[:-1]
    else:
        name = f"p{index}"
        type_words = words
    ctype = _normalise_type(type_words)
    if ctype == "void":
        if not pointer:
            raise ValueError(f"kernel parameter {index} ({original}) has type void")
        return CudaParam(name, ctype, pointer, const, None, original, "scalar")
    concrete = ctype
    if ctype in template_types:
        value = template_types[ctype]
        concrete = value if isinstance(value, str) else (
            c_type_name(value) if value is not None and np.dtype(value).name in _C_NAMES
            else ctype)
        if value is None:
            r = Resolved(None, kind="unknown", reason=f"template type {ctype} is not resolved")
        elif isinstance(value, str):
            r = resolve(_normalise_type(value.split()), decls)
            if r.dtype is None:
                try:
                    r = _resolved_dtype(np.dtype(value))
                except TypeError:
                    pass
        else:
            r = _resolved_dtype(np.dtype(value))
    elif "<" in ctype and "::" in ctype:  # vec4<T>::Type: the template's arguments first
        lt = ctype.index("<")
        args = [_template_text(a, template_types) for a in ctype[lt + 1 : ctype.index(">")].split(",")]
        concrete = ctype[:lt] + "<" + ",".join(args) + ctype[ctype.index(">") :]
        r = resolve(concrete, decls)
    else:
        r = resolve(ctype, decls)
    return CudaParam(
        name, ctype, pointer, const, r.dtype, original, r.kind, r.align, r.base, r.lanes,
        r.reason, concrete if concrete != ctype else "",
    )


def _pointer_alias(text: str, decls: Declarations) -> str:
    """``text`` with a type word that is an alias of a pointer type (``typedef float* fptr;``,
    ``using cptr = const float*;``) written out: ``fptr x`` -> ``float* x``. A ``const`` beside
    the alias qualifies the pointer itself (``const fptr x`` is ``float* const x``)."""
    words = re.findall(r"[A-Za-z_]\w*", text)
    for word in words:
        targets = decls.aliases.get(word)
        if not targets or len(targets) != 1 or targets[0].count("*") != 1:
            continue
        target = targets[0]
        if not target.rstrip().endswith("*"):
            continue
        rest = re.sub(r"\b" + re.escape(word) + r"\b", "", text, count=1)
        const_ptr = re.search(r"\bconst\b", rest) is not None
        rest = re.sub(r"\bconst\b", "", rest)
        return f"{target}{' const' if const_ptr else ''} {' '.join(rest.split())}"
    return text


def _template_text(arg: str, template_types: Mapping[str, Any]) -> str:
    """A template parameter's C type text (``T`` -> ``float``), or ``arg`` itself."""
    arg = arg.strip()
    value = template_types.get(arg)
    if isinstance(value, str):
        return _normalise_type(value.split())
    if value is not None:
        try:
            return c_type_name(value)
        except TypeError:
            return arg
    return arg


def _resolved_dtype(dt: np.dtype) -> Resolved:
    """A dtype given as a template argument: a vector type's when it is one's."""
    for dtype, align, base, lanes in VECTOR_TYPES.values():
        if dt == dtype:
            return Resolved(dt, align, "vector", base, lanes)
    kind = "complex" if dt.kind == "c" else ("struct" if dt.fields else "scalar")
    return Resolved(dt, dt.alignment, kind)


def _parse_template_head(text: str) -> tuple[TemplateParam, ...]:
    params = []
    for part in _split_top(text):
        if not part:
            continue
        body, eq, default = part.partition("=")
        words = body.split()
        if not words:
            continue
        dflt = " ".join(default.split()) if eq else None
        if words[0] in ("typename", "class"):
            params.append(TemplateParam(words[-1], "type", None, dflt))
        else:
            params.append(TemplateParam(words[-1], "value", _normalise_type(words[:-1]), dflt))
    return tuple(params)


@functools.lru_cache(maxsize=32)
def _prepared(
    source: str, defines: tuple[tuple[str, str | None], ...], headers: tuple[str, ...] = ()
) -> tuple[str, list[_Found], str]:
    """The cleaned active text of ``source``, its ``__global__`` functions and the source with
    kernel-defining macros expanded (cached: one source often gives several kernels, and a
    template is parsed twice)."""
    active = active_text(source, defines)
    if "__global__" in source or any("__global__" in h for h in headers):
        kept = tuple(active_text(h, defines) for h in headers)
        expanded = expand_kernel_macros(source, active, kept)
        if expanded is not source:
            active = expand_kernel_macros(active, active, kept)
            source = expanded
    clean = strip_comments(active)
    return clean, _find_all(clean), source


def split_template_name(name: str) -> tuple[str, list[str] | None]:
    """``"ns::hist<1024, 3, float4>"`` -> ``("ns::hist", ["1024", "3", "float4"])``; a name
    without template arguments gives ``(name, None)``. A leading ``::`` is dropped."""
    text = " ".join(name.split())
    if text.startswith("::"):
        text = text[2:]
    if not text.endswith(">") or "<" not in text:
        return text, None
    lt = text.index("<")
    if _match_close(text.replace(">>", "> >"), lt, "<", ">") < 0:
        return text, None
    base = text[:lt].strip()
    return base, [a for a in _split_top(text[lt + 1 : -1]) if a]


def parse_signature(
    source: str,
    name: str | None = None,
    template_dtypes: Mapping[str, Any] | None = None,
    *,
    defines: Sequence[tuple[str, str | None]] = (),
    headers: Sequence[str] = (),
) -> CudaSignature:
    """Parse the ``__global__`` function ``name`` in ``source``.

    Parameters
    ----------
    source : str
        CUDA C++ source text.
    name : str, optional
        The kernel's name, qualified by its namespaces (``"ns::k"``) or not (``"k"``, when
        that is unambiguous). ``None`` picks the only ``__global__`` function and raises
        ValueError when there are several.
    template_dtypes : mapping, optional
        Template type parameters resolved to dtypes (``{"T": numpy.float64}``) or C types
        (``{"T": "float4"}``); a parameter of such a type gets that type. Unresolved template
        types give ``dtype=None``.
    defines : sequence of (name, value)
        Command-line macros (``-D``/``-U``): preprocessor branches they rule out are not read
        (:mod:`cunumpy._lang.cuda_preprocess`).
    headers : sequence of str
        Texts of included headers, searched for ``typedef``/``using`` aliases and structs.

    Raises
    ------
    ValueError
        No ``__global__`` function of that name, several candidates, or an unparsable list.
    NotImplementedError
        A parameter is a reference or a pointer to a pointer.
    """
    clean, found, source = _prepared(source, tuple(defines), tuple(headers))
    if not found:
        raise ValueError("the source defines no __global__ function")
    if name is None:
        names = sorted({f.name for f in found})
        if len(names) > 1:
            raise ValueError(
                f"the source defines several __global__ functions ({', '.join(names)}); "
                "pass name= to pick one"
            )
        name = names[0]
    name = split_template_name(name)[0]
    matches = [f for f in found if f.name == name]
    if not matches:
        qualified = sorted({f.name for f in found if f.name.endswith("::" + name)})
        if len(qualified) == 1:
            name = qualified[0]
            matches = [f for f in found if f.name == name]
    if not matches:
        raise ValueError(
            f"no __global__ function named {name!r} in the source; it defines "
            f"{', '.join(sorted({f.name for f in found}))}"
        )
    # A declaration followed by a definition gives two matches; the parameter lists agree.
    f = matches[-1]
    template = _parse_template_head(f.template_text) if f.template_text is not None else ()
    resolved: dict[str, Any] = {t.name: None for t in template if t.kind == "type"}
    for key, value in (template_dtypes or {}).items():
        resolved[key] = value if value is None or isinstance(value, str) else np.dtype(value)
    decls = collect_declarations(
        clean, *(strip_comments(active_text(h, defines)) for h in headers)
    )
    macro_types(decls, source, defines)
    extern_c = f.extern_c and _raw_extern_c(source, f.start)
    params_src = f.params_text.strip()
    parts = [] if params_src in ("", "void") else _split_top(params_src)
    params = tuple(_parse_param(p, i, resolved, decls) for i, p in enumerate(parts))
    seen = set()
    for p in params:
        if p.name in seen:
            raise ValueError(f"kernel {name!r} has two parameters named {p.name!r}")
        seen.add(p.name)
    return CudaSignature(name, params, template, extern_c, " ".join(f.params_text.split()))


def _raw_extern_c(source: str, global_start: int) -> bool:
    """Confirm on the raw text that the blanked literal before __global__ was "C"."""
    before = source[:global_start]
    last = max(before.rfind('extern "C"'), before.rfind('extern"C"'))
    return last >= 0


def format_template_args(
    name: str, template: Sequence[TemplateParam], args: Sequence[Any] | Mapping[str, Any]
) -> tuple[str, dict[str, np.dtype | None]]:
    """The CuPy/NVRTC name expression for one instantiation, and the resolved type parameters.

    ``args`` is a sequence in the template's order or a mapping by template parameter name.
    Values: a dtype-like (``numpy.float32``, ``"float64"``) becomes its C type; a ``str`` that
    is not a dtype name is passed through verbatim (``"float"``, ``"unsigned int"``,
    ``"MyFunctor"``); ``bool`` becomes ``true``/``false``; an ``int`` becomes decimal.

    Returns
    -------
    expression : str
        ``"scale<double, 3>"``.
    dtypes : dict
        Template type parameter name -> dtype (None where the C type has no dtype).
    """
    if isinstance(args, Mapping):
        missing = [t.name for t in template if t.name not in args]
        extra = [k for k in args if k not in {t.name for t in template}]
        if missing or extra:
            raise ValueError(
                f"template_args for {name!r} must name exactly {[t.name for t in template]}; "
                f"missing {missing}, unknown {extra}"
            )
        values = [args[t.name] for t in template]
    else:
        values = list(args)
        if template and len(values) != len(template):
            raise ValueError(
                f"kernel {name!r} has {len(template)} template parameters "
                f"({', '.join(t.name for t in template)}); template_args gave {len(values)}"
            )
    texts: list[str] = []
    dtypes: dict[str, np.dtype | None] = {}
    for i, value in enumerate(values):
        tparam = template[i] if i < len(template) else None
        if isinstance(value, (bool, np.bool_)):
            text = "true" if value else "false"
        elif isinstance(value, (int, np.integer)):
            text = str(int(value))
        elif isinstance(value, str) and (
            value in C_TYPES or _normalise_type(value.split()) in C_TYPES
        ):
            text = _normalise_type(value.split())
            if tparam is not None and tparam.kind == "type":
                dtypes[tparam.name] = C_TYPES[text]
        else:
            try:
                dt = np.dtype(value)
            except TypeError:
                dt = None
            if dt is not None and dt.name in _C_NAMES and not isinstance(value, str | bytes):
                text = _C_NAMES[dt.name]
                if tparam is not None and tparam.kind == "type":
                    dtypes[tparam.name] = dt
            elif isinstance(value, str):
                if dt is not None and dt.name in _C_NAMES and value == dt.name:
                    text = _C_NAMES[dt.name]
                    if tparam is not None and tparam.kind == "type":
                        dtypes[tparam.name] = dt
                else:
                    text = value.strip()
                    if tparam is not None and tparam.kind == "type":
                        dtypes[tparam.name] = None
            else:
                raise TypeError(
                    f"template argument {i} of {name!r} is {value!r}; give a dtype, a C type "
                    "string, an int or a bool"
                )
        texts.append(text)
    return f"{name}<{', '.join(texts)}>", dtypes
