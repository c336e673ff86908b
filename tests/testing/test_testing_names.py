"""cunumpy.testing offers the active backend's testing names next to its own helpers."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import cunumpy as xp


def test_numpy_testing_names_on_the_numpy_backend():
    with xp.use_backend("numpy"):
        assert xp.testing.assert_allclose is np.testing.assert_allclose
        assert xp.testing.assert_array_equal is np.testing.assert_array_equal
        from cunumpy.testing import assert_array_less

        assert assert_array_less is np.testing.assert_array_less
        xp.testing.assert_allclose(np.float32(1.0), 1.0 + 1e-9)
        with pytest.raises(AssertionError):
            xp.testing.assert_array_equal([1, 2], [1, 3])


def test_own_helpers_stay_and_win():
    from cunumpy.testing._agree import assert_kernels_agree

    assert xp.testing.assert_kernels_agree is assert_kernels_agree
    names = dir(xp.testing)
    assert {"assert_kernels_agree", "tolerance_for", "assert_allclose", "assert_equal"} <= set(
        names
    )


def test_unknown_name_says_where_it_looked():
    with xp.use_backend("numpy"), pytest.raises(AttributeError, match=r"numpy\.testing"):
        xp.testing.assert_nothing_of_the_sort  # noqa: B018
    with pytest.raises(AttributeError):
        xp.testing._private_name  # noqa: B018


def test_cupy_is_not_imported():
    code = (
        "import sys, cunumpy as xp\n"
        "xp.testing.assert_allclose(1.0, 1.0)\n"
        "dir(xp.testing)\n"
        "from cunumpy.testing import assert_array_equal\n"
        "print('cupy' in sys.modules, 'pytest' in sys.modules)\n"
    )
    env = {**os.environ, "CUNUMPY_BACKEND": "numpy"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60, check=True).stdout
    assert out.split() == ["False", "False"]


def test_names_the_gpu_backend_lacks_come_from_numpy(monkeypatch):
    import types

    import cunumpy.testing as testing
    from cunumpy import _backend

    fake = types.ModuleType("fakegpu.testing")
    fake.assert_allclose = lambda *a, **k: "gpu allclose"
    monkeypatch.setattr(_backend, "get_backend", lambda: "fakegpu")
    real_import = testing._importlib.import_module
    monkeypatch.setattr(testing._importlib, "import_module",
                        lambda name: fake if name == "fakegpu.testing" else real_import(name))
    assert xp.testing.assert_allclose() == "gpu allclose"
    assert xp.testing.assert_raises is np.testing.assert_raises
    assert "assert_raises" in dir(xp.testing) and "assert_allclose" in dir(xp.testing)
    with pytest.raises(AttributeError, match=r"fakegpu\.testing nor numpy\.testing"):
        xp.testing.assert_nothing_of_the_sort  # noqa: B018


@pytest.mark.requires_cuda
def test_cupy_testing_names_on_the_cupy_backend():
    import cupy

    with xp.use_backend("numpy"), xp.use_backend("cupy", strict=True):
        assert xp.testing.assert_allclose is cupy.testing.assert_allclose
        xp.testing.assert_allclose(cupy.ones(3), np.ones(3))
    with xp.use_backend("numpy"):  # whatever backend the suite runs on
        assert xp.testing.assert_allclose is np.testing.assert_allclose
