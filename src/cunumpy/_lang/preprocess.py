"""A C preprocessor for whole Metal Shading Language sources, run before kernels are looked for.

Metal compiles a library after its preprocessor has run, and real libraries lean on that: candle
writes its kernels with function-like macros, MLX and PyTorch instantiate templates through
macros, ggml tests configuration macros. :func:`preprocess` does what the Metal compiler's
preprocessor does (the C rules): object-like and function-like macros (variadic ones and
``__VA_OPT__`` included) with ``#`` and ``##``, rescanning with the "a macro is not expanded
inside its own expansion" rule, ``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else``/``#endif``
with ``defined`` and ``__has_include``, ``#include`` searched beside the including file and then
in the include directories, ``#pragma once``, ``#error`` and ``#undef``. Metal's own headers
(``<metal_stdlib>`` and the other ``metal_*`` names) are left out: the engines provide them.

The result keeps every line where it was: a macro call spread over several lines is written on
its first line and followed by as many empty lines, and included files are framed by ``#line``
markers, so a compiler's ``file:line`` (and the emulator's reports) point at the user's text.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cunumpy._lang.cuda_preprocess import _Expr
from cunumpy._lang.tokens import tokenize

__all__ = ["METAL_PREDEFINED", "Preprocessed", "PreprocessorError", "preprocess"]

METAL_PREDEFINED: dict[str, str] = {
    "__METAL__": "1",
    "__METAL_VERSION__": "310",
    "__METAL_MACOS__": "1",
    "__HAVE_BFLOAT__": "1",
    "__METAL_FAST_MATH__": "true",
    "__METAL_MAYBE_FAST_MATH__": "false",
    "__METAL_PRECISE_MATH__": "false",
}
"""What the Metal compiler predefines, as the engines run it (Metal 3.1, macOS, bfloat)."""

_SYSTEM = re.compile(r"metal_\w+|metal/\w+(\.h)?|simd/simd\.h")
_UNAVAILABLE = re.compile(r"MetalPerformancePrimitives/.*")
_DIRECTIVE = re.compile(r"^\s*#\s*(\w*)(.*)$", re.DOTALL)


class PreprocessorError(ValueError):
    """The source does not preprocess (``#error``, an unbalanced ``#if``, a missing header)."""


@dataclass
class _Macro:
    name: str
    body: list[tuple[str, str]]
    params: tuple[str, ...] | None = None  # None: object-like
    variadic: bool = False


@dataclass(frozen=True)
class Preprocessed:
    """The text after preprocessing, with the files it read."""

    text: str
    """The expanded text: no directives left but ``#line`` markers and ``#pragma`` lines."""
    files: dict[str, str] = field(default_factory=dict)
    """Every file read, by the name its ``#line`` markers use, with its original text."""
    macros: tuple[str, ...] = ()
    """Names of the macros defined at the end."""
    system: tuple[str, ...] = ()
    """The Metal system headers included (``metal_stdlib``, ...), which the engines provide and
    the text leaves out; in first-include order."""


# A token is (kind, text); the hide set of a token produced by an expansion rides beside it.
_Tok = tuple[str, str]


def _lex(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    for t in tokenize(text):
        if t.kind == "comment":
            out.append(("ws", " "))
        elif t.kind == "pp":  # a '#' inside a macro body or a line: a punctuator here
            head, rest = t.text.split("#", 1)
            if head:
                out.append(("ws", head))
            out.extend([("punct", "#"), *_lex(rest)])
        else:
            out.append((t.kind, t.text))
    return out


def _logical_lines(text: str) -> list[tuple[int, str, int]]:
    """(first physical line, logical line text, physical lines it spans): comments blanked
    (newlines kept), backslash continuations joined."""
    blank = []
    for t in tokenize(text):
        if t.kind == "comment":
            blank.append(" " + "\n" * t.text.count("\n"))
        else:
            blank.append(t.text)
    physical = "".join(blank).split("\n")
    lines = []
    i = 0
    while i < len(physical):
        start, parts = i, []
        while physical[i].endswith("\\") and i + 1 < len(physical):
            parts.append(physical[i][:-1])
            i += 1
        parts.append(physical[i])
        lines.append((start + 1, "".join(parts), i - start + 1))
        i += 1
    return lines


def _spaced(tokens: Sequence[_Tok]) -> str:
    out: list[str] = []
    prev = ""
    for kind, text in tokens:
        if kind == "ws":
            if out and out[-1] != " ":
                out.append(" ")
            prev = ""
            continue
        if prev and ((prev in ("ident", "number") and kind in ("ident", "number", "string", "char"))
                     or (prev == "punct" and kind == "punct" and _glues(out[-1], text))):
            out.append(" ")
        out.append(text)
        prev = kind
    return "".join(out)


def _glues(a: str, b: str) -> bool:
    """Whether punctuators ``a`` and ``b`` written together would read as other tokens."""
    joined = a[-1:] + b[:1]
    return joined in ("//", "/*")


def _stringify(tokens: Sequence[_Tok]) -> _Tok:
    text = _spaced(tokens).strip()
    return ("string", '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')


def _strip(tokens: list[_Tok]) -> list[_Tok]:
    a, b = 0, len(tokens)
    while a < b and tokens[a][0] == "ws":
        a += 1
    while b > a and tokens[b - 1][0] == "ws":
        b -= 1
    return tokens[a:b]


class _Reader:
    """Lines of one file, handed out one logical line at a time."""

    def __init__(self, name: str, text: str, path: Path | None) -> None:
        self.name = name
        self.path = path
        self.lines = _logical_lines(text)
        self.pos = 0

    def next(self) -> tuple[int, str, int] | None:
        if self.pos >= len(self.lines):
            return None
        line = self.lines[self.pos]
        self.pos += 1
        return line

    def peek_is_directive(self) -> bool:
        return self.pos < len(self.lines) and self.lines[self.pos][1].lstrip().startswith("#")


class _Preprocessor:
    def __init__(self, defines: Mapping[str, str | None], include_dirs: Sequence[Path],
                 resolve: Callable[[str, str, Path | None], tuple[str, str] | None] | None):
        self.macros: dict[str, _Macro] = {}
        for name, value in {**METAL_PREDEFINED, **defines}.items():
            if value is None:
                self.macros.pop(name, None)
            else:
                self.macros[name] = _Macro(name, _strip(_lex(str(value))))
        self.include_dirs = list(include_dirs)
        self.resolve = resolve
        self.once: set[str] = set()
        self.files: dict[str, str] = {}
        self.system: list[str] = []
        self.depth = 0
        self.line = 0
        self.reader: _Reader | None = None
        self.extra_lines = 0

    # -- expansion ------------------------------------------------------------------------
    def expand(self, tokens: list[_Tok], pull: Callable[[], list[_Tok] | None] | None = None,
               hides: list[frozenset[str]] | None = None) -> list[_Tok]:
        """Fully macro-expand ``tokens``; ``pull`` fetches further lines for a call that spans
        lines (it returns None when there are no more)."""
        queue: deque[tuple[_Tok, frozenset[str]]] = deque(
            zip(tokens, hides or [frozenset()] * len(tokens)))
        out: list[_Tok] = []
        while queue:
            tok, hide = queue.popleft()
            kind, text = tok
            if kind != "ident" or text in hide:
                out.append(tok)
                continue
            if text == "__LINE__":
                out.append(("number", str(self.line)))
                continue
            if text == "__FILE__":
                out.append(("string", f'"{self.reader.name if self.reader else ""}"'))
                continue
            macro = self.macros.get(text)
            if macro is None:
                out.append(tok)
                continue
            if macro.params is None:
                body = [(t, hide | {text}) for t in macro.body]
                queue.extendleft(reversed(body))
                continue
            # function-like: needs '(' next (whitespace and newlines may come between)
            skipped: list[tuple[_Tok, frozenset[str]]] = []
            while True:
                while queue and queue[0][0][0] == "ws":
                    skipped.append(queue.popleft())
                if queue or pull is None:
                    break
                more = pull()
                if more is None:
                    break
                queue.extend((t, frozenset()) for t in more)
            if not queue or queue[0][0][1] != "(":
                out.append(tok)
                queue.extendleft(reversed(skipped))
                continue
            queue.popleft()
            args: list[list[tuple[_Tok, frozenset[str]]]] = [[]]
            depth = 0
            closing_hide: frozenset[str] = frozenset()
            while True:
                if not queue:
                    more = pull() if pull is not None else None
                    if more is None:
                        raise self.error(f"unterminated call of macro {text!r}")
                    queue.extend((t, frozenset()) for t in more)
                    continue
                item = queue.popleft()
                t = item[0][1]
                if t == "(":
                    depth += 1
                elif t == ")":
                    if depth == 0:
                        closing_hide = item[1]
                        break
                    depth -= 1
                elif t == "," and depth == 0 and not (
                    macro.variadic and len(args) == len(macro.params)
                ):
                    args.append([])
                    continue
                args[-1].append(item)
            if args == [[]] and not macro.params:
                args = []
            n = len(macro.params)
            if macro.variadic and len(args) == n - 1:
                args.append([])
            if len(args) != n:
                raise self.error(
                    f"macro {text!r} takes {n} argument{'s' if n != 1 else ''}, got {len(args)}")
            new_hide = (hide & closing_hide) | {text}
            body = self._substitute(macro, args)
            queue.extendleft(reversed([(t, new_hide | h) for t, h in body]))
        return out

    def _substitute(self, macro: _Macro, args: list[list[tuple[_Tok, frozenset[str]]]]
                    ) -> list[tuple[_Tok, frozenset[str]]]:
        assert macro.params is not None
        index = {p: i for i, p in enumerate(macro.params)}
        raw = [_strip([t for t, _ in a]) for a in args]
        raw_hides = [[h for t, h in a] for a in args]
        expanded: dict[int, list[_Tok]] = {}

        def full(i: int) -> list[_Tok]:
            if i not in expanded:
                toks = [t for t, _ in args[i]]
                expanded[i] = _strip(self.expand(toks, None, raw_hides[i]))
            return expanded[i]

        body = macro.body
        out: list[tuple[_Tok, frozenset[str]]] = []
        paste_next = False
        k = 0
        sig = [i for i, t in enumerate(body) if t[0] != "ws"]

        def next_sig(j: int) -> int | None:
            for m in sig:
                if m > j:
                    return m
            return None

        while k < len(body):
            kind, text = body[k]
            if kind == "ws":
                out.append((body[k], frozenset()))
                k += 1
                continue
            nxt = next_sig(k)
            pasting_after = nxt is not None and body[nxt][1] == "#" and (
                (n2 := next_sig(nxt)) is not None and body[n2][1] == "#" and n2 == nxt + 1)
            if text == "#" and nxt == k + 1 and body[nxt][1] == "#":
                # '##': paste the previous output token with the next operand
                while out and out[-1][0][0] == "ws":
                    out.pop()
                paste_next = True
                k += 2
                continue
            if text == "#" and nxt is not None and body[nxt][1] in index:
                piece = [_stringify(raw[index[body[nxt][1]]])]
                k = nxt + 1
            elif text == "__VA_OPT__" and macro.variadic and nxt is not None and body[nxt][1] == "(":
                depth, j = 0, nxt
                while j < len(body):
                    depth += {"(": 1, ")": -1}.get(body[j][1], 0)
                    if depth == 0:
                        break
                    j += 1
                inner = _Macro("", body[nxt + 1: j], macro.params, True)
                has = bool(full(len(macro.params) - 1))
                piece = [t for t, _ in self._substitute(inner, args)] if has else []
                k = j + 1
            elif text in index:
                i = index[text]
                piece = raw[i] if (paste_next or pasting_after) else full(i)
                k += 1
            else:
                piece = [body[k]]
                k += 1
            if paste_next:
                paste_next = False
                while out and out[-1][0][0] == "ws":
                    out.pop()
                if out and piece:
                    left = out.pop()[0]
                    joined = _lex(left[1] + piece[0][1])
                    out.extend((t, frozenset()) for t in joined)
                    piece = piece[1:]
            out.extend((t, frozenset()) for t in piece)
        return out

    # -- directives -----------------------------------------------------------------------
    def error(self, message: str) -> PreprocessorError:
        where = f"{self.reader.name}:{self.line}: " if self.reader else ""
        return PreprocessorError(f"{where}{message}")

    def _define(self, rest: str) -> None:
        m = re.match(r"\s*([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$", rest, re.DOTALL)
        if not m:
            raise self.error(f"bad #define{rest}")
        name, params_text, body = m.group(1), m.group(3), m.group(4)
        macro = _Macro(name, _strip(_lex(body)))
        if m.group(2) is not None:
            params = [p.strip() for p in params_text.split(",")] if params_text.strip() else []
            if params and params[-1].endswith("..."):
                macro.variadic = True
                last = params[-1][:-3].strip()
                params[-1] = last or "__VA_ARGS__"
            macro.params = tuple(params)
        self.macros[name] = macro

    def _condition(self, text: str) -> bool:
        toks = _lex(text)
        out: list[_Tok] = []
        i = 0
        sig = toks
        while i < len(sig):
            kind, t = sig[i]
            if kind == "ident" and t in ("defined", "__has_include", "__has_include_next"):
                j = i + 1
                while j < len(sig) and sig[j][0] == "ws":
                    j += 1
                paren = j < len(sig) and sig[j][1] == "("
                if t == "defined":
                    k = j + 1 if paren else j
                    while k < len(sig) and sig[k][0] == "ws":
                        k += 1
                    name = sig[k][1] if k < len(sig) else ""
                    out.append(("number", "1" if name in self.macros else "0"))
                    if paren:
                        while k < len(sig) and sig[k][1] != ")":
                            k += 1
                    i = k + 1
                    continue
                close = j
                while close < len(sig) and sig[close][1] != ")":
                    close += 1
                inner = "".join(x for _, x in sig[j + 1: close]).strip()
                quote, rel = ('"', inner[1:-1]) if inner.startswith('"') else ("<", inner[1:-1])
                found = self._find(rel, quote) is not None or bool(_SYSTEM.fullmatch(rel))
                out.append(("number", "1" if found else "0"))
                i = close + 1
                continue
            out.append(sig[i])
            i += 1
        expanded = self.expand(out)
        words = [("number", "0") if k == "ident" and t not in ("true", "false") else (k, t)
                 for k, t in expanded]
        try:
            value = _Expr(_spaced(words), {}).evaluate()
        except (ValueError, IndexError) as exc:
            raise self.error(f"cannot evaluate #if {text.strip()!r}") from exc
        return bool(value)

    def _find(self, rel: str, quote: str) -> tuple[str, str, Path | None] | None:
        here = self.reader.path.parent if self.reader and self.reader.path else None
        candidates = []
        if quote == '"' and here is not None:
            candidates.append(here / rel)
        candidates.extend(Path(d) / rel for d in self.include_dirs)
        for c in candidates:
            if c.is_file():
                return str(c.resolve()), c.read_text(), c.resolve()
        if self.resolve is not None:
            got = self.resolve(rel, quote, here)
            if got is not None:
                return got[0], got[1], None
        return None

    def run_file(self, name: str, text: str, path: Path | None, out: list[str]) -> None:
        if self.depth > 64:
            raise self.error("#include nested too deeply")
        self.files[name] = text
        saved = (self.reader, self.line)
        reader = self.reader = _Reader(name, text, path)
        self.depth += 1
        stack: list[list[bool]] = []  # [active, taken, parent_active]

        def active() -> bool:
            return all(f[0] for f in stack)

        def pull() -> list[_Tok] | None:
            if reader.peek_is_directive():
                return None
            got = reader.next()
            if got is None:
                return None
            self.extra_lines += got[2]
            return [("ws", " "), *_lex(got[1])]

        while True:
            got = reader.next()
            if got is None:
                break
            lineno, line, span = got
            self.line = lineno
            m = _DIRECTIVE.match(line)
            if m:
                word, rest = m.group(1), m.group(2)
                if word in ("if", "ifdef", "ifndef"):
                    if not active():
                        stack.append([False, True, False])
                    else:
                        if word == "if":
                            cond = self._condition(rest)
                        else:
                            name_ = rest.strip().split()[0] if rest.strip() else ""
                            cond = (name_ in self.macros) == (word == "ifdef")
                        stack.append([cond, cond, True])
                elif word in ("elif", "elifdef", "elifndef", "else"):
                    if not stack:
                        raise self.error(f"#{word} without #if")
                    frame = stack[-1]
                    if frame[1] or not frame[2] or not all(f[0] for f in stack[:-1]):
                        frame[0] = False
                    elif word == "else":
                        frame[0] = frame[1] = True
                    else:
                        if word == "elif":
                            cond = self._condition(rest)
                        else:
                            name_ = rest.strip().split()[0] if rest.strip() else ""
                            cond = (name_ in self.macros) == (word == "elifdef")
                        frame[0] = frame[1] = cond
                elif word == "endif":
                    if not stack:
                        raise self.error("#endif without #if")
                    stack.pop()
                elif not active():
                    pass
                elif word == "define":
                    self._define(rest)
                elif word == "undef":
                    self.macros.pop(rest.strip().split()[0] if rest.strip() else "", None)
                elif word == "include" or word == "include_next":
                    self._include(rest, out, lineno)
                    out.extend([""] * (span - 1))
                    continue
                elif word == "pragma":
                    if rest.strip() == "once":
                        self.once.add(name)
                    elif not rest.strip().startswith(("METAL", "clang")):
                        out.append(line)
                        out.extend([""] * (span - 1))
                        continue
                elif word == "error":
                    raise self.error(f"#error{rest}")
                elif word in ("warning", "line", "ident", ""):
                    pass
                else:
                    raise self.error(f"unknown directive #{word}")
                out.extend([""] * span)
                continue
            if not active():
                out.extend([""] * span)
                continue
            self.extra_lines = 0
            tokens = _lex(line)
            if not any(k == "ident" for k, _ in tokens):
                out.append(line)
            else:
                out.append(_spaced(self.expand(tokens, pull)))
            out.extend([""] * (span - 1 + self.extra_lines))
        if stack:
            raise self.error("#if without #endif")
        self.depth -= 1
        self.reader, self.line = saved

    def _include(self, rest: str, out: list[str], lineno: int) -> None:
        text = rest.strip()
        if not text.startswith(('"', "<")):
            text = _spaced(self.expand(_lex(text))).strip()
        m = re.match(r'([<"])([^>"]+)[>"]', text)
        if not m:
            raise self.error(f"bad #include {rest.strip()}")
        quote, rel = m.group(1), m.group(2)
        if _SYSTEM.fullmatch(rel):
            if rel not in self.system:
                self.system.append(rel)
            out.append("")
            return
        if _UNAVAILABLE.fullmatch(rel):
            raise self.error(
                f"#include <{rel}>: Apple's Metal Performance Primitives (tensor ops on the "
                "neural accelerators) have no emulation here")
        found = self._find(rel, quote)
        if found is None:
            raise self.error(
                f"#include {quote}{rel}{'>' if quote == '<' else chr(34)} not found; pass its "
                "folder in include_dirs")
        name, body, path = found
        if name in self.once:
            out.append("")
            return
        here = self.reader.name if self.reader else ""
        out.append(f'#line 1 "{name}"')
        self.run_file(name, body, path, out)
        out.append(f'#line {lineno + 1} "{here}"')


def preprocess(
    text: str,
    *,
    filename: str = "library.metal",
    defines: Mapping[str, str | None] | None = None,
    include_dirs: Sequence[str | Path] = (),
    resolve: Callable[[str, str, Path | None], tuple[str, str] | None] | None = None,
) -> Preprocessed:
    """Run the preprocessor over a whole Metal source.

    Parameters
    ----------
    text : str
        The source.
    filename : str, optional
        The name ``#line`` markers and messages give the source.
    defines : mapping, optional
        Macros defined before the source (``{"N": "4"}``); a None value undefines a predefined
        one. :data:`METAL_PREDEFINED` is defined first.
    include_dirs : sequence of path, optional
        Where ``#include`` looks after the including file's folder.
    resolve : callable, optional
        ``resolve(name, quote, folder)`` for headers not on disk: ``(file name, text)`` or None.

    Returns
    -------
    Preprocessed

    Raises
    ------
    PreprocessorError
        ``#error``, a header not found, an unbalanced conditional, a bad macro call.
    """
    pp = _Preprocessor(dict(defines or {}), [Path(d) for d in include_dirs], resolve)
    out: list[str] = [f'#line 1 "{filename}"']
    pp.run_file(filename, text, None, out)
    return Preprocessed("\n".join(out) + "\n", pp.files, tuple(sorted(pp.macros)),
                        tuple(pp.system))
