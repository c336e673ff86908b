"""Whether the real GPU engines can run here, and why not. Imports MLX/CuPy only when asked."""

from __future__ import annotations

import functools
import importlib.util
import platform
import sys

from cunumpy._backend import cupy_status

__all__ = ["KERNEL_ENGINES", "cuda_available", "kernel_engine_status", "metal_available", "metal_status"]

KERNEL_ENGINES = ("cupy", "emu-cuda", "mlx", "emu-metal")
"""The engines a kernel launch can use, one spelling each."""


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


def _compiler_reason() -> str | None:
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        return str(exc)
    return None


@functools.cache
def kernel_engine_status(name: str) -> tuple[bool, str]:
    """``(available, reason)`` for one of :data:`KERNEL_ENGINES`; cached for the process."""
    if name == "cupy":
        return cupy_status()
    if name == "mlx":
        ok, reason, _ = metal_status()
        return ok, reason
    if name == "emu-cuda":
        reason = _compiler_reason()
        if reason:
            return False, reason
        from cunumpy.kernels import get_cuda_engine

        try:
            get_cuda_engine("emulator")
        except (RuntimeError, ValueError) as exc:
            return False, str(exc)
        return True, "CUDA C++ compiled for the CPU, with checks"
    if name == "emu-metal":
        reason = _compiler_reason()
        if reason:
            return False, reason
        if importlib.util.find_spec("cunumpy.emulation.metal") is None:
            return False, (
                "the Metal emulator (cunumpy.emulation.metal) is not part of this installation"
            )
        return True, "Metal Shading Language compiled for the CPU, with checks"
    raise ValueError(
        f"unknown kernel engine {name!r}; known engines: {', '.join(KERNEL_ENGINES)}"
    )
