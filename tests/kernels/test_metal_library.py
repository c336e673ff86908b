"""MetalLibrary: whole Metal sources, their kernels, binding rules and checks, on every Metal
engine (the plugin's ``metal_engine`` fixture: ``emu-metal`` here, ``metal-cuda`` on an NVIDIA GPU,
``mlx`` on a Mac).

``test_metal_library_host.py`` runs the same bodies on the ``metal-cuda`` engine with its CUDA
text compiled for the host, and the mlx engine's generated kernels through ``MetalKernel``."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation import EmulatorOptions
from cunumpy.emulation.errors import KernelCompileError, OutOfBoundsError
from cunumpy.kernels import MetalLibrary

SOURCE = r"""
#include <metal_stdlib>
using namespace metal;

// names the emulator's runtime (MLX's preamble) also has: the library's own win
template <typename T> struct Limits { static constant constexpr T max = T(7); };
template <typename T, typename U> inline T ceildiv(T a, U b) { return (a + b - 1) / b; }

struct Params {
    uint n;
    float scale;
    float4 bias;     // 16-byte aligned: offset 16, the struct is 32 bytes
};

kernel void affine(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],
                   constant Params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i >= p.n) return;
    y[i] = p.scale * x[i] + p.bias.y + Limits<float>::max - float(ceildiv(7u, 2u));
}

kernel void geometry(device uint* out, uint3 tpg [[threads_per_grid]],
                     uint3 tptg [[threads_per_threadgroup]], ushort2 pos [[thread_position_in_grid]],
                     uint3 groups [[threadgroups_per_grid]]) {
    if (pos.x == 0 && pos.y == 0) {
        out[0] = tpg.x; out[1] = tpg.y; out[2] = tptg.x; out[3] = tptg.y;
        out[4] = groups.x; out[5] = groups.y;
    }
}

kernel void vec4(device float4* y, constant float4& v, constant uint& n,
                 uint i [[thread_position_in_grid]]) {
    if (i < n) y[i] = v * float(i);
}

kernel void elu(device half* y, device const half* xs, constant float& m,
                uint i [[thread_position_in_grid]]) {
    half x = xs[i];
    y[i] = x > 0 ? x : m * (exp(x) - 1);
}

#define UNARY(NAME, T, OP) \
kernel void NAME(device T* y, device const T* x, uint i [[thread_position_in_grid]]) { \
    y[i] = OP(x[i]); }
UNARY(neg_f32, float, -)
UNARY(neg_i32, int, -)

