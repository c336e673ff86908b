"""The Metal -> CUDA translation of the ``cuda`` MetalKernel engine, checked on its text (no GPU).

The GPU runs of the same kernels are the ``cuda`` cases of the ``metal_engine`` fixture (Metal
conformance suite, spec examples, ``tests/kernels/test_metal_kernel.py``) and
``tests/kernels/test_metal_cuda_engine.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cunumpy._engines._metal_registry import get_metal_engine, resolve_metal_engine
from cunumpy.emulation._msl_cuda import KERNEL_NAME, nvrtc_log_as_gcc, rewrite_cuda, translate
from cunumpy.kernels import MetalKernel

RUNTIME = Path(__file__).resolve().parents[2] / "src" / "cunumpy" / "emulation" / "runtime"


def _signature(kernel: MetalKernel, *inputs, out, **kw):
    eng = get_metal_engine("emulator")
    *_, sig = kernel._prepare(inputs, out, kw.get("n_threads"), kw.get("template"), None, None,
                              eng)
    return sig


def test_threadgroup_declarations_become_shared_and_pointers_lose_the_space() -> None:
    text = rewrite_cuda(
        "threadgroup float tile[256];\n"
        "threadgroup float* p = tile;\n"
        "threadgroup atomic_uint count;\n"
        "auto q = (threadgroup float*)(p);\n"
    )
    lines = text.splitlines()
    assert lines[0].startswith("__shared__ float tile[256];")
    assert "__shared__" not in lines[1] and "float* p = tile;" in lines[1]
    assert lines[2].startswith("__shared__ atomic_uint count;")
    assert "threadgroup" not in lines[3]


def test_half_literals_and_metal_includes_are_rewritten_keeping_lines() -> None:
    src = "#include <metal_stdlib>\nhalf h = 1.5h + 2h;\n"
    out = rewrite_cuda(src)
    assert "metal_stdlib" not in out
    assert "half(1.5f)" in out and "half(2.0f)" in out
    assert out.count("\n") == src.count("\n")


def test_kernel_wrapper_declares_mlx_parameters_and_attributes() -> None:
    k = MetalKernel(
        "uint i = thread_position_in_grid.x;\n"
        "uint l = thread_index_in_simdgroup;\n"
        "if (i < x_shape[0]) y[i] = a[0] * x[i] + float(l);",
        inputs=["x", "a"], outputs=["y"], name="axpy",
    )
    x = np.zeros(40, np.float32)
    sig = _signature(k, x, 2.0, out=np.empty_like(x))
    unit = translate(sig, small_by_value=(False, True), threads_per_group=64)
    src = unit.source
    assert '#include "cn_metal_cuda.h"' in src
    assert f'extern "C" __global__ void __launch_bounds__(64) {KERNEL_NAME}(' in src
    assert "const cn::launch_t cn_L" in src
    assert "const float* __restrict__ cn_b0" in src  # x: a device pointer
    assert "const cn::small_t<float> cn_b2" in src   # a: fewer than 8 elements, by value
    assert "const cn::meta_t cn_m0" in src            # x_shape travels by value
    assert "if (!cn::thread_of(cn_L, cn_t)) return;" in src
    call = re.search(r"custom_kernel_axpy\w*\((.*)\);", src).group(1)
    assert "cn_m0.shape" in call and "cn_b2.v" in call
    assert "cn::msl::thread_position_in_grid(cn_t)" in call
    assert "cn::msl::thread_index_in_simdgroup(cn_t)" in call
    assert [a.kind for a in unit.args] == ["input", "meta", "small", "output"]
    # the body keeps its line numbers
    body = src.split('#line 1 "body"\n', 1)[1]
    assert body.splitlines()[2].startswith("if (i < x_shape[0])")


def test_scalar_reference_atomic_outputs_and_templates() -> None:
    k = MetalKernel(
        "uint i = thread_position_in_grid.x;\n"
        "atomic_fetch_add_explicit(&y[i % N], T(s), memory_order_relaxed);",
        inputs=["s"], outputs=["y"], name="hist", atomic_outputs=True,
    )
    sig = _signature(k, np.float32(1.0).reshape(()), out=np.zeros(4, np.float32),
                     n_threads=64, template={"T": np.float32, "N": 4})
    unit = translate(sig, small_by_value=(True,))
    src = unit.source
    assert "template <typename T, int N>" in src
    assert "metal::atomic<float>* y" in src
    assert "const float& s" in src and "cn_b0.v[0]" in src
    assert re.search(r"custom_kernel_hist\w*<float, 4>\(", src)


def test_unsupported_constructs_raise_naming_the_engine() -> None:
    k = MetalKernel("float4 c = tex.read(uint2(0, 0)); y[0] = c.x;", inputs=["x"],
                    outputs=["y"], header="texture2d<float> tex;\n", name="tex")
    sig = _signature(k, np.zeros(8, np.float32), out=np.zeros(1, np.float32), n_threads=1)
    with pytest.raises(NotImplementedError, match=r"\[metal-cuda kernel 'tex'\] header:1 .*texture2d"):
        translate(sig)


def test_nvrtc_log_lines_point_at_body_and_header() -> None:
    log = 'body(3): error: identifier "q" is undefined\nheader(1): warning: x\nother'
    assert nvrtc_log_as_gcc(log).splitlines() == [
        'body:3: error: identifier "q" is undefined', "header:1: warning: x", "other"]


def test_engine_names() -> None:
    # One name (the engine table's), and the setting users type as an alias of it.
    assert resolve_metal_engine("cuda") == resolve_metal_engine("metal-cuda") == "metal-cuda"
    assert get_metal_engine("cuda") is get_metal_engine("metal-cuda")
    assert get_metal_engine("cuda").name == "metal-cuda"
    with pytest.raises(ValueError, match="valid engines"):
        resolve_metal_engine("metal-on-cuda")


def test_one_runtime_for_host_and_device() -> None:
    """The device header includes the emulator's type layer; NVRTC gets libcu++ for std."""
    cuda = (RUNTIME / "cn_metal_cuda.h").read_text()
    types = (RUNTIME / "cn_metal_types.h").read_text()
    assert '#include "cn_metal_types.h"' in cuda
    assert re.search(r'#ifdef __CUDACC_RTC__\s*\n#include "cn_rtc_std.h"', types)
    shim = (RUNTIME / "cn_rtc_std.h").read_text()
    assert "<cuda/std/type_traits>" in shim and "namespace std" in shim


