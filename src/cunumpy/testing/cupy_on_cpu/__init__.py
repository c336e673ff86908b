"""A strict CuPy stand-in for machines without a GPU (issue 23).

:func:`cunumpy.testing.install_cupy_on_cpu` (or ``CUNUMPY_CUPY_ON_CPU=1`` under pytest) puts
this package in ``sys.modules`` as ``cupy``: ``import cupy`` then gives an array module whose
arrays live in a pretend device memory (:class:`~._array.ndarray`, a private NumPy array each),
whose functions forward to NumPy, and whose host/device boundary is enforced and counted as a
GPU would make it. Kernels (``RawKernel``, ``RawModule``, ``ElementwiseKernel``,
``ReductionKernel``, ``fuse``) run on cunumpy's CUDA emulator; they come from the kernel
modules of this package and are imported on first use.

The stand-in is importable as ``cunumpy.testing.cupy_on_cpu`` without being installed; the
names of CuPy's namespace are reached through this module's attributes.
"""

from __future__ import annotations

import importlib
from typing import Any

from cunumpy.testing.cupy_on_cpu import _namespace as _namespace  # NumPy dispatch hooks
from cunumpy.testing.cupy_on_cpu._array import ndarray, unwrap, wrap

__all__ = ["ndarray", "unwrap", "wrap"]

__version__ = "14.0.0+cunumpy.cupy_on_cpu"
"""Reported as CuPy's version; the suffix says it is the stand-in."""

_KERNEL_NAMES = {
    "RawKernel": "_kernels",
    "RawModule": "_kernels",
    "ElementwiseKernel": "_elementwise",
    "ReductionKernel": "_reduction",
    "fuse": "_fuse",
    "memoize": "_util", "clear_memo": "_util",
}
"""Names provided by other modules of this package (the kernel modules, ``cupy._util``),
imported on first access."""


def __getattr__(name: str) -> Any:
    if name.startswith("_"):  # submodules being imported, dunders: never CuPy names
        raise AttributeError(f"module 'cupy' has no attribute {name!r}")
    module_name = _KERNEL_NAMES.get(name)
    if module_name is not None:
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{module_name}":
                raise
            raise NotImplementedError(
                f"cupy.{name} is not available in this build of cunumpy's CuPy stand-in "
                f"(module {module_name} is missing)"
            ) from exc
        value = getattr(module, name)
        globals()[name] = value
        return value
    return importlib.import_module(f"{__name__}._namespace").get(name)


def __dir__() -> list[str]:
    names = importlib.import_module(f"{__name__}._namespace").names()
    return sorted(set(globals()) | set(_KERNEL_NAMES) | set(names))
