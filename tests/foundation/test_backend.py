"""Backend control: set_backend, use_backend, fallback, the CUNUMPY_BACKEND variable."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import _backend


@pytest.fixture
def cupy_unusable(monkeypatch):
    """Make CuPy unusable whatever the machine has (as on a machine without a GPU).

    The test starts on NumPy, as a process without a GPU would (the suite's autouse fixture
    restores the session's backend afterwards).
    """
    xp.set_backend("numpy")
    monkeypatch.setattr(_backend, "_cupy_status", (False, "no CUDA device (test)"))


def test_unknown_backend_lists_valid_ones():
    before = xp.get_backend()
    with pytest.raises(ValueError, match="numpy, cupy"):
        xp.set_backend("torch")
    assert xp.get_backend() == before


def test_fallback_to_numpy_warns_why(cupy_unusable):
    with pytest.warns(xp.BackendUnavailableWarning, match="no CUDA device"):
        assert xp.set_backend("cupy") == "numpy"
    assert xp.get_backend() == "numpy"
    assert xp.zeros is np.zeros


def test_strict_raises_and_keeps_previous(cupy_unusable):
    with pytest.raises(RuntimeError, match="no CUDA device.*stays 'numpy'"):
        xp.set_backend("cupy", strict=True)
    assert xp.get_backend() == "numpy"


def test_use_backend_restores_on_exception(cupy_unusable):
    with pytest.raises(KeyError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xp.use_backend("cupy") as active:
            assert active == "numpy"
            raise KeyError("boom")
    assert xp.get_backend() == "numpy"


def test_cupy_available_is_cached_and_explains():
    ok, reason = _backend.cupy_status()
    assert xp.cupy_available() is ok
    assert _backend.cupy_status() is _backend.cupy_status()
    assert reason


@pytest.mark.requires_cuda
def test_cupy_backend_switch_and_restore():
    import cupy

    xp.set_backend("numpy")
    with xp.use_backend("cupy", strict=True):
        assert xp.get_backend() == "cupy"
        assert xp.zeros is cupy.zeros
        assert xp.linalg.norm is cupy.linalg.norm
    assert xp.zeros is np.zeros


def test_names_missing_from_new_backend_are_removed(monkeypatch):
    import types

    xp.set_backend("numpy")
    fake = types.ModuleType("fakecupy")
    fake.zeros = lambda *a, **k: "fake"
    monkeypatch.setattr(_backend, "_cupy_status", (True, "fake"))
    monkeypatch.setattr(_backend, "_backend_module",
                        lambda name: fake if name == "cupy" else np)
    with xp.use_backend("cupy", strict=True):
        assert xp.zeros() == "fake"
        assert not hasattr(xp, "linspace")
    assert xp.linspace is np.linspace


def _run_import(env_value):
    code = ("import warnings, cunumpy as xp\n"
            "print(xp.get_backend())")
    env = {**os.environ, "CUNUMPY_BACKEND": env_value, "PYTHONWARNINGS": "always"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_env_var_selects_numpy():
    done = _run_import("numpy")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "numpy"


def test_env_var_cupy_without_gpu_falls_back_with_warning():
    from cunumpy._backend import cupy_stand_in

    if xp.cupy_available() and not cupy_stand_in():  # the child process has no stand-in
        done = _run_import("cupy")
        assert done.stdout.strip() == "cupy"
    else:
        done = _run_import("cupy")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "numpy"
        assert "cupy backend unavailable" in done.stderr


def test_env_var_bogus_value_fails_import_clearly():
    done = _run_import("jax")
    assert done.returncode != 0
    assert "CUNUMPY_BACKEND='jax'" in done.stderr and "numpy, cupy" in done.stderr


def test_get_array_module_refuses_mixed_arrays():
    assert xp.get_array_module(np.ones(2), 3.0) is np
    assert xp.get_array_backend([1, 2]) == "numpy"
