"""``cunumpy.kernels.metal_kernel`` and ``cunumpy.testing.mlx_metal_on_cpu`` against MLX itself.

The golden checks build the same kernel with MLX's own ``mx.fast.metal_kernel`` (traced in
``mx.export_function`` with ``verbose=True``, see ``_mlx_capture``) and compare the text with
``metal_source()`` byte for byte, for Python scalars read by name (MLX's 0-d convention) and read
as ``a[0]`` (the spec's one-element arrays). Needs ``mlx`` (``pip install 'mlx[cpu]'``).
"""

from __future__ import annotations

import numpy as np
import pytest

mx = pytest.importorskip("mlx.core", reason="these tests compare with MLX (pip install mlx[cpu])")

from _mlx_capture import capture_mlx  # noqa: E402

from cunumpy._engines.mlx import real_metal_kernel  # noqa: E402
from cunumpy.kernels import MetalKernel, metal_kernel  # noqa: E402
from cunumpy.testing import mlx_metal_on_cpu  # noqa: E402

pytestmark = pytest.mark.usefixtures("_emulator_engine")


@pytest.fixture
def _emulator_engine(monkeypatch):
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "emulator")


def _mlx_text(name, input_names, output_names, source, inputs, out_shapes, out_dtypes,
              template=None):
    k = real_metal_kernel()(name=name, input_names=input_names, output_names=output_names,
                            source=source)
    arrays = [a for a in inputs if isinstance(a, mx.array)]

    def fn(*arrs):
        it = iter(arrs)
        ins = [next(it) if isinstance(a, mx.array) else a for a in inputs]
        return k(inputs=ins, output_shapes=out_shapes, output_dtypes=out_dtypes,
                 grid=(8, 1, 1), threadgroup=(8, 1, 1), template=template, verbose=True)

    return capture_mlx(fn, arrays).text


@pytest.mark.parametrize(
    "source",
    [
        "uint i = thread_position_in_grid.x; y[i] = x[i] * n + d;",  # MLX: read by name
        "uint i = thread_position_in_grid.x; y[i] = x[i] * n[0] + d[0];",  # spec: a[0]
        "uint i = thread_position_in_grid.x; y[i] = x[i] * n + d[0];",  # one of each
    ],
)
def test_metal_source_equals_mlx_text_for_python_scalars(source):
    x = np.zeros(16, np.float32)
    ours = MetalKernel(source, inputs=["x", "n", "d"], outputs=["y"], name="sc").metal_source(
        x, 3, 2.0, output_shapes=[(16,)], output_dtypes=[np.float32])
    # What MLX generates for the same call: 0-d for a name read directly, a one-element array
    # where the body subscripts it.
    n = 3 if "n[" not in source else mx.array([3], dtype=mx.int32)
    d = 2.0 if "d[" not in source else mx.array([2.0], dtype=mx.float32)
    theirs = _mlx_text("sc", ["x", "n", "d"], ["y"], source, [mx.zeros((16,)), n, d],
                       [(16,)], [mx.float32])
    assert ours == theirs


def test_verbose_prints_what_mlx_prints(capsys):
    source = "uint i = thread_position_in_grid.x; y[i] = T(x[i]) * n;"
    k = metal_kernel(name="vb", input_names=["x", "n"], output_names=["y"], source=source)
    x = mx.arange(8, dtype=mx.float32)
    theirs = _mlx_text("vb", ["x", "n"], ["y"], source, [x, 4], [(8,)], [mx.float32],
                       template=[("T", mx.float32)])
    capsys.readouterr()
    k(inputs=[x, 4], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
      threadgroup=(8, 1, 1), template=[("T", mx.float32)], verbose=True)
    printed = capsys.readouterr().out
    assert printed == f"Generated source code for `vb`:\n```\n{theirs}\n```\n"


def test_mlx_arrays_in_give_mlx_arrays_out_and_numpy_gives_numpy():
    k = metal_kernel(name="neg", input_names=["x"], output_names=["y", "z"],
                     source="uint i = thread_position_in_grid.x; y[i] = -x[i]; z[i] = 2 * x[i];")
    x = mx.arange(6, dtype=mx.float32)
    out = k(inputs=[x], output_shapes=[(6,), (6,)], output_dtypes=[mx.float32, mx.float32],
            grid=(6, 1, 1), threadgroup=(6, 1, 1))
    assert isinstance(out, list) and all(isinstance(o, mx.array) for o in out)
    assert mx.array_equal(out[0], -x) and mx.array_equal(out[1], 2 * x)
    xn = np.arange(6, dtype=np.float32)
    outn = k(inputs=[xn], output_shapes=[(6,), (6,)], output_dtypes=[np.float32, np.float32],
             grid=(6, 1, 1), threadgroup=(6, 1, 1))
    assert all(isinstance(o, np.ndarray) for o in outn)
    np.testing.assert_array_equal(outn[1], 2 * xn)


