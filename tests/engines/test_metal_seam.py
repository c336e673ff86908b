"""The Metal half of the seam: MetalKernel hands its engines a frozen Program and a MetalLaunch,
and no engine reads the MetalKernel itself (mlx, emu-metal and metal-cuda alike)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _fake_cupy import install

from cunumpy import config
from cunumpy._engines import _metal_registry as _metal_engines
from cunumpy._engines._base import Program
from cunumpy._engines._metal import MetalLaunch
from cunumpy._engines._table import engine_status
from cunumpy._engines.metal_cuda import _fast as _metal_cuda_fast
from cunumpy.emulation import EmulatorOptions
from cunumpy.kernels import MetalKernel
from cunumpy.kernels import metal as metal_module

SCALE = "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];"
TEMPLATED = "uint i = thread_position_in_grid.x; y[i] = x[i] * T(N);"


def _reset_engines() -> None:
    _metal_engines._engine.cache_clear()
    _metal_engines._by_setting.clear()
    _metal_cuda_fast._SCALARS.clear()


@pytest.fixture
def fake_cupy(monkeypatch):
    """The metal-cuda engine on a CuPy stand-in (no GPU: launches are recorded, not run)."""
    _reset_engines()
    yield install(monkeypatch)
    _reset_engines()


# -- the Program ----------------------------------------------------------------------------------
def test_program_is_frozen_hashable_and_made_once_per_variant():
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="scale")
    x = np.arange(16, dtype=np.float32)
    p = k.program(x, 2.0, out=np.empty_like(x))
    assert isinstance(p, Program) and p.dialect == "metal" and p.name == "scale"
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.source = "y[0] = 0;"  # type: ignore[misc]
    assert hash(p) == hash(k.program(x, 3.0, out=np.empty_like(x)))
    assert k.program(x, 3.0, out=np.empty_like(x)) is p  # the same variant: the same object
    assert p.setting("inputs") == ("x", "a") and p.setting("outputs") == ("y",)
    assert p.setting("header") == "" and p.setting("math_mode") == "safe"
    assert p.setting("kernel_name") == "custom_kernel_scale_float_floatc_float"
    # another argument dtype is another variant, hence another program
    p64 = k.program(x.astype(np.int32), 2, out=np.empty(16, np.int32))
    assert p64 != p and p64.key != p.key
    fast = k.program(x, 2.0, out=np.empty_like(x), math_mode="fast")
    assert fast != p and fast.setting("math_mode") == "fast"


def test_template_values_and_their_types_select_the_program():
    k = MetalKernel(TEMPLATED, inputs=["x"], outputs=["y"], name="tmpl")
    x = np.ones(8, np.float32)
    out = np.empty_like(x)
    p1 = k.program(x, out=out, template={"T": np.float32, "N": 1})
    p2 = k.program(x, out=out, template={"T": np.float32, "N": 2})
    pb = k.program(x, out=out, template={"T": np.float32, "N": True})
    assert len({p1, p2, pb}) == 3  # True == 1 in Python, but `bool N` is another kernel
    assert p1.template == (("T", np.dtype(np.float32)), ("N", 1))
    assert p1.setting("template_types")[1] == "int"
    assert pb.setting("template_types")[1] == "bool"


def test_new_emulator_options_make_a_new_program():
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="opts")
    x = np.arange(4, dtype=np.float32)
    p = k.program(x, 2.0, out=np.empty_like(x))
    assert p.setting("emulator_options") is None
    k.emulator_options = EmulatorOptions(checks=False)
    q = k.program(x, 2.0, out=np.empty_like(x))
    assert q != p and q.setting("emulator_options") == EmulatorOptions(checks=False)


# -- engines see only programs and launches --------------------------------------------------------
def _holds_kernel(value, seen=None) -> bool:
    if isinstance(value, MetalKernel):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_kernel(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_kernel(v) for v in value.values())
    if isinstance(value, Program):
        return any(_holds_kernel(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


@pytest.fixture
def guarded(monkeypatch):
    """Spy on an engine: its prepare gets a Program, its launch callable a MetalLaunch, and any
    read of a MetalKernel attribute while the engine works fails the test."""
    reading = [False]

    def getattribute(self, name):
        if reading[0]:
            raise AssertionError(f"an engine read MetalKernel.{name}")
        return object.__getattribute__(self, name)

    monkeypatch.setattr(MetalKernel, "__getattribute__", getattribute)
    seen: list[tuple[Program, MetalLaunch]] = []

    def spy(engine):
        real = engine.prepare

        def prepare(program):
            assert isinstance(program, Program) and not _holds_kernel(program)
            reading[0] = True
            try:
                go = real(program)
            finally:
                reading[0] = False

            def launch(data):
                assert isinstance(data, MetalLaunch) and not _holds_kernel(tuple(data))
                seen.append((program, data))
                reading[0] = True
                try:
                    return go(data)
                finally:
                    reading[0] = False

            return launch

        monkeypatch.setattr(engine, "prepare", prepare)
        return seen

    return spy


@pytest.mark.skipif(not engine_status("emu-metal").ok, reason="no C++ compiler")
def test_emu_metal_gets_only_program_and_launch(guarded):
    eng = _metal_engines.get_metal_engine("emu-metal")
    seen = guarded(eng)
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="seam_emu")
    x = np.arange(40, dtype=np.float32)
    y = k(x, 2.0, out=np.empty_like(x), engine="emulator", threadgroup=16)
    np.testing.assert_array_equal(y, 2 * x)
    (program, launch), = seen
    assert launch.grid == (40, 1, 1) and launch.threadgroup == (16, 1, 1)
    assert launch.output_shapes == ((40,),) and launch.output_dtypes == (np.dtype(np.float32),)
    assert program is k.program(x, 2.0, out=np.empty_like(x))


def test_mlx_gets_only_program_and_launch(guarded, monkeypatch):
    pytest.importorskip("mlx.core")
    from cunumpy._engines import mlx as _metal_mlx

    eng = _metal_mlx.MLXEngine()
    monkeypatch.setattr(eng, "check_available", lambda: None)
    calls = []

    def fake_launch_mlx(signature, source, input_names, output_names, header, inputs,
                        output_shapes, output_dtypes, grid, threadgroup, **kw):
        calls.append((input_names, output_names, grid, threadgroup, kw))
        return [_metal_mlx.from_numpy(np.full(s, 7, d), d)
                for s, d in zip(output_shapes, output_dtypes)]

    monkeypatch.setattr(_metal_mlx, "launch_mlx", fake_launch_mlx)
    monkeypatch.setattr(metal_module, "get_metal_engine", lambda name=None: eng)
    seen = guarded(eng)
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="seam_mlx",
                    atomic_outputs=False, ensure_row_contiguous=False)
    y = k(np.arange(8, dtype=np.float32), 2.0, out=np.empty(8, np.float32))
    assert y.tolist() == [7.0] * 8 and len(seen) == 1
    (names_in, names_out, grid, tg, kw), = calls
    assert (names_in, names_out, grid, tg) == (("x", "a"), ("y",), (8, 1, 1), (8, 1, 1))
    assert kw["ensure_row_contiguous"] is False and kw["compile_options"] == ()


def test_metal_cuda_gets_only_program_and_launch(guarded, fake_cupy):
    eng = _metal_engines.get_metal_engine("cuda")
    assert eng.name == "metal-cuda" and eng is _metal_engines.get_metal_engine("metal-cuda")
    seen = guarded(eng)
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="seam_cuda")
    x = np.arange(300, dtype=np.float32)
    k(x, 2.0, out=np.empty_like(x), engine="cuda")  # NumPy arrays: the full path
    (_, launch), = seen
    assert launch.grid == (300, 1, 1) and launch.threadgroup == (256, 1, 1)
    code, groups, block, _ = fake_cupy.launches[-1]
    assert groups == (2, 1, 1) and block == (256, 1, 1)
    assert "custom_kernel_seam_cuda" in code
    assert isinstance(launch.inputs[0], fake_cupy.ndarray)


# -- the metal-cuda fast path: a generated function per launch plan --------------------------------
PUSH = """
uint i = thread_position_in_grid.x;
float x = pos[i], v = vel[i];
for (int k = 0; k < NSTEPS; ++k) { x += v * dt[0]; }
pos_out[i] = x;
"""


def test_repeated_calls_go_through_the_generated_plan(fake_cupy):
    from cunumpy._engines.metal_cuda._run import plan_sources

    cupy = fake_cupy
    k = MetalKernel(PUSH, inputs=["pos", "vel", "dt"], outputs=["pos_out"], name="push")
    pos = cupy.asarray(np.zeros(512, np.float32))
    vel, out = cupy.asarray(np.ones(512, np.float32)), cupy.empty(512, dtype=np.float32)
    tmpl = {"NSTEPS": 4}
    assert k(pos, vel, 0.5, out=out, template=tmpl, engine="cuda") is out  # CuPy's first use
    assert plan_sources(k) == []
    assert k(pos, vel, 0.5, out=out, template=tmpl, engine="cuda") is out  # builds the plan
    (text,) = plan_sources(k)
    assert "a0.dtype is _d0" in text and "template.get('NSTEPS', _M)" in text
    assert "_f(_G, _B, (_L, a0, a1, p2, o0,), 0, None)" in text
    first = cupy.launches[-1]
    assert k(pos[:], vel, 0.5, out=out, template=dict(tmpl), engine="cuda") is out
    again = cupy.launches[-1]
    assert again[0] == first[0] and again[1:3] == first[1:3] == ((2, 1, 1), (256, 1, 1))
    assert again[3][3].ptr == first[3][3].ptr  # dt by value: the same cached C value
    assert len(plan_sources(k)) == 1  # served by the generated function, no new plan
    # what the plan depends on: a new shape or template value makes another plan
    k(pos[:256], vel[:256], 0.5, out=out[:256], template=tmpl, engine="cuda")
    assert cupy.launches[-1][1] == (1, 1, 1) and len(plan_sources(k)) == 2
    k(pos, vel, 0.5, out=out, template={"NSTEPS": True}, engine="cuda")
    assert cupy.launches[-1][0] != first[0]  # `bool NSTEPS` is another kernel
    assert len(plan_sources(k)) == 3


def test_calls_the_plan_cannot_serve_take_the_full_path(fake_cupy):
    cupy = fake_cupy
    k = MetalKernel(PUSH, inputs=["pos", "vel", "dt"], outputs=["pos_out"], name="push2")
    pos, vel = cupy.asarray(np.zeros(64, np.float32)), cupy.asarray(np.ones(64, np.float32))
    out = cupy.empty(64, dtype=np.float32)
    k(pos, vel, 0.5, out=out, template={"NSTEPS": 1}, engine="cuda")
    with pytest.raises(OverflowError, match="overflows float32"):
        k(pos, vel, 1e300, out=out, template={"NSTEPS": 1}, engine="cuda")
    n = len(cupy.launches)
    k(pos, vel, 0.5, out=pos, template={"NSTEPS": 1}, engine="cuda")  # out is an input
    assert len(cupy.launches) == n + 1
    assert cupy.launches[-1][3][-1] is not pos  # written through a temporary


def test_the_front_end_checks_geometry_against_the_engine_limits(fake_cupy):
    k = MetalKernel("y[0] = 1.0f;", inputs=[], outputs=["y"], name="tall", threadgroup=1)
    with pytest.raises(ValueError, match=r"metal-cuda engine allows at most .*long axis first"):
        k(out=np.zeros(1, np.float32), n_threads=(1, 70000), engine="cuda")
    assert fake_cupy.launches == []


# -- one spelling per engine --------------------------------------------------------------------
@pytest.mark.parametrize(("typed", "name"), [
    ("cuda", "metal-cuda"), ("metal-cuda", "metal-cuda"), ("emulator", "emu-metal"),
    ("emu-metal", "emu-metal"), ("mlx", "mlx"),
])
def test_engine_settings_and_names_are_one_engine(typed, name, monkeypatch):
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", typed)
    assert config.metal_engine() == typed
    assert _metal_engines.resolve_metal_engine() == name
    assert _metal_engines.get_metal_engine(typed).name == name
    assert _metal_engines.get_metal_engine(typed) is _metal_engines.get_metal_engine(name)


def test_info_reports_the_engine_name_for_the_cuda_setting(monkeypatch):
    from cunumpy._info import kernel_engine

    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "cuda")
    entry = kernel_engine("metal")
    assert entry["setting"] == "cuda" and entry["engine"] == "metal-cuda"
    assert "chose" not in entry["reason"]


@pytest.mark.parametrize("name", ["mlx", "emu-metal", "metal-cuda"])
def test_each_metal_engine_is_its_table_row(name):
    from cunumpy._engines._table import row

    eng = _metal_engines.get_metal_engine(name)
    r = row(name)
    assert (eng.name, eng.dialect, eng.array_space) == (r.name, r.dialect, r.array_space)
    assert eng.status() == r.status()
    assert eng.limits().max_threads_per_threadgroup == 1024
    for method in ("prepare", "is_device_array", "to_device", "host_view", "describe",
                   "contiguous", "check_available"):
        assert callable(getattr(eng, method)), method
