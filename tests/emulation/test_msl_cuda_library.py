"""The Metal -> CUDA translation of whole-library kernels (the ``metal-cuda`` engine), on its text.

The same units are compiled for the host and run by ``tests/kernels/test_metal_library_host.py``,
and by NVRTC on a GPU through the ``metal-cuda`` case of the ``metal_engine`` fixture.
"""

from __future__ import annotations

import re

import pytest

from cunumpy._lang.metal_library import parse_library
from cunumpy._lang.preprocess import preprocess
from cunumpy.emulation._msl_cuda_library import by_value, constant_storage, translate_library

LIB = """
#include <metal_stdlib>
using namespace metal;
struct P { uint n; float4 v; };
constant float table[3] = {1.0f, 2.0f, 3.0f};
constexpr constant float4 ones = float4(1.0f);
constant int count = 4;
constant bool fast [[function_constant(0)]];
kernel void k(device float* y [[buffer(0)]], constant P& p [[buffer(1)]],
              device atomic_uint& hits [[buffer(2)]], device const float& w [[buffer(4)]],
              threadgroup float* tmp [[threadgroup(1)]], threadgroup float* more [[threadgroup(0)]],
              ushort2 pos [[thread_position_in_grid]]) {
    threadgroup float tile[32];
    tile[pos.x] = table[pos.x % 3] * (fast ? 2.0h : 1.0h);
    tmp[pos.x] = more[pos.x] + w;
    y[pos.x] = tile[pos.x] + p.v.x + float(count);
}
template <typename T>
kernel void t(device T* y, uint i [[thread_position_in_grid]]) { y[i] = T(1); }
template [[host_name("t_half")]] [[kernel]] decltype(t<half>) t<half>;
kernel void tex(texture2d<float> img [[texture(0)]], device float* y) {}
"""


@pytest.fixture(scope="module")
def lib():
    pre = preprocess(LIB, filename="lib.metal")
    return parse_library(pre.text), pre.files


def test_arguments_follow_buffer_and_threadgroup_indices(lib):
    parsed, files = lib
    k = parsed.kernels["k"]
    unit = translate_library(parsed, k, {"fast": True}, files, threads_per_group=64)
    # buffers by index: pointers and writable references as device pointers, the rest by value
    assert [(a.kind, a.index) for a in unit.args] == [
        ("buffer", 0), ("value", 1), ("buffer", 2), ("value", 4), ("offset", 0), ("offset", 1)]
    assert [by_value(p) for p in k.params if p.kind == "buffer"] == [False, True, False, True]
    src = unit.source
    assert "__launch_bounds__(64) cn_metal_kernel(" in src
    assert "const cn::msl::bare_t<cn::msl::param_t<cn_fp_t, 1>> cn_v1" in src
    assert "void* cn_b2" in src and "const unsigned cn_o1" in src
    assert "CN_DYNAMIC_SHARED(cn_smem);" in src
    assert "cn::msl::bind_ptr<cn::msl::param_t<cn_fp_t, 4>>(cn_smem + cn_o1)" in src
    assert "cn::msl::attr_as<cn::msl::param_t<cn_fp_t, 6>>(cn::msl::thread_position_in_grid(cn_t))" \
        in src
    assert re.search(r'extern "C" \{ __device__ long long cn_sizes\[\] = \{.*, 4, 0, 0\}; \}',
                     src)
    assert unit.params == 7


def test_library_text_is_edited_for_nvrtc_keeping_lines(lib):
    parsed, files = lib
    unit = translate_library(parsed, parsed.kernels["k"], {"fast": True}, files)
    src = unit.source
    assert "static constexpr bool fast = true;" in src
    assert "__shared__ float tile[32];" in src
    assert "half(2.0f)" in src and "2.0h" not in src
    assert "::cn::cond_t<" in src  # a half/float conditional typed as Metal types it
    assert "[[" not in src.split('#line 1 "launch"')[0]
    assert "typedef decltype(&k) cn_fp_t;" in src
    # the body keeps its line: `#line 1 "lib.metal"` then the text line for line
    body = src.split('#line 1 "lib.metal"\n', 1)[1]
    assert body.splitlines()[LIB.splitlines().index("    threadgroup float tile[32];")] \
        .strip().startswith("__shared__ float tile[32];")


def test_instantiations_call_the_template(lib):
    parsed, files = lib
    src = translate_library(parsed, parsed.kernels["t_half"], {}, files).source
    assert "typedef decltype(t<half>) cn_kernel_t;" in src
    assert "typedef cn_kernel_t* cn_fp_t;" in src and "cn_fp_t cn_fp = &t<half>;" in src


def test_program_scope_constants_of_array_or_class_type_are_constant_memory():
    text = ("const constant float table[3] = {1, 2, 3};\n"
            "constexpr constant float4 ones = float4(1.0f);\n"
            "const constant int count = 4;\n"
            "constexpr constant uint n = 2;\n"
            "struct S { static constant constexpr float4 z = float4(0); };\n"
            "constant float* pick(constant float* p) { return p; }\n")
    out = constant_storage(text).splitlines()
    assert out[0] == "__constant__ const constant float table[3] = {1, 2, 3};"
    assert out[1] == "__constant__ const constant float4 ones = float4(1.0f);"
    assert out[2:] == text.splitlines()[2:]


def test_texture_kernels_are_refused_naming_the_engine(lib):
    parsed, files = lib
    with pytest.raises(NotImplementedError, match=r"\[metal-cuda kernel 'tex'\].*texture"):
        translate_library(parsed, parsed.kernels["tex"], {}, files)
