"""The active array backend (NumPy or CuPy) and the ``cunumpy`` namespace that forwards to it.

The namespace is the ``cunumpy`` module itself: on every backend switch the public names of the
backend module are copied into ``cunumpy.__dict__``, so ``xp.zeros`` costs exactly what a module
attribute costs. Names the backend loads lazily (NumPy 2 submodules) go through the module's
``__getattr__`` once and are then cached the same way. cunumpy's own names (``kernels``,
``profiling``, ``testing``, ``set_backend``, ...) are never overwritten.

The backend is process-wide, not per thread.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from cunumpy import config

__all__ = [
    "BackendUnavailableWarning",
    "cupy_available",
    "cupy_status",
    "get_array_backend",
    "get_array_module",
    "get_backend",
    "set_backend",
    "use_backend",
]


class BackendUnavailableWarning(RuntimeWarning):
    """Warns that a requested backend could not be used and NumPy is used instead."""


_state: dict[str, Any] = {"name": None, "module": None, "installed": set()}
_cupy_status: tuple[bool, str] | None = None


def _package() -> ModuleType:
    return sys.modules["cunumpy"]


def _protected() -> frozenset[str]:
    return _package()._OWN_NAMES


def cupy_status() -> tuple[bool, str]:
    """``(usable, reason)`` for CuPy. Computed once per process; the reason explains a ``False``."""
    global _cupy_status
    if _cupy_status is None:
        _cupy_status = _probe_cupy()
    return _cupy_status


def _probe_cupy() -> tuple[bool, str]:
    try:
        import cupy
    except ImportError as exc:
        return False, (
            f"CuPy is not installed ({exc}); install it with pip install 'cunumpy[cuda12]' "
            "or 'cunumpy[cuda13]'"
        )
    except Exception as exc:  # a broken CUDA install can raise anything at import
        return False, f"CuPy failed to import: {type(exc).__name__}: {exc}"
    if cupy_stand_in():  # no device to probe (and a probe would be a counted transfer)
        return True, (
            "cunumpy's CuPy stand-in (CUNUMPY_CUPY_ON_CPU / install_cupy_on_cpu): CuPy's API "
            "on the CPU, 1 pretend device, kernels on emu-cuda"
        )
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        if count < 1:
            return False, "CuPy is installed but no CUDA device was found"
        probe = cupy.arange(4, dtype=cupy.float32) * 2
        if float(probe.sum()) != 12.0:
            return False, "CuPy is installed but a test computation on the device gave a wrong sum"
    except Exception as exc:
        return False, f"CuPy is installed but no CUDA device works: {type(exc).__name__}: {exc}"
    return True, f"CuPy {cupy.__version__} with {count} CUDA device(s)"


def cupy_stand_in() -> bool:
    """True when ``import cupy`` gives cunumpy's CuPy stand-in (never imports anything)."""
    module = sys.modules.get("cupy")
    return module is not None and getattr(module, "_cunumpy_stand_in", False) is True


def cupy_available() -> bool:
    """True when CuPy imports *and* a CUDA device runs a test computation. Cached."""
    return cupy_status()[0]


def _backend_module(name: str) -> ModuleType:
    if name == "numpy":
        import numpy

        return numpy
    import cupy

    return cupy


def _install(name: str, module: ModuleType) -> None:
    namespace = _package().__dict__
    protected = _protected()
    for old in _state["installed"]:
        if old not in protected:
            namespace.pop(old, None)
    installed = set()
    for attr, value in list(module.__dict__.items()):
        if attr.startswith("_") or attr in protected:
            continue
        namespace[attr] = value
        installed.add(attr)
    _state.update(name=name, module=module, installed=installed)


