"""GNU range designators in array initializers, which Metal (Clang) accepts and C++ does not.

``float S[NQ] = { [0 ... NQ-1] = 0.0f };`` (ggml, candle's quantized kernels) sets elements
``0`` to ``NQ - 1`` to one value; GCC allows the form in C only. :func:`range_init_edits` turns
such a local declaration into the declaration with an empty initializer (the elements no
designator names are zero, as in the original) followed, on the same line, by a loop that
stores the value, evaluated once as the GNU extension does::

    float S[NQ] = {}; { const auto cn_rv = (0.0f); for (long cn_ri = (0); cn_ri <= (NQ-1); ++cn_ri) S[cn_ri] = cn_rv; }

Only declarations of one one-dimensional array inside a function body are rewritten, whose
initializer consists of range designators alone; others are left to the compiler.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cunumpy._lang.tokens import Token

__all__ = ["range_init_edits"]

_RANGE = re.compile(r"^\s*\[\s*(.+?)\s*\.\.\.\s*(.+?)\s*\]\s*=\s*(.+?)\s*$", re.DOTALL)


def _close(sig: Sequence[Token], k: int) -> int:
    depth = 0
    for j in range(k, len(sig)):
        if sig[j].text in ("{", "(", "["):
            depth += 1
        elif sig[j].text in ("}", ")", "]"):
            depth -= 1
            if depth == 0:
                return j
    return len(sig)


def _items(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur)
    return out


def range_init_edits(sig: Sequence[Token], text: str, blocks: Sequence[bool]
                     ) -> list[tuple[int, int, str]]:
    """Edits ``(start, stop, replacement)`` of ``text`` (module docstring); ``sig`` are its
    significant tokens and ``blocks[i]`` says whether ``sig[i]`` is in a function body."""
    edits = []
    for k in range(3, len(sig) - 2):
        if not (sig[k].text == "{" and sig[k + 1].text == "[" and sig[k - 1].text == "="
                and sig[k - 2].text == "]" and blocks[k]):
            continue
        close = _close(sig, k)
        if close + 1 >= len(sig) or sig[close + 1].text != ";":
            continue
        dims_open = k - 2
        depth = 0
        while dims_open >= 0:
            if sig[dims_open].text == "]":
                depth += 1
            elif sig[dims_open].text == "[":
                depth -= 1
                if depth == 0:
                    break
            dims_open -= 1
        if dims_open < 1 or sig[dims_open - 1].kind != "ident" or sig[dims_open - 2].text == "]":
            continue
        name = sig[dims_open - 1].text
        inner = text[sig[k].start + 1: sig[close].start]
        ranges = []
        for item in _items(inner):
            m = _RANGE.match(item)
            if m is None:
                ranges = []
                break
            ranges.append(m.groups())
        if not ranges or "\n" in inner:
            continue
        loops = " ".join(
            f"{{ const auto cn_rv = ({value}); for (long cn_ri = ({lo}); cn_ri <= ({hi}); "
            f"++cn_ri) {name}[cn_ri] = cn_rv; }}" for lo, hi, value in ranges)
        edits.append((sig[k].start, sig[close].start + 1, "{}"))
        semi = sig[close + 1].start
        edits.append((semi, semi + 1, "; " + loops))
    return edits
