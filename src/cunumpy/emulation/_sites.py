"""Source lines of code addresses in a compiled kernel library (for failure reports).

Kernel libraries are built with line tables (``-g1``); a report carries the code offset of the
failing access, and :func:`source_lines` turns offsets into ``file:LINE`` of the user's text
(``body``, ``header``, ``k.cu``) with ``addr2line``, skipping frames inlined from the runtime
headers. Without ``addr2line`` (or for an address it cannot place) the line is unknown.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["source_lines"]

_GENERATED = frozenset({"wrapper", "launch", "cn-launch", "kernel.cpp"})


def _user_file(name: str) -> bool:
    base = os.path.basename(name)
    return bool(base) and base != "??" and not base.startswith("cn_") and base not in _GENERATED


@functools.cache
def _tool() -> str | None:
    return shutil.which("addr2line") or shutil.which("llvm-addr2line")


def source_lines(library: Path | str, offsets: Sequence[int]) -> list[str | None]:
    """``file:LINE`` for each code offset (None where unknown), innermost user frame first."""
    tool = _tool()
    wanted = [int(o) for o in offsets]
    if tool is None or not any(wanted):
        return [None] * len(wanted)
    try:
        done = subprocess.run(
            [tool, "-e", str(library), "-i", "-a", *(hex(o) for o in wanted)],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return [None] * len(wanted)
    blocks: list[list[str]] = []
    for line in done.stdout.splitlines():
        if line.startswith("0x"):
            blocks.append([])
        elif blocks:
            blocks[-1].append(line.strip())
    out: list[str | None] = []
    for k in range(len(wanted)):
        frames = blocks[k] if k < len(blocks) and wanted[k] else []
        site = None
        for frame in frames:
            file, _, line = frame.rpartition(":")
            line = line.split()[0] if line else ""
            if _user_file(file) and line.isdigit() and line != "0":
                site = f"{os.path.basename(file)}:{line}"
                break
        out.append(site)
    return out
