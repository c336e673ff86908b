"""Undefined behaviour on the CUDA emulator: the side report of ``cn_cuda.h`` and what a launch
does with it (raise :class:`~cunumpy.emulation.errors.UndefinedBehaviorError`, or warn).

The generated launcher reads three int64 words from the launch's meta buffer: the dynamic shared
memory size, the mode (0: stop at the first case and raise, 1: go on and warn) and the address of
an :class:`UbReport` that the runtime fills with the first case and a count. The workers of a
parallel launch share it (under its spin lock): the case kept is the one in the earliest group
of the order, as in a serial run.
"""

from __future__ import annotations

import ctypes
import warnings

import numpy as np

from cunumpy.emulation.errors import (
    InactiveLaneError,
    UndefinedBehaviorError,
    UndefinedBehaviorWarning,
)

__all__ = ["UNDEFINED_MODES", "UbReport", "check_report", "meta_words"]

UNDEFINED_MODES = ("error", "warn")
"""Values of ``EmulatorOptions.undefined`` and ``CUNUMPY_EMULATOR_UNDEFINED``."""

UB_INACTIVE = 1


class UbReport(ctypes.Structure):
    """Mirror of ``cn::cuda::UbReport`` in ``cn_cuda.h``."""

    _fields_ = (
        ("count", ctypes.c_int64),
        ("kind", ctypes.c_int32),
        ("line", ctypes.c_int32),
        ("reader", ctypes.c_int32),
        ("source", ctypes.c_int32),
        ("thread", ctypes.c_uint32 * 3),
        ("group", ctypes.c_uint32 * 3),
        ("file", ctypes.c_char * 64),
        ("detail", ctypes.c_char * 512),
        ("lock", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("position", ctypes.c_int64),
    )


def meta_words(shared_mem: int, mode: str, report: UbReport) -> np.ndarray:
    """The launch's meta buffer: shared memory bytes, the mode, the report's address."""
    return np.array(
        [shared_mem, UNDEFINED_MODES.index(mode), ctypes.addressof(report)], dtype=np.int64
    )


def _xyz(v) -> str:
    return f"({v[0]},{v[1]},{v[2]})"


def check_report(report: UbReport, prefix: str, mode: str, order: str = "") -> None:
    """Raise (mode ``error``) or warn (mode ``warn``) when the launch hit undefined behaviour."""
    if not report.count:
        return
    file = report.file.decode(errors="replace")
    detail = report.detail.decode(errors="replace")
    site = f" at {file}:{report.line}" if report.line and file else ""
    more = report.count - 1
    further = f"; {more} further case{'s' if more != 1 else ''}" if more else ""
    where = f"thread {_xyz(report.thread)} block {_xyz(report.group)}"
    text = f"{prefix} undefined behaviour{site}: {detail} ({where}){further}{order}."
    if mode == "warn":
        warnings.warn(
            f"{text} The emulator went on: a lane that takes no part reads as 0, a lane that "
            "the mask leaves out gives its value",
            UndefinedBehaviorWarning,
            stacklevel=4,
        )
        return
    cls = InactiveLaneError if report.kind == UB_INACTIVE else UndefinedBehaviorError
    raise cls(
        f"{text} CUDA does not define the result, so the GPU may give anything; fix the kernel, "
        "or run on with EmulatorOptions(undefined='warn') or CUNUMPY_EMULATOR_UNDEFINED=warn"
    )
