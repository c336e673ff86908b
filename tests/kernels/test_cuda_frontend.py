"""CudaKernel front end: preprocessor branches, namespaces, template names, parameter types,
null pointers and declared outputs (messages included)."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy._lang.cuda_preprocess import active_text, defines_from_options
from cunumpy._lang.cuda_signature import find_global_functions, parse_signature
from cunumpy._lang.cuda_types import VECTOR_TYPES
from cunumpy.kernels import CudaKernel, cuda_dtype

# -- the preprocessor ------------------------------------------------------------------------

PP = """#if defined(ENABLE_BF16)
AAA
#elif defined(USE_FP16)
BBB
#else
CCC
#endif
"""


def _kept(text: str, *options: str) -> set[str]:
    out = active_text(text, defines_from_options(options))
    return {w for w in ("AAA", "BBB", "CCC", "DDD", "EEE") if w in out}


def test_if_elif_else_follow_the_options():
    assert _kept(PP) == {"CCC"}
    assert _kept(PP, "-DENABLE_BF16") == {"AAA"}
    assert _kept(PP, "-DUSE_FP16=1") == {"BBB"}
    assert _kept(PP, "-D", "USE_FP16", "--define-macro=ENABLE_BF16") == {"AAA"}
    assert _kept(PP, "-DENABLE_BF16", "-UENABLE_BF16") == {"CCC"}


def test_unknown_conditions_keep_every_branch():
    text = "#if __CUDA_ARCH__ >= 800\nAAA\n#else\nBBB\n#endif\n#if FOO(2)\nCCC\n#endif\n"
    assert _kept(text) == {"AAA", "BBB", "CCC"}
    # a macro defined in an undecided branch is unknown afterwards
    text = "#if __CUDA_ARCH__ > 700\n#define FAST 1\n#endif\n#ifdef FAST\nAAA\n#else\nBBB\n#endif\n"
    assert _kept(text) == {"AAA", "BBB"}


def test_defines_undefs_and_arithmetic_in_the_text():
    text = (
        "#define N 4\n#define M (N * 2 + 1)\n#if M == 9 && !defined(X)\nAAA\n#endif\n"
        "#undef N\n#ifdef N\nBBB\n#endif\n#if 0x10 > 1'000\nCCC\n#elif 1 ? 0 : 1\nDDD\n"
        "#else\nEEE\n#endif\n"
    )
    assert _kept(text) == {"AAA", "EEE"}


def test_nested_branches_and_comments_on_directives():
    text = "#ifdef A // first\n#if 1\nAAA\n#endif\n#else /* no A */\n#ifndef B\nBBB\n#endif\n#endif\n"
    assert _kept(text) == {"BBB"}
    assert _kept(text, "-DA") == {"AAA"}
    assert active_text(text).count("\n") == text.count("\n")


def test_inactive_bfloat16_branch_is_not_a_bfloat16_kernel():
    src = "#if defined(ENABLE_BF16)\ntypedef __nv_bfloat16 floatX;\n#else\ntypedef float floatX;\n" \
          "#endif\n__global__ void k(floatX* x) {}\n"
    assert parse_signature(src).params[0].dtype == np.float32
    sig = parse_signature(src, defines=defines_from_options(["-DENABLE_BF16"]))
    assert sig.params[0].dtype is not None and sig.params[0].dtype.name == "bfloat16"


def test_typedef_in_undecided_branches_is_refused_with_the_way_out():
    src = "#if __CUDA_ARCH__ >= 800\ntypedef double real;\n#else\ntypedef float real;\n" \
          "#endif\n__global__ void k(real* x) {}\n"
    with pytest.raises(NotImplementedError, match="'real'.*'double' and as 'float'.*-DNAME=1"):
        CudaKernel(src)


def test_object_like_macros_naming_types():
    src = "#ifndef REAL\n#define REAL float // the precision\n#endif\n#define N 16\n" \
          "__global__ void k(REAL* x, const REAL s, int n) {}"
    assert [p.dtype for p in parse_signature(src).params] == [np.float32, np.float32, np.int32]
    k = CudaKernel(src, options=("-DREAL=double",))
    assert [p.dtype for p in k.params] == [np.float64, np.float64, np.int32]


def test_digit_separators_on_the_kernels_line():
    src = "constexpr int N = 1'024; __global__ void k(float* x) { x[0] = N; }"
    assert parse_signature(src).name == "k"
    src = "__global__ void k(float* x, int n = 1'000'000, char c = '\\'') {}"
    assert [p.name for p in parse_signature(src).params] == ["x", "n", "c"]


def test_kernels_in_inactive_branches_are_not_found():
    src = "#if 0\n__global__ void old(float* x) {}\n#endif\n__global__ void k(int* y) {}\n"
    assert find_global_functions(src) == ["k"]
    assert parse_signature(src).name == "k"


# -- namespaces and names ---------------------------------------------------------------------

NS = r"""
namespace a { namespace b {
__global__ void k(float* x) { x[threadIdx.x] = 3; }
template <int B, int C, typename T> __global__ void hist(const T* x, unsigned int* h) {}
} }
namespace c { extern "C" __global__ void k(float* x) {} }
namespace { __global__ void hidden(int* x) {} }
"""


def test_qualified_names_and_expressions():
    assert find_global_functions(NS) == ["a::b::k", "a::b::hist", "c::k", "hidden"]
    k = CudaKernel(NS, "a::b::k")
    assert k.name == "a::b::k" and k.name_expression == "a::b::k"
    assert CudaKernel(NS, "::a::b::k").name == "a::b::k"
    assert CudaKernel(NS, "b::k").name == "a::b::k"
    c = CudaKernel(NS, "c::k")
    assert c.signature.extern_c and c.name_expression is None
    assert CudaKernel(NS, "hidden").name_expression == "hidden"


def test_ambiguous_short_name_lists_the_qualified_ones():
    with pytest.raises(ValueError, match="no __global__ function named 'k'.*a::b::k.*c::k"):
        CudaKernel(NS, "k")


def test_template_arguments_in_the_name():
    h = CudaKernel(NS, "a::b::hist<1024, 3, float4>")
    assert h.name == "a::b::hist" and h.name_expression == "a::b::hist<1024, 3, float4>"
    assert h.params[0].kind == "vector" and h.params[0].dtype == cuda_dtype("float4")
    assert h.params[0].type_name == "float4"
    same = CudaKernel(NS, "a::b::hist", template_args=(1024, 3, "float4"))
    assert same.name_expression == h.name_expression and same.params == h.params
    with pytest.raises(TypeError, match="template arguments twice"):
        CudaKernel(NS, "a::b::hist<1, 2, float>", template_args=(1, 2, "float"))
    with pytest.raises(TypeError, match="or write it in the name: a::b::hist<...>"):
        CudaKernel(NS, "a::b::hist")
    with pytest.raises(ValueError, match="name 'a::b::k<2>' has template arguments, but the "
                                         "kernel is not a template"):
        CudaKernel(NS, "a::b::k<2>")


# -- types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ctype", "size", "align"),
    [("float4", 16, 16), ("float3", 12, 4), ("float2", 8, 8), ("double2", 16, 16),
     ("double3", 24, 8), ("int2", 8, 8), ("uint4", 16, 16), ("char3", 3, 1), ("uchar4", 4, 4),
     ("short4", 8, 8), ("longlong2", 16, 16), ("ulong4", 32, 16), ("__half2", 4, 4),
     ("double4_32a", 32, 32), ("longlong4_16a", 32, 16)],
)
def test_vector_types_have_cuda_size_and_alignment(ctype, size, align):
    dtype, a, base, lanes = VECTOR_TYPES[ctype]
    assert dtype.itemsize == size and a == align and base.itemsize * lanes == size
    assert dtype.names == tuple("xyzw"[:lanes])


@pytest.mark.parametrize(
    ("spelling", "dtype"),
    [("cuFloatComplex", np.complex64), ("cuDoubleComplex", np.complex128),
     ("thrust::complex<double>", np.complex128), ("__half", np.float16), ("half", np.float16)],
)
def test_complex_and_half_types(spelling, dtype):
    sig = parse_signature(f"__global__ void k({spelling} v, const {spelling}* p) {{}}")
    assert sig.params[0].dtype == dtype and sig.params[1].dtype == dtype


def test_enums_pass_as_their_underlying_type():
    src = "enum Mode { A, B };\nenum class Small : unsigned char { X };\n" \
          "__global__ void k(Mode m, Small s, const Mode* ms) {}"
    assert [p.dtype for p in parse_signature(src).params] == [np.int32, np.uint8, np.int32]


def test_member_types_of_class_templates():
    src = """
