"""MetalKernel's defaults for a new user (issue 15 items 4, 7, 8) and MLX's conventions (issue 12).

Engine ``auto`` (the default), MSL type names as template values, the hint for a Python list,
0-d Python scalars, ``threadgroup`` per call and bfloat16.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cunumpy
from cunumpy import config
from cunumpy._engines import _metal_registry as _metal_engines
from cunumpy._engines._metal_registry import get_metal_engine, resolve_metal_engine
from cunumpy.emulation import EmulatorWarning
from cunumpy.kernels import Kernel, MetalKernel, metal_available, use_metal

SRC = "uint i = thread_position_in_grid.x; y[i] = a * x[i];"


@pytest.fixture
def default_engine(monkeypatch):
    """No CUNUMPY_METAL_ENGINE, and the one-time warning not given yet."""
    monkeypatch.delenv("CUNUMPY_METAL_ENGINE", raising=False)
    monkeypatch.delenv("CUNUMPY_USE_METAL", raising=False)
    monkeypatch.setattr(_metal_engines, "_warned_auto", [False])


def test_default_engine_is_auto():
    assert config.METAL_ENGINES[0] == "auto"


@pytest.mark.skipif(metal_available(), reason="this machine has a Metal GPU: auto means mlx")
def test_auto_runs_on_the_emulator_with_one_warning(default_engine):
    k = MetalKernel(SRC, inputs=["x", "a"], outputs=["y"], name="auto_default")
    x = np.arange(6, dtype=np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = k(x, 2.0, out=np.empty_like(x))
        k(x, 2.0, out=np.empty_like(x))
    np.testing.assert_array_equal(y, 2 * x)
    emu = [w for w in caught if issubclass(w.category, EmulatorWarning)]
    assert len(emu) == 1, [str(w.message) for w in caught]
    assert "CPU emulator" in str(emu[0].message)
    assert "CUNUMPY_METAL_ENGINE=emulator" in str(emu[0].message)
    assert emu[0].filename == __file__  # the warning points at the user's call


@pytest.mark.skipif(metal_available(), reason="this machine has a Metal GPU")
def test_mlx_engine_stays_forced(default_engine, monkeypatch):
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "mlx")
    assert resolve_metal_engine() == "mlx"
    k = MetalKernel(SRC, inputs=["x", "a"], outputs=["y"], name="forced_mlx")
    x = np.arange(4, dtype=np.float32)
    with pytest.raises((RuntimeError, ImportError), match="mlx engine"):
        k(x, 2.0, out=np.empty_like(x))


def test_engine_names(default_engine):
    assert get_metal_engine("emu-metal").name == "emu-metal"
    assert get_metal_engine("emulator").name == "emu-metal"
    assert resolve_metal_engine("auto") == ("mlx" if metal_available() else "emu-metal")
    assert resolve_metal_engine("emulator") == resolve_metal_engine("emu-metal") == "emu-metal"
    with pytest.raises(ValueError, match="auto, mlx, emulator"):
        get_metal_engine("vulkan")


@pytest.mark.skipif(metal_available(), reason="this machine has a Metal GPU")
def test_dispatch_keeps_host_code_unless_metal_is_asked_for(default_engine):
    """Engine auto does not make Kernel replace host code by an emulated Metal port."""

    def host(x, a, y):
        y[:] = a * x

    metal = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i] + 1000.0f;",
        inputs=["x", "a"], outputs=["y"], name="disp_port",
    )
    k = Kernel(host, metal=metal, name="disp")
    x = np.arange(4, dtype=np.float32)
    cunumpy.set_backend("numpy")  # host arrays, whatever the suite's backend (it is restored)
    assert k.which(x, np.float32(2.0), np.empty_like(x)) == "host"
    with use_metal(True), warnings.catch_warnings():
        warnings.simplefilter("ignore", EmulatorWarning)
        assert k.which(x, np.float32(2.0), np.empty_like(x)) == "metal"
        y = np.empty_like(x)
        k(x, np.float32(2.0), y)
    np.testing.assert_array_equal(y, 2 * x + 1000)


# --------------------------------------------------------------------------- templates (15.7)
@pytest.mark.parametrize(
    "name, dtype",
    [("float", np.float32), ("half", np.float16), ("int", np.int32), ("uint", np.uint32),
     ("short", np.int16), ("uchar", np.uint8), ("bool", np.bool_), ("float16_t", np.float16),
     ("int64_t", np.int64), ("float32", np.float32)],
)
def test_msl_type_names_are_template_types(name, dtype):
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = T(x[i]);",
                    inputs=["x"], outputs=["y"], name="tname")
    x = np.arange(4, dtype=np.float32)
    by_name = k.metal_source(x, out=np.empty(4, np.float32), template={"T": name})
    by_dtype = k.metal_source(x, out=np.empty(4, np.float32), template={"T": dtype})
    assert by_name == by_dtype


def test_msl_template_names_run(metal_engine):
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = float(T(x[i]));",
                    inputs=["x"], outputs=["y"], name="tname_run")
    x = np.array([1.7, -2.2, 3.9, 250.6], dtype=np.float32)
    np.testing.assert_allclose(k(x, out=np.empty_like(x), template={"T": "float"}), x)
    np.testing.assert_array_equal(k(x, out=np.empty_like(x), template={"T": "int"}),
                                  x.astype(np.int32).astype(np.float32))
    np.testing.assert_array_equal(k(x, out=np.empty_like(x), template=[("T", "half")]),
                                  x.astype(np.float16).astype(np.float32))


def test_double_and_unknown_names_are_refused_with_the_names_to_use():
    k = MetalKernel("y[0] = x[0];", inputs=["x"], outputs=["y"], name="tbad")
    x = np.ones(8, np.float32)
    with pytest.raises(TypeError, match="float64 is not available"):
        k.metal_source(x, out=np.empty(1, np.float32), template={"T": "double"})
    with pytest.raises(TypeError, match="MSL name .*float, half"):
        k.metal_source(x, out=np.empty(1, np.float32), template={"T": "real"})


# --------------------------------------------------------------------------- list hint (15.8)
def test_python_list_gets_the_numpy_hint():
    k = MetalKernel(SRC, inputs=["x", "a"], outputs=["y"], name="listy")
    with pytest.raises(TypeError, match=r"'listy' input 'x' is a Python list.*"
                                        r"np\.asarray\(x, dtype=np\.float32\)") as info:
        k.metal_source([1.0, 2.0], 2.0, out=np.empty(2, np.float32))
    assert "CuPy" not in str(info.value)


# --------------------------------------------------------------------------- scalars (12.1)
def test_scalar_read_by_name_is_0d_and_subscripted_is_one_element():
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] * n + s[0];",
                    inputs=["x", "n", "s"], outputs=["y"], name="conv")
    text = k.metal_source(np.ones(16, np.float32), 3, 1.5, out=np.empty(16, np.float32))
    assert "const constant int32_t& n [[buffer(1)]]" in text
    assert "const constant float* s [[buffer(2)]]" in text
    assert "custom_kernel_conv_float_int32_ts_floatc_float(" in text


def test_issue_repro_scalar_multiplies(metal_engine):
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] * n;",
                    inputs=["x", "n"], outputs=["y"], name="repro")
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(k(x, 3, out=np.empty_like(x)), 3 * x)


def test_a_name_used_as_a_member_or_suffix_is_not_a_subscript():
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] * n + v.n[0] + nn[0];",
                    inputs=["x", "n", "nn"], outputs=["y"], name="notsub")
    sig = k.metal_source(np.ones(8, np.float32), 2, np.ones(8, np.float32),
                         out=np.empty(8, np.float32))
    assert "const constant int32_t& n " in sig


# --------------------------------------------------------------------------- threadgroup (12.3)
def test_threadgroup_per_call_is_validated():
    k = MetalKernel(SRC, inputs=["x", "a"], outputs=["y"], name="tgv")
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="1024"):
        k(x, 1.0, out=np.empty_like(x), threadgroup=(64, 32), engine="emulator")


# --------------------------------------------------------------------------- bfloat16 (12.6)
def test_bfloat16_arrays_run_on_the_emulator(metal_engine):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] * a;",
                    inputs=["x", "a"], outputs=["y"], name="bf16k")
    x = np.linspace(-3, 3, 12).astype(bf16)
    y = k(x, np.array(0.5, dtype=bf16), out=np.empty_like(x))
    np.testing.assert_array_equal(y.astype(np.float32), (x.astype(np.float32) * 0.5))
    assert "const device bfloat16_t* x" in k.metal_source(
        x, np.array(0.5, dtype=bf16), out=np.empty_like(x))


def test_bfloat16_without_ml_dtypes_says_what_to_install(monkeypatch):
    from cunumpy._lang import metal_dtypes as _metal_dtypes

    monkeypatch.setitem(__import__("sys").modules, "ml_dtypes", None)
    _metal_dtypes._bfloat16_or_none.cache_clear()
    _metal_dtypes.supported_dtypes.cache_clear()
    try:
        with pytest.raises(ImportError, match="ml_dtypes"):
            _metal_dtypes.bfloat16()
        k = MetalKernel("y[0] = T(x[0]);", inputs=["x"], outputs=["y"], name="nobf")
        with pytest.raises(TypeError, match="ml_dtypes"):
            k.metal_source(np.ones(8, np.float32), out=np.empty(1, np.float32),
                           template={"T": "bfloat"})
    finally:
        _metal_dtypes._bfloat16_or_none.cache_clear()
        _metal_dtypes.supported_dtypes.cache_clear()
