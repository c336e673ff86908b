"""Isolated mode: the launch runs in a child process, so a crash becomes an exception."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation._options import EmulatorOptions
from cunumpy.emulation.errors import KernelCrashError, OutOfBoundsError
from cunumpy.emulation.metal import run_metal

ISOLATED = EmulatorOptions(isolated=True)


def test_segfault_becomes_kernel_crash_error(metal_sig):
    src = "uint i = thread_position_in_grid.x; y[i] = 1; if (i == 3) *(volatile device int*)16 = 1;"
    y = np.zeros(8, dtype=np.float32)
    sig = metal_sig("crash", src, [], [("y", y)])
    with pytest.raises(KernelCrashError, match=r"\[emu-metal kernel 'crash'\] crashed its "
                       r"process with SIGSEGV"):
        run_metal(sig, [], [y], (8, 1, 1), (8, 1, 1), options=ISOLATED)


def test_isolated_results_and_errors_come_back(metal_sig, monkeypatch):
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    sig = metal_sig("iso", "uint i = thread_position_in_grid.x; y[i] = x[i] * 3.0f;",
                    [("x", x)], [("y", y)])
    monkeypatch.setenv("CUNUMPY_EMULATOR_ISOLATED", "1")
    run_metal(sig, [x], [y], (16, 1, 1), (16, 1, 1))
    np.testing.assert_array_equal(y, 3 * x)
    bad = metal_sig("iso_oob", "uint i = thread_position_in_grid.x; y[i] = x[i + 1];",
                    [("x", x)], [("y", y)])
    with pytest.raises(OutOfBoundsError, match="index 16 out of bounds"):
        run_metal(bad, [x], [y], (16, 1, 1), (16, 1, 1))
