"""Headers cunumpy itself provides to kernels, by the name a kernel includes them with.

``#include <cunumpy/random.h>`` (Philox4x32-10 with cuRAND's names, the same stream as
:mod:`cunumpy.random` and cuRAND) in a Metal kernel's header or a Metal library's source is
replaced by the header's text before any engine sees it: MLX compiles source text without a
file system, and the Metal-on-CUDA translation and the emulator then read the same text. The
files live with the emulator's runtime headers (the CUDA emulator's ``<curand_kernel.h>``
includes the same Philox core).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["LIBRARY_HEADERS", "expand_library_includes", "library_header_path",
           "library_header_text"]

_RUNTIME = Path(__file__).resolve().parent.parent / "emulation" / "runtime"

LIBRARY_HEADERS: dict[str, str] = {"cunumpy/random.h": "cn_philox.h"}
"""Include name -> file under ``emulation/runtime/``."""

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"][^\n]*$', re.MULTILINE)


def library_header_path(name: str) -> Path:
    """The file behind ``#include <name>`` (``KeyError`` for a name cunumpy does not provide)."""
    return _RUNTIME / LIBRARY_HEADERS[name]


@functools.cache
def library_header_text(name: str) -> str:
    """The text of ``<name>``, as engines receive it."""
    return library_header_path(name).read_text()


def expand_library_includes(text: str) -> str:
    """``text`` with each include of a cunumpy header replaced by the header (the first time;
    the header guards itself, later includes become empty lines)."""
    if "cunumpy/" not in text:
        return text
    seen: set[str] = set()

    def one(m: re.Match) -> str:
        name = m.group(1).strip()
        if name not in LIBRARY_HEADERS:
            return m.group(0)
        if name in seen:
            return ""
        seen.add(name)
        body = library_header_text(name)
        return body if body.endswith("\n") else body + "\n"

    return _INCLUDE.sub(one, text)
