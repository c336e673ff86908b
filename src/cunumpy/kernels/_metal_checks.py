"""MetalKernel launch-geometry checks shared by the front end and its CuPy fast path."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["_check_threadgroup"]


def _check_threadgroup(threadgroup: Any) -> tuple[int, int, int]:
    dims = (threadgroup,) if isinstance(threadgroup, (int, np.integer)) else threadgroup
    if (
        isinstance(dims, (str, bytes))
        or not isinstance(dims, Sequence)
        or not 1 <= len(dims) <= 3
        or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0
                   for d in dims)
    ):
        raise ValueError(
            f"MetalKernel threadgroup must be 1 to 3 positive ints, got {threadgroup!r}"
        )
    size = math.prod(int(d) for d in dims)
    if size > 1024:
        raise ValueError(
            f"MetalKernel threadgroup {tuple(dims)} has {size} threads; Metal allows at most "
            "1024 per threadgroup"
        )
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]
