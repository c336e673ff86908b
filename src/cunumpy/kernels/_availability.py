"""Whether the real GPU engines can run here, and why not. Imports MLX/CuPy only when asked."""

from __future__ import annotations

import functools
import platform
import sys

from cunumpy._backend import cupy_status

__all__ = ["cuda_available", "metal_available", "metal_status"]


@functools.cache
def metal_status() -> tuple[bool, str, str | None]:
    """``(available, reason, mlx_version)``. Cached for the process."""
    try:
        import mlx.core as mx
    except ImportError as exc:
        return False, (
            f"MLX is not installed ({exc}); on an Apple silicon Mac install it with "
            "pip install 'cunumpy[metal]'; elsewhere Metal kernels run on the CPU emulator "
            "(CUNUMPY_METAL_ENGINE=emulator)"
        ), None
    except Exception as exc:
        return False, f"MLX failed to import: {type(exc).__name__}: {exc}", None
    version = getattr(mx, "__version__", "unknown")
    try:
        ok = bool(mx.metal.is_available())
    except Exception as exc:
        return False, f"MLX {version} could not query Metal: {type(exc).__name__}: {exc}", version
    if not ok:
        where = f"{sys.platform}/{platform.machine()}"
        return False, (
            f"MLX {version} is installed but reports no Metal GPU on this machine ({where}); "
            "Metal kernels can still run on the CPU emulator (CUNUMPY_METAL_ENGINE=emulator)"
        ), version
    return True, f"MLX {version} with a Metal GPU", version


def metal_available() -> bool:
    """True only when MLX imports and reports a Metal GPU."""
    return metal_status()[0]


def cuda_available() -> bool:
    """True when CuPy imports and a CUDA device runs a test computation."""
    return cupy_status()[0]
