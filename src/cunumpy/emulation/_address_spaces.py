"""Declarations that differ only in Metal address spaces, for the emulators' one address space.

Metal overloads functions, operators, constructors and class template specialisations on the
address space of a reference or pointer (``thread T&``, ``threadgroup T&``, ``device T*``,
``constant T*``) and qualifies member functions by the address space of ``this``
(``complex_t() threadgroup``). MLX's headers (``complex.h``, ``steel``), and the copies of them in
other projects, define such families, usually with the same body in every member. The C++ the
emulators compile has one address space: ``device``, ``thread`` and ``threadgroup`` are erased and
``constant`` becomes ``const`` (as :func:`cunumpy.emulation.metal_library.edit_library` does), so
a family collapses into redefinitions.

The rule (:func:`address_space_edits`): within one scope (a namespace or a class body), a
declaration that names an address space is removed when an earlier declaration of the same scope
(with or without address spaces) reads the same, token for token, once address spaces are erased
that way; its body included.
Both then compile to the same function on a CPU, so removing the later one changes nothing.
Families whose members differ in more than their address spaces (the erased texts differ) are
kept and left to the compiler, which reports them as redefinitions (:func:`collisions` lists them
for a message). Because ``constant`` stays ``const``, ``f(constant T&)`` and ``f(device T&)``
remain two overloads (``const T&`` and ``T&``), as C++ allows.

An address space written after a member function's parameter list (the ``this`` qualifier) is
removed from the declaration that is kept. A trait specialised on an address-space pointer
(MLX's ``pointer_element<device T*>``) gets the same specialisation for the checked pointer
``cn::ptr<T>`` that buffer parameters are in checked builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from cunumpy._lang.scopes import brace_kind
from cunumpy._lang.tokens import Token, tokenize

__all__ = ["Collision", "address_space_edits", "collisions"]

SPACES = frozenset({"device", "constant", "threadgroup", "thread", "threadgroup_imageblock",
                    "ray_data", "object_data"})
"""Metal's address-space words."""

_AFTER_QUALIFIER = frozenset({"{", ":", ";", "const", "=", "->", "noexcept", "&", "&&"})
_LABELS = frozenset({"public", "private", "protected"})


@dataclass(frozen=True)
class _Unit:
    start: int  # index into the significant tokens
    stop: int   # one past the last token of the declaration
    definition: bool  # has a body (function or class)


@dataclass(frozen=True)
class Collision:
    """Two declarations of one scope that differ in address spaces and in something else."""

    first: int
    """Offset of the earlier declaration in the text."""
    later: int
    """Offset of the later one."""
    head: str
    """The later declaration's text up to its body, whitespace collapsed."""


def _significant(text: str) -> list[Token]:
    return [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]


def _match(sig: list[Token], k: int, open_: str, close: str) -> int:
    """Index of the token closing the bracket opened at ``sig[k]`` (or len(sig))."""
    depth = 0
    for j in range(k, len(sig)):
        t = sig[j].text
        if t == open_:
            depth += 1
        elif t == close:
            depth -= 1
            if depth == 0:
                return j
    return len(sig)


def _is_qualifier(sig: list[Token], k: int) -> bool:
    """Whether the address space at ``sig[k]`` qualifies a member function's ``this``."""
    if k < 1 or k + 1 >= len(sig) or sig[k].text not in SPACES:
        return False
    after_paren = sig[k - 1].text == ")" or (
        sig[k - 1].text == "const" and k > 1 and sig[k - 2].text == ")")
    return after_paren and sig[k + 1].text in _AFTER_QUALIFIER


def _erased(sig: list[Token], start: int, stop: int) -> tuple[str, ...]:
    """The declaration's tokens as the emulators compile them, address spaces erased (a
    ``this`` qualifier is removed whatever its address space)."""
    out = []
    for k in range(start, stop):
        t = sig[k].text
        if t == "constant" and not _is_qualifier(sig, k):
            near = {x.text for x in sig[max(0, k - 3): k + 4]}
            if not near & {"const", "constexpr"}:
                out.append("const")
            continue
        if t in SPACES:
            continue
        out.append(t)
    return tuple(out)


def _units(sig: list[Token], lo: int, hi: int) -> tuple[list[_Unit], list[tuple[int, int]]]:
    """The declarations of the scope whose tokens are ``sig[lo:hi]``, and the inner scopes
    (namespace and class bodies, as token ranges) to read the same way."""
    units: list[_Unit] = []
    inner: list[tuple[int, int]] = []
    k = lo
    start = lo
    while k < hi:
        t = sig[k].text
        if t == ";":
            if k > start:
                units.append(_Unit(start, k + 1, False))
            start = k + 1
        elif t == ":" and k == start + 1 and sig[start].text in _LABELS:
            start = k + 1
        elif t == "{":
            close = _match(sig, k, "{", "}")
            kind = brace_kind(sig, k)
            if kind in ("namespace", "linkage"):
                inner.append((k + 1, close))
                start = close + 1
                k = close + 1
                continue
            stop = close + 1
            if kind == "class":
                inner.append((k + 1, close))
                # the declaration goes on to its ';' (struct S {...} s;)
                j = stop
                while j < hi and sig[j].text != ";":
                    j += 1
                stop = min(j + 1, hi)
                units.append(_Unit(start, stop, True))
                start = k = stop
                continue
            if kind == "block":
                if stop < hi and sig[stop].text == ";":
                    stop += 1
                units.append(_Unit(start, stop, True))
                start = k = stop
                continue
            k = close  # an initializer: the declaration ends at its ';'
        elif t in ("(", "["):
            k = _match(sig, k, t, ")" if t == "(" else "]")
        k += 1
    return units, inner


