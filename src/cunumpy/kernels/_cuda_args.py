"""The general argument checks of :class:`~cunumpy.kernels.CudaKernel` (the slow path).

The generated launcher (:mod:`cunumpy.kernels._cuda_launcher`) handles the common cases inline;
everything else comes here, which either returns what the engine takes or raises the error that
explains what is wrong: arrays on the wrong side, wrong dtypes, non-contiguous or misaligned
arrays, numbers out of range, values of vector and struct types.

What a parameter takes:

- a pointer: a C-contiguous array of the pointee's dtype, or ``None`` (a null pointer, as
  CuPy passes it). For a vector type (``float4*``) also an array of the component dtype whose
  last axis is the vector's width (``float32[n, 4]``), and for vector and struct types any
  structured dtype with the same layout (field names do not matter); for a struct also uint8
  whose last axis is the struct's size in bytes (CuPy has no structured dtypes). The array's address must
  have the C type's alignment (16 bytes for ``float4``).
- a value: a Python or NumPy number of the parameter's type; for a vector type a sequence of
  its components or a NumPy structured scalar; for a struct a NumPy structured scalar (or 0-d
  array) of the same layout, a tuple of its members in order, or a dict by member name. Vector
  and struct values are passed as 0-d NumPy arrays, which both engines take by value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from cunumpy._lang.cuda_signature import CudaParam
from cunumpy._lang.cuda_types import layout_matches

if TYPE_CHECKING:  # pragma: no cover
    from cunumpy._engines._cuda import CudaEngine

__all__ = ["CheckedKernel", "check_array", "check_scalar", "check_unchecked", "describe", "dtype_text"]


class CheckedKernel(Protocol):
    """What the checks read of a :class:`~cunumpy.kernels.CudaKernel` (which satisfies it; a
    protocol rather than an import, so this module and ``kernels/cuda.py`` form no cycle)."""

    _params: tuple[CudaParam, ...]

    def _tag(self, engine: CudaEngine) -> str: ...


def describe(value: Any) -> str:
    """``float32[1024]`` for an array, ``int 3`` for a scalar."""
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    if dtype is not None and shape is not None and not isinstance(value, np.generic):
        try:
            return f"{_dtype_name(np.dtype(dtype))}{list(shape)}"
        except TypeError:
            pass
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _dtype_name(dt: np.dtype) -> str:
    if dt.fields:
        inner = ", ".join(f"{n}: {_dtype_name(dt.fields[n][0])}" for n in dt.names)
        return f"struct{{{inner}}}"
    return dt.name


def array_library(value: Any) -> str:
    module = type(value).__module__.split(".")[0]
    return {"numpy": "NumPy", "cupy": "CuPy", "torch": "PyTorch", "jax": "JAX"}.get(module, module)


def dtype_text(p: CudaParam) -> str:
    """What a pointer parameter takes, for messages."""
    if p.dtype is None:
        return "any dtype"
    if p.kind == "vector" and p.base is not None:
        return (f"{p.type_name} (a structured dtype like "
                f"cunumpy.kernels.cuda_dtype({p.type_name!r}), or {p.base.name} with a last "
                f"axis of {p.lanes})")
    if p.kind == "struct":
        return (f"struct {p.type_name} (structured dtype {p.dtype}, or uint8 with a last axis "
                f"of {p.dtype.itemsize})")
    return _dtype_name(p.dtype)


def _dtype_ok(p: CudaParam, dtype: np.dtype, shape: tuple[int, ...]) -> bool:
    assert p.dtype is not None
    if dtype == p.dtype:
        return True
    if p.kind in ("vector", "struct") and layout_matches(dtype, p.dtype):
        return True
    if (p.kind == "struct" and dtype == np.uint8 and len(shape) >= 1
            and shape[-1] == p.dtype.itemsize):
        return True  # the struct's bytes (CuPy has no structured dtypes)
    return (p.kind == "vector" and p.base is not None and dtype == p.base
            and len(shape) >= 1 and shape[-1] == p.lanes)


def check_array(
    kernel: CheckedKernel, engine: CudaEngine, index: int, value: Any, *, dtypes: bool = True
) -> Any:
    """Check one pointer argument; return what the engine takes (``None`` stays None).

    ``dtypes=False`` (``check_signature=False`` on a host engine) checks only what the engine
    relies on: the array's side, C-contiguity, writability and alignment, not its dtype.
    """
    p = kernel._params[index]
    if value is None:
        return None
    if engine.array_space == "host" and getattr(type(value), "_cunumpy_stand_in_array", False):
        # cunumpy's CuPy stand-in: its "device memory" is a NumPy array the emulator writes
        # in place (no copy, no transfer).
        value = value._data
    tag = kernel._tag(engine)
    label = f"argument {p.name!r} ({describe(value)})"
    cls = type(value)
    is_device = hasattr(cls, "__cuda_array_interface__") or hasattr(
        value, "__cuda_array_interface__"
    )
    is_host = not is_device and (
        hasattr(cls, "__array_interface__") or hasattr(value, "__array_interface__")
    )
    if engine.array_space == "device":
        if is_host:
            raise TypeError(
                f"{tag} {label} is a {array_library(value)} (host) array, but parameter "
                f"'{p.text}' needs a device array. CudaKernel never copies arrays "
                f"implicitly: move it once with cunumpy.to_cupy({p.name}) (or "
                "cupy.asarray) and keep using the device copy"
            )
        if not is_device:
            raise TypeError(
                f"{tag} {label}: parameter '{p.text}' needs a device array "
                f"(CuPy) of {dtype_text(p)}, got {type(value).__name__} (None passes a "
                "null pointer)"
            )
        interface = value.__cuda_array_interface__
    else:
        if is_device:
            raise TypeError(
                f"{tag} {label} is a {array_library(value)} device array, but the "
                f"{engine.name} engine runs on the CPU and takes NumPy arrays. CudaKernel "
                f"never copies arrays implicitly: copy it once with "
                f"cunumpy.to_numpy({p.name})"
            )
        if not is_host:
            hint = (f"np.asarray({p.name}, dtype=np.{p.dtype.name})"
                    if p.dtype is not None and not p.dtype.fields else "a NumPy array")
            raise TypeError(
                f"{tag} {label}: parameter '{p.text}' needs a NumPy array of "
                f"{dtype_text(p)}, got {type(value).__name__}; pass {hint} (or None for a "
                "null pointer)"
            )
        interface = value.__array_interface__
    dtype = np.dtype(value.dtype)
    shape = tuple(interface["shape"])
    if dtypes and p.dtype is not None and not _dtype_ok(p, dtype, shape):
        got = (
            _dtype_name(dtype)
            if dtype.isnative
            else f"{dtype.name} ({dtype.str}, non-native byte order)"
        )
        if p.kind in ("vector", "struct"):
            raise TypeError(
                f"{tag} {label} has dtype {got}, but parameter '{p.text}' needs "
                f"{dtype_text(p)}: {p.dtype.itemsize} bytes per element with the same field "
                "types at the same offsets"
            )
        raise TypeError(
            f"{tag} {label} has dtype {got}, but parameter '{p.text}' needs "
            f"{p.dtype.name}. Arrays are never converted implicitly: convert once with "
            f"{p.name}.astype({p.dtype.name}) and pass the result"
        )
    strides = interface.get("strides")
    if strides is not None:
        expected, step = [], dtype.itemsize
        for extent in reversed(shape):
            expected.append(step)
            step *= extent
        expected.reverse()
        contiguous = (
            all(s == e for s, e, n in zip(strides, expected, shape, strict=True) if n > 1)
            or math.prod(shape) == 0
        )
        if not contiguous:
            raise ValueError(
                f"{tag} {label} is not C-contiguous (strides {tuple(strides)}), but "
                f"parameter '{p.text}' is a flat pointer. Make a contiguous copy once "
                f"(ascontiguousarray) and pass that; writes land in the copy"
            )
    readonly = interface["data"][1]
    if readonly and not p.const:
        raise ValueError(
            f"{tag} {label} is read-only, but parameter '{p.text}' is not const (the "
            "kernel may write it); pass a writeable array or declare the parameter const"
        )
    ptr = interface["data"][0]
    if not ptr and math.prod(shape) > 0:
        raise ValueError(f"{tag} {label} has a null data pointer")
    if p.align > 1 and ptr % p.align and math.prod(shape) > 0:
        raise ValueError(
            f"{tag} {label} starts at address {ptr:#x}, which is not a multiple of "
            f"{p.align} bytes, the alignment of {p.type_name}; pass an array that starts on such "
            "a boundary (a fresh allocation does; a view sliced from one may not)"
        )
    return engine.adopt_array(value)


def check_scalar(kernel: CheckedKernel, engine: CudaEngine, index: int, value: Any) -> Any:
    """Check one value argument; return the NumPy scalar (or 0-d array) the engine takes."""
    p = kernel._params[index]
    tag = kernel._tag(engine)
    dt = p.dtype
    assert dt is not None
    label = f"argument {p.name!r} ({describe(value)})"
    if p.kind in ("vector", "struct"):
        return _record(tag, label, p, value)
    if p.kind == "texture":
        return texture_argument(tag, label, p, engine, value)
    if p.kind == "tag":
        if value is None or isinstance(value, (bool, np.bool_, numbers.Integral)):
            return np.zeros((), dtype=np.uint8)  # an empty class: its one byte is never read
        raise TypeError(
            f"{tag} {label}: parameter '{p.text}' is an empty tag class ({p.type_name}); pass "
            "True, False or None (its value is in the template arguments)"
        )
    if value is None:
        raise TypeError(
            f"{tag} argument {p.name!r} is None, but parameter '{p.text}' is a value, not a "
            "pointer; pass a number"
        )
    if hasattr(value, "shape") and not isinstance(value, np.generic):
        raise TypeError(
            f"{tag} {label} is an array, but parameter '{p.text}' is a scalar; pass a "
            "Python number or a NumPy scalar"
        )
    return _number(tag, label, p.name, p.text, dt, value)


def texture_argument(tag: str, label: str, p: CudaParam, engine: CudaEngine, value: Any) -> Any:
    """The engine's handle (a uint64) of the :class:`~cunumpy.kernels.Texture` passed for a
    ``cudaTextureObject_t`` parameter."""
    from cunumpy.kernels._texture import Texture

    if not isinstance(value, Texture):
        raise TypeError(
            f"{tag} {label}: parameter '{p.text}' is a texture object; pass a "
            "cunumpy.kernels.Texture(array, filter=..., address=...)"
        )
    return np.uint64(engine.texture_handle(value))


def check_unchecked(kernel: CheckedKernel, engine: CudaEngine, args: tuple) -> tuple:
    """The arguments of a ``check_signature=False`` kernel, as a host engine relies on them.

    Device engines take them as given. A host engine (the emulator) reads pointer arguments as
    flat NumPy buffers and value arguments as the bytes of their C type, so the layout of every
    array (not its dtype) and the kind of every value is checked here, once, with the same
    messages as the checked path.
    """
    if not kernel._params:
        return args
    if any(p.kind == "texture" for p in kernel._params):
        args = tuple(
            texture_argument(kernel._tag(engine), f"argument {p.name!r}", p, engine, v)
            if p.kind == "texture" else v
            for p, v in zip(kernel._params, args, strict=True)
        )
    if engine.array_space != "host":
        return args
    out = []
    for i, (p, v) in enumerate(zip(kernel._params, args, strict=True)):
        if p.kind == "texture":
            pass
        elif p.pointer:
            v = check_array(kernel, engine, i, v, dtypes=False)
        elif p.dtype is not None and p.kind not in ("vector", "struct"):
            if hasattr(v, "shape") and getattr(v, "ndim", 0) and not isinstance(v, np.generic):
                raise TypeError(
                    f"{kernel._tag(engine)} argument {p.name!r} ({describe(v)}) is an array, "
                    f"but parameter '{p.text}' is a scalar; pass a Python number or a NumPy scalar"
                )
        elif p.dtype is None and np.asarray(v).dtype == object:
            raise TypeError(
                f"{kernel._tag(engine)} argument {p.name!r} ({describe(v)}) for parameter "
                f"'{p.text}': pass a NumPy scalar or structured value with the bytes of the C type"
            )
        out.append(v)
    return tuple(out)


def _number(tag: str, label: str, name: str, text: str, dt: np.dtype, value: Any) -> Any:
    kind = dt.kind
    if dt.name == "bfloat16":
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
            return np.asarray(float(value), dtype=dt).reshape(())
        raise TypeError(f"{tag} {label}: parameter '{text}' takes a real number (bfloat16)")
    if kind == "b":
        if isinstance(value, (bool, np.bool_)):
            return dt.type(value)
        raise TypeError(f"{tag} {label}: parameter '{text}' takes a bool")
    if kind in "iu":
        if isinstance(value, (bool, np.bool_)) or isinstance(value, numbers.Integral):
            v = int(value)
            info = np.iinfo(dt)
            if not info.min <= v <= info.max:
                raise OverflowError(
                    f"{tag} argument {name!r} = {v} does not fit parameter '{text}' "
                    f"({dt.name}, {info.min}..{info.max})"
                )
            return dt.type(v)
        raise TypeError(
            f"{tag} {label}: parameter '{text}' takes an integer ({dt.name}); "
            "CudaKernel does not truncate floats, convert explicitly with int()"
        )
    if kind == "f":
        if isinstance(value, numbers.Real):
            try:
                v = float(value)
            except OverflowError as exc:
                raise OverflowError(
                    f"{tag} argument {name!r} = {value} does not fit parameter "
                    f"'{text}' ({dt.name})"
                ) from exc
            big = float(np.finfo(dt).max)
            if math.isfinite(v) and abs(v) > big:
                raise OverflowError(
                    f"{tag} argument {name!r} = {v!r} does not fit parameter '{text}' "
                    f"({dt.name}, largest finite {big:.7g})"
                )
            return dt.type(v)
        raise TypeError(f"{tag} {label}: parameter '{text}' takes a real number ({dt.name})")
    if kind == "c":
        if isinstance(value, numbers.Complex):
            return dt.type(complex(value))
        raise TypeError(f"{tag} {label}: parameter '{text}' takes a number ({dt.name})")
    raise TypeError(f"{tag} {label}: cannot pass a value for parameter '{text}'")


def _record(tag: str, label: str, p: CudaParam, value: Any) -> np.ndarray:
    """A vector or struct value as a 0-d array of the parameter's dtype."""
    dt = p.dtype
    assert dt is not None
    what = f"{p.kind} {p.type_name}"
    if isinstance(value, (np.void, np.ndarray)) and np.dtype(value.dtype).fields:
        given = np.dtype(value.dtype)
        if getattr(value, "size", 1) != 1:
            raise TypeError(
                f"{tag} {label}: parameter '{p.text}' is one {what} passed by value; pass a "
                "single structured scalar, not an array of them"
            )
        if not layout_matches(given, dt):
            raise TypeError(
                f"{tag} {label}: dtype {_dtype_name(given)} ({given.itemsize} bytes) does not "
                f"have the layout of {what} ({_dtype_name(dt)}, {dt.itemsize} bytes, fields at "
                f"offsets {[dt.fields[n][1] for n in dt.names]}); build the value with that dtype"
            )
        raw = np.ascontiguousarray(np.asarray(value).reshape(()))
        return np.frombuffer(raw.tobytes(), dtype=dt).reshape(()).copy()
    out = np.zeros((), dtype=dt)
    names = dt.names or ()
    if p.kind == "vector" and isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in names]
        missing = [n for n in names if n not in value]
        if unknown or missing:
            raise TypeError(
                f"{tag} {label}: {what} has members {list(names)}; missing {missing}, "
                f"unknown {unknown}"
            )
        items = [value[n] for n in names]
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = list(value)
        if len(items) != len(names):
            raise TypeError(
                f"{tag} {label}: {what} has {len(names)} members ({', '.join(names)}); got "
                f"{len(items)} values"
            )
    else:
        hint = (f"a tuple of {len(names)} numbers" if p.kind == "vector"
                else "a tuple of its members in order, a dict by member name")
        raise TypeError(
            f"{tag} {label}: parameter '{p.text}' is a {what} passed by value; pass {hint}, "
            "or a NumPy structured scalar of its layout (cunumpy.kernels.cuda_dtype)"
        )
    for n, item in zip(names, items, strict=True):
        sub = dt.fields[n][0]
        if sub.fields or sub.subdtype is not None:
            try:
                out[n] = item
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{tag} {label}: member {n!r} of {what}: {exc}") from exc
        else:
            out[n] = _number(tag, f"{label} member {n!r}", f"{p.name}.{n}", p.text, sub, item)
    return out
