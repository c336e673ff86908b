"""Expand the macros that define kernels, so that the kernels are found as the compiler sees them.

CUDA projects often stamp out kernels with function-like macros::

    #define DEFINE_SCALE(NAME, T) \\
        extern "C" __global__ void NAME(const T* x, T* y, int n) { ... }
    DEFINE_SCALE(scale_f32, float)

The signature parser and the emulator's rewriter read text, and there the kernel ``scale_f32``
only exists once the preprocessor has run. :func:`expand_kernel_macros` runs that part of the
preprocessor: every invocation of a macro whose replacement (directly or through other macros)
contains ``__global__`` is replaced by its expansion, computed as the C preprocessor computes it
(arguments macro-expanded before substitution, except next to ``#`` and ``##``; ``#``
stringizes, ``##`` pastes, ``__VA_ARGS__`` and ``__VA_OPT__``; the result is rescanned, a macro
is not expanded inside its own expansion). Definitions are read in order (``#undef`` included),
from the headers first, then from the text; definitions in preprocessor branches that the
``-D``/``-U`` options rule out are not read.

The expansion of one invocation is written on the invocation's first line, and the newlines the
invocation spanned follow it, so every other line keeps its number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cunumpy._lang.edits import apply_edits
from cunumpy._lang.tokens import Token, tokenize

__all__ = ["expand_kernel_macros"]


@dataclass(frozen=True)
class _Macro:
    name: str
    params: tuple[str, ...] | None  # None: object-like; the named ones, not the variadic part
    variadic: str | None  # "__VA_ARGS__", or GNU's name for ``args...``; None: not variadic
    body: tuple[Token, ...]  # without whitespace tokens; Token.start > 0 marks space before


_DEFINE = re.compile(r"^[ \t]*#[ \t]*(define|undef)[ \t]+([A-Za-z_]\w*)(\()?", re.DOTALL)
_KERNEL_WORD = "__global__"


def _significant(text: str) -> list[Token]:
    """Tokens without whitespace and comments; ``start`` is 1 when whitespace came before."""
    out: list[Token] = []
    gap = False
    # A leading `#` would read as a preprocessor line: tokenize after a placeholder instead.
    for t in tokenize("@" + text)[1:]:
        if t.kind in ("ws", "comment"):
            gap = True
            continue
        if t.text == "#" and not gap and out and out[-1].text == "#":
            out[-1] = Token("punct", "##", out[-1].start)  # the tokenizer splits the paste
        else:
            out.append(Token(t.kind, t.text, 1 if gap else 0))
        gap = False
    return out


def _parse_define(line: str) -> tuple[str, str, _Macro | None] | None:
    """``(kind, name, macro)`` of a ``#define``/``#undef`` line (continuations joined)."""
    joined = line.replace("\\\n", " ")
    m = _DEFINE.match(joined)
    if not m:
        return None
    kind, name = m.group(1), m.group(2)
    if kind == "undef":
        return kind, name, None
    rest = joined[m.end():]
    params: tuple[str, ...] | None = None
    variadic = None
    if m.group(3):  # a '(' right after the name: function-like
        close = rest.find(")")
        if close < 0:
            return None
        names = [p.strip() for p in rest[:close].split(",") if p.strip()]
        if names and names[-1].endswith("..."):
            variadic = names.pop()[:-3].strip() or "__VA_ARGS__"  # GNU: args...
        params = tuple(names)
        rest = rest[close + 1:]
    return kind, name, _Macro(name, params, variadic, tuple(_significant(rest)))


def _definitions(texts: Sequence[str]) -> list[tuple[int, int, str, str, _Macro | None]]:
    """``(text index, offset, kind, name, macro)`` of every define/undef, in order."""
    found = []
    for index, text in enumerate(texts):
        for t in tokenize(text):
            if t.kind == "pp":
                parsed = _parse_define(t.text)
                if parsed is not None:
                    found.append((index, t.start, *parsed))
    return found


def _kernel_macros(macros: dict[str, _Macro]) -> set[str]:
    """Names of the macros whose replacement contains ``__global__``, directly or through
    other macros."""
    names = {n for n, m in macros.items() if any(t.text == _KERNEL_WORD for t in m.body)}
    grew = True
    while grew:
        grew = False
        for n, m in macros.items():
            if n not in names and any(t.kind == "ident" and t.text in names for t in m.body):
                names.add(n)
                grew = True
    return names


