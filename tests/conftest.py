"""Suite-wide settings: one private emulation cache per test session, and the backend reset."""

from __future__ import annotations

import os
import tempfile

import pytest

# Compiled emulation libraries are shared by all tests of one session (fast), but never with the
# user's own cache or with another session.
_SESSION_CACHE = tempfile.mkdtemp(prefix="cunumpy-test-cache-")
os.environ["CUNUMPY_CACHE_DIR"] = _SESSION_CACHE


@pytest.fixture(autouse=True)
def _restore_backend():
    """Every test starts and ends on the backend the session started with."""
    import cunumpy

    before = cunumpy.get_backend()
    yield
    if cunumpy.get_backend() != before:
        cunumpy.set_backend(before, strict=True)