template <typename T, int K>
kernel void scale_k(device T* y, device const T* x, uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * T(K);
}
#define STR(x) #x
#define INSTANTIATE(T, K) \
  template [[host_name("scale_" STR(K) "_" #T)]] [[kernel]] decltype(scale_k<T, K>) scale_k<T, K>;
INSTANTIATE(float, 3)
typedef decltype(scale_k<int, 2>) scale_int_t;
template [[host_name("scale" "_2_" "int")]] kernel scale_int_t scale_k<int, 2>;

template <typename T>
kernel void copy_t(device T* y, device const T* x, uint i [[thread_position_in_grid]]) {
    y[i] = x[i];
}
template [[host_name("copy_u16")]] kernel void copy_t(device ushort* y, device const ushort* x,
                                                      uint i [[thread_position_in_grid]]);

kernel void reverse(device float* y, device const float* x,
                    threadgroup float* tmp [[threadgroup(0)]],
                    uint t [[thread_position_in_threadgroup]], uint n [[threads_per_threadgroup]],
                    uint g [[threadgroup_position_in_grid]]) {
    tmp[t] = x[g * n + t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[g * n + t] = tmp[n - 1 - t];
}

constant bool has_bias [[function_constant(0)]];
constant int repeat [[function_constant(1)]];
constant int times = is_function_constant_defined(repeat) ? repeat : 4;

kernel void fc(device float* y, uint i [[thread_position_in_grid]]) {
    y[i] = float(times) + (has_bias ? 0.5f : 0.0f);
}
"""


@pytest.fixture(scope="module")
def lib() -> MetalLibrary:
    return MetalLibrary(SOURCE, filename="test.metal")


def test_names_follow_the_source_as_metal_compiles_it(lib):
    assert lib.names == ["affine", "geometry", "vec4", "elu", "neg_f32", "neg_i32", "scale_3_float",
                         "scale_2_int", "copy_u16", "reverse", "fc"]
    assert lib.function_constants == {"has_bias": ("bool", 0), "repeat": ("int", 1)}
    assert lib.affine is lib["affine"] is lib.kernel("affine")
    assert "affine" in dir(lib)
    with pytest.raises(KeyError, match="no kernel 'nope'"):
        lib.kernel("nope")
    with pytest.raises(AttributeError):
        _ = lib.nope


def test_struct_scalar_and_names(lib, metal_engine):
    x = np.arange(6, dtype=np.float32)
    y = np.zeros_like(x)
    dt = np.dtype({"names": ["n", "scale", "bias"], "formats": ["<u4", "<f4", ("<f4", 4)],
                   "offsets": [0, 4, 16], "itemsize": 32})
    p = np.zeros((), dt)
    p["n"], p["scale"], p["bias"] = 5, 2.0, [0, 1, 0, 0]
    lib.affine(y, x, p[()], grid=6, engine=metal_engine)
    np.testing.assert_array_equal(y, [2 * v + 1 + 7 - 4 if k < 5 else 0 for k, v in enumerate(x)])
    y2 = np.zeros_like(x)
    lib.affine(p=p[()], x=x, y=y2, grid=6, engine=metal_engine)  # by name
    np.testing.assert_array_equal(y, y2)


def test_struct_layout_is_checked(lib):
    x = np.zeros(4, np.float32)
    packed = np.zeros((), np.dtype([("n", "<u4"), ("scale", "<f4"), ("bias", "<f4", (4,))]))
    with pytest.raises(TypeError, match=r"layout of struct Params.*'bias' \(float4\)"):
        lib.affine(x, x.copy(), packed[()], grid=4, engine="emulator")
    with pytest.raises(TypeError, match="holds a struct"):
        lib.affine(x, x.copy(), 2.0, grid=4, engine="emulator")


def test_array_checks_name_the_argument(lib):
    y = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"argument 'xs' \(device const half\*\) needs float16"):
        lib.elu(np.zeros(4, np.float16), y, 1.0, grid=4, engine="emulator")
    with pytest.raises(ValueError, match="16-byte values, but the array has 40 bytes"):
        lib.vec4(np.zeros(10, np.float32), np.ones(4, np.float32), 2, grid=2, engine="emulator")
    with pytest.raises(OverflowError, match="does not fit in uint32"):
        lib.vec4(np.zeros(8, np.float32), np.ones(4, np.float32), -1, grid=2, engine="emulator")
    with pytest.raises(TypeError, match="missing argument"):
        lib.vec4(np.zeros(8, np.float32), grid=2, engine="emulator")
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        lib.neg_f32(ro, y, grid=4, engine="emulator")


def test_small_array_binds_a_vector_reference(lib, metal_engine):
    y = np.zeros((3, 4), np.float32)
    lib.vec4(y, np.array([1, 2, 3, 4], np.float32), 3, grid=3, engine=metal_engine)
    np.testing.assert_array_equal(y, np.outer([0, 1, 2], [1, 2, 3, 4]))


def test_dispatch_threads_and_threadgroups(lib, metal_engine):
    out = np.zeros(6, np.uint32)
    lib.geometry(out, grid=(10, 3), threadgroup=(4, 2), engine=metal_engine)
    assert out.tolist() == [10, 3, 4, 2, 3, 2]
    lib.geometry(out, threadgroups=(3, 2), threadgroup=(4, 2), engine=metal_engine)
    assert out.tolist() == [12, 4, 4, 2, 3, 2]
    lib.geometry(out, grid=(2000, 1), engine=metal_engine)  # PyTorch's default: (1024, 1, 1)
    assert out.tolist() == [2000, 1, 1024, 1, 2, 1]
    lib.geometry(out, grid=100, engine=metal_engine)  # 1-D: min(threads, 1024)
    assert out.tolist()[:3] == [100, 1, 100]
    with pytest.raises(TypeError, match="threadgroups= .* needs threadgroup="):
        lib.geometry(out, threadgroups=2, engine=metal_engine)
    with pytest.raises(ValueError, match="at most 1024"):
        lib.geometry(out, grid=4096, threadgroup=2048, engine=metal_engine)


def test_macro_defined_and_instantiated_kernels(lib, metal_engine):
    x = np.arange(5, dtype=np.float32)
    y = np.zeros_like(x)
    lib.neg_f32(y, x, grid=5, engine=metal_engine)
    np.testing.assert_array_equal(y, -x)
    lib.scale_3_float(y, x, grid=5, engine=metal_engine)
    np.testing.assert_array_equal(y, 3 * x)
    xi = np.arange(5, dtype=np.int32)
    yi = np.zeros_like(xi)
    lib.scale_2_int(yi, xi, grid=5, engine=metal_engine)
    np.testing.assert_array_equal(yi, 2 * xi)
    xs = np.arange(5, dtype=np.uint16)
    ys = np.zeros_like(xs)
    lib.copy_u16(ys, xs, grid=5, engine=metal_engine)
    np.testing.assert_array_equal(ys, xs)


def test_half_float_conditional_is_float(lib, metal_engine):
    xs = np.linspace(-1, 1, 8).astype(np.float16)
    ys = np.zeros_like(xs)
    lib.elu(ys, xs, 1.0, grid=8, engine=metal_engine)
    ref = np.where(xs > 0, xs, np.expm1(xs.astype(np.float32))).astype(np.float16)
    np.testing.assert_allclose(ys.astype(np.float32), ref.astype(np.float32), rtol=2e-3)


def test_threadgroup_memory(lib, metal_engine):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    lib.reverse(y, x, grid=8, threadgroup=4, threadgroup_memory={0: 16}, engine=metal_engine)
    np.testing.assert_array_equal(y, [3, 2, 1, 0, 7, 6, 5, 4])
    with pytest.raises(ValueError, match=r"threadgroup_memory=\{0: nbytes\}"):
        lib.reverse(y, x, grid=8, threadgroup=4, engine=metal_engine)
    with pytest.raises(ValueError, match="multiple of 16"):
        lib.reverse(y, x, grid=8, threadgroup=4, threadgroup_memory={0: 8}, engine=metal_engine)


def test_threadgroup_memory_out_of_bounds_names_the_parameter_and_line(lib):
    x = np.arange(8, dtype=np.float32)
    line = SOURCE.split("\n").index("    tmp[t] = x[g * n + t];") + 1
    with pytest.raises(OutOfBoundsError, match=rf"'tmp'.*index 4 out of bounds.*test\.metal:{line}\b"):
        lib.reverse(np.zeros_like(x), x, grid=8, threadgroup=8, threadgroup_memory={0: 16},
                    engine="emulator")


def test_function_constants(lib, metal_engine):
    y = np.zeros(2, np.float32)
    lib.fc(y, grid=2, engine=metal_engine)  # repeat undefined: the default 4; has_bias undefined
    assert y.tolist() == [4.0, 4.0]
    lib.kernel("fc", constants={"repeat": 2, "has_bias": True})(y, grid=2, engine=metal_engine)
    assert y.tolist() == [2.5, 2.5]
    lib.kernel("fc", constants={1: 9})(y, grid=2, engine=metal_engine)  # by index
    assert y.tolist() == [9.0, 9.0]
    with pytest.raises(KeyError, match="no function constant 'other'"):
        lib.kernel("fc", constants={"other": 1})
    with pytest.raises(TypeError, match="takes an int"):
        lib.kernel("fc", constants={"repeat": 1.5})


def test_an_engine_without_libraries_refuses_clearly(lib):
    from cunumpy.kernels.metal_library import _prepare

    class Recorder:
        name = "recorder"

    with pytest.raises(NotImplementedError, match=r"\[recorder kernel 'neg_f32'\] .*MetalLibrary"):
        _prepare(Recorder(), lib.neg_f32.program())


def test_buffers_that_share_memory_alias_as_in_metal(metal_engine):
    """One array bound twice, and two overlapping views of one array: the kernel sees one
    memory (on metal-cuda: one device copy of their union, written back)."""
    lib = MetalLibrary("""
kernel void add_next(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    float v = x[i] + x[i + 1];
    threadgroup_barrier(mem_flags::mem_device);
    y[i] = v;
}""")
    a = np.arange(9, dtype=np.float32)
    lib.add_next(a[:8], a, grid=8, threadgroup=8, engine=metal_engine)
    np.testing.assert_array_equal(a, [1, 3, 5, 7, 9, 11, 13, 15, 8])
    b = np.arange(5, dtype=np.float32)
    lib.add_next(b, b, grid=4, engine=metal_engine)
    np.testing.assert_array_equal(b, [1, 3, 5, 7, 4])


EDGE = """
#include <metal_stdlib>
using namespace metal;
struct Big { float v[20]; };
struct Add { static float apply(float a, float b) { return a + b; } };
inline float ceildiv(float a, float b) { return a / b; }
float pick(constant float* table, uint i) { return table[i]; }

kernel void big(device float* y, constant Big& b, constant float* table,
                uint3 grid_size [[grid_size]], ushort2 tid [[thread_position_in_threadgroup]]) {
    int threads_per_grid = 2;
    y[tid.x] = b.v[tid.x] + pick(table, tid.x % 3) + float(threads_per_grid)
               + float(grid_size.x) + ceildiv(4.0f, 2.0f);
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


def test_engines_agree_on_edge_cases(metal_engine):
    """A struct too big for MLX's constant inputs, a constant pointer passed to a helper, a body
    local named like a thread attribute, a name MLX's preamble has (ceildiv), a functor type as
    a template argument: the same results on every engine."""
    lib = MetalLibrary(EDGE, filename="edge.metal")
    y = np.zeros(4, np.float32)
    big = np.arange(20, dtype=np.float32).view(np.uint8)
    lib.big(y, big, np.array([10, 20, 30], np.float32), grid=4, engine=metal_engine)
    np.testing.assert_array_equal(y, np.arange(4) + np.array([10, 20, 30, 10]) + 2 + 4 + 2)
    z = np.zeros(3, np.float32)
    lib.fold_add_4(z, np.arange(12, dtype=np.float32), grid=3, engine=metal_engine)
    np.testing.assert_array_equal(z, np.arange(12, dtype=np.float32).reshape(3, 4).sum(axis=1))


def check_device_arrays_in_place(lib, cupy, engine="metal-cuda"):
    """CuPy arrays bind in place on metal-cuda (no transfer); errors name engine, kernel and
    argument. ``cupy`` is CuPy on a GPU, or the host stand-in."""
    import cunumpy as xp

    x = cupy.asarray(np.arange(8, dtype=np.float32))
    y = cupy.asarray(np.zeros(8, np.float32))
    with xp.profiling.count_transfers() as c:
        lib.reverse(y, x, grid=8, threadgroup=4, threadgroup_memory={0: 16}, engine=engine)
    assert c.to_device == 0 and c.to_host == 0
    assert cupy.asnumpy(y).tolist() == [3, 2, 1, 0, 7, 6, 5, 4]
    with pytest.raises(TypeError, match=r"\[metal-cuda kernel 'reverse'\] argument 'x' "
                                        r"\(device const float\*\) needs float32"):
        lib.reverse(y, cupy.asarray(np.zeros(8, np.int32)), grid=8, threadgroup=4,
                    threadgroup_memory={0: 16}, engine=engine)
    with pytest.raises(ValueError, match=r"\[metal-cuda kernel 'reverse'\] argument 'y' .*"
                                         r"non-contiguous"):
        lib.reverse(cupy.asarray(np.zeros(16, np.float32))[::2], x, grid=8, threadgroup=4,
                    threadgroup_memory={0: 16}, engine=engine)
    with pytest.raises(ValueError, match=r"\[metal-cuda kernel 'vec4'\] argument 'y' .*16-byte"):
        lib.vec4(cupy.asarray(np.zeros(6, np.float32)), np.ones(4, np.float32), 1, grid=1,
                 engine=engine)


@pytest.mark.requires_gpu
def test_cupy_arrays_bind_in_place_on_metal_cuda(lib):
    import cupy

    check_device_arrays_in_place(lib, cupy)


def test_constant_references_stay_const():
    bad = MetalLibrary("kernel void w(constant float& a, device float* y) { a = 1; y[0] = a; }")
    with pytest.raises(KernelCompileError, match="read-only|assignment of read-only"):
        bad.w(1.0, np.zeros(1, np.float32), grid=1, engine="emulator")


def test_out_of_bounds_by_buffer_and_line():
    lib = MetalLibrary("""
kernel void shift(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    y[i] = x[i + 1];
}""", filename="shift.metal")
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[4\]\): index 4 .*"
                                               r"shift\.metal:4"):
        lib.shift(np.zeros_like(x), x, grid=4, engine="emulator")


def test_races_on_request():
    from cunumpy.emulation.errors import DataRaceError

    src = """
kernel void racy(device float* y, threadgroup float* s [[threadgroup(0)]],
                 uint t [[thread_position_in_threadgroup]]) {
    s[0] = float(t);
    y[t] = s[0];
}"""
    lib = MetalLibrary(src, emulator_options=EmulatorOptions(races=True))
    with pytest.raises(DataRaceError):
        lib.racy(np.zeros(32, np.float32), grid=32, threadgroup_memory={0: 16},
                 engine="emulator")


def test_preprocessor_errors_and_includes(tmp_path):
    from cunumpy._lang.preprocess import PreprocessorError

    (tmp_path / "inc.h").write_text("#pragma once\n#define TWICE(x) (2 * (x))\n")
    lib = MetalLibrary('#include "inc.h"\n#include "inc.h"\n'
                       "kernel void k(device int* y) { y[0] = TWICE(21); }\n",
                       include_dirs=[tmp_path])
    y = np.zeros(1, np.int32)
    lib.k(y, grid=1, engine="emulator")
    assert y[0] == 42
    with pytest.raises(PreprocessorError, match="missing.h.* not found"):
        MetalLibrary('#include "missing.h"\n')
    with pytest.raises(PreprocessorError, match="#error stop"):
        MetalLibrary("#if __METAL_VERSION__ >= 310\n#error stop\n#endif\n")