def test_cuda_engine_without_gpu_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from cunumpy._backend import cupy_status

    if cupy_status()[0]:
        pytest.skip("a GPU is present")
    k = MetalKernel("y[thread_position_in_grid.x] = 1.0f;", inputs=[], outputs=["y"])
    with pytest.raises(RuntimeError, match="cuda engine"):
        k(out=np.zeros(4, np.float32), engine="cuda")


def test_header_extensions_of_namespace_metal_reopen_the_real_one() -> None:
    """MLX's headers add type traits to namespace metal; the user's code is in cn_user."""
    src = "int a;\nnamespace metal {\ntemplate <class T> struct X { T v; };\n}\nint b;\n"
    out = rewrite_cuda(src)
    assert out.splitlines() == [
        "int a;", "} namespace metal {", "template <class T> struct X { T v; };",
        "} namespace cn_user {", "int b;"]
    assert rewrite_cuda("using namespace metal;\n") == "using namespace metal;\n"


def test_saturating_integer_functions_have_metal_names() -> None:
    """addsat/subsat/madsat (MSL spelling) in the shared runtime, through the CPU emulator."""
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))
    k = MetalKernel(
        "uint i = thread_position_in_grid.x;\n"
        "u[i] = addsat(x[i], 0xFFFFFFF0u); s[i] = subsat(int(x[i]) - 2147483647, 5);\n"
        "m[i] = madsat(x[i], 0x10000000u, 7u); l[i] = madsat(long(x[i]) - 16, 1L << 59, 3L);",
        inputs=["x"], outputs=["u", "s", "m", "l"], name="sat")
    x = np.arange(32, dtype=np.uint32)
    u, s = np.zeros(32, np.uint32), np.zeros(32, np.int32)
    m, lo = np.zeros(32, np.uint32), np.zeros(32, np.int64)
    k(x, out=(u, s, m, lo), engine="emulator")
    wide = [int(v) * 0x10000000 + 7 for v in x]
    np.testing.assert_array_equal(m, [min(w, 2**32 - 1) for w in wide])
    wide = [(int(v) - 16) * (1 << 59) + 3 for v in x]
    np.testing.assert_array_equal(lo, [max(min(w, 2**63 - 1), -(2**63)) for w in wide])
    np.testing.assert_array_equal(u, np.minimum(x.astype(np.int64) + 0xFFFFFFF0, 2**32 - 1))
    want = np.maximum(x.astype(np.int64) - 2147483647 - 5, -(2**31))
    np.testing.assert_array_equal(s, want)


