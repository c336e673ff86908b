"""The registry of CUDA engines: :func:`register_cuda_engine` and :func:`get_cuda_engine`.

The built-in engines are ``cupy`` (:mod:`cunumpy._engines.cupy`) and ``emulator``
(:mod:`cunumpy._engines.emu_cuda`, spelled ``emu-cuda``); both are imported at their first
lookup. The engine table (:mod:`cunumpy._engines._table`) lists them with the Metal engines.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from cunumpy import config
from cunumpy._engines._cuda import CudaEngine

__all__ = [
    "cuda_engine_names",
    "default_cuda_engine",
    "get_cuda_engine",
    "register_cuda_engine",
    "unregister_cuda_engine",
]

_factories: dict[str, Callable[[], CudaEngine]] = {}
_engines: dict[str, CudaEngine] = {}
_lock = threading.Lock()
_ALIASES = {"emu-cuda": "emulator"}


def register_cuda_engine(
    name: str, factory: Callable[[], CudaEngine], *, replace: bool = False
) -> None:
    """Make ``factory()`` the engine that :func:`get_cuda_engine` returns for ``name``.

    Parameters
    ----------
    name : str
        The lookup name (``"cupy"``, ``"emulator"``, or a new one).
    factory : callable
        Zero-argument callable returning a :class:`CudaEngine`; called once, at first lookup.
    replace : bool, default False
        Allow replacing an existing registration (the old engine object is dropped).
    """
    if not callable(factory):
        raise TypeError(f"factory for CUDA engine {name!r} must be callable, got {factory!r}")
    with _lock:
        if name in _factories and not replace:
            raise ValueError(
                f"a CUDA engine named {name!r} is already registered; pass replace=True"
            )
        _factories[name] = factory
        _engines.pop(name, None)
    _default_cache[0] = _UNSET


def unregister_cuda_engine(name: str) -> None:
    """Remove a registration (used by tests that register temporary engines)."""
    with _lock:
        _factories.pop(name, None)
        _engines.pop(name, None)
    _default_cache[0] = _UNSET


def cuda_engine_names() -> tuple[str, ...]:
    """Registered lookup names (``"cupy"``, ``"emulator"`` and any registered since)."""
    return tuple(_factories)


def get_cuda_engine(name: str | CudaEngine | None = None) -> CudaEngine:
    """The engine object for ``name``; ``None`` means :func:`cunumpy.config.cuda_engine`.

    ``"emu-cuda"`` is accepted for ``"emulator"``. An engine object is returned as it is.

    Raises
    ------
    ValueError
        Unknown name.
    RuntimeError
        The engine's module could not be imported.
    """
    if isinstance(name, CudaEngine):
        return name
    if name is None:
        name = config.cuda_engine()
    key = _ALIASES.get(name, name)
    engine = _engines.get(key)
    if engine is not None:
        return engine
    with _lock:
        engine = _engines.get(key)
        if engine is not None:
            return engine
        factory = _factories.get(key)
    if factory is None:
        raise ValueError(
            f"unknown CUDA engine {name!r}; known engines: "
            f"{', '.join(sorted(_factories))}"
        )
    try:
        engine = factory()
    except ImportError as exc:
        raise RuntimeError(
            f"the CUDA engine {key!r} is not available: its module could not be imported "
            f"({exc}); use CUNUMPY_CUDA_ENGINE=cupy on a machine with an NVIDIA GPU"
        ) from exc
    if not isinstance(engine, CudaEngine):
        raise TypeError(
            f"the factory for CUDA engine {key!r} returned {engine!r}, not a CudaEngine"
        )
    with _lock:
        engine = _engines.setdefault(key, engine)
    return engine


# The default engine is read from CUNUMPY_CUDA_ENGINE at every launch, through config's fast
# reader (the raw value), and looked up again only when that value changes.
_UNSET = object()
_default_cache: list[Any] = [_UNSET, None]
_read_env = config.raw_reader("CUNUMPY_CUDA_ENGINE")


def env_value() -> Any:
    """The raw value of ``CUNUMPY_CUDA_ENGINE`` now (compared, never interpreted)."""
    return _read_env()


def env_getter() -> Callable[[], Any]:
    """A fast zero-argument callable returning :func:`env_value`."""
    return _read_env


def default_cuda_engine() -> CudaEngine:
    """The engine named by ``CUNUMPY_CUDA_ENGINE`` now (``cupy`` when unset).

    While cunumpy's CuPy stand-in is installed (``CUNUMPY_CUPY_ON_CPU=1``), unset means
    ``emulator``: there is no GPU, and the stand-in's arrays are the emulator's host memory.
    """
    raw = _read_env()
    cache = _default_cache
    if raw == cache[0] and cache[1] is not None:
        return cache[1]
    name = config.cuda_engine()
    if raw is None or not raw.strip():
        from cunumpy._backend import cupy_stand_in

        if cupy_stand_in():
            name = "emulator"
    engine = get_cuda_engine(name)
    cache[0], cache[1] = raw, engine
    return engine


def _register_builtin() -> None:
    # The built-in engines, imported at their first lookup (CuPy and the emulator are heavy).
    def cupy_factory() -> CudaEngine:
        from cunumpy._engines.cupy import CupyEngine

        return CupyEngine()

    def emulator_factory() -> CudaEngine:
        from cunumpy._engines.emu_cuda import EmuCudaEngine

        return EmuCudaEngine()

    _factories.setdefault("cupy", cupy_factory)
    _factories.setdefault("emulator", emulator_factory)


_register_builtin()
