"""The ``cunumpy.testing`` tests start on the NumPy backend (also when the suite runs with
``CUNUMPY_BACKEND=cupy``); the cases that need CuPy switch to it themselves."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _numpy_backend():
    import cunumpy

    cunumpy.set_backend("numpy")