def test_mlx_bfloat16_and_0d_mlx_array_inputs():
    pytest.importorskip("ml_dtypes")
    k = metal_kernel(name="bf", input_names=["x", "s"], output_names=["y"],
                     source="uint i = thread_position_in_grid.x; y[i] = x[i] * s;")
    x = mx.array([1.0, -2.5, 3.25, 0.5], dtype=mx.bfloat16)
    s = mx.array(2.0, dtype=mx.bfloat16)
    (y,) = k(inputs=[x, s], output_shapes=[(4,)], output_dtypes=[mx.bfloat16],
             grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert y.dtype == mx.bfloat16
    assert mx.array_equal(y, x * s)


def test_compile_options_are_checked_and_fast_math_defines_the_macro():
    with pytest.raises(ValueError, match=r"\[metal_kernel\].*math_mode"):
        metal_kernel(name="m", input_names=["x"], output_names=["y"], source="y[0] = x[0];",
                     compile_options={"math_mode": "precise"})
    with pytest.raises(ValueError, match=r"\[metal_kernel\].*unknown compile_options"):
        metal_kernel(name="m", input_names=["x"], output_names=["y"], source="y[0] = x[0];",
                     compile_options={"opt": 1})
    source = """
        uint i = thread_position_in_grid.x;
        #if defined(__FAST_MATH__)
        y[i] = 1;
        #else
        y[i] = 0;
        #endif
    """
    x = np.zeros(4, np.float32)
    for mode, want in (("safe", 0), ("relaxed", 0), ("fast", 1)):
        k = metal_kernel(name="mm", input_names=["x"], output_names=["y"], source=source,
                         compile_options={"math_mode": mode})
        (y,) = k(inputs=[x], output_shapes=[(4,)], output_dtypes=[np.float32], grid=(4, 1, 1),
                 threadgroup=(4, 1, 1))
        assert y.tolist() == [want] * 4, mode


@pytest.mark.parametrize(
    "call, message",
    [
        (dict(inputs=[]), r"\[metal_kernel\] kernel 'e' expects 1 inputs \(x\), got 0"),
        (dict(inputs=[[1.0, 2.0]]), r"\[metal_kernel\] kernel 'e' input 'x' is a Python list"),
        (dict(output_dtypes=["nope"]), r"\[metal_kernel\] kernel 'e' output 'y'"),
        (dict(threadgroup=(2048, 1, 1)), r"\[metal_kernel\].*1024"),
        (dict(template=[("T", "floatx")]), r"\[metal_kernel\].*template T='floatx'"),
        (dict(inputs=[np.zeros(4, np.float64)]), r"\[metal_kernel\].*'e' input 'x' is float64"),
    ],
)
def test_errors_are_tagged_and_name_kernel_and_argument(call, message):
    k = metal_kernel(name="e", input_names=["x"], output_names=["y"],
                     source="uint i = thread_position_in_grid.x; y[i] = x[i];")
    kwargs = dict(inputs=[np.zeros(4, np.float32)], output_shapes=[(4,)],
                  output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    kwargs.update(call)
    with pytest.raises((TypeError, ValueError), match=message):
        k(**kwargs)


def test_mlx_metal_on_cpu_patches_and_restores_even_on_error():
    original = mx.fast.metal_kernel
    with pytest.raises(RuntimeError, match="boom"), mlx_metal_on_cpu():
        assert mx.fast.metal_kernel is not original
        k = mx.fast.metal_kernel(name="dbl", input_names=["x"], output_names=["y"],
                                 source="uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
        (y,) = k(inputs=[mx.arange(5, dtype=mx.float32)], output_shapes=[(5,)],
                 output_dtypes=[mx.float32], grid=(5, 1, 1), threadgroup=(5, 1, 1),
                 stream=mx.gpu)
        assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
        raise RuntimeError("boom")
    assert mx.fast.metal_kernel is original
    assert real_metal_kernel() is original


def test_mlx_metal_on_cpu_fixture(mlx_metal_on_cpu):
    k = mx.fast.metal_kernel(name="inc", input_names=["x", "n"], output_names=["y"],
                             source="uint i = thread_position_in_grid.x; y[i] = x[i] + n;")
    x = mx.arange(4, dtype=mx.int32)
    (y,) = k(inputs=[x, 10], output_shapes=[(4,)], output_dtypes=[mx.int32], grid=(4, 1, 1),
             threadgroup=(2, 1, 1))
    assert mx.array_equal(y, x + 10)


def test_mlx_own_factory_still_fails_without_a_metal_gpu():
    """Documents why mlx_metal_on_cpu exists: MLX on Linux cannot run the kernel."""
    if mx.metal.is_available():
        pytest.skip("this machine has a Metal GPU")
    k = real_metal_kernel()(name="plain", input_names=["x"], output_names=["y"],
                            source="uint i = thread_position_in_grid.x; y[i] = x[i];")
    with pytest.raises(RuntimeError, match="Metal"):
        (y,) = k(inputs=[mx.zeros((4,))], output_shapes=[(4,)], output_dtypes=[mx.float32],
                 grid=(4, 1, 1), threadgroup=(4, 1, 1))
        mx.eval(y)


def test_mlx_metal_on_cpu_can_report_metal_available():
    before = mx.metal.is_available
    with mlx_metal_on_cpu(metal_available=True):
        assert mx.metal.is_available() is True
    assert mx.metal.is_available is before
    with mlx_metal_on_cpu():
        assert mx.metal.is_available is before


def test_kernels_inside_mx_compile_run_in_the_block_and_say_why_otherwise():
    source = "uint i = thread_position_in_grid.x; y[i] = 2 * x[i];"

    def make():
        k = mx.fast.metal_kernel(name="in_compile", input_names=["x"], output_names=["y"],
                                 source=source)

        @mx.compile
        def f(x):
            return k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                     grid=(x.size, 1, 1), threadgroup=(4, 1, 1))[0] + 1

        return f

    x = mx.arange(4, dtype=mx.float32)
    with mlx_metal_on_cpu():
        assert mx.array_equal(make()(x), 2 * x + 1)
    with mlx_metal_on_cpu(compile=True), pytest.raises(ValueError, match="traces a function"):
        make()(x)
