"""CuPy's namespace, forwarded generically to NumPy from the name table of :mod:`._names`.

A forwarded function unwraps the stand-in arrays among its arguments (also inside lists and
tuples, e.g. ``concatenate([a, b])``), refuses NumPy arrays with CuPy's ``TypeError:
Unsupported type <class 'numpy.ndarray'>``, calls NumPy's function of the same name, and wraps
every array and NumPy scalar of the result (so reductions give 0-d arrays, as on CuPy).
Nothing here is written per function: the groups of :mod:`._names` decide what each name is.

The few constructs that cross the host/device boundary are written out: :func:`asarray`,
:func:`array`, :func:`asanyarray` (host data in, recorded as ``to_device``), :func:`asnumpy`
(recorded as ``to_host``) and :func:`get_array_module`.
"""

from __future__ import annotations

import functools
import importlib
import sys
from types import ModuleType
from typing import Any

import numpy

from cunumpy.testing.cupy_on_cpu import _array, _names
from cunumpy.testing.cupy_on_cpu._array import _record, ndarray, unsupported, wrap

__all__ = ["array", "asanyarray", "asarray", "asnumpy", "get", "get_array_module", "names",
           "ufunc"]

PACKAGE = "cunumpy.testing.cupy_on_cpu"


def namespace() -> ModuleType:
    """The stand-in's top module (``cupy`` once installed)."""
    return sys.modules[PACKAGE]


# -- argument and result conversion -------------------------------------------------------

def unwrap_arg(value: Any) -> Any:
    """An argument for NumPy: stand-in arrays unwrapped, NumPy arrays refused (as CuPy)."""
    if isinstance(value, ndarray):
        return value._data
    if isinstance(value, numpy.ndarray):
        raise unsupported(value)
    if isinstance(value, (list, tuple)) and value:
        converted = [unwrap_arg(v) for v in value]
        return type(value)(converted) if isinstance(value, list) else tuple(converted)
    return value


def wrap_result(value: Any) -> Any:
    """NumPy's result as the stand-in's: arrays and NumPy scalars become stand-in arrays."""
    if isinstance(value, (numpy.ndarray, numpy.generic)):
        return wrap(value)
    if isinstance(value, tuple):
        return type(value)(*map(wrap_result, value)) if hasattr(value, "_fields") \
            else tuple(wrap_result(v) for v in value)
    if isinstance(value, list):
        return [wrap_result(v) for v in value]
    return value


def _numpy_name(name: str) -> str:
    return _names.ALIASES.get(name, name)


def forward(name: str, numpy_func: Any, wrap_results: bool = True) -> Any:
    """A CuPy function ``name`` that runs ``numpy_func`` on the unwrapped arguments."""

    @functools.wraps(numpy_func)
    def function(*args: Any, **kwargs: Any) -> Any:
        args = tuple(unwrap_arg(a) for a in args)
        out = kwargs.get("out")
        kwargs = {k: unwrap_arg(v) for k, v in kwargs.items()}
        result = numpy_func(*args, **kwargs)
        if isinstance(out, ndarray):  # NumPy wrote the caller's array in place
            return out
        return wrap_result(result) if wrap_results else result

    function.__module__ = "cupy"
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``cupy.{name}`` of cunumpy's CuPy stand-in: ``numpy.{_numpy_name(name)}``"
                        " on the device data (see NumPy's documentation).")
    return function


