"""The stand-in's ``cupy.ndarray``: "device memory" held in a private NumPy array.

An :class:`ndarray` keeps its data in ``_data``, a NumPy array that plays the part of device
memory: kernels of the stand-in write into it in place, and nothing outside the stand-in may
read it implicitly. The class is deliberately *not* a :class:`numpy.ndarray` subclass, so that
host/device mistakes a GPU would reveal show up here too:

- ``numpy.asarray(a)`` raises ``TypeError`` ("Implicit conversion to a NumPy array is not
  allowed. Please use `.get()` to construct a NumPy array explicitly.", CuPy's words);
- a NumPy function or ufunc given a stand-in array runs the stand-in's function of that name
  (CuPy's ``__array_function__`` / ``__array_ufunc__`` dispatch), and raises ``TypeError``
  telling to use ``.get()`` / ``cupy.asnumpy`` when CuPy has no such function; a NumPy array
  mixed in raises ``TypeError: Unsupported type <class 'numpy.ndarray'>``;
- operators with a NumPy array raise the same ``TypeError``;
- reductions and scalar indexing give 0-d arrays, and ``float(a)``, ``int(a)``, ``bool(a)``,
  ``a.item()``, ``a.tolist()`` are implicit synchronising device-to-host reads, recorded by
  :func:`cunumpy.profiling.count_transfers` as kind ``"implicit_to_host"``; ``a.get()`` and
  ``cupy.asnumpy`` as ``"to_host"``; ``cupy.asarray(numpy_array)`` and ``a.set()`` as
  ``"to_device"``.

:func:`wrap` and :func:`unwrap` move between the two without copying or recording: they are the
stand-in's internal doors (the kernel classes use them), not a transfer.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy

from cunumpy import profiling
from cunumpy.testing.cupy_on_cpu import _util
from cunumpy.testing.cupy_on_cpu._memory import Device, MemoryPointer, track_allocation

__all__ = ["MemoryPointer", "ndarray", "unwrap", "wrap"]

IMPLICIT_MESSAGE = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
    "NumPy array explicitly."
)
"""CuPy's message for ``numpy.asarray(cupy_array)`` (kept word for word: code matches on it)."""


HOOKS: dict[str, Any] = {"ufunc": lambda name: None, "function": lambda func: None}
"""How NumPy's dispatch finds the stand-in's ufunc / function: set by :mod:`._namespace`."""


def unsupported(value: Any) -> TypeError:
    """The ``TypeError`` CuPy raises for a NumPy array (or other non-CuPy array) argument."""
    return TypeError(f"Unsupported type {type(value)}")


class _Flags:
    """``a.flags``: ``c_contiguous``, ``f_contiguous``, ``owndata`` (and item access)."""

    def __init__(self, data: numpy.ndarray, owndata: bool) -> None:
        self.c_contiguous = bool(data.flags.c_contiguous)
        self.f_contiguous = bool(data.flags.f_contiguous)
        self.owndata = owndata

    def __getitem__(self, name: str) -> bool:
        key = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
               "OWNDATA": "owndata"}.get(name.upper())
        if key is None:
            raise KeyError(name)
        return getattr(self, key)

    def __repr__(self) -> str:
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n"
                f"  OWNDATA : {self.owndata}")


def _describe(data: numpy.ndarray) -> str:
    return f"{data.dtype}[{','.join(str(n) for n in data.shape)}]"


def _record(kind: str, data: numpy.ndarray, what: str) -> None:
    if profiling._active:
        profiling._record(kind, data.nbytes, f"cupy stand-in {what} {_describe(data)}")