template <typename T> struct vec4 { typedef float4 Type; };
template <> struct vec4<double> { typedef double4 Type; };
template <typename T> struct Traits { using Index = int; };
template <typename T>
__global__ void integrate(typename vec4<T>::Type* __restrict__ pos, typename Traits<T>::Index n) {}
"""
    f = CudaKernel(src, "integrate<float>").params
    d = CudaKernel(src, "integrate", template_args=(np.float64,)).params
    assert (f[0].dtype, f[0].align) == (cuda_dtype("float4"), 16)
    assert (d[0].dtype, d[0].align) == (cuda_dtype("double4"), 16) and d[0].dtype.itemsize == 32
    assert f[1].dtype == np.int32 and d[1].dtype == np.int32


def test_template_defaults_make_the_instantiation():
    src = "template <typename T = double, int N = 4>\n__global__ void k(T* x) {}"
    k = CudaKernel(src)
    assert k.name_expression == "k<double, 4>" and k.params[0].dtype == np.float64
    assert CudaKernel(src, "k<float, 2>").params[0].dtype == np.float32


def test_bool_constant_tag_parameters():
    src = ("#include <type_traits>\ntemplate <bool W>\n__global__ void k(float* y, int n, "
           "std::bool_constant<W>) { int i = threadIdx.x; if (i < n) y[i] = W ? 1.0f : 2.0f; }")
    k = CudaKernel(src, "k<true>", engine="emulator")
    assert k.params[2].kind == "tag" and k.params[2].dtype.itemsize == 1
    y = np.zeros(4, np.float32)
    k(y, 4, True, n_threads=4)
    np.testing.assert_array_equal(y, 1.0)
    with pytest.raises(TypeError, match="empty tag class.*pass True, False or None"):
        k(y, 4, "yes")


def test_bfloat16_without_ml_dtypes_is_a_clear_error(monkeypatch):
    from cunumpy._lang import cuda_types as _cuda_types

    monkeypatch.setattr(_cuda_types, "_bfloat16", lambda: None)
    with pytest.raises(NotImplementedError, match="parameter 'x'.*bfloat16.*ml_dtypes"):
        CudaKernel("__global__ void k(__nv_bfloat16* x) {}")


STRUCTS = r"""
struct __align__(16) Big { double a; float b; };        // 16 bytes, 16-aligned
struct Inner { char c; float3 v; };                       // c@0, v@4: 16 bytes
struct Outer { Inner in; double d; int n[3]; short s; };  // in@0 d@16 n@24 s@36: 40
typedef struct { int i; } Anon;
union U { int i; float f; };
struct Bits { int a : 3; };
struct Derived : Inner { int z; };
struct WithMethods { float x; __device__ float twice() const { return 2 * x; } static const int K = 3; };
__global__ void k(Outer o, const Big* b, Anon a, WithMethods w, Inner* in) {}
"""


def test_struct_layouts_follow_c_rules():
    p = {q.name: q for q in parse_signature(STRUCTS).params}
    o = p["o"].dtype
    assert p["o"].kind == "struct" and o.itemsize == 40 and p["o"].align == 8
    assert [o.fields[n][1] for n in o.names] == [0, 16, 24, 36]
    assert o["in"].itemsize == 16 and o["in"].fields["v"][1] == 4
    assert p["b"].dtype.itemsize == 16 and p["b"].align == 16
    assert p["a"].dtype.names == ("i",)
    assert p["w"].dtype.names == ("x",)  # member functions and static members are not data


@pytest.mark.parametrize(("decl", "why"), [("U u", "unions"), ("Bits bits", "bit-field"),
                                           ("Derived d", "base classes"),
                                           ("Missing m", "not a type cunumpy knows")])
def test_structs_that_cannot_be_checked_say_why(decl, why):
    src = STRUCTS.replace("__global__ void k(", f"__global__ void k2({decl}, ")
    with pytest.raises(NotImplementedError, match=f"parameter '{decl.split()[1]}'.*{why}"):
        CudaKernel(src, "k2")
    CudaKernel(src, "k2", check_signature=False)  # still constructible unchecked


# -- argument checks --------------------------------------------------------------------------

VEC = r"""
struct P { float a; int b; };
__global__ void k(float4 v, const float4* x, P p, float* y, float* opt) {}
"""


@pytest.fixture
def vec():
    return CudaKernel(VEC, engine="emulator")


def test_vector_and_struct_values_become_records(vec):
    x = np.zeros(2, cuda_dtype("float4"))
    y = np.zeros(2, np.float32)
    out = vec.check_args((1, 2, 3, 4), x, {"a": 0.5, "b": 3}, y, None)
    assert out[0].shape == () and out[0].dtype == cuda_dtype("float4")
    assert out[0]["w"] == 4 and out[2]["b"] == 3 and out[4] is None
    out = vec.check_args(np.array([1, 2, 3, 4], np.float32), np.zeros((2, 4), np.float32),
                         np.array((0.5, 3), [("u", np.float32), ("v", np.int32)])[()], y, y)
    assert out[0]["z"] == 3 and out[2]["a"] == 0.5


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (((1, 2, 3),), TypeError, "argument 'v'.*vector float4 has 4 members.*got 3"),
        ((1.0,), TypeError, "'float4 v' is a vector float4 passed by value; pass a tuple of 4"),
        ((np.zeros((), [("a", np.float64)]),), TypeError, "does not have the layout of vector"),
        ((None,), TypeError, "argument 'v'"),
    ],
)
def test_vector_value_errors(vec, args, error, match):
    x = np.zeros(2, cuda_dtype("float4"))
    with pytest.raises(error, match=match):
        vec.check_args(args[0], x, (0.5, 3), np.zeros(2, np.float32), None)


def test_struct_value_errors_name_the_members(vec):
    x = np.zeros(2, cuda_dtype("float4"))
    y = np.zeros(2, np.float32)
    with pytest.raises(TypeError, match="members \\['a', 'b'\\]; missing \\['b'\\], unknown \\['c'\\]"):
        vec.check_args((1, 2, 3, 4), x, {"a": 1.0, "c": 2}, y, None)
    with pytest.raises(TypeError, match="member 'b'.*takes an integer"):
        vec.check_args((1, 2, 3, 4), x, (1.0, 2.5), y, None)


def test_vector_pointer_dtype_shape_and_alignment_errors(vec):
    good = ((1, 2, 3, 4), None, (0.5, 3), np.zeros(2, np.float32), None)
    with pytest.raises(TypeError, match="'const float4\\* x' needs float4 .*or float32 with a "
                                        "last axis of 4"):
        vec.check_args(good[0], np.zeros((2, 3), np.float32), *good[2:])
    buf = np.zeros(20, np.float32)
    off = next(k for k in range(1, 4) if (buf.ctypes.data + 4 * k) % 16)
    with pytest.raises(ValueError, match="not a multiple of 16 bytes, the alignment of float4"):
        vec.check_args(good[0], buf[off : off + 8].reshape(2, 4), *good[2:])


def test_none_for_a_value_parameter_is_refused():
    k = CudaKernel("__global__ void k(int n, float* y) {}", engine="emulator")
    with pytest.raises(TypeError, match="argument 'n' is None, but parameter 'int n' is a value"):
        k.check_args(None, np.zeros(1, np.float32))
    with pytest.raises(TypeError, match="has no array argument to infer the launch size"):
        CudaKernel("__global__ void k(float* y) {}", engine="emulator")(None)


def test_null_pointer_dereference_is_named_on_the_emulator():
    from cunumpy.emulation import OutOfBoundsError

    k = CudaKernel("__global__ void k(const float* x, float* y, int n) {\n"
                   "  int i = threadIdx.x; if (i < n) y[i] = x[i]; }", engine="emulator")
    with pytest.raises(OutOfBoundsError, match="null pointer dereference: argument 'x' .*None "
                                               "was passed.*k.cu:2.*guard the access"):
        k(None, np.zeros(4, np.float32), 4, n_threads=4)


# -- declared outputs -------------------------------------------------------------------------

OUT = r"""
__global__ void k(const float* x, float* y, unsigned char* flags, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    count[i] += 1;
    if (i % 2 == 0) { y[i] = x[i]; flags[i] = 0xA5; }
}
"""


@pytest.mark.parametrize(
    ("outputs", "match"),
    [(["z"], "'z', which is not a parameter; the parameters are x, y, flags, count, n"),
     (["n"], "'n' \\(int n\\), which is a value"),
     (["x"], "'x' \\(const float\\* x\\), whose pointee is const"),
     (["y", "y"], "'y' twice")],
)
def test_outputs_must_be_writable_pointer_parameters(outputs, match):
    with pytest.raises(ValueError, match=match):
        CudaKernel(OUT, outputs=outputs)


def test_outputs_is_a_list_of_names():
    with pytest.raises(TypeError, match="not one str; write outputs=\\['y'\\]"):
        CudaKernel(OUT, outputs="y")
    assert CudaKernel(OUT, outputs=("y", "flags")).outputs == ("y", "flags")


def test_unwritten_declared_outputs_are_reported_with_indices():
    from cunumpy.emulation import UnwrittenOutputError

    k = CudaKernel(OUT, outputs=["y", "flags"], engine="emulator")
    x = np.ones(6, np.float32)
    y, flags, count = np.zeros(6, np.float32), np.zeros(6, np.uint8), np.zeros(6, np.int32)
    with pytest.raises(UnwrittenOutputError) as info:
        k(x, y, flags, count, 6, n_threads=6)
    text = str(info.value)
    assert "argument 'y' (float32[6]): 3 of 6 elements never written (indices 1, 3, 5)" in text
    # flags: even elements hold 0xA5, the first poison pattern: confirmed by a second launch
    assert "argument 'flags' (uint8[6]): 3 of 6 elements never written (indices 1, 3, 5)" in text
    assert "declared in outputs=" in text
    # the in/out argument was restored before the confirming launch
    np.testing.assert_array_equal(count, 1)


def test_fully_written_outputs_pass_and_undeclared_arrays_are_not_poisoned():
    k = CudaKernel(OUT, outputs=["y"], engine="emulator")
    y = np.zeros(6, np.float32)
    with pytest.raises(Exception, match="'y'"):
        k(np.ones(6, np.float32), y, np.zeros(6, np.uint8), np.zeros(6, np.int32), 6)
    k2 = CudaKernel(OUT, engine="emulator")  # nothing declared: nothing poisoned
    y = np.full(6, 7.0, np.float32)
    k2(np.ones(6, np.float32), y, np.zeros(6, np.uint8), np.zeros(6, np.int32), 6)
    np.testing.assert_array_equal(y, [1, 7, 1, 7, 1, 7])


def test_assert_kernels_agree_uses_the_declared_outputs(monkeypatch):
    from cunumpy.emulation import UnwrittenOutputError
    from cunumpy.kernels import Kernel
    from cunumpy.testing import assert_kernels_agree

    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")

    def host(x, y, n):
        y[:] = 2 * x

    src = r"""
