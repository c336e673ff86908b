"""The CUDA ``__global__`` signature parser and the C type -> dtype map (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy._lang.cuda_signature import (
    C_TYPES,
    c_type_name,
    find_global_functions,
    format_template_args,
    parse_signature,
    strip_comments,
)

SAXPY = r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def kinds(sig):
    return [(p.name, p.ctype, p.pointer, p.const, p.dtype) for p in sig.params]


def test_saxpy_parameters():
    sig = parse_signature(SAXPY, "saxpy")
    assert sig.name == "saxpy" and sig.extern_c and not sig.is_template
    assert kinds(sig) == [
        ("n", "int", False, False, np.dtype(np.int32)),
        ("a", "float", False, False, np.dtype(np.float32)),
        ("x", "float", True, True, np.dtype(np.float32)),
        ("y", "float", True, False, np.dtype(np.float32)),
    ]
    assert sig.params[2].text == "const float* __restrict__ x"
    assert str(sig).startswith("__global__ void saxpy(int n, float a,")


def test_name_none_picks_the_only_kernel():
    assert parse_signature(SAXPY).name == "saxpy"


def test_comments_and_strings_are_ignored():
    src = r"""
    // __global__ void commented(int x) {}
    /* __global__ void block_commented(float y) {} */
    const char* s = "__global__ void in_string(int z)";
    __global__ void real(/* the count */ int n, // trailing
                         double* out /* output */) {}
    """
    assert find_global_functions(src) == ["real"]
    sig = parse_signature(src)
    assert [(p.name, p.ctype) for p in sig.params] == [("n", "int"), ("out", "double")]


def test_strip_comments_keeps_offsets_and_newlines():
    src = 'a /* b\nc */ d // e\n"s" f'
    out = strip_comments(src)
    assert len(out) == len(src)
    assert out.count("\n") == src.count("\n")
    assert "b" not in out and "e" not in out and out.endswith('" " f')


def test_several_kernels_need_a_name():
    src = SAXPY + "\n__global__ void other(float* p) {}\n"
    with pytest.raises(ValueError, match="several __global__ functions"):
        parse_signature(src)
    assert parse_signature(src, "other").params[0].name == "p"
    with pytest.raises(ValueError, match="no __global__ function named 'missing'.*other, saxpy"):
        parse_signature(src, "missing")


def test_no_kernel_at_all():
    with pytest.raises(ValueError, match="no __global__"):
        parse_signature("__device__ int f(int x) { return x; }")


def test_template_head_and_resolution():
    src = r"""
    template <typename T, int N = 4, class U>
    __global__ void k(const T* __restrict__ x, U* y, T scale, unsigned k) {}
    """
    sig = parse_signature(src, "k")
    assert sig.is_template and not sig.extern_c
    assert [(t.name, t.kind, t.ctype) for t in sig.template] == [
        ("T", "type", None),
        ("N", "value", "int"),
        ("U", "type", None),
    ]
    assert sig.params[0].dtype is None  # unresolved T
    sig2 = parse_signature(src, "k", {"T": np.float64, "U": "int32"})
    assert [p.dtype for p in sig2.params] == [
        np.dtype(np.float64),
        np.dtype(np.int32),
        np.dtype(np.float64),
        np.dtype(np.uint32),
    ]


def test_launch_bounds_and_qualifiers():
    src = r"""
    extern "C" __global__ void __launch_bounds__(256, 2)
    kern(const double x[], volatile int* flag, const unsigned long long n, char c,
         signed char sc, unsigned char* bytes, long int l, std::int16_t s16, size_t sz,
         bool b, void* raw, const void* __restrict__ craw) {}
    """
    sig = parse_signature(src)
    assert sig.name == "kern" and sig.extern_c
    got = {p.name: (p.ctype, p.pointer, p.const, p.dtype) for p in sig.params}
    assert got["x"] == ("double", True, True, np.dtype(np.float64))
    assert got["flag"] == ("int", True, False, np.dtype(np.int32))
    assert got["n"] == ("unsigned long long", False, True, np.dtype(np.uint64))
    assert got["c"][3] == np.dtype(np.int8)
    assert got["sc"][3] == np.dtype(np.int8)
    assert got["bytes"][3] == np.dtype(np.uint8)
    assert got["l"] == ("long", False, False, np.dtype(np.int64))
    assert got["s16"][3] == np.dtype(np.int16)
    assert got["sz"][3] == np.dtype(np.uint64)
    assert got["b"][3] == np.dtype(np.bool_)
    assert got["raw"] == ("void", True, False, None)
    assert got["craw"] == ("void", True, True, None)


def test_const_after_star_qualifies_the_pointer_not_the_data():
    sig = parse_signature("__global__ void k(float* const p, const float* const q) {}")
    assert [p.const for p in sig.params] == [False, True]


@pytest.mark.parametrize(
    ("spelling", "dtype"),
    [
        ("unsigned", np.uint32),
        ("unsigned int", np.uint32),
        ("signed int", np.int32),
        ("short int", np.int16),
        ("unsigned short", np.uint16),
        ("long long int", np.int64),
        ("unsigned long long int", np.uint64),
        ("long unsigned int", np.uint64),
        ("int64_t", np.int64),
        ("uint8_t", np.uint8),
        ("ptrdiff_t", np.int64),
        ("thrust::complex<float>", np.complex64),
        ("complex<double>", np.complex128),
    ],
)
def test_type_spellings(spelling, dtype):
    sig = parse_signature(f"__global__ void k({spelling} v, {spelling}* p) {{}}")
    assert sig.params[0].dtype == np.dtype(dtype)
    assert sig.params[1].dtype == np.dtype(dtype)


def test_unknown_types_have_no_dtype():
    sig = parse_signature("__global__ void k(MyType* p, Other h, MyStruct s) {}")
    assert [p.dtype for p in sig.params] == [None, None, None]
    assert [p.ctype for p in sig.params] == ["MyType", "Other", "MyStruct"]
    assert all("MyType" in sig.params[0].reason for _ in [0])


def test_unnamed_parameters_get_positional_names():
    sig = parse_signature("__global__ void k(int, float*) {}")
    assert [p.name for p in sig.params] == ["p0", "p1"]
    assert sig.params[1].pointer


def test_void_parameter_list():
    assert parse_signature("__global__ void k(void) {}").params == ()
    assert parse_signature("__global__ void k() {}").params == ()


def test_references_and_double_pointers_are_refused():
    with pytest.raises(NotImplementedError, match="reference"):
        parse_signature("__global__ void k(const float& x) {}")
    with pytest.raises(NotImplementedError, match="pointer to a pointer"):
        parse_signature("__global__ void k(float** x) {}")


def test_duplicate_parameter_names_are_refused():
    with pytest.raises(ValueError, match="two parameters named 'x'"):
        parse_signature("__global__ void k(int x, float* x) {}")


def test_extern_c_block_and_prefix():
    src = r"""
    extern "C" {
    __global__ void inside(int* p) {}
    }
    __global__ void outside(int* p) {}
    extern "C" __global__ void prefixed(int* p) {}
    """
    assert parse_signature(src, "inside").extern_c
    assert not parse_signature(src, "outside").extern_c
    assert parse_signature(src, "prefixed").extern_c


def test_declaration_then_definition():
    src = r"""
    extern "C" __global__ void k(int n, float* y);
    extern "C" __global__ void k(int n, float* y) { y[0] = n; }
    """
    assert [p.name for p in parse_signature(src).params] == ["n", "y"]


def test_c_type_map_round_trips():
    for ctype, dtype in C_TYPES.items():
        back = c_type_name(dtype)
        assert C_TYPES[back] == dtype, ctype
    assert c_type_name(np.float16) == "__half"  # <cuda_fp16.h>'s type
    with pytest.raises(TypeError, match="str"):
        c_type_name(np.dtype("U4"))


def test_format_template_args_values():
    sig = parse_signature("template <typename T, int N, bool B> __global__ void k(T* x) {}")
    expr, dtypes = format_template_args("k", sig.template, (np.float32, 3, True))
    assert expr == "k<float, 3, true>" and dtypes == {"T": np.dtype(np.float32)}
    expr, dtypes = format_template_args("k", sig.template, {"T": "double", "N": -2, "B": False})
    assert expr == "k<double, -2, false>" and dtypes == {"T": np.dtype(np.float64)}
    expr, dtypes = format_template_args("k", sig.template, ("float64", np.int64(7), False))
    assert expr == "k<double, 7, false>" and dtypes == {"T": np.dtype(np.float64)}
    expr, dtypes = format_template_args("k", sig.template, ("MyType", 1, True))
    assert expr == "k<MyType, 1, true>" and dtypes == {"T": None}


def test_format_template_args_errors():
    sig = parse_signature("template <typename T, int N> __global__ void k(T* x) {}")
    with pytest.raises(ValueError, match="2 template parameters"):
        format_template_args("k", sig.template, (np.float32,))
    with pytest.raises(ValueError, match="missing \\['N'\\], unknown \\['M'\\]"):
        format_template_args("k", sig.template, {"T": np.float32, "M": 2})
    with pytest.raises(TypeError, match="template argument 1"):
        format_template_args("k", sig.template, (np.float32, 2.5))
