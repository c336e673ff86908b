"""Swizzles of swizzles in Metal text (``v.xy.yx``, ``v.xyz.zy``, ``c.rgb.r``), spelled as one.

Metal (like Clang's vector extension) lets a swizzle be swizzled again, as a value and as an
assignment target. The runtime headers give every vector its swizzles as members, but a swizzle
of a swizzle would need members on every swizzle proxy: measured with g++, that costs about
0.25 s of compile time per vector type for the two-letter ones alone, and tens of seconds for all
of them. A chain of swizzles is one swizzle, though: each letter of a later swizzle picks a
component of the one before, so ``v.xyz.zy`` is ``v.zy``, ``v.wzyx.xy`` is ``v.wz`` and
``c.rgb.r`` is ``c.r``. Both Metal rewriters (the CPU emulator's and the CUDA translation)
replace such chains by the one swizzle they stand for, which reads and assigns exactly as the
chain does (a chain through a repeated component is written as Metal allows it, ``v.xx.y``
being ``v.x``).

Only a member access (``.`` or ``->``) followed by two or more swizzle names, each of them
``xyzw`` or ``rgba`` letters and all but the last at least two letters long, is rewritten; a
later letter past the length of the swizzle before it (``v.xy.z``, an error in Metal) leaves the
text as it is, for the compiler to report.
"""

from __future__ import annotations

from collections.abc import Sequence

from cunumpy._lang.tokens import Token

__all__ = ["swizzle_chain_edits"]

_SETS = ("xyzw", "rgba")


def _indices(name: str) -> tuple[str, list[int]] | None:
    """The letter set and component indices of a swizzle name, or None."""
    if not 1 <= len(name) <= 4:
        return None
    for letters in _SETS:
        if all(c in letters for c in name):
            return letters, [letters.index(c) for c in name]
    return None


def swizzle_chain_edits(sig: Sequence[Token], text: str) -> list[tuple[int, int, str]]:
    """Edits ``(start, stop, new text)`` of ``text`` that spell each swizzle chain as one.

    ``sig`` are the significant tokens of ``text`` (no whitespace, comments or preprocessor
    lines). Newlines inside a chain are kept, so line numbers stay right.
    """
    edits: list[tuple[int, int, str]] = []
    i, n = 0, len(sig)
    while i + 3 < n:
        if not (sig[i].text in (".", "->") and sig[i + 1].kind == "ident"
                and sig[i + 2].text == "." and sig[i + 3].kind == "ident"):
            i += 1
            continue
        first = _indices(sig[i + 1].text)
        if first is None or len(first[1]) < 2:
            i += 1
            continue
        letters, picked = first
        j = i + 1  # the last swizzle name of the chain so far
        while j + 2 < n and sig[j + 1].text == "." and sig[j + 2].kind == "ident":
            nxt = _indices(sig[j + 2].text)
            if nxt is None or len(picked) < 2 or any(k >= len(picked) for k in nxt[1]):
                break
            picked = [picked[k] for k in nxt[1]]
            j += 2
        if j == i + 1:  # nothing to compose
            i += 1
            continue
        start, stop = sig[i + 1].start, sig[j].start + len(sig[j].text)
        name = "".join(letters[k] for k in picked)
        edits.append((start, stop, name + "\n" * text.count("\n", start, stop)))
        i = j + 1
    return edits
