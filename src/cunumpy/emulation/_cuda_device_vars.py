"""``__device__`` variables of a CUDA source, registered for race checking.

A ``__device__`` variable at namespace scope is one object shared by every thread of a launch, so
two threads that write it (or one writes, one reads) without an atomic race like on a buffer. The
emulator compiles it as a plain C++ global; this module finds its declarations and appends to
each a static registration (``cn::race::DeviceVar``) that tells the race checker where it lives,
how large it and its elements are and what it is called. The registration sits on the
declaration's own line, so line numbers do not move; it does nothing unless races are checked.
"""

from __future__ import annotations

from cunumpy._lang.tokens import Token

__all__ = ["device_var_edits"]

_SKIP = frozenset({"__constant__", "__shared__", "constexpr", "typedef", "using", "template",
                   "extern", "__managed__"})


def _declarators(sig: list[Token], start: int, stop: int) -> list[str]:
    """Names declared by the tokens ``sig[start:stop]`` (one declaration without its ``;``), or
    none when it declares a function."""
    names: list[str] = []
    depth = 0
    last_ident: str | None = None
    taken = False
    for t in sig[start:stop]:
        if t.text in ("(", "[", "{", "<"):
            if t.text == "(" and depth == 0 and not taken:
                return []  # a function (or a constructor call: left alone)
            if t.text in ("[", "{") and depth == 0 and not taken and last_ident is not None:
                names.append(last_ident)
                taken = True
            depth += 1
        elif t.text in (")", "]", "}", ">"):
            depth = max(0, depth - 1)
        elif depth == 0 and t.text == "=":
            if not taken and last_ident is not None:
                names.append(last_ident)
            taken = True
        elif depth == 0 and t.text == ",":
            if not taken and last_ident is not None:
                names.append(last_ident)
            taken = False
            last_ident = None
        elif depth == 0 and t.kind == "ident" and not taken:
            last_ident = t.text
    if not taken and last_ident is not None:
        names.append(last_ident)
    return names


def device_var_edits(sig: list[Token], inside: list[bool]) -> list[tuple[int, int, str]]:
    """Insertions (start, stop, text) registering every namespace-scope ``__device__`` variable.

    Parameters
    ----------
    sig
        The significant tokens of the source (no whitespace, comments or directives).
    inside
        For each token, whether it sits inside a function or class body.
    """
    edits: list[tuple[int, int, str]] = []
    count = 0
    for i, t in enumerate(sig):
        if t.text != "__device__" or inside[i]:
            continue
        # The declaration: back to the previous `;`, `}` or `{`, on to the next `;` at depth 0.
        first = i
        while first > 0 and sig[first - 1].text not in (";", "}", "{", ")") \
                and sig[first - 1].kind != "string":
            first -= 1
        depth = 0
        end = i + 1
        while end < len(sig):
            x = sig[end].text
            if x in ("(", "[", "{"):
                if x == "{" and depth == 0 and end > 0 and sig[end - 1].text == ")":
                    break  # a function body
                depth += 1
            elif x in (")", "]", "}"):
                depth -= 1
            elif x == ";" and depth == 0:
                break
            end += 1
        if end >= len(sig) or sig[end].text != ";":
            continue
        words = {s.text for s in sig[first:end]}
        if words & _SKIP or "operator" in words:
            continue
        names = _declarators(sig, i + 1, end)
        text = ""
        for name in names:
            if name in ("const", "volatile", "static", "inline", "__device__"):
                continue
            text += (
                f" static ::cn::race::DeviceVar cn_device_var_{count}(&{name}, sizeof({name}), "
                f"sizeof(::cn::race::element_of<decltype({name})>), \"{name}\");"
            )
            count += 1
        if text:
            stop = sig[end].start + 1
            edits.append((stop, stop, text))
    return edits
