"""Forwarders that let ``__device__`` function templates deduce from raw and checked pointers.

With checks on, the pointer parameters of ``__device__`` functions become ``cn::ptr<T>``
(:func:`cunumpy.emulation._cuda_rewrite.checked_param`). A non-template function then takes a raw
pointer too (``cn::ptr`` converts from ``T*``, unchecked), but a template cannot: ``T`` is not
deduced from ``float*`` against ``cn::ptr<const T>``, and a checked argument would not deduce
against ``const T*`` either. Real kernels mix both in one call (apex's ``cuWelfordMuSigma2``
takes a kernel argument and a pointer into shared memory).

For each such template at namespace scope the rewrite adds, on the line of each of its
declarations, a twin that deduces, and after the last one a forwarding overload::

    template <typename T, class... CnO>                  // the template's own head, and a pack
    inline auto f__cn_pick(const T* x, U* buf, CnO&&... o)   // its parameters as written
        -> decltype(f<T>(o...)) { return f<T>(o...); }
    template <class... CnA, class = ::cn::cuda::if_pointer_arg_t<CnA...>>
    inline auto f(CnA&&... a) -> decltype(f__cn_pick(::cn::cuda::as_raw(a)..., a...))
    { return f__cn_pick(::cn::cuda::as_raw(a)..., a...); }

The forwarder is viable only when an argument is a pointer (raw or checked) or a shared array.
The twins deduce the template arguments as a raw call would (``as_raw`` gives them raw
pointers; overloads of other arities drop out), then call that specialisation of the template
with the original arguments, which its checked parameters take: checked pointers stay checked
(``cn::ptr<float>`` converts to ``cn::ptr<const float>``), shared arrays become checked pointers,
raw pointers unchecked ones. Calls that deduce without it prefer the template (more
specialised), and calls with explicit template arguments (``f<float>(...)``) do not match it.
"""

from __future__ import annotations

import re

__all__ = ["declaration_end", "forwarder", "template_head", "template_names", "twin"]

_HEAD_STOP = re.compile(r"[;{}]")


def template_names(head: str) -> str | None:
    """The argument list naming a template's own parameters: ``template <typename T, int N,
    class... R>`` -> ``"T, N, R..."``; None when a parameter cannot be named."""
    m = re.search(r"\btemplate\s*<(.*)>\s*$", head.strip(), re.DOTALL)
    if m is None:
        return None
    names = []
    depth, part, parts = 0, "", []
    for c in m.group(1):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += c
    parts.append(part)
    for p in parts:
        decl = p.split("=", 1)[0].strip()
        word = re.search(r"([A-Za-z_]\w*)\s*$", decl)
        if word is None or word.group(1) in ("typename", "class"):
            return None
        names.append(word.group(1) + ("..." if "..." in decl else ""))
    return ", ".join(names)


def twin(name: str, head: str, params: str) -> str | None:
    """The twin of one overload of the function template ``name`` (template head ``head``,
    parameter list ``params`` as written), on one line; None when the template parameters cannot
    be named. It deduces the template arguments from raw pointers, then calls that
    specialisation with the original arguments (the pack after the parameters)."""
    names = template_names(head)
    if names is None:
        return None
    head = " ".join(head.split())
    head = head[: head.rindex(">")].rstrip() + ", class... CnO>"
    params = " ".join(params.split())
    call = f"{name}<{names}>(static_cast<CnO&&>(cn_o)...)"
    sep = ", " if params and params != "void" else ""
    params = "" if params == "void" else params
    return (f" {head} inline auto {name}__cn_pick({params}{sep}CnO&&... cn_o) -> decltype({call})"
            f" {{ return {call}; }}")


def forwarder(name: str) -> str:
    """The forwarding overload of ``name``, after its last twin (one line)."""
    fwd = "static_cast<CnA&&>(cn_a)..."
    call = f"{name}__cn_pick(::cn::cuda::as_raw({fwd.replace('...', '')})..., {fwd})"
    return (
        " template <class... CnA, class = ::cn::cuda::if_pointer_arg_t<CnA...>>"
        f" inline auto {name}(CnA&&... cn_a) -> decltype({call}) {{ return {call}; }}"
    )


def template_head(clean: str, device_at: int) -> str | None:
    """The ``template <...>`` head of the declaration whose ``__device__`` is at ``device_at``,
    or None (not a template, or the explicit specialisation ``template <>``)."""
    start = max((m.end() for m in _HEAD_STOP.finditer(clean, 0, device_at)), default=0)
    head = clean[start:device_at]
    m = re.search(r"\btemplate\s*<", head)
    if m is None:
        return None
    depth = 0
    for k in range(m.end() - 1, len(head)):
        if head[k] == "<":
            depth += 1
        elif head[k] == ">":
            depth -= 1
            if depth == 0:
                text = head[m.start(): k + 1]
                return None if re.fullmatch(r"template\s*<\s*>", text) else text
    return None


def declaration_end(clean: str, close_paren: int) -> int:
    """Offset just past the declaration whose parameter list closes at ``close_paren``: after its
    body's ``}`` or its ``;``; -1 when neither is found."""
    depth = 0
    k = close_paren + 1
    while k < len(clean):
        c = clean[k]
        if c == ";" and depth == 0:
            return k + 1
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "{" and depth == 0:
            level = 0
            for j in range(k, len(clean)):
                if clean[j] == "{":
                    level += 1
                elif clean[j] == "}":
                    level -= 1
                    if level == 0:
                        return j + 1
            return -1
        k += 1
    return -1
