"""The cunumpy command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import cunumpy as xp
from cunumpy._info import kernel_engine
from cunumpy.cli import main


def test_info_table_names_every_component(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rows on one line each (long reasons wrap otherwise)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for word in ("numpy", "cupy", "mlx / metal", "emulation compiler", "cuda engine (CudaKernel)",
                 "metal engine (MetalKernel)"):
        assert word in out


def test_info_json_is_backend_info(capsys):
    assert main(["info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["backend"] == xp.get_backend()
    assert set(data) >= {"cupy", "mlx", "emulation", "numpy", "python"}
    for part in ("cupy", "mlx", "emulation"):
        assert data[part]["reason"]


def test_python_dash_m_and_no_command():
    done = subprocess.run([sys.executable, "-m", "cunumpy", "info", "--json"],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["cunumpy"] == xp.__version__
    bare = subprocess.run([sys.executable, "-m", "cunumpy"], capture_output=True, text=True)
    assert bare.returncode == 2 and "info" in bare.stdout


def test_backend_info_is_json_serialisable():
    json.dumps(xp.backend_info())


# ------------------------------------------------------------- which engine runs here, and why
@pytest.fixture
def statuses(monkeypatch):
    """Engine availability as this test says, whatever the machine has."""
    from cunumpy._engines import _table

    table = {"numpy": (True, "numpy"), "numba": (False, "no numba (test)"),
             "cupy": (False, "CuPy is not installed (test)"), "emu-cuda": (True, "emu ok (test)"),
             "mlx": (False, "MLX has no Metal GPU here (test)"), "emu-metal": (True, "emu ok")}
    monkeypatch.setattr(_table, "engine_status", lambda name: table[name])
    # what CUNUMPY_CUDA_ENGINE=auto decides by (the process's CuPy probe)
    monkeypatch.setattr(xp._backend, "cupy_status", lambda: table["cupy"])
    for var in ("CUNUMPY_CUDA_ENGINE", "CUNUMPY_METAL_ENGINE"):
        monkeypatch.delenv(var, raising=False)
    return table


def test_default_cuda_engine_without_a_gpu_is_the_emulator_and_says_why(statuses):
    entry = kernel_engine("cuda")
    assert (entry["setting"], entry["engine"], entry["available"]) == ("auto", "emu-cuda", True)
    assert entry["default"] and entry["hint"] is None
    assert entry["reason"] == (
        "auto chose the emulator: CuPy is not installed (test); emu ok (test)")


def test_default_cuda_engine_with_a_gpu_is_cupy(statuses):
    statuses["cupy"] = (True, "CuPy 14.0 with 1 CUDA device(s) (test)")
    entry = kernel_engine("cuda")
    assert (entry["setting"], entry["engine"], entry["available"]) == ("auto", "cupy", True)
    assert entry["reason"] == "auto chose cupy: CuPy 14.0 with 1 CUDA device(s) (test)"


def test_cupy_setting_that_cannot_run_says_what_to_do(statuses, monkeypatch):
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
    entry = kernel_engine("cuda")
    assert entry["engine"] == "cupy" and entry["available"] is False and not entry["default"]
    assert entry["reason"] == "CuPy is not installed (test)"
    assert entry["hint"] == "run with CUNUMPY_CUDA_ENGINE=emulator (the CPU emulator works here)"


def test_emulator_setting_resolves_to_the_emulator(statuses, monkeypatch):
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "emulator")
    for kind, name in (("cuda", "emu-cuda"), ("metal", "emu-metal")):
        entry = kernel_engine(kind)
        assert (entry["engine"], entry["available"], entry["hint"]) == (name, True, None)
        assert entry["setting"] == "emulator" and not entry["default"]


def test_no_emulator_either_is_said(statuses, monkeypatch):
    statuses["emu-cuda"] = (False, "no C++ compiler (test)")
    entry = kernel_engine("cuda")  # auto: the emulator, which cannot run
    assert (entry["engine"], entry["available"]) == ("emu-cuda", False)
    assert entry["hint"] == "install a C++ compiler (g++ or clang++) for the CPU emulator"
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
    entry = kernel_engine("cuda")
    assert entry["hint"] == "the CPU emulator cannot run either: no C++ compiler (test)"


def test_auto_shows_what_the_selection_function_chose(statuses, monkeypatch):
    """The report asks the kernel layer which engine runs (no hard-coded mapping)."""
    from cunumpy import config
    from cunumpy._engines import _metal_registry as _metal_engines

    emulator = _metal_engines.get_metal_engine("emulator")
    monkeypatch.setattr(config, "metal_engine", lambda: "auto")
    monkeypatch.setattr(_metal_engines, "get_metal_engine", lambda name=None: emulator)
    entry = kernel_engine("metal")
    assert (entry["setting"], entry["engine"], entry["available"]) == ("auto", "emu-metal", True)
    assert entry["reason"] == "auto chose the emulator: MLX has no Metal GPU here (test); emu ok"


def test_invalid_setting_is_reported_not_raised(monkeypatch):
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "bogus")
    info = xp.backend_info()
    entry = info["kernel_engines"]["metal"]
    assert entry["engine"] is None and entry["available"] is False
    assert "CUNUMPY_METAL_ENGINE='bogus'" in entry["reason"]
    assert entry["hint"] == "unset CUNUMPY_METAL_ENGINE or set it to a valid engine"
    assert info["engines"]["metal"].startswith("invalid")


def test_info_prints_the_engine_each_kernel_kind_uses(statuses, capsys):
    from cunumpy.cli._cmd_info import _rows

    rows = {name: (value, detail) for name, value, detail in _rows(xp.backend_info())}
    value, detail = rows["cuda engine (CudaKernel)"]
    assert value == "emu-cuda"
    assert detail == ("CUNUMPY_CUDA_ENGINE unset, default auto; auto chose the emulator: CuPy is "
                      "not installed (test); emu ok (test)")
    statuses["emu-cuda"] = (False, "no C++ compiler (test)")
    assert main(["info"]) == 0
    assert "cannot run" in capsys.readouterr().out
    assert main(["info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kernel_engines"]["cuda"]["engine"] == "emu-cuda"
    assert set(data["kernel_engines"]) == {"cuda", "metal"}
