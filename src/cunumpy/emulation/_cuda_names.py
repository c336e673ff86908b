"""Keep a kernel's own global names that the host's headers also declare (``uint64_t``, ``index``).

The emulator compiles a kernel as C++ after host headers (``<cstdint>``, ``<cmath>``, ...) that
declare ``uint64_t``, ``int64_t``, ``size_t``, ``uint``... at global scope, with glibc's types
(``uint64_t`` is ``unsigned long``). NVRTC declares none of them, so kernels written for it often
declare their own, with other types, which C++ rejects as a conflicting redeclaration. For each
such name that the kernel's text declares at global scope (``typedef T name;`` or
``using name = T;``, in any ``#if`` branch), every use of the name in the text is renamed
``cn_user_<name>``: the kernel's code then sees exactly its own type, and the host headers keep
theirs. A kernel that declares such a name only inside a namespace, class or function needs
nothing (its name hides the global one, as in CUDA).

The same goes for the C library's functions and variables that CUDA does not have
(:data:`~cunumpy.emulation._host_names.HOST_NAMES`: ``index``, ``gamma``, ``time``, ``read``,
``random``, ...): a kernel that declares one at global scope (``__constant__ float gamma;``,
``__device__ double gamma(double)``) gets it renamed in the same way.
"""

from __future__ import annotations

import re

from cunumpy._lang.scopes import enclosing_braces
from cunumpy._lang.tokens import tokenize

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



def _global_declarations(sig: list) -> set[str]:
    """Names of HOST_TYPE_NAMES declared by ``typedef``/``using`` at global scope."""
    found: set[str] = set()
    scopes = enclosing_braces(sig)
    k = 0
    while k < len(sig):
        t = sig[k]
        if t.text in ("{", "}") or any(kind != "linkage" for kind in scopes[k]):
            pass
        elif t.text == "typedef":
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


def _brace_kinds(sig: list) -> list[str]:
    """For each token, the kind of the innermost brace around it: ``""`` (global scope or an
    ``extern "C"`` block), ``"class"`` (directly in a struct/class/union body), ``"enum"`` or
    ``"other"`` (function bodies, namespaces, initialisers)."""
    out = []
    memo: dict[tuple[str, ...], str] = {}
    for kinds in enclosing_braces(sig):
        kind = memo.get(kinds)
        if kind is None:
            inner = next((b for b in reversed(kinds) if b != "linkage"), "")
            kind = memo[kinds] = inner if inner in ("", "class", "enum") else "other"
        out.append(kind)
    return out


def _declared_names(sig: list, kinds: list[str]) -> set[str]:
    """HOST_TYPE_NAMES declared by ``typedef``/``using`` at global scope, and HOST_NAMES declared
    at global scope as variables, functions or enumerators (``T name;``, ``T name[...]``,
    ``T name(...)``, ``T name = ...``)."""
    from cunumpy.emulation._host_names import HOST_NAMES

    found = _global_declarations(sig)
    for k, t in enumerate(sig):
        if t.kind != "ident" or t.text not in HOST_NAMES or kinds[k] not in ("", "enum"):
            continue
        prev = sig[k - 1] if k else None
        nxt = sig[k + 1] if k + 1 < len(sig) else None
        if prev is None or nxt is None or prev.text in (".", "->", "::"):
            continue
        typed = prev.kind == "ident" or prev.text in ("*", "&", ">", "{", ",")
        if typed and nxt.text in (";", "=", "[", "(", ",", "}"):
            found.add(t.text)
    return found


def _member_shadows(sig: list, kinds: list[str], names: set[str]) -> set[int]:
    """Offsets of tokens that name a member of an enclosing class (``struct P { float time;
    float age() { return time; } };``): C++ finds the member first, so they keep their name."""
    keep: set[int] = set()
    opens: list[int] = []
    for k, t in enumerate(sig):
        if t.text == "{":
            opens.append(k)
        elif t.text == "}" and opens:
            start = opens.pop()
            inner = range(start + 1, k)
            members = {
                sig[j].text for j in inner
                if kinds[j] == "class" and sig[j].text in names and j + 1 < len(sig)
                and sig[j + 1].text in (";", "=", "[", ",", "(", "{")
                and (sig[j - 1].kind == "ident" or sig[j - 1].text in ("*", "&", ">"))
            }
            if members:
                keep.update(sig[j].start for j in inner if sig[j].text in members)
    return keep


def rename_user_typedefs(text: str, keep: str = "") -> str:
    """``text`` with the host names it declares at global scope renamed (``cn_user_...``): type
    names declared by ``typedef``/``using`` (:data:`HOST_TYPE_NAMES`), and C library names
    (:data:`~cunumpy.emulation._host_names.HOST_NAMES`) declared as variables, functions or
    enumerators. ``keep`` (the launched kernel's name) is never renamed.

    Every use is renamed (a namespace of the kernel's that declares the same name too, and
    ``ns::name``, stay consistent) except after ``.`` and ``->`` (members), after ``std::`` (the
    host library's), and inside a class that declares a member of that name. Preprocessor lines are renamed too,
    except ``#include`` lines. Line structure is unchanged.
    """
    tokens = tokenize(text)
    sig = [t for t in tokens if t.kind not in ("ws", "comment", "pp")]
    kinds = _brace_kinds(sig)
    names = _declared_names(sig, kinds) - {keep}
    if not names:
        return text
    members = _member_shadows(sig, kinds, names)
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
            if not member and not qualified and t.start not in members:
                new = PREFIX + t.text
        elif t.kind == "pp" and not re.match(r"\s*#\s*include\b", t.text):
            new = word.sub(lambda m: PREFIX + m.group(1), t.text)
        out.append(new)
        if t.kind not in ("ws", "comment"):
            prev = [t, prev[0]]
    return "".join(out)
