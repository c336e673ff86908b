"""Skip-or-fail decisions for tests that need hardware. Imports pytest lazily.

Outside a running pytest test there is nothing to skip: :func:`ports_not_run` then raises
:class:`PortsNotRunError` or warns with :class:`PortsNotRunWarning` instead.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import NoReturn

from cunumpy import config

__all__ = [
    "PortsNotRunError",
    "PortsNotRunWarning",
    "cuda_skip_or_fail",
    "in_pytest_test",
    "metal_skip_or_fail",
    "ports_not_run",
    "skip_or_fail",
]


class PortsNotRunError(RuntimeError):
    """Outside pytest: no requested port could run here, or a required one could not.

    Raised by :func:`~cunumpy.testing.assert_kernels_agree`. ``not_run`` maps each port that
    did not run to the reason; ``checked`` maps the ports that did run (and agreed) to their
    engine.
    """

    def __init__(self, message: str, not_run: dict[str, str], checked: dict[str, str]) -> None:
        super().__init__(message)
        self.not_run = not_run
        self.checked = checked


class PortsNotRunWarning(UserWarning):
    """Outside pytest: some ports agreed with the host kernel, others could not run here."""


def in_pytest_test() -> bool:
    """True while a pytest test runs in this process (a skip then means something)."""
    return "PYTEST_CURRENT_TEST" in os.environ and "pytest" in sys.modules


def ports_not_run(message: str, required: bool, variable: str, not_run: dict[str, str],
                  checked: dict[str, str]) -> None:
    """Some ports could not run: skip (or fail) the test, or outside pytest raise or warn.

    Outside pytest: :class:`PortsNotRunError` when nothing was checked or a port was required
    (``variable`` names the requirement), else a :class:`PortsNotRunWarning` pointing at the
    caller of ``assert_kernels_agree``.
    """
    if in_pytest_test():
        skip_or_fail(message, required, variable)
    if required or not checked:
        why = f" (required by {variable}=1)" if required else " (no port was checked)"
        raise PortsNotRunError(message + why, not_run, checked)
    warnings.warn(message, PortsNotRunWarning, stacklevel=3)


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
