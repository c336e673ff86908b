"""The one ``#include`` scanner and search rule, shared by the CUDA front end (header discovery
for the compile key) and the CUDA emulator (inlining).

Quoted includes are searched beside the including file, then in the include directories;
angle-bracket includes in the include directories only. A header found nowhere is left to the
compiler (the toolkit's own headers).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["INCLUDE_LINE", "find_include", "scan_includes"]

INCLUDE_LINE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"][^\n]*$', re.MULTILINE)
"""A whole ``#include`` line: group 1 is the quote (``<`` or ``"``), group 2 the path."""


def scan_includes(text: str) -> Iterator[re.Match[str]]:
    """Every ``#include`` line of ``text``, in order (see :data:`INCLUDE_LINE`)."""
    return INCLUDE_LINE.finditer(text)


def find_include(
    rel: str, quote: str, here: Path | None, include_dirs: Sequence[str | Path]
) -> Path | None:
    """The resolved file an ``#include`` of ``rel`` names, or None when it is not on disk."""
    candidates = []
    if quote == '"' and here is not None:
        candidates.append(here / rel)
    candidates.extend(Path(d) / rel for d in include_dirs)
    return next((c.resolve() for c in candidates if c.is_file()), None)
