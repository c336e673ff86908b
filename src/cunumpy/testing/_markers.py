"""Skip-or-fail decisions for tests that need hardware. Imports pytest lazily."""

from __future__ import annotations

from typing import NoReturn

from cunumpy import config

__all__ = ["cuda_skip_or_fail", "metal_skip_or_fail", "skip_or_fail"]


def skip_or_fail(reason: str, required: bool, variable: str) -> NoReturn:
    """Skip the running test, or fail it when ``required`` (the hardware must be there).

    The skip is reported at the test that needed the hardware (its file and line), not at this
    module: the ``requires_cuda`` / ``requires_metal`` markers, the fixtures and the helpers all
    end here, and a summary line pointing into cunumpy would not say which test skipped.
    """
    import pytest

    if required:
        pytest.fail(f"{reason} (a skip became a failure because {variable}=1)", pytrace=False)
    try:
        pytest.skip(reason)
    except pytest.skip.Exception as exc:
        # What pytest itself does for a skip raised by a fixture or a skip mark: the report
        # takes the test item's location. Older pytest ignores the attribute (same skip).
        exc._use_item_location = True
        raise


def cuda_skip_or_fail(reason: str) -> NoReturn:
    """Skip for lack of CUDA, or fail when ``CUNUMPY_REQUIRE_CUDA=1``."""
    skip_or_fail(reason, config.require_cuda(), "CUNUMPY_REQUIRE_CUDA")


def metal_skip_or_fail(reason: str) -> NoReturn:
    """Skip for lack of Metal, or fail when ``CUNUMPY_REQUIRE_METAL=1``."""
    skip_or_fail(reason, config.require_metal(), "CUNUMPY_REQUIRE_METAL")
