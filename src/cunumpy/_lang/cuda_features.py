"""Features of CUDA source that decide how a kernel must be launched, read from its text.

:func:`uses_grid_sync`: the kernel synchronises a grid group (``cg::this_grid().sync()``,
``grid.sync()`` or ``cg::sync(grid)``), so every engine launches it cooperatively (all blocks
resident at once): the ``cupy`` engine through ``cuLaunchCooperativeKernel``, the emulator with
every block in a fiber of its own.
"""

from __future__ import annotations

from cunumpy._lang.tokens import Token, tokenize

__all__ = ["uses_grid_sync"]


def _grid_syncs(sig: list[Token]) -> bool:
    """Whether the text calls ``sync`` on a grid group (``this_grid().sync()``, ``g.sync()`` or
    ``cg::sync(g)`` for ``g`` made by ``this_grid()`` or declared ``grid_group``)."""
    texts = [t.text for t in sig]
    grids: set[str] = set()
    for k, t in enumerate(texts):
        if t == "this_grid" and k + 4 < len(texts) and texts[k + 1:k + 5] == ["(", ")", ".", "sync"]:
            return True
        if t == "grid_group" and k + 1 < len(sig) and sig[k + 1].kind == "ident":
            grids.add(texts[k + 1])
        if t == "this_grid":
            j = k - 1  # step back over a qualification (cg::, ::cooperative_groups::)
            while j >= 1 and texts[j] == "::" and sig[j - 1].kind == "ident":
                j -= 2
            if j >= 0 and texts[j] == "::":
                j -= 1
            if j >= 1 and texts[j] == "=" and sig[j - 1].kind == "ident":
                grids.add(texts[j - 1])
    for k, t in enumerate(texts):
        if t in grids and k + 2 < len(texts) and texts[k + 1] == "." and texts[k + 2] == "sync":
            return True
        if (t == "sync" and k + 2 < len(texts) and texts[k + 1] == "(" and texts[k + 2] in grids
                and (k + 3 >= len(texts) or texts[k + 3] == ")")):
            return True
    return False


def uses_grid_sync(text: str) -> bool:
    """Whether ``text`` synchronises a grid group (the launch must then be cooperative)."""
    if "this_grid" not in text and "grid_group" not in text:
        return False
    return _grid_syncs([t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")])