def _stringize(tokens: Sequence[Token]) -> Token:
    parts = []
    for k, t in enumerate(tokens):
        text = t.text
        if t.kind in ("string", "char"):
            text = text.replace("\\", "\\\\").replace('"', '\\"')
        parts.append((" " if k and t.start else "") + text)
    return Token("string", '"' + "".join(parts) + '"', 0)


def _paste(left: Token, right: Token) -> list[Token]:
    pasted = _significant(left.text + right.text)
    if pasted:
        pasted[0] = Token(pasted[0].kind, pasted[0].text, left.start)
    return pasted


class _Expander:
    """The C preprocessor's macro replacement over token lists (C11 6.10.3)."""

    def __init__(self, macros: dict[str, _Macro]) -> None:
        self.macros = macros

    def expand(self, tokens: list[Token], hidden: frozenset[str]) -> list[Token]:
        out: list[Token] = []
        k = 0
        while k < len(tokens):
            t = tokens[k]
            macro = self.macros.get(t.text) if t.kind == "ident" else None
            if macro is None or t.text in hidden:
                out.append(t)
                k += 1
                continue
            if macro.params is None:
                body = self._substitute(macro, [], hidden)
                out.extend(self._first_space(self.expand(body, hidden | {macro.name}), t.start))
                k += 1
                continue
            if k + 1 >= len(tokens) or tokens[k + 1].text != "(":
                out.append(t)  # a function-like macro's name without arguments stays
                k += 1
                continue
            args, end = _arguments(tokens, k + 1)
            if end < 0:
                out.extend(tokens[k:])
                break
            body = self._substitute(macro, args, hidden)
            expanded = self.expand(body, hidden | {macro.name})
            out.extend(self._first_space(expanded, t.start))
            k = end + 1
        return out

    @staticmethod
    def _first_space(tokens: list[Token], start: int) -> list[Token]:
        if tokens:
            tokens[0] = Token(tokens[0].kind, tokens[0].text, start)
        return tokens

    def _substitute(self, macro: _Macro, args: list[list[Token]], hidden: frozenset[str]) -> list[Token]:
        params = list(macro.params or ())
        named = dict(zip(params, args, strict=False))
        for p in params:
            named.setdefault(p, [])
        if macro.variadic:
            va: list[Token] = []
            for j, a in enumerate(args[len(params):]):
                if j:
                    va.append(Token("punct", ",", 0))
                va.extend(a)
            named[macro.variadic] = va
            named.setdefault("__VA_ARGS__", va)
        body = list(macro.body)
        out: list[Token] = []
        k = 0
        while k < len(body):
            t = body[k]
            if t.text == "#" and k + 1 < len(body) and body[k + 1].text in named:
                out.append(Token("string", _stringize(named[body[k + 1].text]).text, t.start))
                k += 2
                continue
            if t.text == "__VA_OPT__" and k + 1 < len(body) and body[k + 1].text == "(":
                inner, end = _arguments(body, k + 1)
                if named.get("__VA_ARGS__"):
                    joined: list[Token] = []
                    for j, a in enumerate(inner):
                        if j:
                            joined.append(Token("punct", ",", 0))
                        joined.extend(a)
                    out.extend(joined)
                k = end + 1
                continue
            pasting = (k + 1 < len(body) and body[k + 1].text == "##") or (
                out and k > 0 and body[k - 1].text == "##")
            if t.kind == "ident" and t.text in named:
                arg = named[t.text]
                value = list(arg) if pasting else self.expand(list(arg), hidden)
                if value:
                    value[0] = Token(value[0].kind, value[0].text, t.start)
                out.extend(value)
            elif t.text == "##":
                pass
            else:
                out.append(t)
            k += 1
        # Paste around each ##, left to right, on the substituted tokens.
        return self._pastes(body, out, named)

    @staticmethod
    def _pastes(body: list[Token], subst: list[Token], named: dict[str, list[Token]]) -> list[Token]:
        if not any(t.text == "##" for t in body):
            return subst
        # Rebuild with markers: substitute again, keeping ## as a marker token.
        marked: list[Token | None] = []
        k = 0
        while k < len(body):
            t = body[k]
            if t.text == "##":
                marked.append(None)
            elif t.text == "#" and k + 1 < len(body) and body[k + 1].text in named:
                marked.append(_stringize(named[body[k + 1].text]))
                k += 1
            elif t.kind == "ident" and t.text in named:
                arg = named[t.text]
                if arg:
                    first = Token(arg[0].kind, arg[0].text, t.start)
                    marked.extend([first, *arg[1:]])
                else:
                    marked.append(Token("placemarker", "", t.start))
            else:
                marked.append(t)
            k += 1
        out: list[Token] = []
        k = 0
        while k < len(marked):
            t = marked[k]
            if t is None:
                k += 1
                continue
            while k + 2 <= len(marked) - 1 and marked[k + 1] is None:
                right = marked[k + 2]
                assert right is not None
                if t.kind == "placemarker":
                    t = Token(right.kind, right.text, t.start)
                elif right.kind != "placemarker":
                    pasted = _paste(t, right)
                    if len(pasted) == 1:
                        t = pasted[0]
                    else:  # not one token: keep both (a compiler would refuse it)
                        out.append(t)
                        t = right
                k += 2
            if t.kind != "placemarker":
                out.append(t)
            k += 1
        return out


