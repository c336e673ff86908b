"""MetalLibrary's other engines, checked here without their hardware.

- ``metal-cuda``: the test bodies of ``test_metal_library.py`` run on the engine with CuPy
  replaced by a stand-in whose ``RawModule`` compiles the engine's generated CUDA text for the
  host (g++, ``cuda_host/cn_cuda_host.h``) and runs it (``_cuda_host.py``): the front end, the
  engine's binding, copies and geometry, the translation and the kernel all run. NVRTC itself
  and the GPU are the GPU batch's (``tools/gpu_mlengines.sh``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import test_metal_library as bodies

from cunumpy.emulation import find_compiler
from cunumpy.kernels import MetalLibrary

CUDA_CASES = [
    bodies.test_struct_scalar_and_names,
    bodies.test_small_array_binds_a_vector_reference,
    bodies.test_dispatch_threads_and_threadgroups,
    bodies.test_macro_defined_and_instantiated_kernels,
    bodies.test_half_float_conditional_is_float,
    bodies.test_threadgroup_memory,
    bodies.test_function_constants,
]


def _reset_engines() -> None:
    from cunumpy._engines import _metal_registry

    _metal_registry._engine.cache_clear()
    _metal_registry._by_setting.clear()


@pytest.fixture(scope="module")
def lib() -> MetalLibrary:
    return MetalLibrary(bodies.SOURCE, filename="test.metal")


@pytest.fixture
def cuda_host(monkeypatch):
    """The metal-cuda engine with its CUDA text compiled and run on the host."""
    import _cuda_host

    find_compiler()
    _reset_engines()
    yield _cuda_host.install(monkeypatch)
    _reset_engines()


@pytest.mark.parametrize("case", CUDA_CASES, ids=lambda f: f.__name__[5:])
def test_metal_cuda_on_the_host(case, lib, cuda_host):
    case(lib, "metal-cuda")


def test_metal_cuda_aliasing_on_the_host(cuda_host):
    bodies.test_buffers_that_share_memory_alias_as_in_metal("metal-cuda")


def test_metal_cuda_device_arrays_in_place_on_the_host(lib, cuda_host):
    bodies.check_device_arrays_in_place(lib, cuda_host)


def test_metal_cuda_checks_sizes_against_the_compiler(cuda_host):
    """The engine reads sizeof of every parameter from the compiled unit (cn_sizes)."""
    lib = MetalLibrary("""
struct P { float4 a; float b; };   // 32 bytes: float4 alignment pads b
kernel void k(device float* y, constant P& p, uint i [[thread_position_in_grid]]) {
    y[i] = p.a.x + p.b;
}""")
    with pytest.raises(ValueError, match=r"\[metal-cuda kernel 'k'\] argument 'p' .* reads 32 "
                                         r"bytes; the buffer has 20"):
        lib.k.launch_buffers({0: np.zeros(1, np.float32), 1: np.zeros(20, np.uint8)},
                             (1, 1, 1), (1, 1, 1), {}, "metal-cuda")
    y = np.zeros(1, np.float32)
    p = np.zeros(32, np.uint8)
    p[:16].view(np.float32)[0] = 2.0
    p[16:20].view(np.float32)[0] = 0.5
    lib.k(y, p, grid=1, engine="metal-cuda")
    assert y[0] == 2.5


def test_metal_cuda_compile_errors_name_the_library_line(cuda_host):
    from cunumpy.emulation.errors import KernelCompileError

    lib = MetalLibrary("kernel void k(device float* y) {\n    y[0] = undefined_name;\n}\n",
                       filename="bad.metal")
    with pytest.raises(KernelCompileError, match=r"(?s)\[metal-cuda kernel 'k'\].*bad\.metal:2"):
        lib.k(np.zeros(1, np.float32), grid=1, engine="metal-cuda")


# -- mlx: the generated kernels through MetalKernel on emu-metal, and through MLX itself -------------
MLX_CASES = [*CUDA_CASES, bodies.test_buffers_that_share_memory_alias_as_in_metal]


@pytest.fixture
def mlx_host(monkeypatch):
    """The mlx engine with its mx.fast.metal_kernel kernels run by MetalKernel on emu-metal."""
    pytest.importorskip("mlx.core", reason="the mlx engine's library path needs MLX (mlx[cpu])")
    import _mlx_host

    find_compiler()
    _reset_engines()
    yield _mlx_host.install(monkeypatch)
    _reset_engines()


@pytest.mark.parametrize("case", MLX_CASES, ids=lambda f: f.__name__[5:])
def test_mlx_kernels_on_emu_metal(case, lib, mlx_host):
    if case is bodies.test_buffers_that_share_memory_alias_as_in_metal:
        case("mlx")
    else:
        case(lib, "mlx")
    assert mlx_host.made, "the mlx engine made no mx.fast.metal_kernel kernel"


def test_mlx_text_is_what_mlx_compiles(lib, mlx_host):
    """MLX itself (mlx[cpu], inside mx.export_function) builds the generated kernels: the text it
    prints holds the header and the body as generated, and is byte for byte the text MetalKernel
    (which ran the same kernels on emu-metal above) says MLX compiles."""
    import mlx.core as mx
    from _mlx_capture import capture_mlx

    from cunumpy.kernels import MetalKernel

    dt = np.dtype({"names": ["n", "scale", "bias"], "formats": ["<u4", "<f4", ("<f4", 4)],
                   "offsets": [0, 4, 16], "itemsize": 32})
    p = np.zeros((), dt)
    p["n"], p["scale"], p["bias"] = 6, 2.0, [0, 1, 0, 0]
    x = np.arange(6, dtype=np.float32)
    y = np.zeros_like(x)
    lib.affine(y, x, p[()], grid=6, engine="mlx")
    lib.scale_3_float(y, x, grid=5, engine="mlx")
    texts = []
    for made, inputs, args in mlx_host.calls[-2:]:
        kernel = mx.fast.metal_kernel(**made)

        def fn(*arrays, kernel=kernel, args=args):
            return kernel(inputs=list(arrays), verbose=True, **args)

        text = capture_mlx(fn, [mx.array(a) for a in inputs]).text
        ours = MetalKernel(made["source"], made["input_names"], made["output_names"],
                           name=made["name"], header=made["header"],
                           ensure_row_contiguous=made["ensure_row_contiguous"])
        template = {k: v for k, v in (args.get("template") or ())}
        assert text == ours.metal_source(*inputs, template=template or None,
                                         output_shapes=args["output_shapes"],
                                         output_dtypes=[np.uint8])
        assert made["header"] in text and made["source"] in text
        texts.append(text)
    # the 32-byte struct is a constant input (4 uint64), read as the `constant Params&` it is
    assert "const constant uint64_t* cn_b2 [[buffer(2)]]" in texts[0]
    assert "constant Params& p = *(constant Params*)(cn_b2);" in texts[0]
    assert "const device uint8_t* cn_b0 [[buffer(0)]]" in texts[0]
    # the template kernel: MLX's template line and instantiation, with the library's parameters
    assert "template <typename T, int K>" in texts[1]
    assert re.search(r'template \[\[host_name\("custom_kernel_cn_scale_3_float__float_3_uint8_t'
                     r'_uint8_t_uint8_t"\)\]\]', texts[1])



def test_edge_cases_on_metal_cuda_and_mlx(cuda_host, mlx_host):
    for engine in ("metal-cuda", "mlx"):
        bodies.test_engines_agree_on_edge_cases(engine)
