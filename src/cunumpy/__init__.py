"""cunumpy: one NumPy-style namespace on NumPy or CuPy, and GPU kernels checked with or without a GPU.

``import cunumpy as xp`` gives every public name of the active backend module (``xp.zeros``,
``xp.linalg.norm``, ``xp.float32``), resolving to NumPy or CuPy; results are plain
``numpy.ndarray`` / ``cupy.ndarray``. cunumpy's own names:

- backend control: :func:`set_backend`, :func:`use_backend`, :func:`get_backend`,
  :func:`cupy_available`, :func:`backend_info`, :func:`get_array_backend`,
  :func:`get_array_module`;
- conversions: :func:`to_numpy`, :func:`to_cupy`, :func:`to_cunumpy`;
- submodules: :mod:`cunumpy.kernels`, :mod:`cunumpy.profiling`, :mod:`cunumpy.testing`,
  :mod:`cunumpy.emulation`, :mod:`cunumpy.config`, :mod:`cunumpy.random` (cuRAND's Philox
  stream; every other name of it is the active backend's ``random``: ``xp.random.default_rng``).

Importing cunumpy imports NumPy and nothing optional (no CuPy, MLX, Numba, pytest or compiler).
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

from cunumpy import config, profiling
from cunumpy._backend import (
    BackendUnavailableWarning,
    cupy_available,
    get_array_backend,
    get_array_module,
    get_backend,
    set_backend,
    use_backend,
)
from cunumpy._convert import to_cunumpy, to_cupy, to_numpy
from cunumpy._version import __version__ as __version__

_LAZY_SUBMODULES = ("kernels", "testing", "emulation", "random")

__all__ = [
    "BackendUnavailableWarning",
    "backend_info",
    "config",
    "cupy_available",
    "emulation",
    "get_array_backend",
    "get_array_module",
    "get_backend",
    "kernels",
    "profiling",
    "random",
    "set_backend",
    "testing",
    "to_cunumpy",
    "to_cupy",
    "to_numpy",
    "use_backend",
]
"""cunumpy's own public names. The backend's names are added to the namespace, not to this list."""

_OWN_NAMES = frozenset(__all__) | {"__version__"}


def __getattr__(name: str) -> _Any:
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"cunumpy.{name}")
    if name == "backend_info":  # lazy: it asks the kernel layer about its engines
        from cunumpy._info import backend_info

        return backend_info
    from cunumpy._backend import forward_missing

    return forward_missing(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES) | {"backend_info"})


from cunumpy._backend import init_from_environment as _init  # noqa: E402

_init()
del _init
