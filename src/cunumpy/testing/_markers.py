"""Skip-or-fail decisions for tests that need hardware. Imports pytest lazily."""

from __future__ import annotations

from typing import NoReturn

from cunumpy import config

__all__ = ["cuda_skip_or_fail", "metal_skip_or_fail", "skip_or_fail"]


def skip_or_fail(reason: str, required: bool, variable: str) -> NoReturn:
    """Skip the running test, or fail it when ``required`` (the hardware must be there)."""
    import pytest

    if required:
        pytest.fail(f"{reason} (a skip became a failure because {variable}=1)", pytrace=False)
    pytest.skip(reason)


def cuda_skip_or_fail(reason: str) -> NoReturn:
    """Skip for lack of CUDA, or fail when ``CUNUMPY_REQUIRE_CUDA=1``."""
    skip_or_fail(reason, config.require_cuda(), "CUNUMPY_REQUIRE_CUDA")


def metal_skip_or_fail(reason: str) -> NoReturn:
    """Skip for lack of Metal, or fail when ``CUNUMPY_REQUIRE_METAL=1``."""
    skip_or_fail(reason, config.require_metal(), "CUNUMPY_REQUIRE_METAL")
