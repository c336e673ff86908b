"""``backend_info()``: what this machine offers cunumpy, and why each missing piece is missing."""

from __future__ import annotations

import platform
import sys
from typing import Any

import numpy as np

from cunumpy._backend import cupy_status, get_backend

__all__ = ["backend_info"]


def _cupy_info() -> dict[str, Any]:
    ok, reason = cupy_status()
    info: dict[str, Any] = {"available": ok, "reason": reason, "version": None, "devices": []}
    if "not installed" in reason:
        return info
    try:
        import cupy

        info["version"] = cupy.__version__
        if ok:
            runtime = cupy.cuda.runtime
            info["cuda_runtime"] = runtime.runtimeGetVersion()
            info["cuda_driver"] = runtime.driverGetVersion()
            for index in range(runtime.getDeviceCount()):
                props = runtime.getDeviceProperties(index)
                name = props["name"]
                info["devices"].append(
                    {
                        "index": index,
                        "name": name.decode() if isinstance(name, bytes) else str(name),
                        "compute_capability": f"{props['major']}.{props['minor']}",
                        "memory_bytes": int(props["totalGlobalMem"]),
                        "multiprocessors": int(props["multiProcessorCount"]),
                    }
                )
    except Exception as exc:  # report, never fail: this is a diagnostic
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


def _mlx_info() -> dict[str, Any]:
    from cunumpy.kernels._availability import metal_status

    ok, reason, version = metal_status()
    return {"installed": version is not None, "version": version, "metal_available": ok,
            "reason": reason}


def _emulation_info() -> dict[str, Any]:
    from cunumpy.emulation import toolchain_info

    return toolchain_info()


def backend_info() -> dict[str, Any]:
    """A JSON-serialisable description of the backends, devices, MLX/Metal and the emulator.

    Every unavailable piece carries a ``reason`` saying why. Probing CuPy or MLX imports them
    (only here, never at ``import cunumpy``).
    """
    from cunumpy import __version__, config

    return {
        "cunumpy": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "backend": get_backend(),
        "engines": {"metal": config.metal_engine(), "cuda": config.cuda_engine()},
        "cupy": _cupy_info(),
        "mlx": _mlx_info(),
        "emulation": _emulation_info(),
    }
