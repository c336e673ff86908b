"""The Metal conformance suite runs with data-race checking on (every case is a correct kernel,
so a race report is an emulator bug); ``CUNUMPY_EMULATOR_RACES=0`` turns it off."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _check_races(monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.environ.get("CUNUMPY_EMULATOR_RACES"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "1")