class ufunc:
    """A CuPy ufunc of the stand-in: NumPy's ufunc of the same name on the device data.

    Calling it and its ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at`` methods
    unwrap stand-in arrays, refuse NumPy arrays and wrap the results. An ``out=`` stand-in
    array is written in place.
    """

    def __init__(self, name: str, numpy_ufunc: numpy.ufunc) -> None:
        self.__name__ = name
        self._ufunc = numpy_ufunc
        self.nin = numpy_ufunc.nin
        self.nout = numpy_ufunc.nout
        self.nargs = numpy_ufunc.nargs
        self.types = numpy_ufunc.types
        self.ntypes = numpy_ufunc.ntypes
        self.identity = numpy_ufunc.identity
        self.__doc__ = f"``cupy.{name}``: ``numpy.{numpy_ufunc.__name__}`` on the device data."

    def _run(self, method: Any, args: Any, kwargs: Any) -> Any:
        out = kwargs.get("out")
        args = tuple(unwrap_arg(a) for a in args)
        kwargs = {k: unwrap_arg(v) for k, v in kwargs.items()}
        if isinstance(kwargs.get("out"), tuple) and len(kwargs["out"]) == 1 and \
                not isinstance(out, tuple):
            kwargs["out"] = kwargs["out"][0]
        result = method(*args, **kwargs)
        if out is not None:
            return out if not isinstance(out, tuple) or len(out) > 1 else out[0]
        return wrap_result(result)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._ufunc, args, kwargs)

    def reduce(self, *args: Any, **kwargs: Any) -> Any:
        """``ufunc.reduce`` on the device data."""
        return self._run(self._ufunc.reduce, args, kwargs)

    def accumulate(self, *args: Any, **kwargs: Any) -> Any:
        """``ufunc.accumulate`` on the device data."""
        return self._run(self._ufunc.accumulate, args, kwargs)

    def reduceat(self, *args: Any, **kwargs: Any) -> Any:
        """``ufunc.reduceat`` on the device data."""
        return self._run(self._ufunc.reduceat, args, kwargs)

    def outer(self, *args: Any, **kwargs: Any) -> Any:
        """``ufunc.outer`` on the device data."""
        return self._run(self._ufunc.outer, args, kwargs)

    def at(self, *args: Any, **kwargs: Any) -> None:
        """``ufunc.at`` on the device data (in place)."""
        self._run(self._ufunc.at, args, kwargs)

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"


ufunc.__module__ = "cupy"


# -- the boundary ----------------------------------------------------------------------

def asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> ndarray:
    """``cupy.asarray``: a stand-in array as is (no copy) or host data copied to the device.

    A NumPy array, a list or a scalar is copied to the device, recorded as ``to_device``.
    """
    if isinstance(a, ndarray):
        if dtype is None or numpy.dtype(dtype) == a.dtype:
            if order in (None, "K", "A") or (order == "C" and a.flags.c_contiguous) or \
                    (order == "F" and a.flags.f_contiguous):
                return a
        return wrap(numpy.asarray(a._data, dtype=dtype, order=order).copy(order="K"))
    return _to_device(a, dtype, order, copy=False)


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False,
          ndmin: int = 0, *, blocking: bool = False) -> ndarray:
    """``cupy.array``: a device copy of ``obj`` (host data recorded as ``to_device``)."""
    if isinstance(obj, ndarray):
        data = numpy.array(obj._data, dtype=dtype, copy=copy, order=order, ndmin=ndmin)
        return obj if data is obj._data else wrap(data)
    return _to_device(obj, dtype, order, copy=True, ndmin=ndmin)


def asanyarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """``cupy.asanyarray``: the same as :func:`asarray`."""
    return asarray(a, dtype, order)


def _to_device(obj: Any, dtype: Any, order: Any, copy: bool, ndmin: int = 0) -> ndarray:
    if hasattr(obj, "__cuda_array_interface__") and not isinstance(obj, ndarray):
        raise NotImplementedError(
            "cupy.asarray of an object with __cuda_array_interface__ (another GPU library's "
            "array) is not supported by cunumpy's CuPy stand-in"
        )
    host = _host_value(obj)
    data = numpy.array(host, dtype=dtype, order=order or "K", ndmin=ndmin, copy=True)
    if data.dtype == object:
        raise ValueError("Unsupported dtype object (CuPy arrays hold numbers, not Python objects)")
    _record("to_device", data, "asarray")
    return wrap(data)


def _host_value(obj: Any) -> Any:
    """Host data for ``asarray``; stand-in arrays inside lists are implicit device reads."""
    if isinstance(obj, ndarray):
        return obj._implicit("asarray of a list holding it")
    if isinstance(obj, (list, tuple)):
        return type(obj)(_host_value(v) for v in obj) if isinstance(obj, list) else \
            tuple(_host_value(v) for v in obj)
    return obj


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, *,
            blocking: bool = True) -> numpy.ndarray:
    """``cupy.asnumpy``: a host copy of a stand-in array (recorded as ``to_host``).

    Anything else is given to :func:`numpy.asarray` (CuPy does the same).
    """
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    result = numpy.asarray(a, order=order)
    if out is not None:
        out[...] = result
        return out
    return result


def get_array_module(*args: Any) -> ModuleType:
    """``cupy.get_array_module``: the stand-in (as ``cupy``) for its arrays, else NumPy."""
    for arg in args:
        if isinstance(arg, ndarray):
            return sys.modules.get("cupy", namespace())
    return numpy


