"""Helpers shared by the cn_metal_types.h tests."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation import CompilerNotFoundError, find_compiler


def _compiler() -> list[str]:
    try:
        return list(find_compiler().command)
    except CompilerNotFoundError as exc:
        pytest.skip(f"no C++ compiler: {exc}")


def _bf16_reference(f: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest, ties to even) with exact float64 arithmetic."""
    bits = f.view(np.uint32)
    mag = bits & np.uint32(0x7FFFFFFF)
    trunc = mag & np.uint32(0xFFFF0000)
    lo = trunc.view(np.float32).astype(np.float64)
    expo = np.maximum((mag >> np.uint32(23)).astype(np.int64), 1)
    hi = lo + np.ldexp(1.0, expo - 127 - 7)  # next bfloat16 up (2**128 stands for overflow)
    x = mag.view(np.float32).astype(np.float64)
    with np.errstate(invalid="ignore"):  # NaN inputs (checked separately)
        d_lo, d_hi = x - lo, hi - x
    lo_even = ((trunc >> np.uint32(16)) & np.uint32(1)) == 0
    up = (d_hi < d_lo) | ((d_hi == d_lo) & ~lo_even)
    out = (trunc >> np.uint32(16)) + up.astype(np.uint32)
    out = np.where(np.isinf(x), mag >> np.uint32(16), out)
    return (out | ((bits >> np.uint32(16)) & np.uint32(0x8000))).astype(np.uint16)
