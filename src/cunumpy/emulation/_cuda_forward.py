"""Forwarders that let ``__device__`` function templates deduce from raw and checked pointers.

With checks on, the pointer parameters of ``__device__`` functions become ``cn::ptr<T>``
(:func:`cunumpy.emulation._cuda_rewrite.checked_param`). A non-template function then takes a raw
pointer too (``cn::ptr`` converts from ``T*``, unchecked), but a template cannot: ``T`` is not
deduced from ``float*`` against ``cn::ptr<const T>``, and a checked argument would not deduce
against ``const T*`` either. Real kernels mix both in one call (apex's ``cuWelfordMuSigma2``
takes a kernel argument and a pointer into shared memory).

For each such template at namespace scope the rewrite adds, right after its first declaration
and on the same line, a twin that deduces and a forwarding overload::

    template <typename T, typename U>                      // the template's own head
    inline auto f__cn_pick(const T* x, U* buf) { return &f<T, U>; }   // its parameters as written
    template <class... CnA, class = ::cn::cuda::if_pointer_arg_t<CnA...>>
    inline auto f(CnA&&... a) -> decltype(f__cn_pick(::cn::cuda::as_raw(a)...)(a...))
    { return f__cn_pick(::cn::cuda::as_raw(a)...)(a...); }

The forwarder is viable only when an argument is a pointer (raw or checked) or a shared array.
It deduces the template arguments as a raw call would (the twin takes the parameters as
written, and ``as_raw`` gives it raw pointers), then calls that specialisation of the template,
whose checked parameters take the arguments: checked pointers stay checked (``cn::ptr<float>``
converts to ``cn::ptr<const float>``), shared arrays become checked pointers, raw pointers
unchecked ones. Calls that deduce without it prefer the template (more specialised), and calls
with explicit template arguments (``f<float>(...)``) do not match it.
"""

from __future__ import annotations

import re

__all__ = ["declaration_end", "forwarder", "template_head", "template_names"]

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


def forwarder(name: str, head: str, params: str) -> str | None:
    """The twin and the forwarder for the function template ``name`` with the template head
    ``head`` and the parameter list ``params`` as written (one line); None when the template
    parameters cannot be named."""
    names = template_names(head)
    if names is None:
        return None
    params = " ".join(params.split())
    pick = f"{name}__cn_pick"
    args = "static_cast<CnA&&>(cn_a)..."
    call = f"{pick}(::cn::cuda::as_raw(static_cast<CnA&&>(cn_a))...)({args})"
    return (
        f" {' '.join(head.split())} inline auto {pick}({params}) {{ return &{name}<{names}>; }}"
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