# -- lookup ---------------------------------------------------------------------------

_cache: dict[str, Any] = {}

_SUBMODULES = {
    "cuda": f"{PACKAGE}._cuda",
    "fft": f"{PACKAGE}._submodules",
    "linalg": f"{PACKAGE}._submodules",
    "random": f"{PACKAGE}._submodules",
    "testing": f"{PACKAGE}._submodules",
    "polynomial": f"{PACKAGE}._submodules",
    "lib": f"{PACKAGE}._submodules",
}

_CONSTANTS = {"NINF": -numpy.inf, "NZERO": -0.0, "PZERO": 0.0}


def _special(name: str) -> Any:
    from cunumpy.testing.cupy_on_cpu import _cuda

    table = {
        "asarray": asarray, "array": array, "asanyarray": asanyarray, "asnumpy": asnumpy,
        "get_array_module": get_array_module, "ndarray": ndarray, "ufunc": ufunc,
        "get_default_memory_pool": _cuda.get_default_memory_pool,
        "get_default_pinned_memory_pool": _cuda.get_default_pinned_memory_pool,
        "is_available": lambda: True,
        "show_config": _show_config,
        "bool": numpy.bool_, "long": numpy.long, "ulong": numpy.ulong,
        "disable_experimental_feature_warning": False,
    }
    return table.get(name, _MISSING)


_MISSING = object()


def _show_config(*, _full: bool = False) -> None:
    print("cunumpy CuPy stand-in (cupy_on_cpu): arrays on the host, kernels on emu-cuda")
    print(f"NumPy Version           : {numpy.__version__}")


def _build(name: str) -> Any:
    special = _special(name)
    if special is not _MISSING:
        return special
    if name in _CONSTANTS:
        return _CONSTANTS[name]
    if name in _SUBMODULES:
        module = importlib.import_module(_SUBMODULES[name])
        return module if name == "cuda" else module.submodule(name)
    target = _numpy_name(name)
    if name in _names.NUMPY_OBJECTS:
        return getattr(numpy, target)
    if name in _names.UFUNCS:
        return ufunc(name, getattr(numpy, target))
    if name in _names.FUNCTIONS:
        return forward(name, getattr(numpy, target))
    if name in _names.HOST_FUNCTIONS:
        return forward(name, getattr(numpy, target), wrap_results=False)
    if name in _names.NOT_IN_NUMPY:
        def removed(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(
                f"cupy.{name} in cunumpy's CuPy stand-in: NumPy {numpy.__version__} has no "
                f"{name} to forward to (CuPy deprecates or implements it itself)"
            )

        removed.__name__ = name
        return removed
    raise AttributeError(f"module 'cupy' has no attribute {name!r}")


def get(name: str) -> Any:
    """The stand-in's object for CuPy name ``name``; ``AttributeError`` for a name CuPy lacks."""
    try:
        return _cache[name]
    except KeyError:
        pass
    value = _build(name)
    _cache[name] = value
    return value


def names() -> list[str]:
    """Every public name of the stand-in's namespace."""
    return sorted({*_names.NUMPY_OBJECTS, *_names.UFUNCS, *_names.FUNCTIONS,
                   *_names.HOST_FUNCTIONS, *_names.NOT_IN_NUMPY, *_SUBMODULES, *_CONSTANTS,
                   "asarray", "array", "asanyarray", "asnumpy", "get_array_module", "ndarray",
                   "ufunc", "get_default_memory_pool", "get_default_pinned_memory_pool",
                   "is_available", "show_config", "bool", "long", "ulong"})


def _lookup_ufunc(name: str) -> ufunc | None:
    try:
        own = get(name)
    except AttributeError:
        return None
    return own if isinstance(own, ufunc) else None


def lookup_numpy_function(func: Any) -> Any:
    """The stand-in's function for the NumPy function ``func`` (``__array_function__``)."""
    module = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", "")
    if not module.startswith("numpy"):
        return None
    parts = module.split(".")
    sub = parts[1] if len(parts) > 1 and not parts[1].startswith("_") else None
    try:
        if sub is None:
            return get(name)
        if sub in ("fft", "linalg", "random"):
            return getattr(get(sub), name)
    except AttributeError:
        return None
    return None


_array.HOOKS.update(ufunc=_lookup_ufunc, function=lookup_numpy_function)
