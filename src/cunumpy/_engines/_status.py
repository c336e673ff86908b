"""Whether each engine can run here, and why not. Imports MLX/CuPy only when asked."""

from __future__ import annotations

import functools
import importlib.util
import platform
import sys

from cunumpy._backend import cupy_status
from cunumpy._engines._base import EngineStatus

__all__ = ["compiler_status", "cupy_engine_status", "emulator_status", "metal_cuda_status",
           "mlx_status"]


@functools.cache
def mlx_status() -> tuple[bool, str, str | None]:
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


def compiler_status() -> EngineStatus:
    """Whether the CPU emulators have a C++ compiler."""
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        return EngineStatus(False, str(exc))
    return EngineStatus(True, "")


_STAND_IN_REASON = (
    "cupy is cunumpy's CuPy stand-in (no GPU, no NVRTC): CUDA kernels run on emu-cuda"
)


def cupy_engine_status() -> EngineStatus:
    """Whether CuPy imports and a CUDA device runs a test computation (the stand-in has none)."""
    from cunumpy._backend import cupy_stand_in

    if cupy_stand_in():
        return EngineStatus(False, _STAND_IN_REASON)
    return EngineStatus(*cupy_status())


def mlx_engine_status() -> EngineStatus:
    """Whether MLX imports and reports a Metal GPU."""
    ok, reason, _ = mlx_status()
    return EngineStatus(ok, reason)


def metal_cuda_status() -> EngineStatus:
    """Whether Metal kernels translated to CUDA can run here (CuPy with a CUDA device)."""
    from cunumpy._backend import cupy_stand_in

    if cupy_stand_in():
        return EngineStatus(False, _STAND_IN_REASON)
    ok, reason = cupy_status()
    return EngineStatus(ok, f"Metal kernels translated to CUDA, {reason}" if ok else reason)


def emulator_status(dialect: str) -> EngineStatus:
    """Whether the ``dialect`` CPU emulator can build kernels here."""
    found = compiler_status()
    if not found.ok:
        return found
    module = f"cunumpy.emulation.{dialect}"
    if importlib.util.find_spec(module) is None:
        title = {"cuda": "CUDA", "metal": "Metal"}[dialect]
        return EngineStatus(False, f"the {title} emulator ({module}) is not part of this "
                                   "installation")
    if dialect == "cuda":
        return EngineStatus(True, "CUDA C++ compiled for the CPU, with checks")
    return EngineStatus(True, "Metal Shading Language compiled for the CPU, with checks")
