"""Kernel-defining macros expand as the C preprocessor expands them (_lang/cuda_macros.py)."""

from __future__ import annotations

from cunumpy._lang.cuda_macros import expand_kernel_macros
from cunumpy._lang.cuda_signature import find_global_functions, parse_signature


def test_paste_stringize_and_nested_macros():
    src = r"""
#define CAT(a, b) a##b
#define STR(x) #x
#define N 64
#define KERNEL(NAME, T) \
  extern "C" __global__ void CAT(k_, NAME)(const T* x, T* y) { __shared__ T s[N]; (void)STR(NAME); }
KERNEL(f32, float)
KERNEL(i64, long long)
"""
    out = expand_kernel_macros(src)
    assert 'void k_f32(const float* x, float* y) { __shared__ float s[64]; (void)"f32"; }' in out
    assert out.count("\n") == src.count("\n")  # every line keeps its number
    assert find_global_functions(src) == ["k_f32", "k_i64"]
    assert [p.dtype.name for p in parse_signature(src, "k_i64").params] == ["int64", "int64"]


def test_variadic_undef_and_header_definitions():
    header = "#define DEF(NAME, ...) __global__ void NAME(__VA_ARGS__) {}\n"
    src = "DEF(a, int n)\n#undef DEF\n#define DEF(NAME, args...) __global__ void NAME(args, int m) {}\nDEF(b, float x)\n"
    assert find_global_functions(src) == ["b"]  # DEF(a, ...) needs the header's definition
    sig = parse_signature(src, "a", headers=[header])
    assert [p.text for p in sig.params] == ["int n"]
    sig = parse_signature(src, "b", headers=[header])
    assert [p.text for p in sig.params] == ["float x", "int m"]


def test_text_without_kernel_macros_is_returned_as_is():
    src = '#define SQ(x) ((x) * (x))\nextern "C" __global__ void k(float* y) { y[0] = SQ(2.0f); }'
    assert expand_kernel_macros(src) is src
