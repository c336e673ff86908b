"""The source rewrites of the Metal emulator (no compiler needed)."""

from __future__ import annotations

from cunumpy.emulation._rewrite import rewrite, tokenize


def test_threadgroup_declarations_become_arena_references():
    src = "threadgroup float a[32], b[N][4];\nthreadgroup metal::atomic<uint> count;\n"
    out = rewrite(src, checks=True, first_slot=2)
    assert [d.name for d in out.shared] == ["a", "b", "count"]
    assert [d.slot for d in out.shared] == [2, 3, 4]
    assert out.shared[1].describe() == "float[N][4]"
    assert "auto& a = cn::tg_alloc<cn::tarr<float, (32), 2>>(2);" in out.text
    assert "cn::tarr<cn::tarr<float, (4), 3>, (N), 3>" in out.text
    assert "auto& count = cn::tg_alloc<metal::atomic<uint>>(4);" in out.text
    assert out.sync  # a threadgroup atomic asks for fibers
    plain = rewrite(src, checks=False)
    assert "cn::tg_alloc<float[N][4]>(1)" in plain.text


def test_other_threadgroup_uses_lose_the_keyword():
    src = "void f(threadgroup float* p, int n);\nthreadgroup float* q = buf;\n"
    out = rewrite(src, checks=True)
    assert "threadgroup" not in out.text
    assert out.shared == ()


def test_comments_strings_and_newlines_are_kept():
    src = ('// threadgroup float x[3];\nconst char* s = "threadgroup y[2]; 1.5h";\n'
           "threadgroup float t\n  [8];\n/* 2h */ float h = 2h;\n")
    out = rewrite(src, checks=True)
    assert out.text.count("\n") == src.count("\n")
    assert "// threadgroup float x[3];" in out.text
    assert '"threadgroup y[2]; 1.5h"' in out.text
    assert "/* 2h */ float h = half(2.0f);" in out.text
    assert [d.name for d in out.shared] == ["t"]


def test_half_literals():
    out = rewrite("a = 1.5h + 2h + .5h + 1e3h + 0x2h + 3.0f;", checks=False).text
    assert out == "a = half(1.5f) + half(2.0f) + half(.5f) + half(1e3f) + 0x2h + 3.0f;"


def test_sync_detection():
    assert rewrite("x = simd_sum(v);", checks=False).sync
    assert rewrite("metal::threadgroup_barrier(mem_flags::mem_none);", checks=False).sync
    assert not rewrite("float simd_width = 3; // simd_sum", checks=False).sync
    assert rewrite("#define R(x) quad_sum(x)\n", checks=False).sync


def test_checked_pointer_parameters():
    src = ("template <typename T> T f(const device T* p, constant const int* s, device float4* o,"
           " int n);\nfloat g = h((device float*)x, 1);\nstruct S { device float* d; };\n")
    out = rewrite(src, checks=True, checked_params=True).text
    assert "T f(cn::ptr<const T> p, cn::ptr<const int> s, cn::ptr<float4> o, int n);" in out
    assert "h((device float*)x, 1)" in out
    assert "struct S { device float* d; };" in out


def test_metal_includes_are_dropped():
    out = rewrite("#include <metal_stdlib>\n  #include \"metal_simdgroup\"\n#include <cmath>\n",
                  checks=False).text
    assert out == "\n\n#include <cmath>\n"


def test_tokenizer_round_trips():
    src = 'a = b->c<<=2; // x\n#define Q 1\ns = R"(raw)"; c = \'x\';\n'
    assert "".join(t.text for t in tokenize(src)) == src


def test_local_pointer_declarations_become_checked_pointers():
    src = ("threadgroup float s[32], t[2][4];\n"
           "const device float* row = x + r * L;\n"
           "device float *lo = y,\n  *hi = y + 8;\n"
           "device float* a = y, n = 0;\n"
           "threadgroup float* p = s;\n"
           "for (constant int* q = c; q != c + 4; ++q) {}\n"
           "const device float* const* pp = &row;\n"
           "float4 v = ((const device float4*)x)[0];\n"
           "struct S { device float* d; threadgroup float* e; };\n"
           "f(s, sizeof(s), t, s[1], &s[2]);\n"
           "float s2 = 1;\n")
    out = rewrite(src, checks=True, checked_pointers=True, in_function=True)
    assert out.text.count("\n") == src.count("\n")
    text = out.text
    assert "cn::ptr<const float> row = x + r * L;" in text
    assert "cn::ptr<float> lo = y,\n   hi = y + 8;" in text     # every declarator a pointer
    assert "device float* a = y, n = 0;" in text                  # mixed: left raw
    assert "cn::ptr<float> p = cn::tview(s);" in text
    assert "for (cn::ptr<const int> q = c; q != c + 4; ++q)" in text
    assert "cn::ptr<const float> const* pp = &row;" in text
    assert "((const device float4*)x)[0]" in text                 # casts stay raw
    assert "struct S { device float* d;   float* e; };" in text   # members stay raw
    assert "f(cn::tview(s), sizeof(s), cn::tview(t), s[1], &s[2]);" in text
    assert "float s2 = 1;" in text
    off = rewrite(src, checks=True, in_function=True).text
    assert "cn::ptr" not in off and "cn::tview" not in off


def test_threadgroup_pointer_parameters_become_checked_pointers():
    src = ("template <typename T>\nMETAL_FUNC T sum(threadgroup T* s, const threadgroup T* r,"
           " uint n) {\n  threadgroup T* q = s + 1;\n  return q[n];\n}\n")
    out = rewrite(src, checks=True, checked_params=True, checked_pointers=True).text
    assert "T sum(cn::ptr<T> s, cn::ptr<const T> r, uint n)" in out
    assert "cn::ptr<T> q = s + 1;" in out
    raw = rewrite(src, checks=True, checked_params=True).text
    assert "T sum(  T* s, const   T* r, uint n)" in raw  # the keyword dropped, nothing else
