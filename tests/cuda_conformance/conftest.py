"""Engine fixture for the CUDA conformance suite: every case runs once per CUDA engine.

``cupy`` needs an NVIDIA GPU (marked ``requires_cuda``: skipped without one, a failure with
``CUNUMPY_REQUIRE_CUDA=1``). ``emulator`` runs on the CPU once the CUDA emulator engine is
registered; until then it is skipped with the reason.
"""

from __future__ import annotations

import pytest

from cunumpy.testing._markers import cuda_skip_or_fail

ENGINES = [
    pytest.param("cupy", marks=pytest.mark.requires_cuda, id="cupy"),
    pytest.param("emulator", id="emu-cuda"),
]


@pytest.fixture(params=ENGINES)
def cuda_engine(request: pytest.FixtureRequest) -> str:
    """The name of a usable CUDA engine; skips (or fails, for required CUDA) otherwise."""
    name = request.param
    if name == "cupy":
        from cunumpy._backend import cupy_status

        ok, reason = cupy_status()
        if not ok:
            cuda_skip_or_fail(reason)
        return name
    from cunumpy.kernels import get_cuda_engine

    try:
        get_cuda_engine(name)
    except RuntimeError as exc:
        pytest.skip(f"CUDA emulator engine not available: {exc}")
    return name


@pytest.fixture(autouse=True)
def _check_races(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conformance kernel is correct: it must also run free of data races."""
    import os

    if not os.environ.get("CUNUMPY_EMULATOR_RACES"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "1")
