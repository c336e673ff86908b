"""Keep the user's own names for the C library's type names (``typedef unsigned long long uint64_t;``).

The emulator compiles a kernel as C++ after host headers (``<cstdint>``, ``<cmath>``, ...) that
declare ``uint64_t``, ``int64_t``, ``size_t``, ``uint``... at global scope, with glibc's types
(``uint64_t`` is ``unsigned long``). NVRTC declares none of them, so kernels written for it often
declare their own, with other types, which C++ rejects as a conflicting redeclaration. For each
such name that the kernel's text declares at global scope (``typedef T name;`` or
``using name = T;``, in any ``#if`` branch), every use of the name in the text is renamed
``cn_user_<name>``: the kernel's code then sees exactly its own type, and the host headers keep
theirs. A kernel that declares such a name only inside a namespace, class or function needs
nothing (its name hides the global one, as in CUDA).
"""

from __future__ import annotations

import re

from cunumpy.emulation._rewrite import tokenize

__all__ = ["HOST_TYPE_NAMES", "rename_user_typedefs"]

HOST_TYPE_NAMES = frozenset(
    {f"{u}int{n}_t" for u in ("", "u") for n in (8, 16, 32, 64)}
    | {f"{u}int_{k}{n}_t" for u in ("", "u") for k in ("least", "fast") for n in (8, 16, 32, 64)}
    | {f"u_int{n}_t" for n in (8, 16, 32, 64)}
    | {"intptr_t", "uintptr_t", "intmax_t", "uintmax_t", "size_t", "ssize_t", "ptrdiff_t",
       "uint", "ushort", "ulong", "u_char", "u_short", "u_int", "u_long", "quad_t", "u_quad_t",
       "off_t", "time_t", "clock_t", "max_align_t"}
)
"""Type names the host headers declare at global scope that a CUDA kernel may declare itself."""

PREFIX = "cn_user_"


def _global_declarations(tokens: list) -> set[str]:
    """Names of HOST_TYPE_NAMES declared by ``typedef``/``using`` at global scope."""
    sig = [t for t in tokens if t.kind not in ("ws", "comment", "pp")]
    found: set[str] = set()
    stack: list[bool] = []  # True: a brace that opens a scope other than extern "C" { ... }
    k = 0
    while k < len(sig):
        t = sig[k]
        if t.text == "{":
            prev = sig[k - 1] if k else None
            prev2 = sig[k - 2] if k > 1 else None
            linkage = (prev is not None and prev.kind == "string" and prev2 is not None
                       and prev2.text == "extern")
            stack.append(not linkage)
        elif t.text == "}":
            if stack:
                stack.pop()
        elif not any(stack):
            if t.text == "typedef":
                depth, j = 0, k + 1
                while j < len(sig):
                    s = sig[j].text
                    if s in "([{":
                        depth += 1
                    elif s in ")]}":
                        depth -= 1
                    elif s == ";" and depth <= 0:
                        break
                    j += 1
                last = sig[j - 1] if j - 1 > k else None
                if last is not None and last.kind == "ident" and last.text in HOST_TYPE_NAMES:
                    found.add(last.text)
            elif (t.text == "using" and k + 2 < len(sig) and sig[k + 1].kind == "ident"
                  and sig[k + 1].text in HOST_TYPE_NAMES and sig[k + 2].text == "="):
                found.add(sig[k + 1].text)
        k += 1
    return found


def rename_user_typedefs(text: str) -> str:
    """``text`` with the host type names it declares at global scope renamed (``cn_user_...``).

    Every use is renamed (a namespace of the kernel's that declares the same name too, and
    ``ns::name``, stay consistent) except after ``.`` and ``->`` (members) and ``std::`` (the host
    library's). Preprocessor lines are renamed too, except
    ``#include`` lines. Line structure is unchanged.
    """
    if not any(name in text for name in HOST_TYPE_NAMES):
        return text
    tokens = tokenize(text)
    names = _global_declarations(tokens)
    if not names:
        return text
    word = re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")
    out: list[str] = []
    prev: list = [None, None]
    for t in tokens:
        new = t.text
        if t.kind == "ident" and t.text in names:
            p1, p2 = prev
            member = p1 is not None and p1.text in (".", "->")
            qualified = (p1 is not None and p1.text == "::" and p2 is not None
                         and p2.text == "std")
            if not member and not qualified:
                new = PREFIX + t.text
        elif t.kind == "pp" and not re.match(r"\s*#\s*include\b", t.text):
            new = word.sub(lambda m: PREFIX + m.group(1), t.text)
        out.append(new)
        if t.kind not in ("ws", "comment"):
            prev = [t, prev[0]]
    return "".join(out)