__global__ void dbl(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i != 3) y[i] = 2 * x[i];
}"""

    def make_args(backend, seed):
        x = np.random.default_rng(seed).random(8, dtype=np.float32)
        return x, np.zeros(8, np.float32), 8

    good = Kernel(host, cuda=CudaKernel(src.replace(" && i != 3", ""), outputs=["y"]))
    assert assert_kernels_agree(good, make_args, ports=["cuda"]) == {"cuda": "emu-cuda"}
    bad = Kernel(host, cuda=CudaKernel(src, outputs=["y"]))
    with pytest.raises(UnwrittenOutputError, match="argument 'y'.*indices 3\\)"):
        assert_kernels_agree(bad, make_args, ports=["cuda"])


# -- the cupy engine's compile inputs ---------------------------------------------------------


def test_host_api_headers_have_stand_ins_for_nvrtc():
    from cunumpy.kernels.cuda import _NVRTC_INCLUDE

    k = CudaKernel("#include <cuda_runtime.h>\n__global__ void k(float* x) {}")
    code, options, expression = k._compile_inputs()
    assert code == k.source and expression == "k"
    assert options[-2:] == (f"-I{_NVRTC_INCLUDE}", "--pre-include=cunumpy_nvrtc.h")
    names = {p.name for p in _NVRTC_INCLUDE.iterdir()}
    assert {"cuda.h", "cuda_runtime.h", "device_launch_parameters.h", "stdint.h", "cstdint",
            "math.h", "cmath", "stdio.h", "assert.h", "float.h", "limits.h"} <= names
    for name in names:
        text = (_NVRTC_INCLUDE / name).read_text()
        assert "#pragma once" in text, name
        # only CCCL's headers, which CuPy puts on NVRTC's include path, and the pre-included
        # cunumpy_nvrtc.h are included
        assert all(line.startswith(("#include <cuda/std/", '#include "cunumpy_nvrtc.h"',
                                    "#include <cuda_fp16.h>", "#include <cuda_bf16.h>",
                                    '#include "float.h"'))
                   for line in text.splitlines() if line.startswith("#include")), name