class ndarray:
    """A CuPy array of the stand-in; its data is "on the device" (a private NumPy array).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    dtype : data-type, optional
        Element type (default ``float64``, as CuPy).
    memptr : MemoryPointer, optional
        Not supported by the stand-in (raises ``NotImplementedError``): allocate with the
        shape, or build arrays with the ``cupy`` functions.
    strides : tuple of int, optional
        Not supported with a fresh allocation (raises ``NotImplementedError``).
    order : {"C", "F"}, optional
        Memory layout of the new array.
    """

    __array_priority__ = 100
    _cunumpy_stand_in_array = True
    """Marks the stand-in's arrays for cunumpy's engines (CudaKernel passes ``_data`` on)."""
    __slots__ = ("__weakref__", "_data", "_owner")

    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None,
                 order: str = "C") -> None:
        if memptr is not None:
            raise NotImplementedError(
                "cupy.ndarray(..., memptr=...) is not supported by cunumpy's CuPy stand-in: "
                "build the array with cupy.empty/cupy.asarray instead"
            )
        if strides is not None:
            raise NotImplementedError(
                "cupy.ndarray(..., strides=...) is not supported by cunumpy's CuPy stand-in"
            )
        if order not in ("C", "F"):
            raise ValueError(f"order not understood: {order!r} (use 'C' or 'F')")
        self._data = numpy.empty(shape, dtype=dtype, order=order)
        self._owner = None
        _allocated(self)

    # -- construction helpers -------------------------------------------------------------

    @classmethod
    def _from_data(cls, data: numpy.ndarray, owner: ndarray | None = None) -> ndarray:
        a = object.__new__(cls)
        a._data = data
        a._owner = owner
        if owner is None:
            _allocated(a)
        return a

    # -- attributes ----------------------------------------------------------------------

    shape = property(lambda self: self._data.shape, doc="Tuple of the array's dimensions.")
    dtype = property(lambda self: self._data.dtype, doc="The element type.")
    strides = property(lambda self: self._data.strides, doc="Bytes to step in each dimension.")
    size = property(lambda self: int(self._data.size), doc="Number of elements.")
    ndim = property(lambda self: self._data.ndim, doc="Number of dimensions.")
    itemsize = property(lambda self: self._data.itemsize, doc="Bytes per element.")
    nbytes = property(lambda self: int(self._data.nbytes), doc="Bytes of the elements.")

    @shape.setter
    def shape(self, value: Any) -> None:
        self._data.shape = value

    @property
    def data(self) -> MemoryPointer:
        """A :class:`MemoryPointer` to the first element (``a.data.ptr``)."""
        return MemoryPointer(self._data)

    @property
    def device(self) -> Any:
        """The :class:`cupy.cuda.Device` the array lives on (always device 0)."""
        return Device(0)

    @property
    def flags(self) -> _Flags:
        """Memory layout flags (``c_contiguous``, ``f_contiguous``, ``owndata``)."""
        return _Flags(self._data, self._owner is None)

    @property
    def base(self) -> ndarray | None:
        """The array this one is a view of, or ``None``."""
        return self._owner

    @property
    def T(self) -> ndarray:
        """The transposed view."""
        return self._view(self._data.T)

    @property
    def mT(self) -> ndarray:
        """The view with the last two axes swapped."""
        return self._view(numpy.swapaxes(self._data, -1, -2))

    @property
    def real(self) -> ndarray:
        """The real part (a view for complex arrays)."""
        return self._view(self._data.real)

    @real.setter
    def real(self, value: Any) -> None:
        self._data.real = _operand(value)

    @property
    def imag(self) -> ndarray:
        """The imaginary part."""
        return self._view(self._data.imag) if self._data.dtype.kind == "c" else \
            wrap(numpy.zeros_like(self._data))

    @imag.setter
    def imag(self, value: Any) -> None:
        self._data.imag = _operand(value)

    @property
    def flat(self) -> ndarray:
        """Not an iterator as in NumPy: CuPy gives a flat view. The stand-in gives a 1-d copy."""
        return wrap(self._data.ravel())

    def _view(self, data: numpy.ndarray) -> ndarray:
        if numpy.shares_memory(data, self._data):
            return ndarray._from_data(data, self._owner if self._owner is not None else self)
        return ndarray._from_data(data)

    # -- the host/device boundary ---------------------------------------------------------

    def get(self, stream: Any = None, order: str = "C", out: numpy.ndarray | None = None,
            blocking: bool = True) -> numpy.ndarray:
        """Copy the array to the host: a new :class:`numpy.ndarray` (recorded as ``to_host``)."""
        _record("to_host", self._data, "ndarray.get")
        if out is not None:
            if not isinstance(out, numpy.ndarray):
                raise TypeError(f"ndarray.get: out must be a numpy.ndarray, not {type(out)}")
            numpy.copyto(out, self._data)
            return out
        return numpy.array(self._data, order=order, copy=True)

    def set(self, arr: Any, stream: Any = None) -> None:
        """Copy the NumPy array ``arr`` into this array (recorded as ``to_device``)."""
        if not isinstance(arr, numpy.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, not {type(arr)}")
        if arr.shape != self._data.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if arr.dtype != self._data.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        _record("to_device", arr, "ndarray.set")
        self._data[...] = arr

    def _implicit(self, what: str) -> numpy.ndarray:
        _record("implicit_to_host", self._data, what)
        return self._data

    def item(self, *args: Any) -> Any:
        """The element as a Python scalar (an implicit, synchronising device-to-host read)."""
        return self._implicit("ndarray.item").item(*args)

    def tolist(self) -> Any:
        """The elements as nested lists (an implicit, synchronising device-to-host read)."""
        return self._implicit("ndarray.tolist").tolist()

    def tobytes(self, order: str = "C") -> bytes:
        """The raw bytes (an implicit, synchronising device-to-host read)."""
        return self._implicit("ndarray.tobytes").tobytes(order)

    def _scalar(self, convert: type, what: str) -> Any:
        if self._data.size != 1:
            if convert is bool:
                raise ValueError(
                    "The truth value of an array with more than one element is ambiguous. "
                    "Use a.any() or a.all()"
                )
            raise TypeError("only length-1 arrays can be converted to Python scalars")
        return convert(self._implicit(what).reshape(()).item() if convert is not complex
                       else self._implicit(what).reshape(())[()])

    def __float__(self) -> float:
        return self._scalar(float, "float()")

    def __int__(self) -> int:
        return self._scalar(int, "int()")

    def __complex__(self) -> complex:
        return self._scalar(complex, "complex()")

    def __bool__(self) -> bool:
        return self._scalar(bool, "bool()")

    def __index__(self) -> int:
        if self._data.ndim != 0 or self._data.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._implicit("operator.index()")[()])

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of unsized object")
        return len(self._data)

    def __iter__(self) -> Any:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._data)))

    def __repr__(self) -> str:
        return repr(self._implicit("repr()")).replace("array(", "array(", 1)

    def __str__(self) -> str:
        return str(self._implicit("str()"))

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self._implicit("format()")[()], spec)
        return format(str(self), spec)

    def __array__(self, dtype: Any = None, copy: Any = None) -> numpy.ndarray:
        raise TypeError(IMPLICIT_MESSAGE)

    def __array_ufunc__(self, ufunc: numpy.ufunc, method: str, *inputs: Any,
                        **kwargs: Any) -> Any:
        own = HOOKS["ufunc"](ufunc.__name__)
        if own is None:
            raise TypeError(
                f"numpy.{ufunc.__name__} got a cupy.ndarray and CuPy has no ufunc of that "
                "name: copy the array to the host with .get() or cupy.asnumpy first"
            )
        if method == "__call__":
            return own(*inputs, **kwargs)
        return getattr(own, method)(*inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        own = HOOKS["function"](func)
        if own is None:
            name = getattr(func, "__module__", "numpy") + "." + getattr(func, "__name__", "?")
            raise TypeError(
                f"{name} got a cupy.ndarray and CuPy has no such function: copy the array to "
                "the host with .get() or cupy.asnumpy first"
            )
        return own(*args, **kwargs)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "DLPack export is not supported by cunumpy's CuPy stand-in (the array is host "
            "memory pretending to be device memory; a consumer would treat it as CPU data)"
        )

    # -- indexing ---------------------------------------------------------------------

    def __getitem__(self, key: Any) -> ndarray:
        result = self._data[_index(key)]
        if not isinstance(result, numpy.ndarray):  # a scalar: CuPy gives a 0-d array
            return wrap(numpy.asarray(result))
        return self._view(result)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, numpy.ndarray) and type(key) is slice and key == slice(None) \
                and _util.ENABLE_SLICE_COPY:  # read at each use: code may set it
            self._copy_from_host_by_slice(value)
            return
        self._data[_index(key)] = _operand(value)

    def _copy_from_host_by_slice(self, host: numpy.ndarray) -> None:
        """``a[:] = host`` under ``cupy._util.ENABLE_SLICE_COPY``: a host-to-device copy."""
        data = self._data
        if host.dtype != data.dtype or host.shape != data.shape or \
                not (data.flags.c_contiguous or data.flags.f_contiguous):
            raise ValueError(
                f"a[:] = numpy array (cupy._util.ENABLE_SLICE_COPY): the NumPy array "
                f"{_describe(host)} must have the shape and dtype of {_describe(data)}, and the "
                "CuPy array must be contiguous"
            )
        _record("to_device", host, "a[:] = numpy array")
        data[...] = host

    # -- copies and conversions with a clear device meaning --------------------------------

    def copy(self, order: str = "C") -> ndarray:
        """A copy on the device."""
        return wrap(self._data.copy(order=order))

    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None,
               copy: bool = True) -> ndarray:
        """The array converted to ``dtype`` (a copy unless ``copy=False`` and nothing changes)."""
        if casting is None:
            casting = "unsafe"
        result = self._data.astype(dtype, order=order, casting=casting, copy=copy)
        return self if result is self._data else wrap(result)

    def view(self, dtype: Any = None, array_class: Any = None) -> ndarray:
        """A view of the same memory, with another ``dtype`` when given."""
        if array_class is not None:
            raise NotImplementedError("ndarray.view(array_class=...) is not supported by the "
                                      "cupy stand-in")
        return self._view(self._data.view() if dtype is None else self._data.view(dtype))

    def fill(self, value: Any) -> None:
        """Set every element to ``value``."""
        self._data.fill(_operand(value))

    def sort(self, axis: int = -1, kind: Any = None) -> None:
        """Sort in place along ``axis``."""
        self._data.sort(axis=axis, kind=kind)

    def __copy__(self) -> ndarray:
        return self.copy()

    def __deepcopy__(self, memo: Any) -> ndarray:
        return self.copy()

    def __reduce__(self) -> Any:
        return (wrap, (self._data.copy(),))

    def __hash__(self) -> int:  # arrays are unhashable, as in CuPy
        raise TypeError("unhashable type: 'cupy.ndarray'")