def _scopes(sig: list[Token]):
    todo = [(0, len(sig))]
    while todo:
        lo, hi = todo.pop()
        units, inner = _units(sig, lo, hi)
        todo.extend(inner)
        yield units


def _has_space(sig: list[Token], u: _Unit) -> bool:
    return any(sig[k].text in SPACES for k in range(u.start, u.stop))


def _head_stop(sig: list[Token], u: _Unit) -> int:
    """Index of the ``{`` opening the body of ``u`` (or its end)."""
    depth = 0
    for k in range(u.start, u.stop):
        t = sig[k].text
        if t in ("(", "["):
            depth += 1
        elif t in (")", "]"):
            depth -= 1
        elif t == "{" and depth <= 0:
            return k
    return u.stop


def _blank(text: str) -> str:
    return "\n" * text.count("\n") or " "


def _qualifier_edits(sig: list[Token], lo: int, hi: int) -> list[tuple[int, int, str]]:
    """Address spaces written after a member function's parameter list, removed."""
    return [(sig[k].start, sig[k].start + len(sig[k].text), " ")
            for k in range(lo, hi) if _is_qualifier(sig, k)]


def address_space_edits(text: str) -> list[tuple[int, int, str]]:
    """Edits ``(start, stop, replacement)`` of ``text`` that apply the module's rule: later
    declarations equal to an earlier one once address spaces are erased are blanked (newlines
    kept), and ``this`` address-space qualifiers are removed from the ones kept."""
    sig = _significant(text)
    edits: list[tuple[int, int, str]] = []
    removed: list[tuple[int, int]] = []
    for units in _scopes(sig):
        seen: set[tuple[str, ...]] = set()
        for u in units:
            key = _erased(sig, u.start, u.stop)
            if not _has_space(sig, u):
                seen.add(key)  # `S() = default;` then `S() threadgroup = default;`
                continue
            if key in seen:
                a, b = sig[u.start].start, sig[u.stop - 1].start + len(sig[u.stop - 1].text)
                edits.append((a, b, _blank(text[a:b])))
                removed.append((u.start, u.stop))
            else:
                seen.add(key)
    for e in _qualifier_edits(sig, 0, len(sig)):
        if not any(sig[a].start <= e[0] < sig[b - 1].start + 1 for a, b in removed):
            edits.append(e)
    kept = [u for units in _scopes(sig) for u in units if (u.start, u.stop) not in removed]
    edits.extend(_pointer_twins(sig, kept))
    return edits


def _pointer_twins(sig: list[Token], units: list[_Unit]) -> list[tuple[int, int, str]]:
    """For each trait specialised on an address-space pointer
    (``template <typename T> struct elem<device T*> {...};``), the same specialisation for the
    emulators' checked pointer ``cn::ptr<T>`` (``cn::ptr<const T>`` for ``constant T*`` and
    ``const device T*``), appended on the declaration's last line: a buffer parameter is such a
    pointer in checked builds, and the trait must still apply to its type."""
    out = []
    for u in units:
        toks = [x.text for x in sig[u.start:u.stop]]
        if len(toks) < 12 or toks[:2] != ["template", "<"] or toks[2] not in ("typename", "class"):
            continue
        name = toks[3]
        if toks[4] != ">" or toks[5] not in ("struct", "class") or toks[7] != "<":
            continue
        k = 8
        const = False
        if toks[k] == "const":
            const, k = True, k + 1
        if toks[k] not in SPACES:
            continue
        const = const or toks[k] == "constant"
        k += 1
        if toks[k] == "const":
            const, k = True, k + 1
        if toks[k:k + 3] != [name, "*", ">"] or "{" not in toks:
            continue
        twin = (toks[:8] + ["::cn::ptr", "<"] + (["const"] if const else []) + [name, ">", ">"]
                + toks[k + 3:])
        end = sig[u.stop - 1].start + len(sig[u.stop - 1].text)
        out.append((end, end, " " + " ".join(twin)))
    return out


def collisions(text: str) -> list[Collision]:
    """Pairs of definitions in one scope whose heads (up to the body) are equal once address
    spaces are erased but whose whole texts are not: the rule keeps both, so the compiler will
    call the later one a redefinition."""
    sig = _significant(text)
    found = []
    for units in _scopes(sig):
        heads: dict[tuple[str, ...], tuple[_Unit, tuple[str, ...]]] = {}
        for u in units:
            if not u.definition or not _has_space(sig, u):
                continue
            h = _head_stop(sig, u)
            head = _erased(sig, u.start, h)
            whole = _erased(sig, u.start, u.stop)
            if head in heads and heads[head][1] != whole:
                first = heads[head][0]
                found.append(Collision(sig[first.start].start, sig[u.start].start,
                                       " ".join(x.text for x in sig[u.start:h])))
            else:
                heads.setdefault(head, (u, whole))
    return found
