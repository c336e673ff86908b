"""Source rewrites that turn kernel-language text into C++ the emulator compiles.

A small tokenizer (comments, string and character literals, preprocessor lines are skipped
untouched) finds the few constructs plain C++ cannot express:

- ``threadgroup T name[N][M];`` and ``threadgroup T name;`` declarations become references into
  the per-group shared arena (``cn::tg_alloc``), bounds-checked arrays when checks are on;
- with checked pointers, pointer parameters and local pointer declarations with an address space
  (``const device T* p = x + k;``) become ``cn::ptr``, and a threadgroup array named without a
  subscript becomes a checked pointer (``cn::tview``), and ``reinterpret_cast`` becomes
  ``cn::msl::cast``, which casts checked pointers through their raw address;
- every other ``threadgroup`` (casts, class members, unchecked builds) is removed;
- half literals ``1.5h`` / ``2h`` become ``half(1.5f)`` / ``half(2.0f)``;
- ``#include <metal_stdlib>`` (and other ``metal_*`` headers) is dropped: the runtime provides it.

Rewrites never add or remove a newline, so compiler line numbers still point at the user's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cunumpy._lang.metal_swizzle import swizzle_chain_edits
from cunumpy._lang.scopes import brace_kind, declared_name
from cunumpy._lang.tokens import Token, tokenize
from cunumpy.emulation._conditional import rewrite_conditionals

__all__ = ["SharedDecl", "Token", "rewrite", "synchronises", "tokenize"]

SYNC_FUNCTIONS = frozenset(
    {"threadgroup_barrier", "simdgroup_barrier", "simd_ballot", "simd_active_threads_mask",
     "simd_all", "simd_any", "simd_is_first", "quad_ballot", "quad_active_threads_mask",
     "quad_all", "quad_any", "quad_is_first"}
    | {f"{p}_{op}" for p in ("simd", "quad") for op in (
        "sum", "product", "min", "max", "and", "or", "xor", "prefix_inclusive_sum",
        "prefix_exclusive_sum", "prefix_inclusive_product", "prefix_exclusive_product",
        "broadcast_first", "shuffle", "broadcast", "shuffle_up", "shuffle_down", "shuffle_xor",
        "shuffle_rotate_up", "shuffle_rotate_down", "shuffle_and_fill_down",
        "shuffle_and_fill_up")}
)
"""Names whose use makes the emulator run the threads of a group as fibers."""


@dataclass(frozen=True)
class SharedDecl:
    """A ``threadgroup`` variable: its slot in the arena, name, element type and dimensions."""

    slot: int
    name: str
    ctype: str
    dims: tuple[str, ...]

    def describe(self) -> str:
        """``float[16][17]`` style text for error messages."""
        return self.ctype + "".join(f"[{d}]" for d in self.dims)


@dataclass(frozen=True)
class Rewritten:
    """Result of :func:`rewrite`."""

    text: str
    shared: tuple[SharedDecl, ...]
    sync: bool
    """The text calls a barrier or SIMD/quad function, or declares a threadgroup atomic."""


_METAL_INCLUDE = re.compile(r"\s*#\s*include\s*[<\"]metal_\w+[>\"]\s*$")


def _half_literal(text: str) -> str | None:
    if text[-1] not in "hH" or text.lower().startswith("0x"):
        return None
    body = text[:-1]
    if not re.fullmatch(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", body):
        return None
    if not any(c in body for c in ".eE"):
        body += ".0"
    return f"half({body}f)"


def _join(tokens: list[Token]) -> str:
    out = ""
    prev: Token | None = None
    for t in tokens:
        if prev is not None and prev.kind in ("ident", "number") and t.kind in ("ident", "number"):
            out += " "
        out += t.text
        prev = t
    return out


def _declaration(sig: list[Token], i: int) -> tuple[int, list[list[Token]]] | None:
    """If ``sig[i]`` (``threadgroup``) starts a variable declaration, its end index and the
    declarators (the first one with its type), else None."""
    pd = bd = ad = 0
    parts: list[list[Token]] = [[]]
    j = i + 1
    while j < len(sig):
        t = sig[j].text
        if t == "(":
            if pd == 0 and bd == 0:
                return None
            pd += 1
        elif t == ")":
            if pd == 0:
                return None
            pd -= 1
        elif t == "[":
            bd += 1
        elif t == "]":
            bd -= 1
        elif t in ("{", "}"):
            return None
        elif pd == 0 and bd == 0:
            if t == ";":
                break
            if t in ("*", "&", "&&", "="):
                return None
            if t == "<":
                ad += 1
            elif t == ">":
                ad -= 1
            elif t == "," and ad == 0:
                parts.append([])
                j += 1
                continue
        parts[-1].append(sig[j])
        j += 1
    else:
        return None
    if not parts[0]:
        return None
    return j, parts


def _split_declarator(tokens: list[Token]) -> tuple[list[Token], str, list[str]] | None:
    """(type tokens, name, dims) of ``T name[a][b]``."""
    dims: list[str] = []
    k = len(tokens)
    while k > 0 and tokens[k - 1].text == "]":
        depth = 0
        m = k - 1
        while m >= 0:
            if tokens[m].text == "]":
                depth += 1
            elif tokens[m].text == "[":
                depth -= 1
                if depth == 0:
                    break
            m -= 1
        if m < 0:
            return None
        dims.insert(0, _join(tokens[m + 1 : k - 1]))
        k = m
    if k == 0 or tokens[k - 1].kind != "ident":
        return None
    return tokens[: k - 1], tokens[k - 1].text, dims


def _shared_type(ctype: str, dims: list[str], slot: int, checks: bool) -> str:
    if not dims:
        return ctype
    if not checks:
        return ctype + "".join(f"[{d}]" for d in dims)
    out = ctype
    for d in reversed(dims):
        out = f"cn::tarr<{out}, ({d}), {slot}>"
    return out


_STATEMENT_START = frozenset({";", "{", "}"})


def _pointer_type(sig: list[Token], i: int) -> tuple[int, int, str] | None:
    """If ``sig[i]`` (``device``/``constant``/``threadgroup``) starts a pointer type such as
    ``const device T* const``, (first token, the ``*`` token, checked type text), else None."""
    start = i
    const = sig[i].text == "constant"  # the constant address space is read-only
    if i > 0 and sig[i - 1].text == "const":
        start = i - 1
        const = True
    depth = 0
    j = i + 1
    type_tokens: list[Token] = []
    while j < len(sig):
        t = sig[j]
        if t.text == "<":
            depth += 1
        elif t.text == ">":
            depth -= 1
        elif t.text == "*" and depth == 0:
            break
        elif (t.kind not in ("ident", "number") and t.text not in ("::", ",")) or (
            t.text == "," and depth == 0
        ):
            return None
        type_tokens.append(t)
        j += 1
    else:
        return None
    if any(t.text == "const" for t in type_tokens):
        const = True
        type_tokens = [t for t in type_tokens if t.text != "const"]
    if not type_tokens or any(t.text in _SPACES for t in type_tokens):
        return None
    if [t.text for t in type_tokens] == ["void"]:
        return None  # a void pointer is never subscripted: it stays a plain pointer
    if any(t.text == "decltype" for t in type_tokens):
        return None
    if [t.text for t in type_tokens] == ["auto"]:
        # `const constant auto* p = x;`: `auto` deduces a checked pointer from a checked one
        # (C++ cannot deduce `auto*` through a class) and a raw pointer from a raw one
        return start, j, "auto"
    return start, j, f"cn::ptr<{'const ' if const else ''}{_join(type_tokens)}>"


_SPACES = frozenset({"device", "constant", "threadgroup", "thread"})


def _checked_parameter(sig: list[Token], i: int) -> tuple[int, int, str] | None:
    """If ``sig[i]`` (``device``/``constant``/``threadgroup``) starts a pointer parameter such as
    ``const device T* name``, (first token, the ``*`` token, checked type text), else None."""
    found = _pointer_type(sig, i)
    if found is None:
        return None
    start, star, ctype = found
    if start == 0 or sig[start - 1].text not in ("(", ","):
        return None
    if start >= 2 and sig[start - 1].text == "(" and sig[start - 2].text == "for":
        return None  # a for-init statement, not a parameter
    if star + 1 < len(sig) and sig[star + 1].text in (",", ")") and _in_declarator(sig, start):
        return start, star, ctype  # unnamed: `void (*f)(device const T*, short)`, prototypes
    if star + 2 < len(sig) and sig[star + 1].text == "&" and sig[star + 2].kind == "ident" \
            and star + 3 < len(sig) and sig[star + 3].text in (",", ")"):
        return start, star, ctype  # a reference to a pointer: `const device T*& x`
    name = declared_name(sig, star)
    if name is None or name + 1 >= len(sig) or sig[name + 1].text not in (",", ")", "="):
        return None
    return start, star, ctype


_NOT_DECLARATOR = frozenset({"sizeof", "alignof", "decltype", "return", "if", "while", "for",
                             "switch", "typeof", "case", "else", "do", "throw"})
_AFTER_PARAMETERS = frozenset({";", "{", ")", ",", "const", "=", "->", "noexcept", "[", ":",
                               ">", "thread", "device", "threadgroup", "constant", "override"})


def _in_declarator(sig: list[Token], start: int) -> bool:
    """Whether the parenthesis group around ``sig[start]`` is a parameter list (of a function
    or a function pointer), not a cast or ``sizeof(...)``: a name or ``)`` before it, and after
    it what follows a declarator."""
    depth = 0
    k = start - 1
    while k >= 0:
        if sig[k].text in (")", "]"):
            depth += 1
        elif sig[k].text in ("(", "["):
            if depth == 0:
                break
            depth -= 1
        k -= 1
    if k <= 0 or sig[k].text != "(":
        return False
    before = sig[k - 1]
    if not ((before.kind == "ident" and before.text not in _NOT_DECLARATOR)
            or before.text in (")", ">")):
        return False
    depth = 0
    for j in range(k, len(sig)):
        if sig[j].text == "(":
            depth += 1
        elif sig[j].text == ")":
            depth -= 1
            if depth == 0:
                return j + 1 < len(sig) and sig[j + 1].text in _AFTER_PARAMETERS
    return False


def _local_pointer(
    sig: list[Token], i: int, in_function: bool
) -> tuple[int, int, str, list[int]] | None:
    """If ``sig[i]`` starts a local pointer declaration such as ``const device T* p = x + k;``
    (a statement in a function, or a for-init statement), (first token, the ``*`` token,
    checked type text, the ``*`` tokens of further declarators ``, *q = y``), else None."""
    found = _pointer_type(sig, i)
    if found is None:
        return None
    start, star, ctype = found
    prev = sig[start - 1].text if start > 0 else ";"
    for_init = prev == "(" and start >= 2 and sig[start - 2].text == "for"
    if not (for_init or (prev in _STATEMENT_START and in_function)):
        return None
    # `const device T* const* pp = &p;` points at a local pointer, which is checked too.
    name = declared_name(sig, star, indirect=True)
    if name is None or name + 1 >= len(sig) or sig[name + 1].text not in ("=", ";", ","):
        return None
    # Further declarators must be pointers too (`*q = y`); `, n = 0` declares a T: keep raw.
    stars: list[int] = []
    depth = 0
    k = name + 1
    while k < len(sig):
        t = sig[k].text
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            if depth == 0:
                return None
            depth -= 1
        elif depth == 0 and t == ";":
            break
        elif depth == 0 and t == ",":
            if not (k + 1 < len(sig) and sig[k + 1].text == "*"):
                return None
            if declared_name(sig, k + 1, indirect=True) is None:
                return None
            stars.append(k + 1)
        k += 1
    else:
        return None
    return start, star, ctype, stars


_NOT_A_USE = frozenset({".", "->", "::", "&", "*", "~", "sizeof", "decltype", "alignof",
                        "typeof", ">"})


def _bare_array_use(sig: list[Token], i: int) -> bool:
    """Whether the name at ``sig[i]`` (a threadgroup array) is used without a subscript as a
    value (an argument, an initializer), rather than subscripted or declared anew."""
    nxt = sig[i + 1].text if i + 1 < len(sig) else ""
    if nxt == "[":
        return False
    if i == 0:
        return False
    prev = sig[i - 1]
    if prev.text in _NOT_A_USE:
        return False
    if prev.text == "(" and i >= 2 and sig[i - 2].text in _NOT_A_USE:
        return False  # sizeof(s), decltype(s)
    return not (prev.kind == "ident" and prev.text not in ("return", "case"))


def rewrite(
    text: str,
    *,
    checks: bool,
    first_slot: int = 0,
    checked_params: bool = False,
    checked_pointers: bool = False,
    in_function: bool = False,
    mark_returns: bool = False,
    conditionals: bool = False,
) -> Rewritten:
    """Rewrite one piece of kernel source (a header or a body) for the C++ emulator.

    Parameters
    ----------
    text
        Kernel-language source.
    checks
        Declare threadgroup arrays bounds-checked (``cn::tarr``) rather than as plain arrays.
    first_slot
        Arena slot of the first ``threadgroup`` variable (slots are numbered across the header
        and the body of one kernel).
    checked_params
        Declare ``device``/``constant`` pointer parameters of functions as bounds-checked
        ``cn::ptr`` (for header helpers, so buffers passed to them stay checked).
    checked_pointers
        Keep pointers checked: ``threadgroup`` pointer parameters and local pointer declarations
        with an address space (``const device T* p = x + k;``, ``threadgroup T* q = s;``, in a
        function or a for-init statement) become ``cn::ptr``, and a one-dimensional threadgroup
        array named without a subscript becomes a checked pointer (``cn::tview``). Pointers made
        by casts or ``&x[i]`` stay unchecked; class members and pointers to pointers stay raw.
    in_function
        The text is a function body (the kernel's), so its statements declare local variables.
    mark_returns
        Spell ``return;`` as ``return ::cn::mark_return();``: a thread that leaves the kernel
        early counts as arrived at later barriers (one that skips a barrier does not).
    conditionals
        Type conditional expressions in function bodies as Metal does when their branches mix
        ``half`` or ``bfloat`` with other arithmetic types
        (:mod:`cunumpy.emulation._conditional`).
    """
    tokens = tokenize(text)
    sig = [t for t in tokens if t.kind not in ("ws", "comment", "pp")]
    # A macro may hide a barrier or SIMD function: look inside preprocessor lines too.
    sync = any(
        t.kind == "pp" and not SYNC_FUNCTIONS.isdisjoint(re.findall(r"\w+", t.text))
        for t in tokens
    )
    edits: list[tuple[int, int, str]] = swizzle_chain_edits(sig, text)  # v.xyz.zy -> v.zy
    shared: list[SharedDecl] = []
    for t in tokens:
        if t.kind == "pp" and _METAL_INCLUDE.match(t.text):
            # The emulator's runtime already provides the Metal standard library.
            edits.append((t.start, t.start + len(t.text), ""))
    braces: list[str] = []
    arrays: set[str] = set()  # threadgroup arrays declared so far

    def replace_type(first: int, star: int, ctype: str) -> None:
        stop = sig[star].start + 1
        newlines = text.count("\n", sig[first].start, stop)
        gap = "" if text[stop : stop + 1].isspace() else " "  # `T *p`: keep `p` apart
        edits.append((sig[first].start, stop, ctype + gap + "\n" * newlines))

    i = 0
    while i < len(sig):
        t = sig[i]
        if t.text == "{":
            braces.append(brace_kind(sig, i))
        elif t.text == "}":
            if braces:
                braces.pop()
        if t.kind == "number":
            lit = _half_literal(t.text)
            if lit:
                edits.append((t.start, t.start + len(t.text), lit))
        elif t.kind == "ident" and t.text in SYNC_FUNCTIONS:
            sync = True
        elif mark_returns and t.text == "return" and i + 1 < len(sig) and sig[i + 1].text == ";":
            edits.append((t.start, t.start + len(t.text), "return ::cn::mark_return()"))
        elif checked_pointers and t.kind == "ident" and t.text == "reinterpret_cast":
            # Checked pointers are class objects: cast them through their raw address.
            edits.append((t.start, t.start + len(t.text), "cn::msl::cast"))
        elif checked_pointers and t.kind == "ident" and t.text in arrays:
            if _bare_array_use(sig, i):
                edits.append((t.start, t.start + len(t.text), f"cn::tview({t.text})"))
        if (checked_params or checked_pointers) and t.kind == "ident" and t.text in (
            "device", "constant", "threadgroup"
        ):
            found_param = None
            if checked_pointers or t.text != "threadgroup":
                found_param = _checked_parameter(sig, i)
            if found_param:
                replace_type(*found_param)
                i = found_param[1] + 1
                continue
            scope = braces[-1] if braces else ("block" if in_function else "namespace")
            found_local = (
                _local_pointer(sig, i, scope == "block") if checked_pointers else None
            )
            if found_local:
                first, star, ctype, stars = found_local
                replace_type(first, star, ctype)
                for k in stars:
                    edits.append((sig[k].start, sig[k].start + 1, " "))
                i = star + 1
                continue
        if t.kind == "ident" and t.text == "threadgroup":
            found = _declaration(sig, i)
            decls = None
            if found:
                end, parts = found
                first = _split_declarator(parts[0])
                if first and first[0]:
                    decls = [first]
                    for p in parts[1:]:
                        d = _split_declarator(p)
                        if d is None or d[0]:
                            decls = None
                            break
                        decls.append((first[0], d[1], d[2]))
            if decls is None:
                edits.append((t.start, t.start + len(t.text), " "))
                i += 1
                continue
            stop = sig[end].start + 1
            newlines = text.count("\n", t.start, stop)
            ctype = _join(decls[0][0])
            if "atomic" in ctype:
                sync = True
            pieces = []
            for _, name, dims in decls:
                slot = first_slot + len(shared)
                shared.append(SharedDecl(slot, name, ctype, tuple(dims)))
                if dims:
                    arrays.add(name)
                pieces.append(
                    f"auto& {name} = cn::tg_alloc<{_shared_type(ctype, dims, slot, checks)}>"
                    f"({slot});"
                )
            edits.append((t.start, stop, " ".join(pieces) + "\n" * newlines))
            i = end + 1
            continue
        i += 1
    out = []
    pos = 0
    for start, stop, new in sorted(edits):
        out.append(text[pos:start])
        out.append(new)
        pos = stop
    out.append(text[pos:])
    result = "".join(out)
    if conditionals:
        result = rewrite_conditionals(result, in_function)
    return Rewritten(result, tuple(shared), sync)


def synchronises(text: str) -> bool:
    """True when ``text`` calls a barrier or SIMD/quad function (fibers are needed)."""
    return rewrite(text, checks=False).sync
