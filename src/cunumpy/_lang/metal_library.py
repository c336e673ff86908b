"""The kernels of a whole Metal library, read from its text after preprocessing.

:func:`parse_library` reads preprocessed Metal source (:mod:`cunumpy._lang.preprocess`) the way
the Metal compiler sees a library's entry points:

- a ``kernel`` (or ``[[kernel]]``) function that is not a template is a kernel, named after the
  function;
- an explicit instantiation ``template [[host_name("name")]] ...;`` of a kernel template is a
  kernel named by its host name (adjacent string literals concatenated). Every form Metal takes:
  ``decltype(f<A, B>) f<A, B>``, a full parameter list (``kernel void f<A>(device A* x, ...)``,
  or with the template arguments deduced from it: ``kernel void f(device float* x, ...)``), and
  a typedef'd function type (``typedef decltype(f<float>) f_t; ... kernel f_t f<float>;``);
- parameters: ``[[buffer(i)]]`` (and parameters without an index, which take the next free
  buffer index in declaration order), ``[[threadgroup(i)]]`` memory, thread attributes
  (``[[thread_position_in_grid]]`` ...), and what no engine here runs (textures, samplers,
  ``[[stage_in]]``), which make the kernel unlaunchable but still listed;
- structs (members and array dimensions, for layout checks), typedefs and ``using`` aliases,
  and function constants ``constant T name [[function_constant(i)]];``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cunumpy._lang.int_expr import c_int, int_expression
from cunumpy._lang.tokens import Token, tokenize

__all__ = [
    "THREAD_ATTRIBUTES",
    "FunctionConstant",
    "KernelParam",
    "LibraryKernel",
    "LibraryText",
    "parse_library",
    "parse_params",
    "source_line",
]

THREAD_ATTRIBUTES = frozenset(
    """dispatch_quadgroups_per_threadgroup dispatch_simdgroups_per_threadgroup
    dispatch_threads_per_threadgroup grid_origin grid_size quadgroup_index_in_threadgroup
    quadgroups_per_threadgroup simdgroup_index_in_threadgroup simdgroups_per_threadgroup
    thread_execution_width thread_index_in_quadgroup thread_index_in_simdgroup
    thread_index_in_threadgroup thread_position_in_grid thread_position_in_threadgroup
    threadgroup_position_in_grid threadgroups_per_grid threads_per_grid threads_per_simdgroup
    threads_per_threadgroup""".split()
)
"""Metal's compute-kernel thread attributes (MSL specification, table 5.8)."""

_UNSUPPORTED_WORDS = re.compile(
    r"\b(texture\w*|depth\w*2d\w*|depthcube\w*|sampler|stage_in|imageblock\w*|"
    r"acceleration_structure|intersection_function_table|visible_function_table|"
    r"indirect_command_buffer|mesh\w*)\b"
)


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a kernel, as its declaration says."""

    name: str
    position: int
    """Position in the parameter list."""
    kind: str
    """``buffer``, ``threadgroup``, ``attribute`` or ``unsupported`` (textures, samplers, ...)."""
    index: int | None
    """The buffer or threadgroup index (written or assigned); None for attributes."""
    space: str | None
    """Address space: ``device``, ``constant``, ``threadgroup``, ``thread`` or None."""
    const: bool
    pointer: bool
    reference: bool
    base: str
    """The pointee / referenced / value type, template parameters replaced by their arguments."""
    declared: str
    """The whole declaration as written (without its attributes)."""
    attribute: str | None = None
    """The thread attribute (``thread_position_in_grid``) of an attribute parameter."""
    atomic: bool = False

    @property
    def writable(self) -> bool:
        """A buffer the kernel may write (a non-const ``device`` pointer or reference)."""
        return (self.kind == "buffer" and self.space == "device" and not self.const
                and (self.pointer or self.reference))


@dataclass(frozen=True)
class LibraryKernel:
    """One entry point of the library."""

    host_name: str
    function: str
    """The C++ function (qualified with its namespaces)."""
    params: tuple[KernelParam, ...]
    line: int
    file: str
    template_args: str | None = None
    """``<float, 4>`` as written in the instantiation (None: none written)."""
    function_type: str | None = None
    """How the instantiation names the function type: ``decltype(f<float>)``, a typedef name,
    or ``void(<parameters>)`` for a full parameter list; None for a plain kernel."""
    unsupported: str | None = None
    """Why no engine here can launch it (a texture parameter, ...)."""
    body: tuple[int, int] | None = None
    """Offsets of the kernel function's body (``{`` to ``}``) in the preprocessed text."""
    template_values: tuple[tuple[str, str | None, bool], ...] | None = None
    """Each template parameter of an instantiated kernel template: its name, its value as text
    (written, defaulted or deduced from the parameter types; None where none of these gives
    it) and whether it is a type parameter; None for a plain kernel."""
    max_threads: str | None = None
    """The expression of ``[[max_total_threads_per_threadgroup(N)]]`` (template parameters
    replaced by the instantiation's arguments); None where the kernel has none."""

    @property
    def max_threads_value(self) -> int | None:
        """:attr:`max_threads` as a number, where it is an integer constant expression."""
        return None if self.max_threads is None else int_expression(self.max_threads)