def test_swizzles_of_swizzles_are_spelled_as_one_swizzle() -> None:
    body = ("float2 a = v.xy.yx;\n"
            "w.xyz\n  .zy = float2(1.0f, 2.0f);\n"
            "float c = col.rgb.r + p->wzyx.xy.y + rows[i].xyzw.zyx.xy.x;\n"
            "float2 bad = v.xy.zw;\n")
    text = rewrite_cuda(body)
    lines = text.splitlines()
    assert len(lines) == 5  # newlines kept: body:LINE stays right
    assert lines[0] == "float2 a = v.yx;"
    assert lines[1] == "w.zy" and lines[2] == " = float2(1.0f, 2.0f);"
    assert lines[3] == "float c = col.r + p->z + rows[i].z;"
    assert lines[4] == "float2 bad = v.xy.zw;"  # z, w are past v.xy: left for NVRTC to report
    k = MetalKernel("float4 v = x[0]; y[0] = v.xyz.zy.x;", inputs=["x"], outputs=["y"],
                    name="swz")
    unit = translate(_signature(k, np.zeros(4, np.float32), out=np.zeros(1, np.float32),
                                n_threads=1))
    assert "y[0] = v.z;" in unit.source and ".zy" not in unit.source


def test_bfloat16_buffers_are_bfloat16_t_pointers() -> None:
    # The engine stores bfloat16 arrays as uint16 CuPy arrays and passes their pointers: the
    # kernel must read them as the runtime's 16-bit bfloat16_t, which the emulator uses too.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = ml_dtypes.bfloat16
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = bfloat16_t(float(x[i]) * 2.0f);",
                    inputs=["x"], outputs=["y"], name="bf")
    unit = translate(_signature(k, np.zeros(8, bf), out=np.zeros(8, bf), n_threads=8))
    assert "const bfloat16_t* __restrict__ cn_b0" in unit.source
    assert "bfloat16_t* cn_b1" in unit.source
    header = (RUNTIME / "cn_metal_types.h").read_text()
    assert "static_assert(sizeof(bfloat) == 2" in header


def test_bfloat16_on_the_emulator_rounds_like_ml_dtypes() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = ml_dtypes.bfloat16
    k = MetalKernel("uint i = thread_position_in_grid.x;\n"
                    "float v = float(x[i]) * s[0] + 0.25f;\n"
                    "y[i] = bfloat16_t(v);\nz[i] = as_type<ushort>(y[i]);",
                    inputs=["x", "s"], outputs=["y", "z"], name="bf_round")
    x = np.linspace(-3, 3, 40).astype(bf)
    y, z = np.empty(40, bf), np.empty(40, np.uint16)
    k(x, 1.5, out=(y, z), engine="emulator")
    want = (x.astype(np.float32) * np.float32(1.5) + np.float32(0.25)).astype(bf)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(z, want.view(np.uint16))