def forward_missing(attr: str) -> Any:
    """Resolve a name the backend module exposes lazily, and cache it in the namespace."""
    module = _state["module"]
    if module is None or attr.startswith("_"):
        raise AttributeError(f"module 'cunumpy' has no attribute {attr!r}")
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise AttributeError(
            f"module 'cunumpy' has no attribute {attr!r} (the active backend, "
            f"{_state['name']}, does not provide it)"
        ) from None
    _package().__dict__[attr] = value
    _state["installed"].add(attr)
    return value


def _check_name(name: str) -> str:
    if not isinstance(name, str) or name.lower() not in config.BACKENDS:
        raise ValueError(
            f"unknown backend {name!r}; valid backends are {', '.join(config.BACKENDS)}"
        )
    return name.lower()


def set_backend(name: str, strict: bool = False) -> str:
    """Select the array backend that ``cunumpy.<name>`` forwards to.

    Parameters
    ----------
    name : {"numpy", "cupy"}
        The backend.
    strict : bool, default False
        What to do when CuPy is asked for but unusable. ``False``: warn
        (:class:`BackendUnavailableWarning`, saying why) and use NumPy. ``True``: raise
        RuntimeError and keep the previous backend.

    Returns
    -------
    str
        The backend now active.

    Raises
    ------
    ValueError
        ``name`` is not a known backend.
    """
    name = _check_name(name)
    if name == "cupy":
        ok, reason = cupy_status()
        if not ok:
            if strict:
                raise RuntimeError(
                    f"cannot use the cupy backend: {reason}; the backend stays "
                    f"{_state['name']!r}"
                )
            warnings.warn(
                f"cupy backend unavailable, using numpy instead: {reason}",
                BackendUnavailableWarning,
                stacklevel=2,
            )
            name = "numpy"
    if name != _state["name"]:
        _install(name, _backend_module(name))
    return name


def get_backend() -> str:
    """The name of the active backend, ``"numpy"`` or ``"cupy"``."""
    return _state["name"]


@contextlib.contextmanager
def use_backend(name: str, strict: bool = False) -> Iterator[str]:
    """Use a backend inside a ``with`` block; the previous one is restored on exit, even on error.

    Yields the backend actually active inside the block (NumPy after a non-strict fallback).
    """
    previous = _state["name"]
    try:
        yield set_backend(name, strict=strict)
    finally:
        if _state["name"] != previous:
            _install(previous, _backend_module(previous))


def _is_cupy_array(a: Any) -> bool:
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(a, cupy.ndarray)


def _is_mlx_array(a: Any) -> bool:
    mx = sys.modules.get("mlx.core")
    return mx is not None and isinstance(a, mx.array)


def get_array_backend(a: Any) -> str:
    """``"cupy"`` for a CuPy array, ``"mlx"`` for an MLX array, ``"numpy"`` for anything else.

    Detection never imports CuPy or MLX: an array of a library that is not imported cannot exist.
    """
    if _is_cupy_array(a):
        return "cupy"
    if _is_mlx_array(a):
        return "mlx"
    return "numpy"


def get_array_module(*arrays: Any) -> ModuleType:
    """The module (``numpy`` or ``cupy``) that operates on ``arrays``.

    Raises
    ------
    TypeError
        The arrays mix CuPy and NumPy, or one is an MLX array (convert it with
        :func:`cunumpy.to_numpy` first).
    """
    backends = {get_array_backend(a) for a in arrays}
    if "mlx" in backends:
        raise TypeError(
            "get_array_module does not handle MLX arrays; convert them with cunumpy.to_numpy"
        )
    if backends == {"cupy", "numpy"}:
        raise TypeError(
            "get_array_module got both CuPy and NumPy arrays; convert them to one backend "
            "with cunumpy.to_cupy or cunumpy.to_numpy"
        )
    return _backend_module("cupy" if "cupy" in backends else "numpy")


def init_from_environment() -> None:
    """Pick the backend named by ``CUNUMPY_BACKEND`` (called once, at import)."""
    name = config.initial_backend()
    if name == "cupy":
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            set_backend("cupy")
    else:
        set_backend("numpy")
