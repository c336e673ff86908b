"""MetalKernel against its spec (shared/spec/metal-kernel.md), sentence by sentence.

Launch tests take the ``metal_engine`` fixture: they run on the CPU emulator everywhere and,
unchanged, on a real Apple GPU where ``metal_available()`` (``pytest tests/unit/test_metal_kernel.py
-rs`` shows why the mlx cases skip). Tests without the fixture check the front end alone.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernels import MetalKernel
from cunumpy.profiling import count_transfers

SCALE_SRC = "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];"

PUSH_SRC = """
    uint i = thread_position_in_grid.x;
    float x = pos[i], v = vel[i];
    for (int k = 0; k < NSTEPS; ++k) { x += v * dt[0]; }
    pos_out[i] = x;
"""


def scale_kernel(**kw):
    return MetalKernel(SCALE_SRC, inputs=["x", "a"], outputs=["y"], name="scale", **kw)


def push_kernel(**kw):
    return MetalKernel(PUSH_SRC, inputs=["pos", "vel", "dt"], outputs=["pos_out"], name="push",
                       **kw)


def push_reference(pos, vel, dt, nsteps):
    x = pos.astype(np.float64)
    for _ in range(nsteps):
        x = x + vel.astype(np.float64) * dt
    return x


# --------------------------------------------------------------------------- the first kernel
def test_spec_first_kernel_example(metal_engine):
    scale = xp.kernels.MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
        inputs=["x", "a"],
        outputs=["y"],
    )
    x = np.arange(8, dtype=np.float32)
    y = np.empty_like(x)
    result = scale(x, 2.0, out=y)
    assert result is y
    np.testing.assert_array_equal(y, 2 * x)


def test_body_reads_flat_row_major_data_of_a_2d_array(metal_engine):
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; s[i] = a[3 * i + 0] + a[3 * i + 1] + a[3 * i + 2];",
        inputs=["a"], outputs=["s"], name="rowsum",
    )
    a = np.random.default_rng(0).random((50, 3), dtype=np.float32)
    s = k(a, out=np.empty(50, np.float32))
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-6)


def test_attributes_enter_the_signature_only_when_used():
    k = scale_kernel()
    text = k.metal_source(np.ones(8, np.float32), 2.0, out=np.empty(8, np.float32))
    assert "uint3 thread_position_in_grid [[thread_position_in_grid]]" in text
    assert "threads_per_grid" not in text
    k2 = MetalKernel("y[0] = x[0];", inputs=["x"], outputs=["y"], name="first")
    text2 = k2.metal_source(np.ones(8, np.float32), out=np.empty(1, np.float32))
    assert "[[thread_position_in_grid]]" not in text2


def test_inputs_are_passed_in_the_order_of_inputs(metal_engine):
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[i] - b[i];",
                    inputs=["a", "b"], outputs=["y"], name="sub")
    a = np.full(16, 10, np.float32)
    b = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(k(a, b, out=np.empty(16, np.float32)), a - b)
    np.testing.assert_array_equal(k(b, a, out=np.empty(16, np.float32)), b - a)


def test_python_numbers_become_one_element_arrays(metal_engine):
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = x[i] * f[0] + float(n[0]);",
        inputs=["x", "f", "n"], outputs=["y"], name="affine",
    )
    x = np.arange(10, dtype=np.float32)
    y = k(x, 0.5, 3, out=np.empty(10, np.float32))
    np.testing.assert_array_equal(y, x * 0.5 + 3)
    text = k.metal_source(x, 0.5, 3, out=np.empty(10, np.float32))
    assert "const constant float* f" in text and "const constant int32_t* n" in text


def test_python_int_out_of_int32_range_is_refused():
    k = scale_kernel()
    with pytest.raises(OverflowError, match=r"'scale' input 'a'.*int32"):
        k(np.ones(4, np.float32), 2**31, out=np.empty(4, np.float32), engine="emulator")


def test_python_float_overflowing_float32_is_refused():
    with pytest.raises(OverflowError, match="overflows float32"):
        scale_kernel().metal_source(np.ones(4, np.float32), 1e300, out=np.empty(4, np.float32))


# --------------------------------------------------------------------------- outputs
def test_out_is_filled_in_place_and_returned(metal_engine):
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; s[i] = a[i] + b[i]; d[i] = a[i] - b[i];",
        inputs=["a", "b"], outputs=["s", "d"], name="sumdiff",
    )
    a, b = np.arange(32, dtype=np.float32), np.ones(32, np.float32)
    s, d = np.empty(32, np.float32), np.empty(32, np.float32)
    result = k(a, b, out=(s, d))
    assert isinstance(result, tuple) and result[0] is s and result[1] is d
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(d, a - b)


def test_non_contiguous_output_is_filled_correctly(metal_engine):
    k = scale_kernel()
    big = np.zeros((20, 2), np.float32)
    view = big[:, 1]
    x = np.arange(20, dtype=np.float32)
    k(x, 3.0, out=view)
    np.testing.assert_array_equal(big[:, 1], 3 * x)
    np.testing.assert_array_equal(big[:, 0], 0)


def test_non_contiguous_input_is_accepted_and_never_modified(metal_engine):
    k = scale_kernel()
    base = np.arange(40, dtype=np.float32).reshape(20, 2)
    x = base[:, 0]
    before = base.copy()
    y = k(x, 2.0, out=np.empty(20, np.float32))
    np.testing.assert_array_equal(y, 2 * x)
    np.testing.assert_array_equal(base, before)


def test_wrong_output_count_or_type_is_a_type_error():
    k = scale_kernel()
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="1 output"):
        k(x, 1.0, out=(np.empty(4, np.float32), np.empty(4, np.float32)))
    with pytest.raises(TypeError, match="must be a NumPy array"):
        k(x, 1.0, out=[[0.0] * 4])
    with pytest.raises(TypeError, match="needs out="):
        k(x, 1.0)
    ro = np.empty(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        k(x, 1.0, out=ro)


def test_outputs_sharing_memory_are_refused():
    k = MetalKernel("y[0]=1; z[0]=2;", inputs=[], outputs=["y", "z"], name="two")
    buf = np.empty(4, np.float32)
    with pytest.raises(ValueError, match="share memory"):
        k(out=(buf, buf[1:]), engine="emulator")


def test_wrong_input_count_names_the_inputs():
    with pytest.raises(TypeError, match=r"takes 2 inputs \(x, a\), got 1"):
        scale_kernel()(np.ones(4, np.float32), out=np.empty(4, np.float32))


def test_unsupported_inputs_are_refused_with_advice():
    k = scale_kernel()
    out = np.empty(4, np.float32)
    with pytest.raises(TypeError, match="complex128.*complex64"):
        k(np.ones(4, np.complex128), 1.0, out=out)
    with pytest.raises(TypeError, match="dtype <U1.*supported"):
        k(np.array(list("abcd")), 1.0, out=out)
    with pytest.raises(TypeError, match="list"):
        k([1.0, 2.0], 1.0, out=out)


# --------------------------------------------------------------------------- threads
def test_n_threads_defaults_to_first_axis_of_first_output(metal_engine):
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = float(threads_per_grid.x);",
                    inputs=[], outputs=["y"], name="count")
    y = k(out=np.empty(37, np.float32))
    np.testing.assert_array_equal(y, 37)


def test_n_threads_is_the_total_thread_count(metal_engine):
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = 1.0f;",
                    inputs=[], outputs=["y"], name="ones", init_value=0.0, threadgroup=8)
    y = k(out=np.empty(100, np.float32), n_threads=13)
    assert y[:13].sum() == 13 and y[13:].sum() == 0


def test_threads_beyond_the_data_return_early(metal_engine):
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; if (i >= n[0]) return; y[i] = x[i] + 1.0f;",
        inputs=["x", "n"], outputs=["y"], name="guarded", threadgroup=64,
    )
    x = np.arange(100, dtype=np.float32)
    y = k(x, 100, out=np.empty(100, np.float32), n_threads=128)
    np.testing.assert_array_equal(y, x + 1)


def test_emulator_catches_threads_that_do_not_return_early():
    from cunumpy.emulation.errors import OutOfBoundsError

    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] + 1.0f;",
                    inputs=["x"], outputs=["y"], name="unguarded", threadgroup=64)
    x = np.arange(100, dtype=np.float32)
    with pytest.raises(OutOfBoundsError, match=r"kernel 'unguarded'.*'x'.*100"):
        k(x, out=np.empty(100, np.float32), n_threads=128, engine="emulator")


def test_two_and_three_dimensional_grids(metal_engine):
    k = MetalKernel(
        """
        uint3 p = thread_position_in_grid;
        uint3 n = threads_per_grid;
        y[(p.z * n.y + p.y) * n.x + p.x] = float(p.x + 10 * p.y + 100 * p.z);
        """,
        inputs=[], outputs=["y"], name="coords", threadgroup=(4, 4, 2),
    )
    y = k(out=np.empty((3, 5, 7), np.float32), n_threads=(7, 5, 3))
    z, yy, x = np.meshgrid(np.arange(3), np.arange(5), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(y, x + 10 * yy + 100 * z)


@pytest.mark.parametrize("n_threads", [-1, (1, 2, 3, 4), 1.5, True, "8", 2**32])
def test_bad_n_threads_is_refused(n_threads):
    with pytest.raises(ValueError, match="n_threads"):
        scale_kernel().metal_source(np.ones(4, np.float32), 1.0, out=np.empty(4, np.float32),
                                    n_threads=n_threads)


# --------------------------------------------------------------------------- initialisation
def test_unwritten_outputs_are_reported_by_the_emulator():
    from cunumpy.emulation.errors import UnwrittenOutputError

    k = MetalKernel("uint i = thread_position_in_grid.x; if (i % 2 == 0) y[i] = 1.0f;",
                    inputs=[], outputs=["y"], name="half_written")
    with pytest.raises(UnwrittenOutputError, match=r"'half_written'.*'y'.*5"):
        k(out=np.empty(10, np.float32), engine="emulator")


def test_init_value_fills_outputs_first(metal_engine):
    k = MetalKernel("uint i = thread_position_in_grid.x; if (i % 2 == 0) y[i] = 1.0f;",
                    inputs=[], outputs=["y"], name="half_written_init", init_value=0.0)
    y = k(out=np.full(10, 7, np.float32))
    np.testing.assert_array_equal(y, [1, 0] * 5)


def test_old_array_passed_as_input_too(metal_engine):
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = (i % 2 == 0) ? y_old[i] + 1.0f : y_old[i];",
        inputs=["y_old"], outputs=["y"], name="update",
    )
    y = np.arange(10, dtype=np.float32)
    expected = y + (np.arange(10) % 2 == 0)
    k(y, out=y)
    np.testing.assert_array_equal(y, expected)


# --------------------------------------------------------------------------- templates, header
def test_spec_template_example(metal_engine):
    push = push_kernel()
    rng = np.random.default_rng(1)
    pos = rng.random(1000, dtype=np.float32)
    vel = rng.random(1000, dtype=np.float32)
    pos_out = np.empty_like(pos)
    push(pos, vel, 0.01, out=pos_out, template={"NSTEPS": 200})
    np.testing.assert_allclose(pos_out, push_reference(pos, vel, np.float32(0.01), 200),
                               rtol=1e-4)


def test_each_template_value_is_another_variant(metal_engine):
    push = push_kernel()
    pos = np.zeros(64, np.float32)
    vel = np.ones(64, np.float32)
    out = np.empty_like(pos)
    push(pos, vel, 1.0, out=out, template={"NSTEPS": 3})
    np.testing.assert_array_equal(out, 3)
    push(pos, vel, 1.0, out=out, template={"NSTEPS": 5})
    np.testing.assert_array_equal(out, 5)
    texts = {push.metal_source(pos, vel, 1.0, out=out, template={"NSTEPS": n}) for n in (3, 5)}
    assert len(texts) == 2


def test_template_types_ints_and_bools(metal_engine):
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; T v = T(x[i]) * T(SCALE); y[i] = NEG ? -v : v;",
        inputs=["x"], outputs=["y"], name="typed",
    )
    x = np.arange(8, dtype=np.float32)
    y = k(x, out=np.empty(8, np.float32), template={"T": np.float32, "SCALE": 3, "NEG": True})
    np.testing.assert_array_equal(y, -3 * x)
    y = k(x, out=np.empty(8, np.float32), template={"T": np.int32, "SCALE": 2, "NEG": False})
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize(
    "template, error",
    [({"1bad": 3}, ValueError), ({"N": 2**40}, OverflowError), ({"N": "x"}, TypeError),
     ({"x": 3}, ValueError), ({"T": np.float64}, TypeError), (3, TypeError),
     ({"T": "double"}, TypeError), ({"T": "floatx"}, TypeError), ([("N", 3, 4)], TypeError)],
)
def test_bad_templates_are_refused(template, error):
    k = MetalKernel("y[0] = x[0];", inputs=["x"], outputs=["y"], name="t")
    with pytest.raises(error):
        k.metal_source(np.ones(8, np.float32), out=np.empty(1, np.float32), template=template)


def test_header_holds_defines_and_helper_functions(metal_engine):
    header = "#define OFFSET 5.0f\ninline float twice(float v) { return 2.0f * v; }\n"
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = twice(x[i]) + OFFSET;",
                    inputs=["x"], outputs=["y"], name="with_header", header=header)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(k(x, out=np.empty(16, np.float32)), 2 * x + 5)
    assert k.metal_source(x, out=np.empty(16, np.float32)).startswith(header)


# --------------------------------------------------------------------------- float64
def test_float64_is_refused_naming_role_name_and_kernel():
    k = push_kernel()
    f32 = np.ones(8, np.float32)
    with pytest.raises(TypeError, match="MetalKernel 'push' input 'vel' is float64"):
        k(f32, np.ones(8), 0.1, out=np.empty(8, np.float32), template={"NSTEPS": 1})
    with pytest.raises(TypeError, match="MetalKernel 'push' output 'pos_out' is float64"):
        k(f32, f32, 0.1, out=np.empty(8), template={"NSTEPS": 1})


def test_float64_cast_agrees_with_a_float64_reference(metal_engine):
    push = push_kernel(float64="cast")
    rng = np.random.default_rng(2)
    pos = rng.random(4096)
    vel = rng.random(4096)
    pos_in, vel_in = pos.copy(), vel.copy()
    out = np.empty(4096)
    push(pos, vel, 0.01, out=out, template={"NSTEPS": 200})
    assert out.dtype == np.float64
    ref = push_reference(pos, vel, 0.01, 200)
    rel = np.max(np.abs(out - ref) / np.abs(ref))
    assert rel < 1e-4  # float32 accuracy, as the spec reports (about 3e-5)
    np.testing.assert_array_equal(pos, pos_in)
    np.testing.assert_array_equal(vel, vel_in)


# --------------------------------------------------------------------------- copies
def test_copies_are_counted_once_per_input_and_output(metal_engine):
    push = push_kernel()
    pos = np.ones(1000, np.float32)
    vel = np.ones(1000, np.float32)
    out = np.empty_like(pos)
    with count_transfers() as c:
        push(pos, vel, 0.5, out=out, template={"NSTEPS": 2})
    assert (c.to_device, c.to_host) == (3, 1)
    assert c.bytes_to_device == 4000 + 4000 + 4
    assert c.bytes_to_host == 4000
    assert "input 'vel'" in c.report() and "output 'pos_out'" in c.report()


def test_resident_mode_copies_only_at_the_ends(metal_engine):
    push = push_kernel()
    n = 512
    pos = xp.kernels.metal_asarray(np.zeros(n, np.float32))
    vel = xp.kernels.metal_asarray(np.ones(n, np.float32))
    dt = xp.kernels.metal_asarray(np.array([0.25], np.float32))
    with count_transfers() as c:
        for _ in range(8):
            pos = push(pos, vel, dt, output_shapes=(n,), output_dtypes=np.float32,
                       template={"NSTEPS": 1})
    assert c.transfers == 0
    with count_transfers() as c:
        host = xp.to_numpy(pos)
    np.testing.assert_allclose(host, 2.0)
    assert (c.to_host, c.bytes_to_host) == (1, 4 * n)


# --------------------------------------------------------------------------- constructor
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"outputs": []}, "at least one output"),
        ({"inputs": ["x", "x"]}, "repeated"),
        ({"inputs": ["y"]}, "repeated"),
        ({"float64": "round"}, "float64"),
        ({"threadgroup": 0}, "threadgroup"),
        ({"threadgroup": (32, 32, 2)}, "1024"),
        ({"threadgroup": (1, 2, 3, 4)}, "threadgroup"),
        ({"inputs": ["kernel"]}, "identifier"),
        ({"inputs": "x"}, "list"),
    ],
)
def test_constructor_validation(kwargs, match):
    args = {"inputs": ["x"], "outputs": ["y"], **kwargs}
    with pytest.raises(ValueError, match=match):
        MetalKernel("y[0] = x[0];", **args)


# --------------------------------------------------------------------------- availability
def test_metal_available_is_false_here_with_a_reason():
    from cunumpy.kernels._availability import metal_status

    ok, reason, _ = metal_status()
    assert xp.kernels.metal_available() is ok
    if not ok:
        assert "MLX" in reason


def test_mlx_engine_without_mlx_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlx", None)
    monkeypatch.setitem(sys.modules, "mlx.core", None)
    with pytest.raises(ImportError, match=r"pip install 'cunumpy\[metal\]'"):
        scale_kernel()(np.ones(4, np.float32), 1.0, out=np.empty(4, np.float32), engine="mlx")


def test_unknown_engine_is_refused(monkeypatch):
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "vulkan")
    with pytest.raises(ValueError, match="mlx, emulator"):
        scale_kernel()(np.ones(4, np.float32), 1.0, out=np.empty(4, np.float32))


def test_header_without_final_newline_gets_one():
    k = MetalKernel("y[0] = x[0] * SCALE;", inputs=["x"], outputs=["y"], name="hdr",
                    header="#define SCALE 3.0f")
    text = k.metal_source(np.ones(8, np.float32), out=np.empty(1, np.float32),
                          template={"N": 1})
    assert text.startswith("#define SCALE 3.0f\ntemplate <int N>")


def test_template_checks_are_cached_per_value_and_type():
    k = MetalKernel("y[0] = x[0] * T(N);", inputs=["x"], outputs=["y"], name="cached_tmpl")
    args = (np.ones(8, np.float32),)
    out = np.empty(1, np.float32)
    as_bool = k.metal_source(*args, out=out, template={"T": np.float32, "N": True})
    as_int = k.metal_source(*args, out=out, template={"T": np.float32, "N": 1})
    assert "bool N" in as_bool and "int N" in as_int
    assert k.metal_source(*args, out=out, template={"T": np.float32, "N": True}) == as_bool
    with pytest.raises(TypeError, match="template"):
        k.metal_source(*args, out=out, template={"T": np.float32, "N": [1]})


def test_bool_and_int_template_values_run_as_different_variants():
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = float(sizeof(N));",
                    inputs=[], outputs=["y"], name="tmpl_types")
    y = k(out=np.empty(4, np.float32), template={"N": True}, engine="emulator")
    np.testing.assert_array_equal(y, 1.0)  # sizeof(bool)
    y = k(out=np.empty(4, np.float32), template={"N": 1}, engine="emulator")
    np.testing.assert_array_equal(y, 4.0)  # sizeof(int)
