"""Whether the kernel engines can run here, and why not: a view of the engine table.

Imports MLX/CuPy only when asked. The statuses themselves live in :mod:`cunumpy._engines`.
"""

from __future__ import annotations

from cunumpy._backend import cupy_status
from cunumpy._engines import _status
from cunumpy._engines._table import engine_names, engine_status

__all__ = ["KERNEL_ENGINES", "cuda_available", "kernel_engine_status", "metal_available",
           "metal_status"]

KERNEL_ENGINES = engine_names()
"""The engines a kernel launch can use, one spelling each (the engine table's order)."""


def metal_status() -> tuple[bool, str, str | None]:
    """``(available, reason, mlx_version)``. Cached for the process."""
    return _status.mlx_status()


def metal_available() -> bool:
    """True only when MLX imports and reports a Metal GPU."""
    return metal_status()[0]


def cuda_available() -> bool:
    """True when CuPy imports and a CUDA device runs a test computation."""
    return cupy_status()[0]


def kernel_engine_status(name: str) -> tuple[bool, str]:
    """``(available, reason)`` for one of :data:`KERNEL_ENGINES`."""
    return tuple(engine_status(name))  # type: ignore[return-value]
