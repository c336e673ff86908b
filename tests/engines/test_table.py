"""The one engine table: names, dialects, aliases, selection and status."""

from __future__ import annotations

import pytest

from cunumpy._engines import _status, _table
from cunumpy._engines._base import EngineStatus, Launch, Program


def test_one_spelling_per_engine_in_table_order():
    assert _table.engine_names() == ("cupy", "emu-cuda", "mlx", "emu-metal", "metal-cuda")
    assert _table.engine_names("cuda") == ("cupy", "emu-cuda")
    assert _table.engine_names("metal") == ("mlx", "emu-metal", "metal-cuda")
    for name, row in _table.ENGINES.items():
        assert row.name == name and row.dialect in ("cuda", "metal")
        assert row.array_space == ("device" if row.gpu else "host")


@pytest.mark.parametrize(("dialect", "value", "name"), [
    ("cuda", "emulator", "emu-cuda"), ("cuda", "emu-cuda", "emu-cuda"), ("cuda", "cupy", "cupy"),
    ("metal", "emulator", "emu-metal"), ("metal", "mlx", "mlx"), ("metal", "cuda", "metal-cuda"),
])
def test_settings_and_names_map_to_one_engine(dialect, value, name):
    assert _table.canonical_name(dialect, value) == name
    assert _table.select(dialect, value) == name
    assert _table.canonical_name(dialect, _table.setting_value(name)) == name


def test_unknown_names_and_dialect_mismatch_are_refused():
    with pytest.raises(ValueError, match="unknown cuda engine 'mlx'"):
        _table.canonical_name("cuda", "mlx")
    with pytest.raises(ValueError, match="unknown kernel dialect"):
        _table.canonical_name("opencl", "emulator")
    with pytest.raises(ValueError, match="known engines: cupy, emu-cuda, mlx, emu-metal, metal-cuda"):
        _table.row("emulator")


def test_auto_picks_mlx_only_with_a_metal_gpu(monkeypatch):
    monkeypatch.setattr(_status, "mlx_status", lambda: (True, "fake GPU", "0"))
    assert _table.select("metal", "auto") == "mlx"
    monkeypatch.setattr(_status, "mlx_status", lambda: (False, "no GPU (test)", None))
    assert _table.select("metal", "auto") == "emu-metal"
    assert _table.engine_status("mlx") == EngineStatus(False, "no GPU (test)")


def test_status_of_every_engine_says_why():
    for name in _table.ENGINES:
        status = _table.engine_status(name)
        assert isinstance(status, EngineStatus)
        assert isinstance(status.ok, bool) and status.reason


def test_program_is_frozen_and_keyed_by_what_selects_the_code():
    a = Program("cuda", "k", "src", signature=None, options=("-O3",))
    b = Program("cuda", "k", "src", signature=object(), options=("-O3",))
    c = Program("cuda", "k", "src", signature=None, options=("-O2",))
    assert a == b and hash(a) == hash(b) and a.key == b.key
    assert a != c and a.key != c.key
    with pytest.raises(AttributeError):
        a.name = "other"  # type: ignore[misc]
    launch = Launch((1, 1, 1), (32, 1, 1), (1, 2))
    assert launch.shared_mem == 0 and launch.stream is None


def test_plugin_fixture_ids_are_engine_names():
    from cunumpy.testing import plugin

    for fixture, ids in ((plugin.kernel_engine, list(_table.ENGINES)),
                         (plugin.cuda_engine, ["cupy", "emu-cuda"]),
                         (plugin.metal_engine, ["mlx", "emu-metal", "metal-cuda"])):
        marker = getattr(fixture, "_pytestfixturefunction", None) or getattr(
            fixture, "_fixture_function_marker", None)
        if marker is None:
            pytest.skip("this pytest hides fixture parameters")
        assert [p.id for p in marker.params] == ids
