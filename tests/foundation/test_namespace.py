"""The cunumpy namespace forwards NumPy's public names to the active backend."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp


@pytest.fixture
def numpy_backend():
    """These tests compare against NumPy itself, whatever CUNUMPY_BACKEND chose."""
    with xp.use_backend("numpy", strict=True):
        yield


def test_numpy_names_resolve_to_numpy_objects(numpy_backend):
    assert xp.zeros is np.zeros
    assert xp.float32 is np.float32
    assert xp.linalg.norm is np.linalg.norm
    assert xp.fft.rfft is np.fft.rfft
    assert xp.random.default_rng is np.random.default_rng
    assert xp.pi == np.pi


def test_every_public_numpy_name_is_reachable(numpy_backend):
    own = set(xp.__all__)
    missing = [name for name in dir(np)
               if not name.startswith("_") and name not in own and not hasattr(xp, name)]
    assert missing == []


def test_own_names_win_over_numpy_names(numpy_backend):
    import cunumpy.testing

    assert xp.testing is cunumpy.testing
    assert xp.testing is not np.testing


def test_unknown_name_raises_attribute_error_naming_backend(numpy_backend):
    with pytest.raises(AttributeError, match="no_such_function.*numpy"):
        xp.no_such_function  # noqa: B018


def test_all_matches_the_public_surface():
    public = {name for name in dir(xp) if not name.startswith("_")}
    assert set(xp.__all__) <= public
    for name in xp.__all__:
        assert getattr(xp, name) is not None


def test_results_are_plain_arrays_of_the_backend(backend):
    a = xp.arange(6, dtype=xp.float32).reshape(2, 3)
    expected = np.ndarray if backend == "numpy" else __import__("cupy").ndarray
    assert type(a) is expected
    assert float(xp.linalg.norm(xp.ones(4))) == 2.0
    assert xp.get_array_backend(a) == backend
    assert xp.get_array_module(a) is (np if backend == "numpy" else __import__("cupy"))