ndarray.__module__ = "cupy"
ndarray.__qualname__ = "ndarray"



def _cai(self: ndarray) -> Any:
    raise AttributeError(
        "__cuda_array_interface__ is not available in cunumpy's CuPy stand-in: the data is "
        "host memory, and a library reading this interface would dereference it as device "
        "memory"
    )


ndarray.__cuda_array_interface__ = property(_cai)  # type: ignore[attr-defined]


def _allocated(a: ndarray) -> None:
    track_allocation(a, a._data.nbytes)


def wrap(data: Any) -> ndarray:
    """A stand-in array around the NumPy array ``data``, without copying or recording.

    NumPy scalars become 0-d arrays. Internal: the stand-in's functions and kernel classes use
    it for results computed "on the device".
    """
    if isinstance(data, ndarray):
        return data
    if not isinstance(data, numpy.ndarray):
        data = numpy.asarray(data)
    return ndarray._from_data(data)


def unwrap(a: ndarray) -> numpy.ndarray:
    """The NumPy array holding ``a``'s data ("device memory"), without copying or recording."""
    if not isinstance(a, ndarray):
        raise TypeError(f"unwrap expects a cupy stand-in ndarray, not {type(a)}")
    return a._data


def _operand(value: Any) -> Any:
    """An operator's or setter's other operand: unwrap ours, refuse NumPy arrays."""
    if isinstance(value, ndarray):
        return value._data
    if isinstance(value, numpy.ndarray):
        raise unsupported(value)
    if isinstance(value, (numbers.Number, numpy.generic)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return _operand_sequence(value)
    raise unsupported(value)


def _operand_sequence(value: Any) -> Any:
    out = []
    for v in value:
        if isinstance(v, (list, tuple)):
            out.append(_operand_sequence(v))
        elif isinstance(v, ndarray):
            out.append(v._data)
        elif isinstance(v, numpy.ndarray):
            raise unsupported(v)
        else:
            out.append(v)
    return type(value)(out)


def _index(key: Any) -> Any:
    if isinstance(key, tuple):
        return tuple(_index_one(k) for k in key)
    return _index_one(key)


def _index_one(k: Any) -> Any:
    if isinstance(k, ndarray):
        return k._data
    if isinstance(k, numpy.ndarray):
        raise unsupported(k)
    if isinstance(k, list):
        return _operand_sequence(k)
    return k


# -- operators, generated from a table ---------------------------------------------------

_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "matmul": operator.matmul, "and": operator.and_,
    "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
    "rshift": operator.rshift, "divmod": divmod,
}
_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
            "eq": operator.eq, "ne": operator.ne}
