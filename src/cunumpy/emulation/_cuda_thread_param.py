"""The launched kernel's hidden thread parameter (a rewrite step of :mod:`._cuda_rewrite`).

The CUDA builtins (``threadIdx``, ``blockIdx``, ``blockDim``, ``gridDim``) expand to
``cn::cuda::thread_idx(cn_this_thread)`` and friends (``cn_cuda.h``). At namespace scope
``cn_this_thread`` is a tag, and the builtins read the running thread through ``cn::g.cur``, a
global that the compiler must reload after every store through a pointer (the emulator compiles
with ``-fno-strict-aliasing``). This step gives every declaration of the launched
``__global__`` function a first parameter ``const ::cn::ThreadInfo& cn_this_thread``, which the
launcher fills with the grid walk's own copy of the thread: inside the kernel's body the
builtins then read a local the compiler keeps in registers, and ``blockIdx.x * blockDim.x`` is
hoisted out of the thread loop. ``__device__`` functions keep reading ``g.cur``.

A C++ parameter is not visible everywhere in the body: a lambda that captures nothing by default
and a class defined in the body cannot use it. Kernels containing either keep the plain
signature, and so does a kernel none of whose found declarations is a definition (defined
through a macro, say), so that the launcher never calls a declaration that has no body.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from cunumpy._lang.tokens import EXPRESSION_WORDS, Token, tokenize

__all__ = ["THREAD_PARAM", "KernelHead", "thread_param_edits"]

THREAD_PARAM = "const ::cn::ThreadInfo& cn_this_thread"
"""The parameter added in front of the launched kernel's own."""

_SUBSCRIPT_AFTER = re.compile(r"[A-Za-z_0-9\])]$")
"""A ``[`` after one of these ends is a subscript or declarator, not a lambda introducer."""

_LOCAL_TYPES = frozenset({"struct", "class", "union"})


class KernelHead(NamedTuple):
    """One ``__global__ kernel_name(...)`` in the source (offsets into the text)."""

    open_paren: int
    close_paren: int
    body: tuple[int, int] | None
    """``(open brace, close brace)`` of a definition; None for a declaration."""


def _body_allows(tokens: list[Token]) -> bool:
    """Whether every use of the parameter in these body tokens is one C++ accepts."""
    for k, t in enumerate(tokens):
        if t.kind == "ident" and t.text in _LOCAL_TYPES:
            return False
        if t.text != "[" or (k + 1 < len(tokens) and tokens[k + 1].text == "["):
            continue
        prev = tokens[k - 1].text if k else ""
        if prev == "[" or (_SUBSCRIPT_AFTER.search(prev) and prev not in EXPRESSION_WORDS):
            continue
        # A lambda introducer: its captures must start with a default (`&` or `=`).
        first = tokens[k + 1].text if k + 1 < len(tokens) else ""
        after = tokens[k + 2].text if k + 2 < len(tokens) else ""
        if first not in ("&", "=") or after not in ("]", ","):
            return False
    return True


def thread_param_edits(clean: str, heads: list[KernelHead]) -> list[tuple[int, int, str]]:
    """Edits adding :data:`THREAD_PARAM` to every head of the launched kernel in ``clean`` (the
    source with comments blanked), or none when the kernel must keep its plain signature."""
    bodies = [h.body for h in heads if h.body]
    if not bodies:
        return []
    for start, stop in bodies:
        body = [t for t in tokenize(clean[start:stop + 1]) if t.kind not in ("ws", "comment")]
        if not _body_allows(body):
            return []
    edits = []
    for open_paren, close, _ in heads:
        inner = clean[open_paren + 1:close]
        if inner.strip() in ("", "void"):
            newlines = inner.count("\n")
            edits.append((open_paren, close + 1, f"({THREAD_PARAM}{chr(10) * newlines})"))
        else:
            edits.append((open_paren, open_paren + 1, f"({THREAD_PARAM}, "))
    return edits
