"""Conditional expressions whose branches mix ``half``/``bfloat`` with other arithmetic types.

In Metal ``half`` is a built-in arithmetic type, so ``x > 0 ? x : m * (exp(x) - 1)`` with
``half x`` and ``float m`` is a ``float`` (the usual arithmetic conversions). In the C++ the
emulators compile, ``half`` is a class that converts to and from ``float``, and a conditional
whose operands convert each to the other's type is ill-formed. :func:`conditional_edits` wraps
the two branches of each innermost conditional in a function body in
``static_cast<cn::cond_t<decltype((a)), decltype((b))>>(...)``: the runtime's ``cn::cond_t`` is the
type the C++ conditional has where it is well-formed (so lvalue results stay lvalues), and else
the type of ``a + b``, which is Metal's arithmetic result type. Conditionals that contain other
conditionals, braces or lambdas are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from cunumpy._lang.edits import apply_edits
from cunumpy._lang.tokens import Token

__all__ = ["conditional_edits", "rewrite_conditionals"]

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())


def _branch_ends(sig: Sequence[Token], q: int) -> tuple[int, int] | None:
    """(index of the ``:``, index after the false branch) of the conditional at ``sig[q]``."""
    depth = 0
    colon = None
    k = q + 1
    while k < len(sig):
        t = sig[k].text
        if t == "?":
            return None  # contains another conditional (in parentheses or not): left alone
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            if depth == 0:
                return None if colon is None else (colon, k)
            depth -= 1
        elif depth == 0:
            if t == "{":
                return None
            if t == ":":
                if colon is not None:
                    return colon, k
                colon = k
            elif t in (";", ",") and colon is not None:
                return colon, k
            elif t == ";":
                return None
        k += 1
    return None


def conditional_edits(sig: Sequence[Token], text: str, blocks: Sequence[bool]
                      ) -> list[tuple[int, int, str]]:
    """Edits that make the innermost conditionals of function bodies type like Metal's.

    ``blocks[i]`` says whether ``sig[i]`` is inside a function body.
    """
    edits: list[tuple[int, int, str]] = []
    for q, t in enumerate(sig):
        if t.text != "?" or not blocks[q]:
            continue
        ends = _branch_ends(sig, q)
        if ends is None:
            continue
        colon, stop = ends
        if colon == q + 1 or stop == colon + 1:
            continue
        a0, a1 = sig[q + 1].start, sig[colon - 1].start + len(sig[colon - 1].text)
        b0, b1 = sig[colon + 1].start, sig[stop - 1].start + len(sig[stop - 1].text)
        a, b = text[a0:a1], text[b0:b1]
        if "\n" in a or "\n" in b or ("[" in a and "](" in a) or ("[" in b and "](" in b):
            continue  # keep lines where they are; no lambdas inside decltype
        kind = f"::cn::cond_t<decltype(({a})), decltype(({b}))>"
        edits.append((a0, a1, f"static_cast<{kind}>({a})"))
        edits.append((b0, b1, f"static_cast<{kind}>({b})"))
    return edits


def rewrite_conditionals(text: str, in_function: bool) -> str:
    """``text`` with :func:`conditional_edits` applied (newlines kept)."""
    from cunumpy._lang.scopes import brace_kind
    from cunumpy._lang.tokens import tokenize

    if "?" not in text:
        return text
    sig = [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]
    blocks: list[bool] = []
    braces: list[str] = []
    for i, t in enumerate(sig):
        if t.text == "{":
            braces.append(brace_kind(sig, i))
        elif t.text == "}" and braces:
            braces.pop()
        scope = braces[-1] if braces else ("block" if in_function else "namespace")
        blocks.append(scope == "block")
    edits = conditional_edits(sig, text, blocks)
    return apply_edits(text, edits)
