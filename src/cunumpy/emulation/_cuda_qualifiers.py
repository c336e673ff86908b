"""CUDA function qualifiers that the host C++ compiler spells differently."""

from __future__ import annotations

import re

__all__ = ["_noinline_qualifiers"]

_NOINLINE = re.compile(r"\b__noinline__\b")


def _noinline_qualifiers(text: str) -> str:
    """CUDA's ``__noinline__`` qualifier as GCC's attribute, in the kernel's own text only.

    It cannot be a macro in the runtime: libstdc++ 13 writes ``__attribute__((__noinline__))``
    in its headers, which the macro would break. A ``__noinline__`` right after ``(`` or ``,``
    is already GCC's own attribute spelling and stays as it is.
    """
    if "__noinline__" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        before = text[: match.start()].rstrip()
        return match.group(0) if before.endswith(("(", ",")) else "__attribute__((noinline))"

    return _NOINLINE.sub(replace, text)
