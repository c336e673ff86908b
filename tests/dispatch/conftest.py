"""Fixtures for the dispatch tests."""

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