_UNARY = {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
          "invert": operator.invert}


def _result(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_result(v) for v in value)
    return wrap(value)


def _make_binary(op: Any) -> tuple[Any, Any, Any]:
    def forward(self: ndarray, other: Any) -> Any:
        return _result(op(self._data, _operand(other)))

    def reflected(self: ndarray, other: Any) -> Any:
        return _result(op(_operand(other), self._data))

    def inplace(self: ndarray, other: Any) -> ndarray:
        in_place(self._data, _operand(other))  # NumPy's in-place operator writes self._data
        return self

    in_place = getattr(operator, "i" + op.__name__.strip("_"), None)
    return forward, reflected, inplace


for _name, _op in _BINARY.items():
    _fwd, _ref, _inp = _make_binary(_op)
    _fwd.__name__, _ref.__name__ = f"__{_name}__", f"__r{_name}__"
    setattr(ndarray, f"__{_name}__", _fwd)
    setattr(ndarray, f"__r{_name}__", _ref)
    if _name != "divmod":
        _inp.__name__ = f"__i{_name}__"
        setattr(ndarray, f"__i{_name}__", _inp)

for _name, _op in _COMPARE.items():
    def _cmp(self: ndarray, other: Any, _op: Any = _op) -> Any:
        return wrap(_op(self._data, _operand(other)))

    _cmp.__name__ = f"__{_name}__"
    setattr(ndarray, f"__{_name}__", _cmp)

