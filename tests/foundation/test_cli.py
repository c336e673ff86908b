"""The cunumpy command line."""

from __future__ import annotations

import json
import subprocess
import sys

import cunumpy as xp
from cunumpy.cli import main


def test_info_table_names_every_component(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for word in ("numpy", "cupy", "mlx / metal", "emulation compiler", "engines"):
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
