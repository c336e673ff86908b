"""Scopes and declarators in a token list: what each brace opens, and the name a declarator names.

Both rewriters (``emulation/_rewrite.py`` for Metal, ``emulation/_cuda_rewrite.py`` and
``emulation/_cuda_names.py`` for CUDA) ask these two questions of the same tokens
(:func:`cunumpy._lang.tokens.tokenize`, comments and whitespace removed), so they are answered
once, here.

Brace kinds:

``linkage``
    ``extern "C" {`` (does not open a scope)
``namespace``
    ``namespace a {``, ``namespace {``, ``inline namespace v1 {``
``enum``
    an enumeration's body (``enum E {``, ``enum class E : int {``)
``class``
    a ``struct`` / ``class`` / ``union`` body
``init``
    an initializer (``T x = {...}``)
``block``
    anything else: a function body, a compound statement, a lambda body
"""

from __future__ import annotations

from collections.abc import Sequence

from cunumpy._lang.tokens import Token

__all__ = ["BRACE_KINDS", "brace_kind", "declared_name", "enclosing_braces"]

BRACE_KINDS = ("linkage", "namespace", "enum", "class", "init", "block")
"""Every value :func:`brace_kind` returns."""

_STATEMENT_START = frozenset({";", "{", "}"})
_CLASS_KEYS = frozenset({"struct", "class", "union"})


def brace_kind(tokens: Sequence[Token], k: int) -> str:
    """What the ``{`` at ``tokens[k]`` opens (one of :data:`BRACE_KINDS`).

    Read from the tokens between the previous statement boundary (``;``, ``{``, ``}``) and the
    brace: ``extern "C"`` right before it, ``namespace``, ``enum``, a class key with no
    parenthesis (``void f(struct P p) {`` is a function), ``=`` with no closing parenthesis.
    """
    if k >= 2 and tokens[k - 1].kind == "string" and tokens[k - 2].text == "extern":
        return "linkage"
    seen: set[str] = set()
    j = k - 1
    while j >= 0 and tokens[j].text not in _STATEMENT_START:
        seen.add(tokens[j].text)
        j -= 1
    if "namespace" in seen:
        return "namespace"
    if "(" not in seen:
        if "enum" in seen:
            return "enum"
        if seen & _CLASS_KEYS and "=" not in seen:
            return "class"
    if "=" in seen and ")" not in seen:
        return "init"
    return "block"


def enclosing_braces(tokens: Sequence[Token]) -> list[tuple[str, ...]]:
    """For each token, the kinds of the braces around it, outermost first.

    A ``{`` belongs to the scope outside it, its ``}`` to the scope inside. Tokens in the same
    scope share one tuple object. An unmatched ``}`` is ignored.
    """
    out: list[tuple[str, ...]] = []
    stack: tuple[str, ...] = ()
    for k, t in enumerate(tokens):
        text = t.text
        if text == "{":
            out.append(stack)
            stack = (*stack, brace_kind(tokens, k))
        else:
            out.append(stack)
            if text == "}" and stack:
                stack = stack[:-1]
    return out


def declared_name(
    tokens: Sequence[Token], after: int, indirect: bool = False
) -> int | None:
    """Index of the name a declarator declares after ``tokens[after]``, or None.

    ``after`` is the last token of the type: a ``*`` (``T* name``, ``T* const name``) or the
    ``>`` closing a template type (``cn::ptr<T> name``). ``const`` after it is skipped; with
    ``indirect``, so are further ``*`` (``T* const* name``, a pointer to a pointer). The name
    must be an identifier (not ``const`` or ``restrict``).
    """
    k = after + 1
    while k < len(tokens) and (tokens[k].text == "const" or (indirect and tokens[k].text == "*")):
        k += 1
    if k >= len(tokens) or tokens[k].kind != "ident" or tokens[k].text in ("const", "restrict"):
        return None
    return k
