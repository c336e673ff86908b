"""``backend_info()``: what this machine offers cunumpy, and why each missing piece is missing.

``kernel_engines`` says, per kernel kind (``cuda``, ``metal``), which engine a launch will
actually use here and why: the setting (``CUNUMPY_CUDA_ENGINE`` / ``CUNUMPY_METAL_ENGINE`` or
its default), the engine the kernel layer's own selection function resolves it to (so an
``auto`` setting shows what it resolves to on this machine), whether that engine can run, the
reason, and what to do when it cannot.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

import numpy as np

from cunumpy import config
from cunumpy._backend import cupy_status, get_backend
from cunumpy._engines import _table

__all__ = ["backend_info", "kernel_engine"]


def _cupy_info() -> dict[str, Any]:
    ok, reason = cupy_status()
    from cunumpy._backend import cupy_stand_in

    info: dict[str, Any] = {"available": ok, "reason": reason, "version": None, "devices": [],
                            "stand_in": cupy_stand_in()}
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
    from cunumpy._engines._status import mlx_status

    ok, reason, version = mlx_status()
    return {"installed": version is not None, "version": version, "metal_available": ok,
            "reason": reason}


def _emulation_info() -> dict[str, Any]:
    from cunumpy.emulation import toolchain_info

    return toolchain_info()


_VARIABLES = {"cuda": "CUNUMPY_CUDA_ENGINE", "metal": "CUNUMPY_METAL_ENGINE"}
_EMULATOR = {row.dialect: row.name for row in _table.ENGINES.values() if not row.gpu}
"""The CPU emulator of each dialect, from the engine table."""


def _named(kind: str, setting: str) -> str:
    """The engine table's name for a setting value (``emulator``, ``cuda``...), else itself."""
    try:
        return _table.canonical_name(kind, setting)
    except ValueError:  # ``auto``, or an engine registered outside the table
        return setting


def _engine_ready(name: str, engine: Any) -> tuple[bool, str]:
    """Whether the engine called ``name`` can launch here, and why (not)."""
    if name in _table.ENGINES:
        return tuple(_table.engine_status(name))  # type: ignore[return-value]
    check = getattr(engine, "check_available", None)  # an engine the runners do not know
    if check is None:
        return True, f"engine {name!r}"
    try:
        check()
    except Exception as exc:
        return False, str(exc)
    return True, f"engine {name!r}"


def _resolve(kind: str) -> tuple[str, Any]:
    """The setting for ``kind`` and the engine object the kernel layer selects for it."""
    if kind == "cuda":
        from cunumpy._engines._cuda_registry import get_cuda_engine

        return config.cuda_engine(), get_cuda_engine(None)
    from cunumpy._engines._metal_registry import get_metal_engine

    return config.metal_engine(), get_metal_engine(None)


def kernel_engine(kind: str) -> dict[str, Any]:
    """Which engine a ``kind`` (``"cuda"`` or ``"metal"``) kernel launch uses here, and why.

    Returns ``{"variable", "setting", "default", "engine", "available", "reason", "hint"}``:
    ``setting`` is the variable's value or its default (``default`` says which), ``engine`` the
    name the selection resolved it to (``None`` when that failed), ``hint`` what to do when the
    engine cannot run (``None`` otherwise).
    """
    variable = _VARIABLES[kind]
    raw = config.setting_text(variable)
    entry: dict[str, Any] = {"variable": variable, "setting": raw, "default": raw is None,
                             "engine": None, "available": False, "reason": "", "hint": None}
    try:
        setting, engine = _resolve(kind)
    except (ValueError, RuntimeError, ImportError) as exc:
        entry["reason"] = f"{type(exc).__name__}: {exc}"
        entry["hint"] = f"unset {variable} or set it to a valid engine"
        return entry
    name = str(getattr(engine, "name", setting))
    ok, reason = _engine_ready(name, engine)
    if _named(kind, setting) != name:
        # The setting chose among engines (``auto``): say what decided it.
        if kind == "metal" and name == _EMULATOR[kind]:
            why = _engine_ready("mlx", None)[1].split(";")[0]  # MLX's reason, without its advice
            reason = f"{setting} chose the emulator: {why}; {reason}"
        else:
            reason = f"{setting} chose {name}: {reason}"
    entry.update(setting=setting, engine=name, available=ok, reason=reason)
    if not ok:
        emulator_ok, emulator_reason = _engine_ready(_EMULATOR[kind], None)
        if name != _EMULATOR[kind] and emulator_ok:
            if f"{variable}=emulator" not in reason:  # MLX's reason says it already
                entry["hint"] = f"run with {variable}=emulator (the CPU emulator works here)"
        elif name != _EMULATOR[kind]:
            entry["hint"] = f"the CPU emulator cannot run either: {emulator_reason}"
        else:
            entry["hint"] = "install a C++ compiler (g++ or clang++) for the CPU emulator"
    return entry


def backend_info() -> dict[str, Any]:
    """A JSON-serialisable description of the backends, devices, MLX/Metal and the emulator.

    Every unavailable piece carries a ``reason`` saying why. Probing CuPy or MLX imports them
    (only here, never at ``import cunumpy``).
    """
    from cunumpy._version import __version__

    def setting(read: Any) -> str:
        try:
            return read()
        except ValueError as exc:
            return f"invalid ({exc})"

    return {
        "cunumpy": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "backend": get_backend(),
        "engines": {"metal": setting(config.metal_engine), "cuda": setting(config.cuda_engine)},
        "kernel_engines": {kind: kernel_engine(kind) for kind in ("cuda", "metal")},
        "cupy": _cupy_info(),
        "mlx": _mlx_info(),
        "emulation": _emulation_info(),
    }
