"""MetalKernel checks of the front end: whether the host-resident emulator may read inputs and
write ``out=`` arrays in place. (The threadgroup check, shared with the ``metal-cuda`` fast path,
is :func:`cunumpy._engines._metal.check_threadgroup`.)"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["HOST_ALIGN", "borrowable", "fills_in_place"]

HOST_ALIGN = 16
"""Byte alignment an array needs to be used in place by a host-resident engine: the emulator's
vector types are aligned like Metal's (``float4``: 16 bytes), and a kernel may cast a buffer to
them; a copy (NumPy's allocator) has this alignment, a view of another library's memory (an MLX
array on the CPU: 8 bytes) may not."""


def borrowable(a: np.ndarray, dtype: np.dtype) -> bool:
    """Whether a host-resident engine can read ``a`` in place as a ``dtype`` input."""
    return a.dtype == dtype and a.flags.c_contiguous and a.ctypes.data % HOST_ALIGN == 0


def fills_in_place(outs: list[np.ndarray], shapes: list[tuple[int, ...]],
                   dtypes: list[np.dtype], inputs: list[Any]) -> bool:
    """Whether a host-resident engine can write ``outs`` directly: each C-contiguous, writeable,
    aligned to :data:`HOST_ALIGN`, of the output's exact shape and dtype, and sharing no memory with an input or another
    output (on the GPU the inputs are copies, so an alias must not change what the kernel
    reads)."""
    for k, (o, shape, dtype) in enumerate(zip(outs, shapes, dtypes)):
        if (o.dtype != dtype or o.shape != tuple(shape) or not o.flags.c_contiguous
                or not o.flags.writeable or o.ctypes.data % HOST_ALIGN):
            return False
        others = [getattr(a, "_data", a) for a in inputs] + list(outs[:k])
        if any(isinstance(a, np.ndarray) and np.may_share_memory(o, a) for a in others):
            return False
    return True
