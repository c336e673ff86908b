"""The mlx engine's text for MetalLibrary kernels (``_engines/mlx/_library.py``), on its text.

That the generated kernels compute the right thing, and that MLX builds them as they are, is
``tests/kernels/test_metal_library_host.py`` (through MetalKernel on emu-metal, and MLX itself).
"""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy._engines.mlx._library import (
    CONSTANT_BYTES,
    buffer_layout,
    mlx_kernel_text,
    preamble_clashes,
    rename,
)
from cunumpy.kernels import MetalLibrary

SRC = """
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;
struct Big { float v[20]; };
struct Add { static float apply(float a, float b) { return a + b; } };
inline float ceildiv(float a, float b) { return a / b; }
constant bool flag [[function_constant(3)]];
float pick(constant float* table, uint i) { return table[i]; }

kernel void big(device float* y, constant Big& b, constant float* table,
                uint3 grid_size [[grid_size]], ushort2 tid [[thread_position_in_threadgroup]]) {
    int threads_per_grid = 2;
    y[0] = b.v[0] + pick(table, tid.x) + float(threads_per_grid) + float(grid_size.x)
           + (is_function_constant_defined(flag) ? 1.0f : ceildiv(4.0f, 2.0f));
}

template <typename T, typename Op, int N>
kernel void fold(device T* y, device const T* x, uint i [[thread_position_in_grid]]) {
    T s = T(0);
    for (int k = 0; k < N; ++k) s = Op::apply(s, x[i * N + k]);
    y[i] = s;
}
template [[host_name("fold_add_4")]] kernel void fold<float, Add, 4>(
    device float* y, device const float* x, uint i [[thread_position_in_grid]]);
"""


@pytest.fixture(scope="module")
def lib() -> MetalLibrary:
    return MetalLibrary(SRC, filename="edge.metal")


def _gen(lib, name, layouts, tgmem=None, constants=None):
    k = lib._parsed.kernels[name]
    return mlx_kernel_text(lib._parsed, k, constants or {}, lib._system, layouts, tgmem or {})


def test_layouts_follow_mlx_constant_rule():
    k = MetalLibrary(SRC).big.kernel
    y, b, table = [p for p in k.params if p.kind == "buffer"]
    assert buffer_layout(y, 4) == "device"  # written: MLX outputs-as-inputs are device memory
    assert buffer_layout(table, CONSTANT_BYTES) == "constant"
    assert buffer_layout(table, CONSTANT_BYTES + 1) == "device"
    assert buffer_layout(table, 8, shared=True) == "device"  # a slice of a union of views
    assert buffer_layout(b, 80) == "device"


def test_constant_buffers_too_big_for_mlx_bind_as_device_const(lib):
    gen = _gen(lib, "big", {0: "device", 1: "device", 2: "constant"})
    assert "device const Big& b = *(device const Big*)(cn_b1);" in gen.source
    assert "constant float* table = (constant float*)(cn_b2);" in gen.source
    assert gen.input_names == ("cn_b0", "cn_b1", "cn_b2") and gen.output_names == ("cn_done",)


def test_attribute_names_the_body_declares_put_the_body_in_a_block(lib):
    gen = _gen(lib, "big", {0: "device", 1: "device", 2: "constant"})
    lines = gen.source.splitlines()
    # the kernel's own `grid_size` parameter has MLX's type: MLX's parameter is it
    assert not any(line.startswith("uint3 grid_size =") for line in lines)
    # `threads_per_grid` is a local of the body: MLX would declare a parameter of that name, so
    # the bindings and the body are a block of their own, attributes captured before it
    assert "const uint3 cn_a_thread_position_in_threadgroup = thread_position_in_threadgroup;" \
        in lines
    assert "ushort2 tid = ushort2(cn_a_thread_position_in_threadgroup.xy);" in lines
    assert lines.index("{") < lines.index('#line 12 "edge.metal"') and lines[-1] == "}"


def test_header_edits(lib):
    gen = _gen(lib, "big", {0: "device", 1: "device", 2: "constant"}, constants={"flag": True})
    h = gen.header
    assert h.startswith("#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\n")
    assert "static constant constexpr const bool flag = true;" in h
    assert "(true) ? 1.0f" in gen.source
    assert "kernel" not in h.replace("MetalLibrary", "") and "[[" not in h
    # ceildiv is MLX's preamble's: the library's own is renamed, its uses too
    assert "inline float cn_lib_ceildiv(float a, float b)" in h
    assert "cn_lib_ceildiv(4.0f, 2.0f)" in gen.source
    assert "host_name" not in h and "fold<float, Add, 4>(" not in h
    # the kernel bodies are left out of the header (the body is MLX's kernel)
    assert "T s = T(0);" not in h and "pick(table, tid.x)" not in h


def test_template_arguments_mlx_cannot_pass_are_typedefs(lib):
    gen = _gen(lib, "fold_add_4", {0: "device", 1: "device"})
    assert gen.template == (("T", np.dtype(np.float32)), ("N", 4))
    assert "typedef Add Op;" in gen.source
    assert "T s = T(0);" in gen.source


def test_preamble_names_are_found_where_the_library_defines_them():
    text = ("template <typename T> struct Limits { };\nfloat f() { return Limits<float>(); }\n"
            "inline int ceildiv(int a, int b) { return a / b; }\nvoid g() { elem_to_loc(1); }\n")
    assert preamble_clashes(text) == {"Limits", "ceildiv"}
    out = rename(text, frozenset({"Limits"}))
    assert "struct cn_lib_Limits" in out and "cn_lib_Limits<float>()" in out
    assert rename("a.Limits = 1;", frozenset({"Limits"})) == "a.Limits = 1;"


def test_textures_are_refused_naming_the_engine():
    lib = MetalLibrary("kernel void t(texture2d<float> img [[texture(0)]], device float* y) {}")
    with pytest.raises(NotImplementedError, match=r"\[mlx kernel 't'\].*texture"):
        mlx_kernel_text(lib._parsed, lib._parsed.kernels["t"], {}, (), {0: "device"}, {})


def test_mlx_arrays_do_not_bind_writable_buffers(monkeypatch):
    mx = pytest.importorskip("mlx.core")
    from cunumpy._engines import mlx as engine

    monkeypatch.setattr(engine.MLXEngine, "check_available", lambda self: None)
    lib = MetalLibrary("kernel void k(device float* y, device const float* x) { y[0] = x[0]; }")
    with pytest.raises(TypeError, match=r"\[mlx kernel 'k'\] argument 'y' .*immutable"):
        lib.k(mx.zeros(4), np.ones(4, np.float32), grid=1, engine="mlx")


def test_integer_template_arguments_read_as_c_reads_them():
    lib = MetalLibrary("""
template <int N> kernel void k(device int* y) { y[0] = N; }
template [[host_name("k8")]] kernel void k<010>(device int* y);
template [[host_name("k16")]] kernel void k<0x10>(device int* y);
""")
    for name, value in (("k8", 8), ("k16", 16)):
        gen = mlx_kernel_text(lib._parsed, lib._parsed.kernels[name], {}, (), {0: "device"}, {})
        assert gen.template == (("N", value),)
