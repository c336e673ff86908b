"""Integer constant expressions of literals, as Metal attributes write them
(``[[max_total_threads_per_threadgroup(WM * WN * 32)]]`` once template arguments are in)."""

from __future__ import annotations

from cunumpy._lang.tokens import Token, tokenize

__all__ = ["c_int", "int_expression"]


def c_int(text: str) -> int:
    """A C integer literal's value (``010`` is octal, suffixes and ``'`` separators allowed)."""
    digits = text.replace("'", "").rstrip("uUlL")
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXbB":
        return int(digits, 8)
    return int(digits, 0)



_BINARY = (("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))


def _apply(op: str, v: int, w: int) -> int:
    if op in ("/", "%"):
        q = abs(v) // abs(w) * (1 if (v < 0) == (w < 0) else -1)  # C truncates toward zero
        return q if op == "/" else v - w * q
    return {"|": v | w, "^": v ^ w, "&": v & w, "<<": v << w, ">>": v >> w, "+": v + w,
            "-": v - w, "*": v * w}[op]


def int_expression(text: str) -> int | None:
    """The value of an integer constant expression of literals (``4 * 2 * 32``, ``1 << 8``,
    C's operators and precedence, 64-bit), or None where it names anything else."""
    toks: list[Token] = []
    for t in tokenize(text):
        if t.kind == "ws":
            continue
        if toks and t.text in "<>" and toks[-1].text == t.text \
                and toks[-1].start + 1 == t.start:
            toks[-1] = Token("punct", t.text * 2, toks[-1].start)  # the tokenizer's '<' '<'
            continue
        toks.append(t)
    pos = 0

    def atom() -> int:
        nonlocal pos
        if pos >= len(toks):
            raise ValueError
        t = toks[pos]
        pos += 1
        if t.text == "(":
            v = level(0)
            if pos >= len(toks) or toks[pos].text != ")":
                raise ValueError
            pos += 1
            return v
        if t.text in ("-", "+", "~"):
            v = atom()
            return -v if t.text == "-" else ~v if t.text == "~" else v
        if t.kind == "number":
            return c_int(t.text)
        raise ValueError

    def level(k: int) -> int:
        nonlocal pos
        if k == len(_BINARY):
            return atom()
        v = level(k + 1)
        while pos < len(toks) and toks[pos].text in _BINARY[k]:
            op = toks[pos].text
            pos += 1
            w = level(k + 1)
            if op in ("<<", ">>") and not 0 <= w < 64:
                raise ValueError
            if op in ("/", "%") and w == 0:
                raise ValueError
            v = _apply(op, v, w)
            v = (v + 2**63) % 2**64 - 2**63
        return v

    try:
        value = level(0)
    except ValueError:
        return None
    return value if pos == len(toks) else None
