"""The C preprocessor of whole Metal libraries (``_lang/preprocess.py``) and the library parser."""

from __future__ import annotations

import pytest

from cunumpy._lang.metal_library import parse_library
from cunumpy._lang.preprocess import PreprocessorError, preprocess


def lines(text: str) -> list[str]:
    return preprocess(text).text.split("\n")[1:]


def test_macros_stringify_paste_and_variadic():
    out = lines('#define CAT(a, b) a##b\n#define S(x) #x\n#define X(x) S(x)\n'
                '#define V(f, ...) f(0 __VA_OPT__(,) __VA_ARGS__)\n'
                'int CAT(ab, 12) = 1; const char* s = X(CAT(p, q)); V(g) V(g, 1, 2)\n')
    assert out[4] == 'int ab12 = 1; const char* s = "pq"; g(0 ) g(0 , 1, 2)'


def test_lines_stay_where_they_were():
    out = lines("#define K(name) \\\n  kernel void name() {}\nK(\n  a)\nint z;\n#if 0\nno\n#endif\n")
    assert out[2] == "kernel void a() {}"
    assert out[4] == "int z;"
    assert "no" not in out


def test_no_recursion_and_rescan():
    out = lines("#define f(x) x f\n#define g f\nf(1)(2) g(3)\n")
    assert out[2] == "1 f(2) 3 f"


def test_conditions_and_predefined():
    out = lines("#if defined(__METAL_VERSION__) && __METAL_VERSION__ >= 310 && !defined(NOPE)\n"
                "yes\n#elif 1\nno\n#else\nno\n#endif\n")
    assert "yes" in out and "no" not in out
    with pytest.raises(PreprocessorError, match="library.metal:2: #error boom"):
        preprocess("\n#error boom\n")
    with pytest.raises(PreprocessorError, match="takes 2 arguments"):
        preprocess("#define F(a, b) a\nF(1)\n")


def test_instantiation_forms_and_parameters():
    lib = parse_library(preprocess("""
struct P { uint n; };
template <typename T, int N = 2>
kernel void f(device T* y [[buffer(1)]], constant P& p, threadgroup T* s [[threadgroup(0)]],
              ushort2 t [[thread_position_in_grid]]) {}
template [[host_name("f_" "a")]] [[kernel]] decltype(f<float>) f<float>;
typedef decltype(f<int, 3>) f_int;
template [[host_name("f_b")]] kernel f_int f<int, 3>;
template [[host_name("f_c")]] kernel void f(device half* y [[buffer(1)]], constant P& p,
    threadgroup half* s [[threadgroup(0)]], ushort2 t [[thread_position_in_grid]]);
constant bool fc [[function_constant(010)]];
""").text)
    assert list(lib.kernels) == ["f_a", "f_b", "f_c"]
    a, b, c = lib.kernels.values()
    assert a.template_args == "<float>" and a.function_type == "decltype(f<float>)"
    assert [(p.name, p.kind, p.index, p.base) for p in a.params] == [
        ("y", "buffer", 1, "float"), ("p", "buffer", 0, "P"), ("s", "threadgroup", 0, "float"),
        ("t", "attribute", None, "ushort2")]
    assert b.function_type == "f_int" and b.params[0].base == "int"
    assert c.template_args is None and c.function_type.startswith("void(")
    assert c.params[0].base == "half" and c.params[1].const and c.params[1].reference
    assert lib.structs == {"P": (("uint", "n", ()),)}
    assert [(k.name, k.index) for k in lib.constants] == [("fc", 8)]