@dataclass(frozen=True)
class FunctionConstant:
    """``constant T name [[function_constant(index)]];``."""

    name: str
    ctype: str
    index: int
    start: int
    stop: int
    """Offsets of the whole declaration in the preprocessed text."""


@dataclass(frozen=True)
class LibraryText:
    """What :func:`parse_library` found."""

    text: str
    kernels: dict[str, LibraryKernel]
    structs: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]]
    aliases: dict[str, str]
    constants: tuple[FunctionConstant, ...]
    instantiations: tuple[tuple[int, int], ...]
    """Offsets of every explicit instantiation statement (engines that call the kernels as
    functions drop them)."""
    bodies: tuple[tuple[int, int], ...] = field(default=())
    """Offsets of the bodies of kernel functions and kernel templates (``{`` to ``}``)."""
    body_names: tuple[str, ...] = field(default=())
    """The function name of each of :attr:`bodies`."""


def _sig(text: str) -> list[Token]:
    return [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]


def _match(sig: Sequence[Token], i: int, open_: str, close: str) -> int:
    """Index of the token closing the bracket ``sig[i]`` opens."""
    depth = 0
    for j in range(i, len(sig)):
        t = sig[j].text
        if t == open_:
            depth += 1
        elif t == close:
            depth -= 1
            if depth == 0:
                return j
        elif open_ == "<" and t == ">>":
            depth -= 2
            if depth <= 0:
                return j
    return len(sig) - 1


def _join(tokens: Sequence[Token]) -> str:
    out = ""
    prev: Token | None = None
    for t in tokens:
        if prev is not None and prev.kind in ("ident", "number") and t.kind in ("ident", "number"):
            out += " "
        elif prev is not None and prev.text in (",",):
            out += " "
        out += t.text
        prev = t
    return out


def _attributes(sig: Sequence[Token], i: int) -> tuple[list[list[Token]], int]:
    """The ``[[...]]`` groups starting at ``sig[i]`` and the index after them."""
    groups = []
    while i + 1 < len(sig) and sig[i].text == "[" and sig[i + 1].text == "[":
        j = _match(sig, i, "[", "]")
        groups.append(list(sig[i + 2: j - 1]))
        i = j + 1
    return groups, i


def _max_threads(groups: Sequence[Sequence[Token]]) -> str | None:
    """The ``max_total_threads_per_threadgroup(N)`` expression of attribute groups."""
    for g in groups:
        for item in _split_commas(g):
            if len(item) >= 3 and item[0].text == "max_total_threads_per_threadgroup" \
                    and item[1].text == "(":
                return _join(item[2:_match(item, 1, "(", ")")])
    return None


def _strings(tokens: Sequence[Token]) -> str:
    out = ""
    for t in tokens:
        if t.kind == "string":
            body = t.text[t.text.index('"') + 1: -1]
            out += body.encode().decode("unicode_escape")
    return out


