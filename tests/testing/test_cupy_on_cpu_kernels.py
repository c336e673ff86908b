"""The CuPy stand-in's RawKernel and RawModule on the CUDA emulator, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation import EmulatorOptions
from cunumpy.emulation.errors import DataRaceError, OutOfBoundsError
from cunumpy.testing.cupy_on_cpu import unwrap, wrap
from cunumpy.testing.cupy_on_cpu._kernels import RawKernel, RawModule

AXPY = r'''
extern "C" __global__ void axpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''

SCALARS = r'''
extern "C" __global__ void store(float* f, int* i, long long* l, double* d, bool* b,
                                 float fv, int iv, long long lv, double dv, bool bv) {
    f[0] = fv; i[0] = iv; l[0] = lv; d[0] = dv; b[0] = bv;
}
'''


def _outs():
    return [wrap(np.zeros(1, dtype=t)) for t in (np.float32, np.int32, np.int64, np.float64,
                                                 np.bool_)]


def test_axpy_matches_numpy():
    x = np.arange(300, dtype=np.float32)
    y = np.linspace(0, 1, 300, dtype=np.float32)
    dy = wrap(y.copy())
    RawKernel(AXPY, "axpy")((3,), (128,), (wrap(x), dy, np.float32(2.5), 300))
    np.testing.assert_allclose(unwrap(dy), 2.5 * x + y, rtol=1e-6)


def test_scalar_conversion_is_cupys():
    k = RawKernel(SCALARS, "store")
    outs = _outs()
    k((1,), (1,), (*outs, np.float32(1.5), 7, 2**40 + 3, 0.25, True))
    assert [unwrap(o)[0] for o in outs] == [1.5, 7, 2**40 + 3, 0.25, True]
    # A Python int is 64 bits: an `int` parameter reads its low half.
    outs = _outs()
    k((1,), (1,), (*outs, np.float32(0), 2**32 + 5, 1, 1.0, False))
    assert unwrap(outs[1])[0] == 5
    # A Python float is a double: a `float` parameter reads half of its bytes, as on a GPU.
    outs = _outs()
    k((1,), (1,), (*outs, 3.0, 0, 0, 0.0, False))
    expected = np.frombuffer(np.float64(3.0).tobytes()[:4], dtype=np.float32)[0]
    assert unwrap(outs[0])[0] == expected != 3.0


def test_numpy_scalars_keep_their_dtype_and_short_values_are_refused():
    k = RawKernel(SCALARS, "store")
    outs = _outs()
    k((1,), (1,), (*outs, np.float32(2), np.int32(-3), np.int64(9), np.float64(0.5),
                   np.bool_(True)))
    assert unwrap(outs[1])[0] == -3 and unwrap(outs[3])[0] == 0.5
    with pytest.raises(TypeError, match=r"double dv.*8 bytes.*numpy.float64"):
        k((1,), (1,), (*_outs(), np.float32(2), 1, 1, np.float32(0.5), True))


def test_numpy_arrays_are_refused_as_cupy_does():
    x = np.ones(4, dtype=np.float32)
    k = RawKernel(AXPY, "axpy")
    with pytest.raises(TypeError, match="cupy.asarray"):
        k((1,), (4,), (x, wrap(x.copy()), np.float32(1), 4))
    with pytest.raises(TypeError, match="Only numpy.ndarrays of size one"):
        k((1,), (4,), (wrap(x), wrap(x.copy()), np.ones(2, np.float32), 4))
    # A NumPy array of size one is passed by value (CuPy's rule).
    y = wrap(np.zeros(4, dtype=np.float32))
    k((1,), (4,), (wrap(x), y, np.array([3.0], dtype=np.float32), 4))
    np.testing.assert_array_equal(unwrap(y), 3.0)
    with pytest.raises(TypeError, match="value parameter but was given a cupy.ndarray"):
        k((1,), (4,), (wrap(x), y, wrap(x), 4))
    with pytest.raises(TypeError, match="takes 4 arguments"):
        k((1,), (4,), (wrap(x), y))


def test_grid_and_block_are_clamped_to_one():
    y = wrap(np.zeros(1, dtype=np.float32))
    RawKernel(AXPY, "axpy")((0,), (0, 0), (wrap(np.ones(1, np.float32)), y, np.float32(4), 1))
    assert unwrap(y)[0] == 4


def test_out_of_bounds_names_kernel_argument_thread_and_line():
    x = wrap(np.ones(10, dtype=np.float32))
    y = wrap(np.ones(10, dtype=np.float32))
    with pytest.raises(OutOfBoundsError) as info:
        RawKernel(AXPY, "axpy")((1,), (16,), (x, y, np.float32(1), 11))
    msg = str(info.value)
    assert "axpy" in msg and "argument 'x'" in msg and "thread (10,0,0)" in msg
    assert "axpy.cu:4" in msg


def test_races_on_request():
    src = r'''
    extern "C" __global__ void bump(int* c) { c[0] += 1; }
    '''
    k = RawKernel(src, "bump")
    k.emulator_options = EmulatorOptions(races=True)
    with pytest.raises(DataRaceError, match="bump"):
        k((2,), (32,), (wrap(np.zeros(1, dtype=np.int32)),))


def test_strided_view_passes_its_data_pointer():
    src = r'''
    extern "C" __global__ void first(const double* x, double* y) { y[threadIdx.x] = x[threadIdx.x]; }
    '''
    base = np.arange(10.0)
    y = wrap(np.zeros(5))
    RawKernel(src, "first")((1,), (5,), (wrap(base)[::2], y))
    np.testing.assert_array_equal(unwrap(y), base[:5])  # raw memory, as on a GPU


def test_raw_module_templates_defines_and_arch():
    src = r'''
    template <typename T> __global__ void scale(T* y, T a, int n) {
        int i = threadIdx.x;
        if (i < n) y[i] *= a * FACTOR;
    }
    extern "C" __global__ void arch(int* out) {
    #if __CUDA_ARCH__ >= 600
        out[0] = __CUDA_ARCH__;
    #else
        out[0] = -1;
    #endif
    }
    '''
    mod = RawModule(code=src, options=("-DFACTOR=3",),
                    name_expressions=["scale<float>", "scale<double>"])
    y = wrap(np.arange(4, dtype=np.float64))
    mod.get_function("scale<double>")((1,), (4,), (y, 2.0, 4))
    np.testing.assert_array_equal(unwrap(y), np.arange(4) * 6.0)
    out = wrap(np.zeros(1, dtype=np.int32))
    mod.get_function("arch")((1,), (1,), (out,))
    assert unwrap(out)[0] >= 600
    with pytest.raises(ValueError, match="name_expressions"):
        mod.get_function("scale<int>")


def test_binary_attributes_and_jitify_are_refused():
    k = RawKernel(AXPY, "axpy")
    assert k.max_threads_per_block == 1024
    with pytest.raises(NotImplementedError, match="num_regs"):
        _ = k.num_regs
    with pytest.raises(NotImplementedError, match="jitify"):
        RawKernel(AXPY, "axpy", jitify=True)
    with pytest.raises(TypeError, match="code"):
        RawModule()

