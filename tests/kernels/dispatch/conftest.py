"""Dispatch tests (``kernels/dispatch.py``) start on the NumPy backend.

The shared fixtures ``emu_metal``, ``emu_cuda`` and ``clean_settings`` are in tests/conftest.py
(the ``assert_kernels_agree`` tests in tests/testing use them too).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _numpy_backend():
    """Dispatch tests start on NumPy, also when the suite runs with CUNUMPY_BACKEND=cupy.

    The cases that need the CuPy backend switch to it themselves (and are ``requires_cuda``); the
    suite's own autouse fixture restores the session's backend afterwards.
    """
    import cunumpy

    cunumpy.set_backend("numpy")
