"""``cupyx`` of the stand-in: ``cupyx.scipy`` forwarded to SciPy, and cupyx's host helpers.

``cupyx.scipy.<sub>`` (``special``, ``ndimage``, ``signal``, ``fft``, ``linalg``, ``stats``,
``interpolate``, ``integrate``) forwards every name to ``scipy.<sub>`` the way the stand-in's
``cupy`` forwards to NumPy: stand-in arrays unwrapped, NumPy arrays refused, results wrapped;
SciPy's ufuncs (``cupyx.scipy.special.erf``) become stand-in ufuncs. Without SciPy installed,
using them raises ``ImportError`` naming SciPy. ``cupyx.scipy.sparse`` holds sparse matrices,
which the stand-in does not model: it raises ``NotImplementedError`` naming it.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy

from cunumpy.testing.cupy_on_cpu._array import ndarray
from cunumpy.testing.cupy_on_cpu._namespace import forward, ufunc, unwrap_arg

__all__ = ["SCIPY_SUBMODULES", "cupyx_module", "scipy_module"]

SCIPY_SUBMODULES = ("special", "ndimage", "signal", "fft", "linalg", "stats", "interpolate",
                    "integrate")
"""``cupyx.scipy`` submodules forwarded to SciPy's."""

NOT_MODELLED = ("sparse", "spatial")
"""``cupyx.scipy`` submodules the stand-in does not provide (their objects are not arrays)."""


class ForwardingModule(ModuleType):
    """A module whose attributes are ``target``'s, converted for stand-in arrays on first use."""

    def __init__(self, name: str, target_name: str) -> None:
        super().__init__(name, f"{name} of cunumpy's CuPy stand-in: forwards to {target_name}.")
        self._target_name = target_name

    def _target(self) -> ModuleType:
        try:
            return importlib.import_module(self._target_name)
        except ImportError as exc:
            raise ImportError(
                f"{self.__name__} of cunumpy's CuPy stand-in forwards to {self._target_name}, "
                f"which cannot be imported ({exc}); install SciPy"
            ) from exc

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = getattr(self._target(), attr)
        if isinstance(value, numpy.ufunc):
            converted: Any = ufunc(attr, value)
        elif isinstance(value, type) or isinstance(value, ModuleType):
            converted = value
        elif callable(value):
            converted = forward(attr, value)
        else:
            converted = value
        setattr(self, attr, converted)
        return converted

    def __dir__(self) -> list[str]:
        return sorted(n for n in dir(self._target()) if not n.startswith("_"))


class RefusingModule(ModuleType):
    """A module whose every attribute raises ``NotImplementedError`` naming the module."""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise NotImplementedError(
            f"{self.__name__}.{attr}: {self.__name__} is not provided by cunumpy's CuPy "
            "stand-in (sparse and spatial structures are not modelled); test this code on a "
            "GPU or convert to dense arrays"
        )


def scipy_module() -> dict[str, ModuleType]:
    """``cupyx.scipy`` and its submodules, keyed by full module name."""
    scipy = ModuleType("cupyx.scipy", "cupyx.scipy of cunumpy's CuPy stand-in.")
    modules: dict[str, ModuleType] = {"cupyx.scipy": scipy}
    for sub in SCIPY_SUBMODULES:
        module = ForwardingModule(f"cupyx.scipy.{sub}", f"scipy.{sub}")
        setattr(scipy, sub, module)
        modules[module.__name__] = module
    for sub in NOT_MODELLED:
        module = RefusingModule(f"cupyx.scipy.{sub}")
        setattr(scipy, sub, module)
        modules[module.__name__] = module
    scipy.get_array_module = lambda *args: (
        importlib.import_module("scipy") if not any(isinstance(a, ndarray) for a in args)
        else scipy
    )
    return modules


def _pinned(make: Any) -> Any:
    def pinned(*args: Any, **kwargs: Any) -> numpy.ndarray:
        return make(*(unwrap_arg(a) for a in args), **kwargs)

    pinned.__name__ = f"{make.__name__}_pinned"
    pinned.__doc__ = (f"``cupyx.{make.__name__}_pinned``: a NumPy array (host memory; the "
                      "stand-in has no pinned memory, so transfers from it are not faster).")
    return pinned


def _scatter(ufunc_name: str) -> Any:
    numpy_ufunc = getattr(numpy, ufunc_name)

    def scatter(a: ndarray, slices: Any, value: Any) -> None:
        numpy_ufunc.at(unwrap_arg(a), unwrap_arg(slices), unwrap_arg(value))

    scatter.__name__ = f"scatter_{ufunc_name.replace('imum', '')}"
    return scatter


@contextlib.contextmanager
def _allow_synchronize(allow: bool) -> Iterator[None]:
    yield


@contextlib.contextmanager
def _errstate(**kwargs: Any) -> Iterator[None]:
    with numpy.errstate(**kwargs):
        yield


def _rsqrt(x: Any, out: Any = None) -> Any:
    return numpy.divide(1.0, numpy.sqrt(x), out=out)


def _refuse(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"cupyx.{name} is not provided by cunumpy's CuPy stand-in")

    refuse.__name__ = name
    return refuse


def cupyx_module() -> dict[str, ModuleType]:
    """``cupyx`` and its submodules, keyed by full module name."""
    cupyx = ModuleType("cupyx", "cupyx of cunumpy's CuPy stand-in.")
    modules = {"cupyx": cupyx, **scipy_module()}
    cupyx.scipy = modules["cupyx.scipy"]
    for make in (numpy.empty, numpy.zeros, numpy.empty_like, numpy.zeros_like):
        setattr(cupyx, f"{make.__name__}_pinned", _pinned(make))
    cupyx.scatter_add = _scatter("add")
    cupyx.scatter_max = _scatter("maximum")
    cupyx.scatter_min = _scatter("minimum")
    cupyx.rsqrt = forward("rsqrt", _rsqrt)
    cupyx.allow_synchronize = _allow_synchronize
    cupyx.errstate = _errstate
    cupyx.seterr = numpy.seterr
    cupyx.geterr = numpy.geterr
    cupyx.jit = RefusingModule("cupyx.jit")
    modules["cupyx.jit"] = cupyx.jit
    profiler = ModuleType("cupyx.profiler", "cupyx.profiler of cunumpy's CuPy stand-in.")
    profiler.time_range = lambda *args, **kwargs: contextlib.nullcontext()
    profiler.benchmark = _refuse("profiler.benchmark (GPU timing; a CPU cannot answer it)")
    profiler.profile = lambda: contextlib.nullcontext()
    cupyx.profiler = profiler
    modules["cupyx.profiler"] = profiler
    cupyx.get_runtime_info = lambda full=True: "cunumpy CuPy stand-in (no CUDA runtime)"
    return modules