def _arguments(tokens: Sequence[Token], open_at: int) -> tuple[list[list[Token]], int]:
    """Arguments of the invocation whose ``(`` is ``tokens[open_at]``; and the ``)`` index."""
    args: list[list[Token]] = [[]]
    depth = 0
    for k in range(open_at, len(tokens)):
        t = tokens[k]
        if t.text == "(":
            depth += 1
            if depth == 1:
                continue
        elif t.text == ")":
            depth -= 1
            if depth == 0:
                if args == [[]]:
                    return [], k
                return args, k
        elif t.text == "," and depth == 1:
            args.append([])
            continue
        args[-1].append(t)
    return args, -1


def _spell(tokens: Sequence[Token]) -> str:
    parts = []
    for k, t in enumerate(tokens):
        if k and (t.start or (t.kind in ("ident", "number") and tokens[k - 1].kind in ("ident", "number"))):
            parts.append(" ")
        parts.append(t.text)
    return "".join(parts)


def expand_kernel_macros(text: str, active: str | None = None, headers: Sequence[str] = ()) -> str:
    """``text`` with every invocation of a kernel-defining macro replaced by its expansion.

    Parameters
    ----------
    text : str
        The source.
    active : str, optional
        ``text`` with the branches the options rule out blanked (same offsets), as
        :func:`cunumpy._lang.cuda_preprocess.active_text` gives it; definitions and invocations
        are read there. Default: ``text``.
    headers : sequence of str
        Texts of included headers (their active parts), whose definitions come first.
    """
    if "__global__" not in text and not any("__global__" in h for h in headers):
        return text
    active = text if active is None else active
    texts = [*headers, active]
    events = _definitions(texts)
    if not any(m is not None and any(t.text == _KERNEL_WORD for t in m.body) for *_, m in events):
        return text
    macros: dict[str, _Macro] = {}
    pending = [e for e in events if e[0] == len(texts) - 1]
    for index, _, kind, name, macro in events:
        if index < len(texts) - 1:
            _apply(macros, kind, name, macro)
    kernel_names = _kernel_macros(macros)
    edits: list[tuple[int, int, str]] = []
    tokens = tokenize(active)
    sig = [t for t in tokens if t.kind not in ("ws", "comment")]
    ev = 0
    k = 0
    while k < len(sig):
        t = sig[k]
        if ev < len(pending) and pending[ev][1] <= t.start:
            while ev < len(pending) and pending[ev][1] <= t.start:
                _apply(macros, pending[ev][2], pending[ev][3], pending[ev][4])
                ev += 1
            kernel_names = _kernel_macros(macros)
        if t.kind == "ident" and t.text in kernel_names:
            macro = macros[t.text]
            if macro.params is None:
                end = k
            elif k + 1 < len(sig) and sig[k + 1].text == "(":
                plain = [Token(s.kind, s.text, 1) for s in sig[k + 1:]]
                _, rel = _arguments(plain, 0)
                if rel < 0:
                    k += 1
                    continue
                end = k + 1 + rel
            else:
                k += 1
                continue
            stop = sig[end].start + len(sig[end].text)
            piece = [Token(s.kind, s.text, 1 if j else 0) for j, s in enumerate(
                _significant(active[t.start:stop]))]
            expanded = _Expander(macros).expand(piece, frozenset())
            newlines = active.count("\n", t.start, stop)
            edits.append((t.start, stop, _spell(expanded) + "\n" * newlines))
            k = end + 1
            continue
        k += 1
    if not edits:
        return text
    return apply_edits(text, edits)


def _apply(macros: dict[str, _Macro], kind: str, name: str, macro: _Macro | None) -> None:
    if kind == "undef":
        macros.pop(name, None)
    elif macro is not None:
        macros[name] = macro
