"""The multi-rank tests start ``mpiexec`` jobs; each rank imports ``_jobs`` from this folder."""

from __future__ import annotations

import pytest

import cunumpy


@pytest.fixture
def rank_env():
    """The environment of the ranks: the active backend's engines (the CPU emulators on the
    NumPy backend; CuPy, and Metal translated to CUDA, on the CuPy backend)."""
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    backend = cunumpy.get_backend()
    if backend == "cupy":
        return {"CUNUMPY_BACKEND": "cupy", "CUNUMPY_CUDA_ENGINE": "cupy",
                "CUNUMPY_METAL_ENGINE": "cuda"}
    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(f"the ranks' kernels run on the CPU emulators, which need a compiler: {exc}")
    return {"CUNUMPY_BACKEND": "numpy", "CUNUMPY_CUDA_ENGINE": "emulator",
            "CUNUMPY_METAL_ENGINE": "emulator"}
