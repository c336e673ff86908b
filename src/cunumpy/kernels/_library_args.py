"""Arguments of a MetalLibrary kernel: each value checked against the parameter it binds.

Every function takes the kernel's label (:func:`label`: the engine and the kernel), which its
messages start with, followed by the argument.

A buffer parameter takes an array (NumPy, or the engine's device arrays) whose dtype matches the
pointee's element type (``float4*`` takes float32, ``atomic_uint*`` uint32; ``char*``,
``uchar*`` and ``void*`` take any array as bytes) and whose size is a whole number of pointee
values. A ``constant T&`` (or by-value) parameter takes a Python or NumPy scalar converted to
``T`` with a range check, a NumPy structured scalar whose layout matches the struct ``T`` of the
source, or a small array / ``bytes`` of exactly ``sizeof(T)`` (vectors, arrays). Everything is
handed to the engine as arrays of bytes or of the declared dtype, in buffer-index order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cunumpy._lang.metal_dtypes import bfloat16, is_bfloat16
from cunumpy._lang.metal_library import KernelParam
from cunumpy._lang.msl_layout import RAW_BYTES, TypeInfo, dtype_of, fields, type_info

__all__ = ["MAX_THREADGROUP_MEMORY", "bind_value", "check_array", "label", "param_info",
           "threadgroup_memory"]

MAX_THREADGROUP_MEMORY = 32768
"""Bytes of threadgroup memory a Metal kernel may use (``maxThreadgroupMemoryLength``)."""

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _bf16() -> np.dtype | None:
    try:
        return bfloat16()
    except ImportError:
        return None


def param_info(p: KernelParam, structs: Mapping, aliases: Mapping) -> TypeInfo | None:
    """Size, alignment and element dtype of what ``p`` points at or holds (None: unknown)."""
    return type_info(p.base, structs, aliases)


def label(kernel: str, engine: str | None = None) -> str:
    """How messages name a library kernel: ``[metal-cuda kernel 'k']`` on an engine."""
    return f"[{engine} kernel {kernel!r}]" if engine else f"MetalLibrary kernel {kernel!r}"


def _where(kernel: str, p: KernelParam) -> str:
    return f"{kernel} argument {p.name!r} ({p.declared})"


def _raw(p: KernelParam) -> bool:
    base = p.base.replace("const", "").replace("metal::", "").strip()
    return base in RAW_BYTES


def check_array(kernel: str, p: KernelParam, dtype: np.dtype, nbytes: int, contiguous: bool,
                writeable: bool, info: TypeInfo | None) -> None:
    """Check an array bound to buffer parameter ``p`` (TypeError or ValueError naming both)."""
    where = _where(kernel, p)
    if not contiguous:
        raise ValueError(
            f"{where} got a non-contiguous array; Metal buffers are flat memory: pass "
            "numpy.ascontiguousarray(x) (and copy the result back if the kernel writes it)")
    if p.writable and not writeable:
        raise ValueError(f"{where} is written by the kernel, but the array is read-only")
    if _raw(p) or info is None:
        return
    if info.scalar is not None:
        want = dtype_of(info, _bf16)
        ok = want is not None and (dtype == want or (
            info.scalar == "bfloat16" and (is_bfloat16(dtype) or dtype == np.uint16)))
        if not ok:
            name = want.name if want is not None else info.scalar
            raise TypeError(
                f"{where} needs {name} elements, got a {dtype.name} array; convert it "
                f"(x.astype(np.{name})) or, if its bytes are meant, view it (x.view(np.{name}))")
    elif dtype.itemsize not in (1, info.size) and dtype.fields is None:
        raise TypeError(
            f"{where} points at a {info.size}-byte struct; pass a structured array of that "
            f"itemsize or raw bytes (uint8), not {dtype.name}")
    if nbytes % info.size:
        raise ValueError(
            f"{where} holds {info.size}-byte values, but the array has {nbytes} bytes, not a "
            "whole number of them")


def _struct_bytes(kernel: str, p: KernelParam, value: Any, info: TypeInfo,
                  structs: Mapping, aliases: Mapping) -> np.ndarray:
    where = _where(kernel, p)
    arr = np.asarray(value)
    dtype = arr.dtype
    if arr.size != 1:
        raise ValueError(f"{where} takes one struct value, got {arr.size}")
    members = fields(info.struct, structs, aliases) if info.struct else None
    problems = []
    if dtype.itemsize != info.size:
        problems.append(f"itemsize {dtype.itemsize}, the struct has {info.size} bytes")
    if members is not None and dtype.fields is not None:
        at = {off: (n, fd) for n, (fd, off, *_) in dtype.fields.items()}
        covered = []
        for f in members:
            hit = at.get(f.offset)
            if hit is None:
                problems.append(f"no field at offset {f.offset} for member {f.name!r} ({f.type})")
                continue
            n, fd = hit
            base = fd.base if fd.subdtype is not None else fd
            count = math.prod(fd.shape) if fd.subdtype is not None else 1
            want = dtype_of(f.info, _bf16)
            nbytes = f.info.size * f.count
            lanes = f.info.lanes * f.count
            ok = fd.itemsize in (nbytes, base.itemsize * lanes) and (
                want is None or base == want or (f.info.scalar == "bfloat16"
                                                 and base.itemsize == 2))
            if want is not None and count not in (f.count, lanes):
                ok = False
            if not ok:
                problems.append(
                    f"field {n!r} ({base.name}{list(fd.shape) if fd.shape else ''}) does not "
                    f"match member {f.name!r} ({f.type}"
                    f"{'[' + str(f.count) + ']' if f.count > 1 else ''}) at offset {f.offset}")
            covered.append((f.offset, f.offset + nbytes))
        for n, (fd, off, *_) in dtype.fields.items():
            if off in {f.offset for f in members}:
                continue
            if any(a < off + fd.itemsize and off < b for a, b in covered):
                problems.append(f"field {n!r} at offset {off} overlaps a member of the struct")
    if problems:
        layout = ", ".join(f"{f.name}: {f.type}{'[' + str(f.count) + ']' if f.count > 1 else ''}"
                           f" at {f.offset}" for f in members or ())
        raise TypeError(
            f"{where}: the structured value does not have the layout of struct "
            f"{info.struct}: " + "; ".join(problems) + (f" (the struct: {layout}, "
                                                        f"{info.size} bytes)" if layout else ""))
    return np.frombuffer(arr.tobytes(), dtype=np.uint8).copy()


def _scalar(kernel: str, p: KernelParam, value: Any, info: TypeInfo) -> np.ndarray:
    where = _where(kernel, p)
    want = dtype_of(info, _bf16)
    if want is None:
        raise TypeError(f"{where}: bfloat16 needs ml_dtypes (pip install ml_dtypes)")
    if isinstance(value, np.generic):
        if value.dtype == want:
            return np.array([value], dtype=want).view(np.uint8)
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        if want.kind not in "biu":
            raise TypeError(f"{where} is {want.name}; a bool converts only to bool or integers")
        return np.array([int(value)], dtype=want).view(np.uint8)
    if isinstance(value, int):
        if want.kind in "iu":
            lo, hi = np.iinfo(want).min, np.iinfo(want).max
            if not lo <= value <= hi:
                raise OverflowError(f"{where}: {value} does not fit in {want.name} ({lo}..{hi})")
        elif want.kind == "b" and value not in (0, 1):
            raise OverflowError(f"{where}: {value} is not a bool (0 or 1)")
        return np.array([value], dtype=want).view(np.uint8)
    if isinstance(value, float):
        if want.kind not in "fV" and not is_bfloat16(want):
            raise TypeError(
                f"{where} is {want.name}: a float would lose its fraction; pass an int")
        limit = float(np.finfo(want).max) if want.kind == "f" else _FLOAT32_MAX * 1.0000001
        if math.isfinite(value) and abs(value) > limit:
            raise OverflowError(f"{where}: {value} overflows {want.name}")
        return np.array([value], dtype=want).view(np.uint8)
    raise TypeError(f"{where} takes a number, got {type(value).__name__}")


def bind_value(kernel: str, p: KernelParam, value: Any, info: TypeInfo | None,
               structs: Mapping, aliases: Mapping) -> np.ndarray:
    """The bytes a ``constant T&`` / by-value parameter ``p`` reads, from ``value``."""
    where = _where(kernel, p)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(bytes(value), dtype=np.uint8).copy()
    elif isinstance(value, (np.void,)) or (isinstance(value, np.ndarray) and value.dtype.fields
                                           is not None):
        if info is None or info.struct is None:
            if info is None:
                return np.frombuffer(np.asarray(value).tobytes(), dtype=np.uint8).copy()
            raise TypeError(f"{where} is no struct; it takes a number")
        return _struct_bytes(kernel, p, value, info, structs, aliases)
    elif isinstance(value, (bool, int, float, np.generic)) and not isinstance(value, np.void):
        if info is None or info.scalar is None or info.lanes != 1:
            what = "a struct" if info is not None and info.struct else (
                f"{info.lanes} values" if info is not None else "an unknown type")
            raise TypeError(
                f"{where} holds {what}; pass a NumPy structured scalar, a small array or bytes "
                "of its exact size, not one number")
        return _scalar(kernel, p, value, info)
    elif isinstance(value, (np.ndarray, list, tuple)):
        arr = np.asarray(value)
        if info is not None and info.scalar is not None:
            want = dtype_of(info, _bf16)
            if want is not None and arr.dtype != want:
                if isinstance(value, np.ndarray):
                    raise TypeError(
                        f"{where} holds {want.name} values; got a {arr.dtype.name} array")
                arr = arr.astype(want)
        raw = np.frombuffer(np.ascontiguousarray(arr).tobytes(), dtype=np.uint8).copy()
    else:
        raise TypeError(
            f"{where} takes a number, a NumPy structured scalar, a small array or bytes; got "
            f"{type(value).__name__}")
    if info is not None and raw.size != info.size:
        raise ValueError(f"{where} reads {info.size} bytes; the value has {raw.size}")
    return raw


def threadgroup_memory(kernel: str, params: Sequence[KernelParam],
                       given: Mapping[int, int] | None, required: bool) -> dict[int, int]:
    """Bytes of each ``[[threadgroup(i)]]`` parameter (multiples of 16, as Metal requires)."""
    given = dict(given or {})
    out: dict[int, int] = {}
    wanted = {p.index: p for p in params if p.kind == "threadgroup"}
    for index, nbytes in given.items():
        if index not in wanted:
            raise ValueError(
                f"{kernel} has no [[threadgroup({index})]] parameter; it "
                f"has {sorted(wanted) or 'none'}")
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0 or nbytes % 16:
            raise ValueError(
                f"{kernel} threadgroup_memory[{index}] = {nbytes!r}: Metal "
                "takes a non-negative multiple of 16 bytes")
        out[index] = int(nbytes)
    for index, p in wanted.items():
        if index not in out:
            if required:
                raise ValueError(
                    f"{kernel} parameter {p.name!r} is threadgroup memory "
                    f"[[threadgroup({index})]]; give its size: threadgroup_memory={{{index}: "
                    "nbytes}")
            out[index] = 0
    total = sum(out.values())
    if total > MAX_THREADGROUP_MEMORY:
        raise ValueError(
            f"{kernel} threadgroup_memory totals {total} bytes; Metal allows at most "
            f"{MAX_THREADGROUP_MEMORY} per threadgroup")
    return out
