"""Settings of the CUDA conformance suite.

Every case runs once per CUDA engine through the cunumpy pytest plugin's ``cuda_engine`` fixture
(ids ``cupy``, ``emu-cuda``; an engine the engine table reports as not ready skips with its
reason, and ``cupy`` fails instead with ``CUNUMPY_REQUIRE_CUDA=1``).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _check_races(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conformance kernel is correct: it must also run free of data races."""
    import os

    if not os.environ.get("CUNUMPY_EMULATOR_RACES"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "1")
