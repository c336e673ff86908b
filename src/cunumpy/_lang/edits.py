"""Text edits as offsets: the one way the text layers apply them."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Edit", "apply_edits"]

Edit = tuple[int, int, str]
"""``(start, stop, new)``: replace ``text[start:stop]`` by ``new``."""


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with ``edits`` applied.

    Edits are taken in order of their start. At one start, insertions (``start == stop``) come
    first, in their given order, then the widest replacement (a removed declaration covers the
    edits inside it); an edit that begins inside one already taken is skipped.
    """
    out, pos = [], 0
    for start, stop, new in sorted(edits, key=lambda e: (e[0], e[1] != e[0], -e[1])):
        if start < pos:
            continue
        out.append(text[pos:start])
        out.append(new)
        pos = stop
    out.append(text[pos:])
    return "".join(out)
