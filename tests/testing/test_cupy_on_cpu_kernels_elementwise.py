"""The CuPy stand-in's ElementwiseKernel, ReductionKernel and fuse, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation.errors import OutOfBoundsError, UnwrittenOutputError
from cunumpy.testing.cupy_on_cpu import unwrap, wrap
from cunumpy.testing.cupy_on_cpu._elementwise import ElementwiseKernel
from cunumpy.testing.cupy_on_cpu._fuse import fuse
from cunumpy.testing.cupy_on_cpu._reduction import ReductionKernel

AXPY = ElementwiseKernel("T x, T y, T a", "T z", "z = a * x + y", "axpy_ew")


def test_broadcasting_placeholders_and_scalars():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.arange(3, dtype=np.float32)
    z = AXPY(wrap(x), wrap(y), 2.5)  # the scalar takes T from the arrays, never binds it
    assert unwrap(z).dtype == np.float32 and unwrap(z).shape == (2, 3)
    np.testing.assert_allclose(unwrap(z), 2.5 * x + y)
    xi = np.arange(4, dtype=np.int32)
    zi = AXPY(wrap(xi), wrap(xi), 2.9)  # converted to int32: 2
    np.testing.assert_array_equal(unwrap(zi), 2 * xi + xi)


def test_conflicting_placeholder_and_output_binding():
    with pytest.raises(TypeError, match="Type is mismatched"):
        AXPY(wrap(np.ones(3, np.float32)), wrap(np.ones(3)), 1.0)
    # Outputs bind first: a float64 output makes float32 inputs a mismatch.
    with pytest.raises(TypeError, match="Type is mismatched"):
        AXPY(wrap(np.ones(3, np.float32)), wrap(np.ones(3, np.float32)), 1.0,
             wrap(np.empty(3)))
    with pytest.raises(ValueError, match="Out shape is mismatched"):
        AXPY(wrap(np.ones(3)), wrap(np.ones(3)), 1.0, wrap(np.empty(1)))
    with pytest.raises(ValueError, match="could not be broadcast"):
        AXPY(wrap(np.ones(3)), wrap(np.ones(3)), 1.0, wrap(np.empty(4)))
    with pytest.raises(TypeError, match="Unsupported type"):
        AXPY(np.ones(3), wrap(np.ones(3)), 1.0)
    with pytest.raises(TypeError, match="Wrong number of arguments"):
        AXPY(wrap(np.ones(3)))
    with pytest.raises(ValueError, match="'i'"):
        ElementwiseKernel("T i", "T y", "y = i")


def test_zero_dim_arrays_bind_and_in_place_output():
    k = ElementwiseKernel("T x, T s", "T y", "y = x * s", "scale_ew")
    x = wrap(np.arange(5.0))
    out = k(x, wrap(np.array(3.0)), x)  # a 0-d array binds T; the output is the input
    assert out is x
    np.testing.assert_array_equal(unwrap(x), np.arange(5.0) * 3)


def test_raw_arrays_index_flat_c_order_and_size():
    k = ElementwiseKernel("raw T x", "T y", "y = x[x.size() - 1 - i]", "rev_ew")
    base = np.arange(24.0).reshape(4, 6)
    view = base[:, 1::2]  # non-contiguous: still flat C order
    y = k(wrap(view), wrap(np.empty(12)))
    np.testing.assert_array_equal(unwrap(y), view.ravel()[::-1])
    k2 = ElementwiseKernel("raw T x", "raw T y", "y[i] = x[i] * 2", "dbl_ew")
    out = k2(wrap(np.arange(4.0)), size=4)
    np.testing.assert_array_equal(unwrap(out), np.arange(4.0) * 2)
    with pytest.raises(ValueError, match="Loop size is undecided"):
        k2(wrap(np.arange(4.0)))
    with pytest.raises(ValueError, match="'size'"):
        AXPY(wrap(np.ones(2)), wrap(np.ones(2)), 1.0, size=2)


def test_raw_arrays_take_index_arrays_as_carray_does():
    k = ElementwiseKernel("raw T x", "T y",
                          "int idx[] = {int(i / x.shape()[1]), int(i % x.shape()[1])};\n"
                          "y = x[idx] * x.ndim;", "multi_ew")
    view = np.arange(20.0).reshape(4, 5)[::2, 1:4]
    y = k(wrap(view), wrap(np.empty(6)))
    np.testing.assert_array_equal(unwrap(y), view.ravel() * 2)


def test_launch_geometry_is_cupys():
    k = ElementwiseKernel("T x", "int32 b, int32 g", "b = blockDim.x; g = gridDim.x", "geom_ew")
    b, g = k(wrap(np.zeros(50)))
    assert set(unwrap(b)) == {50} and set(unwrap(g)) == {1}
    b, g = k(wrap(np.zeros(300)))
    assert set(unwrap(b)) == {128} and set(unwrap(g)) == {3}


def test_mutable_i_in_the_grid_stride_loop():
    # n = 4: one block of min(128, 4) = 4 threads, stride 4. Going back by 2 makes threads 0
    # and 1 visit i + 2 as well (CuPy's loop reads the assigned i).
    k = ElementwiseKernel("raw int32 x", "raw int32 y", "atomicAdd(&y[i], x[i]); i -= 2;",
                          "back_ew")
    out = k(wrap(np.ones(4, dtype=np.int32)), wrap(np.zeros(4, dtype=np.int32)), size=4)
    np.testing.assert_array_equal(unwrap(out), [1, 1, 2, 2])


def test_preamble_loop_prep_after_loop_and_ind():
    k = ElementwiseKernel(
        "T x", "raw T y",
        "acc += f(x);",
        "pre_ew",
        preamble="__device__ double f(double v) { return v * v; }",
        loop_prep="double acc = 0;",
        after_loop="y[blockIdx.x * blockDim.x + threadIdx.x] = acc + 0 * _ind.size();",
        reduce_dims=False,
    )
    x = np.arange(5.0)
    y = wrap(np.zeros(5))
    k(wrap(x), y)
    np.testing.assert_array_equal(unwrap(y), x * x)
    k_ind = ElementwiseKernel("T x", "int64 r, int64 c", "r = _ind.get()[0]; c = _ind.get()[1]",
                              "ind_ew", reduce_dims=False)
    r, c = k_ind(wrap(np.zeros((2, 3))))
    np.testing.assert_array_equal(unwrap(r), np.indices((2, 3))[0])
    np.testing.assert_array_equal(unwrap(c), np.indices((2, 3))[1])


def test_return_options():
    k = ElementwiseKernel("T x", "T y", "y = x", "copy_ew", no_return=True)
    assert k(wrap(np.ones(2))) is None
    k = ElementwiseKernel("T x", "T y", "y = x", "copy_ew2", return_tuple=True)
    (y,) = k(wrap(np.ones(2)))
    np.testing.assert_array_equal(unwrap(y), 1)


def test_float16_and_complex():
    k = ElementwiseKernel("T x, T y", "T z", "z = x * y + x", "mad_ew")
    a = np.linspace(0, 2, 7, dtype=np.float16)
    z = k(wrap(a), wrap(a))
    np.testing.assert_allclose(unwrap(z), (a.astype(np.float32) ** 2 + a).astype(np.float16),
                               rtol=1e-3)
    c = np.array([1 + 2j, -3j, 0.5], dtype=np.complex64)
    zc = k(wrap(c), wrap(c))
    np.testing.assert_allclose(unwrap(zc), c * c + c, rtol=1e-6)


def test_strided_and_negative_stride_inputs_and_outputs():
    k = ElementwiseKernel("T x", "T y", "y = x + 1", "inc1_ew")
    base = np.arange(24.0).reshape(2, 3, 4)
    view = base[:, ::-1, ::2]
    np.testing.assert_array_equal(unwrap(k(wrap(view))), view + 1)
    out = np.zeros((2, 3, 4))
    k(wrap(view), wrap(out)[:, :, 1::2])
    np.testing.assert_array_equal(out[:, :, 1::2], view + 1)
    assert not out[:, :, ::2].any()


def test_errors_inside_the_body_name_the_line():
    k = ElementwiseKernel("raw T x", "T y", "T v = 0;\ny = x[i + 1] + v", "oob_ew")
    with pytest.raises(OutOfBoundsError) as info:
        k(wrap(np.arange(4.0)), wrap(np.empty(4)))
    msg = str(info.value)
    assert "oob_ew" in msg and "argument 'x'" in msg and "operation:2" in msg
    with pytest.raises(UnwrittenOutputError):
        ElementwiseKernel("T x", "T y", "if (x > 1) y = x", "half_ew")(wrap(np.arange(4.0)))


# -- ReductionKernel -------------------------------------------------------------------------

L2 = ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2_red")


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_axes(axis, keepdims):
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::-1]
    got = unwrap(L2(wrap(x), axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(got, np.sqrt((x * x).sum(axis=axis, keepdims=keepdims)))


def test_reduce_type_default_and_map_in_input_type():
    # reduce_type defaults to the output's type: uint8 elements sum in int32.
    s = ReductionKernel("T x", "int32 y", "x", "a + b", "y = a", "0", "sum8_red")
    x = np.full(100, 200, dtype=np.uint8)
    assert unwrap(s(wrap(x)))[()] == 20000
    # The map runs in the input type (uint32 wraps), then is cast to the reduce type.
    sq = ReductionKernel("T x", "uint64 y", "x * x", "a + b", "y = a", "0", "sq_red")
    v = np.array([100000], dtype=np.uint32)
    assert unwrap(sq(wrap(v)))[()] == (100000 * 100000) % 2**32


def test_reduction_broadcast_j_and_identity():
    dot = ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dot_red")
    x = np.arange(12.0).reshape(3, 4)
    w = np.arange(4.0)
    np.testing.assert_allclose(unwrap(dot(wrap(x), wrap(w), axis=1)), x @ w)
    argmax = ReductionKernel(
        "T x", "int64 y", "P{(double)x, (long long)_J}", "a.v >= b.v ? a : b", "y = a.j",
        "P{-1e300, -1}", "argmax_red", reduce_type="P",
        preamble="struct P { double v; long long j; };")
    data = np.array([[3.0, 9.0, 1.0], [7.0, 2.0, 8.0]])
    np.testing.assert_array_equal(unwrap(argmax(wrap(data), axis=1)), [1, 2])
    none = ReductionKernel("T x", "T y", "x", "a + b", "y = a", None, "noid_red")
    with pytest.raises(ValueError, match="no identity"):
        none(wrap(np.zeros((0, 3))), axis=0)
    with pytest.raises(np.exceptions.AxisError):
        L2(wrap(x), axis=2)


def test_reduction_into_given_output():
    s = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_out_red")
    x = np.arange(6.0).reshape(2, 3)
    out = wrap(np.zeros(3))
    assert s(wrap(x), axis=0, out=out) is out
    np.testing.assert_array_equal(unwrap(out), x.sum(0))
    with pytest.raises(ValueError, match="Out shape"):
        s(wrap(x), axis=1, out=out)


def test_fuse_runs_the_python_function():
    @fuse()
    def f(a, b):
        return a * b + 1

    assert f.__name__ == "f"
    np.testing.assert_array_equal(unwrap(f(wrap(np.arange(3)), 2)), np.arange(3) * 2 + 1)
    g = fuse(lambda a: a + 1, kernel_name="g")
    assert g(1) == 2