def _split_commas(tokens: Sequence[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.text in ("(", "[", "{", "<"):
            depth += 1
        elif t.text in (")", "]", "}", ">"):
            depth -= 1
        elif t.text == ">>":
            depth -= 2
        elif t.text == "," and depth == 0:
            parts.append([])
            continue
        parts[-1].append(t)
    return [p for p in parts if p]


def _template_params(tokens: Sequence[Token]) -> list[tuple[str, str | None]]:
    """(name, default) of each parameter of a ``template <...>`` list."""
    out = []
    for part in _split_commas(tokens):
        default = None
        for k, t in enumerate(part):
            if t.text == "=":
                default = _join(part[k + 1:])
                part = part[:k]
                break
        names = [t.text for t in part if t.kind == "ident"]
        out.append((names[-1] if names else "", default))
    return out


def _template_types(tokens: Sequence[Token]) -> frozenset[str]:
    """The names of the type parameters (``typename T``, ``class U``) of a template list."""
    out = set()
    for part in _split_commas(tokens):
        words = [t.text for t in part]
        if "=" in words:
            words = words[: words.index("=")]
        if words and words[0] in ("typename", "class", "template") and words[-1] not in (
                "typename", "class"):
            out.add(words[-1])
    return frozenset(out)


def _substitute(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in mapping) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def parse_params(tokens: Sequence[Token], mapping: dict[str, str] | None = None
                 ) -> tuple[tuple[KernelParam, ...], str | None]:
    """The parameters of a kernel's parameter list (the tokens between its parentheses), with
    template parameters replaced per ``mapping``; and why it cannot launch (or None)."""
    mapping = mapping or {}
    params: list[KernelParam] = []
    unsupported = None
    used: set[int] = set()
    pending: list[int] = []
    for pos, part in enumerate(_split_commas(tokens)):
        attrs: list[list[Token]] = []
        body: list[Token] = []
        k = 0
        while k < len(part):
            if k + 1 < len(part) and part[k].text == "[" and part[k + 1].text == "[":
                groups, k = _attributes(part, k)
                attrs.extend(groups)
                continue
            body.append(part[k])
            k += 1
        names = [i for i, t in enumerate(body) if t.kind == "ident"]
        if not names:
            continue
        name_at = names[-1]
        while name_at > 0 and body[name_at - 1].text == "::":  # never a qualified name
            name_at = -1
            break
        name = body[name_at].text if name_at >= 0 else f"arg{pos}"
        type_tokens = body[:name_at] if name_at >= 0 else body
        declared = _substitute(_join(type_tokens), mapping)
        words = [t.text for t in type_tokens]
        space = next((w for w in words if w in ("device", "constant", "threadgroup", "thread")),
                     None)
        pointer = "*" in words
        reference = "&" in words
        const = "const" in words or space == "constant"
        base_tokens = [t for t in type_tokens
                       if t.text not in ("device", "constant", "threadgroup", "thread", "const",
                                         "volatile", "*", "&", "restrict", "__restrict")]
        base = _substitute(_join(base_tokens), mapping)
        atomic = bool(re.search(r"\batomic", base))
        kind, index, attribute = "buffer", None, None
        for group in attrs:
            word = group[0].text if group else ""
            if word == "buffer" and len(group) >= 3:
                index = c_int(group[2].text)
            elif word == "threadgroup" and len(group) >= 3:
                kind, index = "threadgroup", c_int(group[2].text)
            elif word in THREAD_ATTRIBUTES:
                kind, attribute = "attribute", word
            elif word in ("texture", "sampler", "stage_in", "color", "imageblock_data"):
                kind = "unsupported"
        if kind == "buffer" and _UNSUPPORTED_WORDS.search(declared):
            kind = "unsupported"
        if kind == "unsupported" and unsupported is None:
            unsupported = f"parameter {name!r} ({declared}) needs textures or render state"
        if kind == "buffer" and not (pointer or reference) and space is None and index is None:
            # a by-value scalar or struct: Metal passes it in a buffer slot too
            pass
        p = KernelParam(name, pos, kind, index, space, const, pointer, reference, base, declared,
                        attribute, atomic)
        if kind == "buffer":
            if index is None:
                pending.append(len(params))
            else:
                used.add(index)
        params.append(p)
    nxt = 0
    for k in pending:
        while nxt in used:
            nxt += 1
        used.add(nxt)
        old = params[k]
        params[k] = KernelParam(old.name, old.position, old.kind, nxt, old.space, old.const,
                                old.pointer, old.reference, old.base, old.declared,
                                old.attribute, old.atomic)
    return tuple(params), unsupported


def _merge_param(stated: KernelParam, defined: KernelParam) -> KernelParam:
    """A parameter of an instantiation with a full parameter list: its type as the
    instantiation states it, its name, kind, index and attribute as the definition has them."""
    return KernelParam(defined.name, stated.position, defined.kind, defined.index, stated.space,
                       stated.const, stated.pointer, stated.reference, stated.base,
                       stated.declared, defined.attribute, stated.atomic)


@dataclass
class _Template:
    name: str
    qualified: str
    tparams: list[tuple[str, str | None]]
    params: list[Token]
    line: int
    file: str
    body: tuple[int, int]
    types: frozenset[str] = frozenset()
    max_threads: str | None = None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.sig = _sig(text)
        self.kernels: dict[str, LibraryKernel] = {}
        self.templates: dict[str, list[_Template]] = {}
        self.structs: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {}
        self.aliases: dict[str, str] = {}
        self.constants: list[FunctionConstant] = []
        self.instantiations: list[tuple[int, int]] = []
        self.bodies: list[tuple[int, int]] = []
        self.body_names: list[str] = []
        self.ns: list[str] = []
        self._lines = _LineMap(text)
        self._types: frozenset[str] = frozenset()

    def where(self, i: int) -> tuple[str, int]:
        return self._lines.at(self.sig[i].start)

    def add(self, kernel: LibraryKernel) -> None:
        if kernel.host_name in self.kernels:
            other = self.kernels[kernel.host_name]
            raise ValueError(
                f"{kernel.file}:{kernel.line}: kernel name {kernel.host_name!r} is used twice "
                f"(first at {other.file}:{other.line}); Metal refuses duplicate names")
        self.kernels[kernel.host_name] = kernel

    def run(self) -> None:
        sig = self.sig
        i = 0
        depth_ns: list[int] = []
        while i < len(sig):
            t = sig[i].text
            if t == "namespace":
                j = i + 1
                names = []
                while j < len(sig) and sig[j].text not in ("{", ";", "="):
                    if sig[j].kind == "ident":
                        names.append(sig[j].text)
                    j += 1
                if j < len(sig) and sig[j].text == "{":
                    self.ns.append("::".join(names))
                    depth_ns.append(1)
                    i = j + 1
                    continue
                i = self._skip_to(j, ";") + 1
                continue
            if t == "}":
                if self.ns:
                    self.ns.pop()
                i += 1
                continue
            if t == ";":
                i += 1
                continue
            if t in ("extern",) and i + 1 < len(sig) and sig[i + 1].kind == "string":
                i += 2
                if i < len(sig) and sig[i].text == "{":
                    self.ns.append("")
                    i += 1
                continue
            if t == "template":
                if i + 1 < len(sig) and sig[i + 1].text == "<":
                    close = _match(sig, i + 1, "<", ">")
                    tparams = _template_params(sig[i + 2: close])
                    self._types = _template_types(sig[i + 2: close])
                    i = self._declaration(close + 1, tparams)
                else:
                    i = self._instantiation(i)
                continue
            if t in ("struct", "class", "union"):
                i = self._struct(i, None)
                continue
            if t == "typedef":
                i = self._typedef(i)
                continue
            if t == "using":
                i = self._using(i)
                continue
            if t == "static_assert":
                i = self._skip_to(i, ";") + 1
                continue
            i = self._declaration(i, None)

    def _skip_to(self, i: int, stop: str) -> int:
        sig = self.sig
        while i < len(sig) and sig[i].text != stop:
            if sig[i].text in ("(", "{", "["):
                i = _match(sig, i, sig[i].text, {"(": ")", "{": "}", "[": "]"}[sig[i].text])
            i += 1
        return i

    def _typedef(self, i: int) -> int:
        end = self._skip_to(i, ";")
        toks = self.sig[i + 1: end]
        if toks and toks[0].text in ("struct", "class") and any(t.text == "{" for t in toks):
            j = self._struct(i + 1, None, typedef=True)
            return j
        names = [k for k, t in enumerate(toks) if t.kind == "ident"]
        if names:
            k = names[-1]
            self.aliases[toks[k].text] = _join(toks[:k])
        return end + 1

    def _using(self, i: int) -> int:
        end = self._skip_to(i, ";")
        toks = self.sig[i + 1: end]
        if len(toks) >= 3 and toks[0].kind == "ident" and toks[1].text == "=":
            self.aliases[toks[0].text] = _join(toks[2:])
        return end + 1

    def _struct(self, i: int, tparams: list | None, typedef: bool = False) -> int:
        sig = self.sig
        j = i + 1
        name = None
        while j < len(sig) and sig[j].text not in ("{", ";"):
            if sig[j].kind == "ident" and name is None and sig[j].text not in ("alignas",):
                name = sig[j].text
            if sig[j].text == "(":
                j = _match(sig, j, "(", ")")
            j += 1
        if j >= len(sig) or sig[j].text == ";":
            return j + 1
        close = _match(sig, j, "{", "}")
        members = self._members(j + 1, close)
        end = self._skip_to(close + 1, ";")
        if typedef:
            after = [t.text for t in sig[close + 1: end] if t.kind == "ident"]
            name = after[-1] if after else name
        if name and tparams is None and members is not None:
            self.structs[name] = tuple(members)
        return end + 1

    def _members(self, a: int, b: int) -> list[tuple[str, str, tuple[str, ...]]] | None:
        sig = self.sig
        out: list[tuple[str, str, tuple[str, ...]]] = []
        i = a
        while i < b:
            j = i
            fn = False
            while j < b and sig[j].text not in (";", "{"):
                if sig[j].text == "(":
                    fn = True
                    j = _match(sig, j, "(", ")")
                j += 1
            if j < b and sig[j].text == "{":
                if not fn:  # a nested struct or union: its layout is not known here
                    return None
                j = _match(sig, j, "{", "}")
                i = j + 1
                continue
            toks = sig[i:j]
            i = j + 1
            words = [t.text for t in toks]
            if fn or not toks or words[0] in ("static", "using", "typedef", "friend", "template",
                                               "public", "private", "protected", "enum"):
                continue
            if ":" in words and words[0] in ("public", "private", "protected"):
                continue
            parts = _split_commas(toks)
            first_type: list[Token] | None = None
            for part in parts:
                dims: list[str] = []
                while part and part[-1].text == "]":
                    k = len(part) - 1
                    while k >= 0 and part[k].text != "[":
                        k -= 1
                    dims.insert(0, _join(part[k + 1: -1]))
                    part = part[:k]
                if "=" in [t.text for t in part]:
                    part = part[: [t.text for t in part].index("=")]
                if not part or part[-1].kind != "ident":
                    return None
                if first_type is None:
                    first_type = part[:-1]
                    ctype = _join(first_type)
                else:
                    ctype = _join(first_type) + "".join(t.text for t in part[:-1])
                if "*" in ctype or "&" in ctype:
                    ctype = "ulong"  # a pointer member: 8 bytes
                out.append((ctype, part[-1].text, tuple(dims)))
        return out

    def _declaration(self, i: int, tparams: list[tuple[str, str | None]] | None) -> int:
        """Read one declaration at namespace scope; return the index after it."""
        sig = self.sig
        start = i
        j = i
        paren = None
        attrs_kernel = False
        max_threads = None
        while j < len(sig) and sig[j].text not in (";", "{"):
            t = sig[j].text
            if t == "[" and j + 1 < len(sig) and sig[j + 1].text == "[":
                groups, nj = _attributes(sig, j)
                max_threads = _max_threads(groups) or max_threads
                for g in groups:
                    if g and g[0].text == "kernel":
                        attrs_kernel = True
                    if g and g[0].text == "function_constant" and len(g) >= 3:
                        # the index may be an expression (ggml: FC_UNARY + 1, after macros)
                        inner = g[2:_match(g, 1, "(", ")")]
                        index = int_expression(" ".join(x.text for x in inner))
                        if index is None:
                            file, line = self.where(j)
                            raise ValueError(
                                f"{file}:{line}: function constant index "
                                f"{_join(inner)!r} is no integer constant expression")
                        self._constant(start, j, index)
                j = nj
                continue
            if t == "=":
                j = self._skip_to(j, ";")
                return j + 1
            if t in ("struct", "class", "union") and j == start:
                return self._struct(j, tparams)
            if t == "(":
                if paren is None:
                    paren = j
                j = _match(sig, j, "(", ")")
            j += 1
        if j >= len(sig):
            return j
        if sig[j].text == ";":
            return j + 1
        close = _match(sig, j, "{", "}")
        if paren is None:
            return close + 1
        words = {t.text for t in sig[start:paren]}
        if "kernel" in words or attrs_kernel:
            name_tok = sig[paren - 1]
            if name_tok.kind == "ident":
                file, line = self.where(paren - 1)
                span = (sig[j].start, sig[close].start + 1)
                self.bodies.append(span)
                self.body_names.append(name_tok.text)
                qualified = "::".join([*[n for n in self.ns if n], name_tok.text])
                params = sig[paren + 1: _match(sig, paren, "(", ")")]
                if tparams is None:
                    ps, why = parse_params(params)
                    self.add(LibraryKernel(name_tok.text, qualified, ps, line, file,
                                           unsupported=why, body=span, max_threads=max_threads))
                else:
                    self.templates.setdefault(name_tok.text, []).append(
                        _Template(name_tok.text, qualified, tparams, list(params), line, file,
                                  span, self._types, max_threads))
        return close + 1

    def _constant(self, start: int, attr_at: int, index: int) -> None:
        sig = self.sig
        toks = [t for t in sig[start:attr_at] if t.text != "constant"]
        if not toks:
            return
        end = self._skip_to(attr_at, ";")
        self.constants.append(FunctionConstant(
            toks[-1].text, _join(toks[:-1]), index, sig[start].start, sig[end].start + 1))

    def _instantiation(self, i: int) -> int:
        sig = self.sig
        end = self._skip_to(i, ";")
        self.instantiations.append((sig[i].start, sig[end].start + 1 if end < len(sig)
                                    else len(self.text)))
        j = i + 1
        host = None
        is_kernel = False
        max_threads = None
        rest: list[Token] = []
        while j < end:
            if sig[j].text == "[" and j + 1 < end and sig[j + 1].text == "[":
                groups, j = _attributes(sig, j)
                max_threads = _max_threads(groups) or max_threads
                for g in groups:
                    if g and g[0].text == "host_name":
                        host = _strings(g)
                    elif g and g[0].text == "kernel":
                        is_kernel = True
                continue
            if sig[j].text == "kernel":
                is_kernel = True
            elif sig[j].text == "(":
                close = _match(sig, j, "(", ")")
                rest.extend(sig[j: close + 1])
                j = close + 1
                continue
            else:
                rest.append(sig[j])
            j += 1
        if host is None or not rest:
            return end + 1
        file, line = self.where(i)
        # the declarator: the last name (with its template arguments) at depth 0
        k = 0
        decl_at = None
        params_at = None
        while k < len(rest):
            t = rest[k]
            if t.text == "decltype" and k + 1 < len(rest) and rest[k + 1].text == "(":
                k = _match(rest, k + 1, "(", ")") + 1
                continue
            if t.text == "<":
                k = _match(rest, k, "<", ">") + 1
                continue
            if t.text == "(":
                params_at = k
                break
            if t.kind == "ident":
                decl_at = k
            k += 1
        if decl_at is None:
            return end + 1
        name = rest[decl_at].text
        targs = None
        after = decl_at + 1
        if after < len(rest) and rest[after].text == "<":
            close = _match(rest, after, "<", ">")
            targs = _join(rest[after: close + 1])
        candidates = self.templates.get(name, [])
        template = candidates[-1] if candidates else None
        values = [_join(p) for p in _split_commas(
            rest[after + 1: _match(rest, after, "<", ">")])] if targs else []
        mapping: dict[str, str] = {}
        if template is not None:
            for (pname, default), value in zip(template.tparams, values + [None] * 99):
                value = value if value is not None else default
                if pname and value is not None:
                    mapping[pname] = _substitute(value, mapping)
        if params_at is not None:
            close = _match(rest, params_at, "(", ")")
            ptoks = rest[params_at + 1: close]
            params, why = parse_params(ptoks)
            ftype = "void(" + _join(ptoks) + ")"
            if template is not None:
                _deduce(template, params, mapping)
                # The kernel is the template's definition: its parameters' attributes and
                # buffer indices count (an instantiation may restate them differently).
                defined, _ = parse_params(template.params, mapping)
                if len(defined) == len(params):
                    params = tuple(_merge_param(i, d) for i, d in zip(params, defined))
                if targs:
                    ftype = None  # `f<args>` names the function; the list may omit names
        else:
            head = _join(rest[:decl_at])
            ftype = head or None
            if template is None:
                raise ValueError(f"{file}:{line}: host name {host!r} instantiates {name!r}, "
                                 "which is no kernel template of this library")
            params, why = parse_params(template.params, mapping)
        tvalues = None if template is None else tuple(
            (pname, mapping.get(pname), pname in template.types)
            for pname, _ in template.tparams if pname)
        qualified = template.qualified if template else name
        if max_threads is None and template is not None and template.max_threads is not None:
            for pname, default in template.tparams:
                if pname and pname not in mapping and default is not None:
                    mapping[pname] = default
            max_threads = _substitute(template.max_threads, mapping)
        self.add(LibraryKernel(host, qualified, params, line, file, targs, ftype, why,
                               template.body if template else None, tvalues, max_threads))
        if not is_kernel and template is None:
            return end + 1
        return end + 1


def _deduce(template: _Template, params: Sequence[KernelParam], mapping: dict[str, str]) -> None:
    """Template arguments an instantiation leaves to deduction, from its parameter types
    (``kernel void f(device float* x)`` of ``template <typename T> kernel void f(device T* x)``:
    T = float); added to ``mapping``."""
    names = [n for n, _ in template.tparams if n and n not in mapping]
    if not names:
        return
    generic, _ = parse_params(template.params)
    for g, p in zip(generic, params):
        missing = [n for n in names if n not in mapping and re.search(rf"\b{n}\b", g.base)]
        if not missing:
            continue
        pattern = re.escape(g.base)
        for n in missing:
            pattern = re.sub(rf"\b{n}\b", f"(?P<{n}>.+?)", pattern, count=1)
        m = re.fullmatch(pattern, p.base)
        if m:
            mapping.update({n: m.group(n).strip() for n in missing})


class _LineMap:
    """``file:line`` of an offset of preprocessed text, through its ``#line`` markers."""

    _MARK = re.compile(r'^#line (\d+) "([^"]*)"$', re.MULTILINE)

    def __init__(self, text: str) -> None:
        self.marks = [(m.start(), int(m.group(1)), m.group(2), m.end())
                      for m in self._MARK.finditer(text)]
        self.text = text

    def at(self, offset: int) -> tuple[str, int]:
        file, line, base = "library.metal", 1, 0
        for start, n, name, end in self.marks:
            if start > offset:
                break
            file, line, base = name, n, end + 1
        return file, line + self.text.count("\n", base, offset)


def source_line(text: str, offset: int) -> tuple[str, int]:
    """``(file, line)`` of an offset of preprocessed text, through its ``#line`` markers."""
    return _LineMap(text).at(offset)


def parse_library(text: str) -> LibraryText:
    """The kernels, structs, aliases and function constants of preprocessed Metal text.

    Raises
    ------
    ValueError
        Two kernels share a host name, or an instantiation names no kernel template.
    """
    p = _Parser(text)
    p.run()
    return LibraryText(text, p.kernels, p.structs, p.aliases, tuple(p.constants),
                       tuple(p.instantiations), tuple(p.bodies), tuple(p.body_names))
