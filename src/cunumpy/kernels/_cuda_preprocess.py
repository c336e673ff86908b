"""What the C preprocessor keeps of CUDA source: conditional blocks, evaluated conservatively.

The signature parser and the feature scans (what the emulator refuses, which types a kernel
uses) must look only at code the compiler will see. :func:`inactive_spans` evaluates
``#if``/``#ifdef``/``#ifndef``/``#elif``/``#elifdef``/``#elifndef``/``#else``/``#endif`` with
the ``#define``/``#undef`` lines met on the way and the ``-D``/``-U`` compiler options, and
returns the spans of text that are certainly skipped. It never guesses: an expression it cannot
evaluate (a function-like macro, a macro whose value depends on an undecided branch, a
compiler-defined name such as ``__CUDA_ARCH__`` compared with a number) makes every branch of
that conditional *possibly* active, and possibly active text is kept.

Names follow the C rules: an identifier that is not a macro is 0 in ``#if``, except names
starting with two underscores (or an underscore and a capital), which the compiler or the
toolkit headers may define and are unknown unless listed in :data:`PREDEFINED`. Macros defined
in headers that are not part of the text are not seen, so a configuration macro set by a header
counts as undefined.

The text is read with the emulator's tokenizer (:func:`cunumpy.emulation._rewrite.tokenize`),
so comments, string literals and digit separators (``1'024``) are read the same way everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cunumpy.emulation._rewrite import tokenize

__all__ = [
    "PREDEFINED",
    "UNKNOWN",
    "active_text",
    "defines_from_options",
    "inactive_spans",
    "macro_types",
]


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
"""A macro that is defined, with a value this module does not know."""

PREDEFINED: dict[str, object] = {
    "__CUDACC__": "1",
    "__CUDACC_RTC__": "1",
    "__CUDA_ARCH__": UNKNOWN,
    "__cplusplus": UNKNOWN,
}
"""Macros NVRTC and the emulator both define (values that differ between them are unknown)."""

_IF = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif|define|undef)\b(.*)$",
                 re.DOTALL)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_EXPR_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*)[uUlL]*"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>!~&|^?:(),]))"
)


def defines_from_options(options: Iterable[str]) -> tuple[tuple[str, str | None], ...]:
    """``-DNAME=V``/``-DNAME``/``-UNAME`` (and NVRTC's long spellings) as ``(name, value)``
    pairs in order; ``value`` is None for an undefinition, ``"1"`` for ``-DNAME``."""
    out: list[tuple[str, str | None]] = []
    it = iter(options)
    for opt in it:
        if opt in ("-D", "-U", "--define-macro", "--undefine-macro"):
            value = next(it, "")
            kind = "D" if opt in ("-D", "--define-macro") else "U"
        elif opt.startswith(("--define-macro=", "--undefine-macro=")):
            kind = "D" if opt.startswith("--define") else "U"
            value = opt.split("=", 1)[1]
        elif opt.startswith(("-D", "-U")):
            kind, value = opt[1], opt[2:]
        else:
            continue
        if kind == "U":
            out.append((value.strip(), None))
        else:
            name, eq, val = value.partition("=")
            out.append((name.strip(), val if eq else "1"))
    return tuple(out)


class _Expr:
    """Three-valued evaluation of one ``#if`` expression: an int, or None (unknown)."""

    def __init__(self, text: str, macros: Mapping[str, object]) -> None:
        self.macros = macros
        self.tokens = self._lex(text)
        self.pos = 0
        self.depth = 0

    @staticmethod
    def _lex(text: str) -> list[tuple[str, str]]:
        out, pos = [], 0
        text = text.rstrip()
        while pos < len(text):
            m = _EXPR_TOKEN.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip():
                    raise ValueError(text[pos:])
                break
            pos = m.end()
            kind = m.lastgroup or "op"
            out.append((kind, m.group(kind)))
        return out

    def _peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def _next(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ValueError("unexpected end")
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def evaluate(self) -> int | None:
        value = self._ternary()
        if self.pos != len(self.tokens):
            raise ValueError("trailing tokens")
        return value

    _BINARY = (
        ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
        ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
    )

    def _ternary(self) -> int | None:
        cond = self._binary(0)
        if self._peek() != "?":
            return cond
        self._next()
        a = self._ternary()
        if self._next()[1] != ":":
            raise ValueError("expected ':'")
        b = self._ternary()
        if cond is None:
            return a if a == b else None
        return a if cond else b

    def _binary(self, level: int) -> int | None:
        if level == len(self._BINARY):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() in self._BINARY[level]:
            op = self._next()[1]
            right = self._binary(level + 1)
            left = self._apply(op, left, right)
        return left

    @staticmethod
    def _apply(op: str, a: int | None, b: int | None) -> int | None:
        if op == "&&":
            if a == 0 or b == 0:
                return 0
            return None if a is None or b is None else 1
        if op == "||":
            if (a is not None and a != 0) or (b is not None and b != 0):
                return 1
            return None if a is None or b is None else 0
        if a is None or b is None:
            return None
        if op in ("/", "%") and b == 0:
            return None
        return {
            "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
            "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
            ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
            "<<": lambda: a << b if 0 <= b < 64 else 0, ">>": lambda: a >> b if 0 <= b < 64 else 0,
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "/": lambda: int(a / b), "%": lambda: a - b * int(a / b),
        }[op]()

    def _unary(self) -> int | None:
        kind, text = self._next()
        if text in ("!", "~", "-", "+"):
            v = self._unary()
            if v is None:
                return None
            return {"!": int(not v), "~": ~v, "-": -v, "+": v}[text]
        if text == "(":
            v = self._ternary()
            if self._next()[1] != ")":
                raise ValueError("expected ')'")
            return v
        if kind == "num":
            digits = text.replace("'", "")
            if digits[:2] in ("0x", "0X"):
                return int(digits[2:], 16)
            if digits[:2] in ("0b", "0B"):
                return int(digits[2:], 2)
            if len(digits) > 1 and digits[0] == "0":
                return int(digits, 8)
            return int(digits)
        if kind == "id":
            if text == "defined":
                paren = self._peek() == "("
                if paren:
                    self._next()
                name = self._next()[1]
                if paren and self._next()[1] != ")":
                    raise ValueError("expected ')'")
                return self._defined(name)
            if text in ("true", "false"):
                return int(text == "true")
            if self._peek() == "(":  # a function-like macro call: not evaluated
                self._skip_call()
                return None
            return self._macro_value(text)
        raise ValueError(f"unexpected {text!r}")

    def _skip_call(self) -> None:
        depth = 0
        while self.pos < len(self.tokens):
            t = self._next()[1]
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth == 0:
                    return
        raise ValueError("unbalanced call")

    def _defined(self, name: str) -> int | None:
        if name not in self.macros:
            return None if _reserved(name) else 0
        value = self.macros[name]
        if value is _MAYBE:
            return None
        return 0 if value is _UNDEFINED else 1

    def _macro_value(self, name: str) -> int | None:
        if name not in self.macros:
            return None if _reserved(name) else 0
        value = self.macros[name]
        if value is _UNDEFINED:
            return 0
        if not isinstance(value, str):
            return None
        if self.depth > 16:
            return None
        sub = _Expr(value, self.macros)
        sub.depth = self.depth + 1
        try:
            return sub.evaluate()
        except (ValueError, IndexError):
            return None


_UNDEFINED = object()
"""Marks a name ``#undef``-ed (or ``-U``): known to be no macro."""
_MAYBE = object()
"""Marks a name defined or undefined in an undecided branch."""


def _reserved(name: str) -> bool:
    return name.startswith("__") or (len(name) > 1 and name[0] == "_" and name[1].isupper())


@dataclass
class _Frame:
    state: str  # "on", "maybe", "off": this branch
    parent: str
    done: bool  # a previous branch was certainly taken
    maybe_done: bool  # a previous branch may have been taken


def _branch(parent: str, cond: int | None, frame: _Frame | None = None) -> str:
    if parent == "off":
        return "off"
    if frame is not None and frame.done:
        return "off"
    if cond == 0:
        return "off"
    if cond is None or (frame is not None and frame.maybe_done) or parent == "maybe":
        return "maybe"
    return "on"


def inactive_spans(
    text: str,
    defines: Sequence[tuple[str, str | None]] | Mapping[str, str | None] = (),
    *,
    predefined: Mapping[str, object] | None = None,
) -> list[tuple[int, int]]:
    """``(start, stop)`` offsets of the text that no compilation with these options keeps.

    Parameters
    ----------
    text : str
        The source.
    defines : sequence of (name, value) or mapping
        Command-line macros (:func:`defines_from_options`); a None value undefines.
    predefined : mapping, optional
        Macros defined before the text (default :data:`PREDEFINED`); a value of
        :data:`UNKNOWN` is defined with an unknown value.
    """
    macros: dict[str, object] = dict(PREDEFINED if predefined is None else predefined)
    items = defines.items() if isinstance(defines, Mapping) else defines
    for name, value in items:
        macros[name] = _UNDEFINED if value is None else value
    spans: list[tuple[int, int]] = []
    stack: list[_Frame] = []
    state = "on"
    off_from: int | None = None
    for tok in tokenize(text):
        if tok.kind != "pp":
            continue
        m = _IF.match(tok.text)
        if not m:
            continue
        word = m.group(1)
        rest = _COMMENT.sub(" ", m.group(2).replace("\\\n", " ")).strip()
        before = state
        if word in ("if", "ifdef", "ifndef"):
            cond = _condition(word, rest, macros)
            branch = _branch(state, cond)
            frame = _Frame(branch, state, branch != "off" and cond not in (0, None),
                           branch == "maybe")
            stack.append(frame)
            state = frame.state
        elif word in ("elif", "elifdef", "elifndef", "else") and stack:
            frame = stack[-1]
            cond = 1 if word == "else" else _condition(word[2:] if word != "elif" else "if",
                                                      rest, macros)
            frame.state = _branch(frame.parent, cond, frame)
            if frame.state != "off" and cond not in (0, None):
                frame.done = True  # this branch or an earlier one is taken: no later one
            frame.maybe_done = frame.maybe_done or frame.state == "maybe"
            state = frame.state
        elif word == "endif" and stack:
            state = stack.pop().parent
        elif word in ("define", "undef") and state != "off":
            dm = re.match(r"([A-Za-z_]\w*)(\()?\s*(.*)$", rest, re.DOTALL)
            if dm:
                name = dm.group(1)
                if state == "maybe":
                    macros[name] = _MAYBE
                elif word == "undef":
                    macros[name] = _UNDEFINED
                else:
                    macros[name] = UNKNOWN if dm.group(2) else dm.group(3).strip()
        if before != "off" and state == "off":
            off_from = tok.start + len(tok.text)
        elif before == "off" and state != "off" and off_from is not None:
            spans.append((off_from, tok.start))
            off_from = None
    if state == "off" and off_from is not None:
        spans.append((off_from, len(text)))
    return spans


def _condition(word: str, rest: str, macros: Mapping[str, object]) -> int | None:
    if word in ("ifdef", "ifndef", "def", "ndef"):
        name = rest.split()[0] if rest.split() else ""
        probe = _Expr("", macros)
        value = probe._defined(name)
        if value is None:
            return None
        return value if word in ("ifdef", "def") else int(not value)
    try:
        return _Expr(rest, macros).evaluate()
    except (ValueError, IndexError, KeyError):
        return None


def active_text(
    text: str,
    defines: Sequence[tuple[str, str | None]] | Mapping[str, str | None] = (),
    *,
    predefined: Mapping[str, object] | None = None,
) -> str:
    """``text`` with the spans of :func:`inactive_spans` blanked (newlines and offsets kept)."""
    spans = inactive_spans(text, defines, predefined=predefined)
    if not spans:
        return text
    out, pos = [], 0
    for start, stop in spans:
        out.append(text[pos:start])
        out.append(re.sub(r"[^\n]", " ", text[start:stop]))
        pos = stop
    out.append(text[pos:])
    return "".join(out)


_OBJECT_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]*)$", re.MULTILINE)
_TYPE_TEXT = re.compile(r"^(?:[A-Za-z_][\w:]*(?:<[\w\s,:]*>)?\s*)+$")


def macro_types(decls, text: str, defines: Sequence[tuple[str, str | None]] = ()) -> None:
    """Add object-like macros whose value is a type name (``#define REAL float``,
    ``-DREAL=double``) to ``decls`` as aliases, as the preprocessor would substitute them in a
    parameter list. Only macros of the kept text count; ``-D`` values come first."""
    from cunumpy.kernels._cuda_types import _add_alias

    seen: dict[str, list[str]] = {}
    for name, value in defines:
        if value is not None:
            seen.setdefault(name, []).append(value.strip())
    kept = active_text(text, defines)
    for m in _OBJECT_MACRO.finditer(kept):
        value = _COMMENT.sub(" ", m.group(2)).strip()
        seen.setdefault(m.group(1), []).append(value)
    for name, values in seen.items():
        for value in values:
            if value and _TYPE_TEXT.match(value) and not value[0].isdigit():
                _add_alias(decls, name, " ".join(value.split()))
