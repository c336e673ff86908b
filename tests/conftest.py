"""Suite-wide settings: one private emulation cache per test session, the backend reset, and the
fixtures that select an emulator for Kernel dispatch tests (tests/kernels/dispatch, tests/testing).

The tree mirrors ``src/cunumpy``: tests/lang (``_lang/``), tests/emulation, tests/engines
(``_engines/``), tests/kernels (the front ends; tests/kernels/dispatch for ``kernels/dispatch.py``),
tests/testing, tests/cli, tests/foundation (the package root and project-wide rules), and the
conformance suites tests/cuda_conformance and tests/metal_conformance (every kernel on every
engine of its dialect), tests/docs and tests/examples. Engines are selected with the cunumpy
plugin's ``kernel_engine`` / ``cuda_engine`` / ``metal_engine`` fixtures.
"""

from __future__ import annotations

import os
import tempfile

import pytest

# Compiled emulation libraries are shared by all tests of one session (fast), but never with the
# user's own cache or with another session. Under pytest-xdist the controller makes the directory
# before it starts the workers, which inherit its environment and share it: the cache publishes an
# entry by renaming a finished private build directory into place, so workers that build the same
# variant at once both succeed and load one copy (tests/emulation/test_cache.py covers processes
# racing for one key).
_SHARED = "CUNUMPY_TEST_SESSION_CACHE"
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(_SHARED):
    _SESSION_CACHE = os.environ[_SHARED]
else:
    _SESSION_CACHE = tempfile.mkdtemp(prefix="cunumpy-test-cache-")
    os.environ[_SHARED] = _SESSION_CACHE
os.environ["CUNUMPY_CACHE_DIR"] = _SESSION_CACHE


@pytest.fixture(autouse=True)
def _restore_backend():
    """Every test starts and ends on the backend the session started with."""
    import cunumpy

    before = cunumpy.get_backend()
    yield
    if cunumpy.get_backend() != before:
        cunumpy.set_backend(before, strict=True)


@pytest.fixture
def emu_metal(monkeypatch):
    """MetalKernel launches run on the CPU emulator (Metal dispatch is then on by default)."""
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "emulator")
    monkeypatch.delenv("CUNUMPY_USE_METAL", raising=False)
    monkeypatch.delenv("CUNUMPY_KERNEL_PORT", raising=False)
    return "emulator"


@pytest.fixture
def emu_cuda(monkeypatch):
    """CudaKernel launches run on the CPU emulator; skips while that engine is not available."""
    from cunumpy.emulation import CompilerNotFoundError, find_compiler
    from cunumpy.kernels import get_cuda_engine

    try:
        find_compiler()
        get_cuda_engine("emulator")
    except (CompilerNotFoundError, RuntimeError) as exc:
        pytest.skip(f"the CUDA emulator cannot run here: {exc}")
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")
    return "emulator"


@pytest.fixture
def clean_settings(monkeypatch):
    """Automatic dispatch settings and no dispatch variables for the test; restored after."""
    from cunumpy.kernels.dispatch import force_port, set_metal_dispatch

    for var in ("CUNUMPY_USE_METAL", "CUNUMPY_KERNEL_PORT", "CUNUMPY_METAL_ENGINE"):
        monkeypatch.delenv(var, raising=False)
    before = set_metal_dispatch(None), force_port(None)
    yield
    set_metal_dispatch(before[0])
    force_port(before[1])