for _name, _op in _UNARY.items():
    def _un(self: ndarray, _op: Any = _op) -> Any:
        return wrap(_op(self._data))

    _un.__name__ = f"__{_name}__"
    setattr(ndarray, f"__{_name}__", _un)

ndarray.__hash__ = None  # type: ignore[assignment]  # __eq__ is elementwise: unhashable

# -- methods forwarded to NumPy's, from a table: unwrap the arguments, wrap the results ----

FORWARDED_METHODS = (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "choose", "clip", "compress",
    "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "flatten", "max", "mean",
    "min", "nonzero", "partition", "prod", "ptp", "put", "ravel", "repeat", "reshape",
    "round", "searchsorted", "squeeze", "std", "sum", "swapaxes", "take", "trace",
    "transpose", "var",
)
"""``cupy.ndarray`` methods that are NumPy's method of the same name on the device data."""

_VIEW_METHODS = frozenset({"diagonal", "ravel", "reshape", "squeeze", "swapaxes", "transpose"})


def _make_method(name: str) -> Any:
    numpy_method = getattr(numpy.ndarray, name, None)

    def method(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        if numpy_method is None:
            raise NotImplementedError(f"cupy.ndarray.{name} (NumPy has none to forward to)")
        args = tuple(_operand_arg(a) for a in args)
        kwargs = {k: _operand_arg(v) for k, v in kwargs.items()}
        result = numpy_method(self._data, *args, **kwargs)
        if name in _VIEW_METHODS and isinstance(result, numpy.ndarray):
            return self._view(result)
        if result is None:
            return None
        if isinstance(result, tuple):
            return tuple(wrap(r) for r in result)
        return wrap(result)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``cupy.ndarray.{name}``: NumPy's ``ndarray.{name}`` on the device data."
    return method


def _operand_arg(value: Any) -> Any:
    if isinstance(value, ndarray):
        return value._data
    if isinstance(value, numpy.ndarray):
        raise unsupported(value)
    return value


for _name in FORWARDED_METHODS:
    setattr(ndarray, _name, _make_method(_name))

del _name, _op, _fwd, _ref, _inp
