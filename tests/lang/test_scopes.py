"""The text layer's scope tracker and declarator reader, shared by both rewriters."""

from __future__ import annotations

import pytest

from cunumpy._lang.scopes import BRACE_KINDS, brace_kind, declared_name, enclosing_braces
from cunumpy._lang.tokens import tokenize


def _sig(text: str):
    return [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('extern "C" {', "linkage"),
        ("namespace a {", "namespace"),
        ("namespace {", "namespace"),
        ("inline namespace v1 {", "namespace"),
        ("namespace a::b {", "namespace"),
        ("struct S {", "class"),
        ("template <class T> struct S : Base<T> {", "class"),
        ("union U {", "class"),
        ("enum E {", "enum"),
        ("enum class E : int {", "enum"),
        ("float v[2] = {", "init"),
        ("struct P p = {", "init"),
        ("void f(struct P p) {", "block"),
        ("template <class T> __device__ T g(T x) {", "block"),
        ("int x; if (x) {", "block"),
        ("auto l = [](int i) {", "block"),
    ],
)
def test_brace_kind(text: str, kind: str) -> None:
    sig = _sig(text)
    assert kind in BRACE_KINDS
    assert brace_kind(sig, len(sig) - 1) == kind


def test_enclosing_braces_nest_and_share_tuples() -> None:
    sig = _sig('namespace n { extern "C" { struct S { int a; }; void f() { int b; } } }')
    scopes = dict(zip((t.text for t in sig), enclosing_braces(sig)))
    assert scopes["namespace"] == ()
    assert scopes["a"] == ("namespace", "linkage", "class")
    assert scopes["b"] == ("namespace", "linkage", "block")
    assert scopes["f"] == ("namespace", "linkage")
    braces = enclosing_braces(sig)
    assert braces[-1] == ("namespace",)  # a closing brace belongs to the scope it closes
    a, i = [k for k, t in enumerate(sig) if t.text in ("a", "int")][:2]
    assert braces[a] is braces[i]
    assert enclosing_braces(_sig("} x")) == [(), ()]  # an unmatched brace is ignored


@pytest.mark.parametrize(
    ("text", "indirect", "name"),
    [
        ("float* y", False, "y"),
        ("const float* const y", False, "y"),
        ("float* const* pp", True, "pp"),
        ("float* const* pp", False, None),
        ("float* restrict y", False, None),
        ("float* )", False, None),
        ("float*", False, None),
        ("cn::ptr<const float> x", False, "x"),
    ],
)
def test_declared_name(text: str, indirect: bool, name: str | None) -> None:
    sig = _sig(text)
    after = next(k for k, t in enumerate(sig) if t.text in ("*", ">"))
    k = declared_name(sig, after, indirect)
    assert (sig[k].text if k is not None else None) == name


def test_cuda_rewriter_reads_parameter_names_through_the_text_layer() -> None:
    from cunumpy.emulation._cuda_rewrite import _declared_name

    assert _declared_name("const cn::ptr<float> y") == "y"
    assert _declared_name("cn::ptr<cn::vec<float, 4>> v") == "v"
    assert _declared_name("cn::ptr<float>") is None
