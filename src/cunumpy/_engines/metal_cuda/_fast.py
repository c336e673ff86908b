"""The per-call fast path of the ``metal-cuda`` MetalKernel engine (setting ``cuda``).

A MetalKernel call on CuPy arrays and Python numbers, repeated with the same dtypes, shapes,
strides, template, ``n_threads`` and threadgroup (a time loop), needs the full front end only
once: the first call validates everything, builds the signature and compiles, and leaves a
:class:`Plan` keyed by exactly what it depended on. Later calls check the key, and launch. Calls
the plan cannot serve (NumPy arrays, which are copied and counted; an active transfer counter;
``init_value``; an output that overlaps an input; a number that needs the front end's range
check) take the full path, which gives the same results and the same errors.

This is the one place where an engine holds a front-end object: a plan is built by the full
front end (:class:`PlanOwner`, which :class:`~cunumpy.kernels.MetalKernel` satisfies; no import
of it) and kept on it, so that a kernel's plans die with the kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from cunumpy import profiling
from cunumpy._engines._metal import check_threadgroup
from cunumpy._engines.metal_cuda._run import CONST as _CONST
from cunumpy._engines.metal_cuda._run import INPUT as _INPUT
from cunumpy._engines.metal_cuda._run import MAX_RUNS, generate_run
from cunumpy._engines.metal_cuda._run import OUTPUT as _OUTPUT
from cunumpy._engines.metal_cuda._run import SMALL as _SMALL

__all__ = ["Plan", "PlanOwner", "fast_call"]


class PlanOwner(Protocol):
    """What the fast path reads of the MetalKernel that owns the plans."""

    name: str
    init_value: Any
    threadgroup: tuple[int, int, int]
    ensure_row_contiguous: bool
    __dict__: dict[str, Any]

    def _prepare(self, inputs: tuple, out: Any, n_threads: Any, template: Any,
                 output_shapes: Any, output_dtypes: Any, engine: Any) -> tuple: ...

    def _program(self, signature: Any, math_mode: str) -> tuple: ...

_I32 = (-(2**31), 2**31 - 1)
_F32_MAX = float(np.finfo(np.float32).max)
_MISS = object()
_PLANS_PER_KERNEL = 64


@dataclass
class Plan:
    """Everything a repeated call needs: the compiled function and how to build its arguments."""

    function: Any
    groups: tuple[int, int, int]
    block: tuple[int, int, int]
    launch: Any
    """The CPointer to the ``cn::launch_t`` bytes (grid, threadgroup)."""
    args: tuple[tuple[int, int, Any], ...]
    """Per kernel argument: (kind, index, extra): ``_INPUT`` / ``_OUTPUT`` (index of the array),
    ``_SMALL`` (index of the input; extra: its dtype), ``_CONST`` (extra: a ready CPointer)."""
    out_shapes: tuple[tuple[int, ...], ...]
    out_dtypes: tuple[np.dtype, ...]
    resident: bool
    spans: tuple[tuple[int, int, int], ...] = ()
    """Per device input: (index, offset of its lowest byte from its pointer, bytes spanned)."""
    out_nbytes: tuple[int, ...] = ()


def _array_key(a: Any) -> tuple:
    return (a.dtype.num, a.shape, a.strides)  # CuPy arrays are native-endian: num is the dtype


def _call_key(inputs: tuple, out: Any, n_threads: Any, template: Any, threadgroup: Any,
              output_shapes: Any, output_dtypes: Any, cupy_array: type) -> tuple | None:
    ins = []
    for a in inputs:
        cls = a.__class__
        if cls is cupy_array:
            ins.append((a.dtype.num, a.shape, a.strides))
        elif cls is float or cls is int or cls is bool:
            ins.append(cls)
        else:
            return None
    if out is None:
        outs: Any = ("resident", _hashable(output_shapes), _hashable(output_dtypes))
    elif out.__class__ is cupy_array:
        outs = (_array_key(out),)
    elif out.__class__ is tuple and all(o.__class__ is cupy_array for o in out):
        outs = tuple(_array_key(o) for o in out)
    else:
        return None
    if template is None:
        tkey: Any = None
    elif template.__class__ is dict:
        tkey = tuple((k, v.__class__, v) for k, v in template.items())
    else:
        return None
    if n_threads is not None and n_threads.__class__ is not int:
        n_threads = _hashable(n_threads)
    if threadgroup is not None and threadgroup.__class__ is not int:
        threadgroup = _hashable(threadgroup)
    return (tuple(ins), outs, n_threads, tkey, threadgroup)


def _hashable(v: Any) -> Any:
    if v is None or v.__class__ is int:
        return v
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    return (v.__class__, str(v))  # dtypes and the like


_SCALARS: dict[tuple, Any] = {}
"""(dtype, class, value) -> CPointer of a checked number (the engine's value cache owns it)."""


def _small(engine: Any, dtype: np.dtype, value: Any) -> Any:
    """The CPointer of a number as ``cn::small_t``, or _MISS when the front end must check it."""
    key = (dtype.char, value.__class__, value)
    hit = _SCALARS.get(key)
    if hit is not None:
        return hit
    if value.__class__ is float:
        if not math.isfinite(value) or abs(value) > _F32_MAX:
            return _MISS  # the front end raises for overflow
        if value == 0:  # -0.0 == 0.0: not cached here (the engine's cache keys on the bytes)
            return engine._small_arg(np.array([value], dtype=dtype))
    elif value.__class__ is int and not _I32[0] <= value <= _I32[1]:
        return _MISS
    ptr = engine._small_arg(np.array([value], dtype=dtype))
    if len(_SCALARS) < 4096 and len(engine._values) < 4096:
        _SCALARS[key] = ptr  # the engine's cache keeps the buffer alive
    return ptr


def _small_or_none(engine: Any, dtype: np.dtype, value: Any) -> Any:
    ptr = _small(engine, dtype, value)
    return None if ptr is _MISS else ptr


def fast_call(kernel: PlanOwner, engine: Any, inputs: tuple, out: Any, n_threads: Any, template: Any,
              threadgroup: Any, output_shapes: Any, output_dtypes: Any) -> Any:
    """Run the call through a cached plan; ``_MISS`` when the full path must run it."""
    if profiling._active or kernel.init_value is not None:
        return _MISS
    cupy = engine._cupy
    if cupy is None:
        return _MISS
    key = _call_key(inputs, out, n_threads, template, threadgroup, output_shapes,
                    output_dtypes, cupy.ndarray)
    if key is None:
        return _MISS
    key = (key, cupy.cuda.runtime.getDevice())  # each device has its own compiled function
    plans = kernel.__dict__.get("_cuda_plans")
    if plans is None:
        plans = kernel.__dict__["_cuda_plans"] = {}
    plan = plans.get(key)
    if plan is None:
        plan = _build(kernel, engine, inputs, out, n_threads, template, threadgroup,
                      output_shapes, output_dtypes)
        if plan is None:
            return _MISS
        if len(plans) >= _PLANS_PER_KERNEL:
            plans.clear()
        plans[key] = plan
        made = generate_run(plan, engine, kernel, inputs, out, n_threads, template,
                            threadgroup, output_shapes, output_dtypes, key[1], _small_or_none)
        if made is not None:  # the next such call skips this function
            runs = kernel.__dict__.setdefault("_cuda_runs", [])
            runs.insert(0, made)
            del runs[MAX_RUNS:]
    if plan.resident:
        outs = [cupy.empty(s, dtype=d) for s, d in zip(plan.out_shapes, plan.out_dtypes)]
    else:
        outs = [out] if out.__class__ is cupy.ndarray else list(out)
        if plan.spans:
            for o, size in zip(outs, plan.out_nbytes):
                lo = o.data.ptr
                for index, neg, span in plan.spans:
                    b = inputs[index].data.ptr + neg
                    if lo < b + span and b < lo + size:
                        return _MISS  # an output overlaps an input: the full path copies
    args = [plan.launch]
    for kind, index, extra in plan.args:
        if kind == _INPUT:
            args.append(inputs[index])
        elif kind == _OUTPUT:
            args.append(outs[index])
        elif kind == _SMALL:
            ptr = _small(engine, extra, inputs[index])
            if ptr is _MISS:
                return _MISS
            args.append(ptr)
        else:
            args.append(extra)
    plan.function(plan.groups, plan.block, tuple(args), 0, None)
    if plan.resident:
        return outs[0] if len(outs) == 1 else tuple(outs)
    return out


def _build(kernel: PlanOwner, engine: Any, inputs: tuple, out: Any, n_threads: Any, template: Any,
           threadgroup: Any, output_shapes: Any, output_dtypes: Any) -> Plan | None:
    """Validate the call with the full front end and make its plan (None: not plannable)."""
    from cupy.cuda.function import CPointer

    from cunumpy._engines.metal_cuda import _meta, _storage

    bound, outs, shapes, out_dtypes, grid, _tmpl, sig = kernel._prepare(
        inputs, out, n_threads, template, output_shapes, output_dtypes, engine)
    if any(d != _storage(d) for d in out_dtypes):
        return None  # bfloat16 outputs: the full path handles the uint16 storage
    tg = kernel.threadgroup if threadgroup is None else check_threadgroup(threadgroup)
    tg = (min(tg[0], grid[0]), min(tg[1], grid[1]), min(tg[2], grid[2]))
    engine.check_available()
    if min(grid) == 0:
        return None
    if kernel.ensure_row_contiguous and any(
        is_dev and not a.flags.c_contiguous
        for a, _, is_dev in bound
    ):
        return None
    small = tuple(not is_dev for _, _, is_dev in bound)
    if any(not is_dev and a.size >= 8 for a, _, is_dev in bound):
        return None
    if outs is not None:
        for o, d, s in zip(outs, out_dtypes, shapes):
            if np.dtype(o.dtype) != d or not o.flags.c_contiguous or tuple(o.shape) != tuple(s):
                return None
    threads = tg[0] * tg[1] * tg[2]
    groups = tuple(-(-g // t) for g, t in zip(grid, tg))
    limits = engine.limits()
    if threads > limits.max_threads_per_threadgroup or any(
            n > most for n, most in zip(groups, limits.max_threadgroups)):
        return None  # the full path raises the error
    function, unit = engine.compile(kernel._program(sig, "safe")[1], small, threads)
    keep: list[Any] = []
    args: list[tuple[int, int, Any]] = []
    for a in unit.args:
        if a.kind == "small":
            args.append((_SMALL, a.arg, bound[a.arg][1]))
        elif a.kind == "meta":
            dev = bound[a.arg][0]
            buf = _meta(dev, f"[{engine.name} kernel {kernel.name!r}]", sig, a.arg)
            keep.append(buf)
            args.append((_CONST, a.arg, CPointer(buf.ctypes.data)))
        else:
            args.append((_INPUT if a.kind == "input" else _OUTPUT, a.arg, None))
    spans = []
    for i, (a, _, is_dev) in enumerate(bound):
        if is_dev and a.nbytes:
            neg = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
            span = sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides)) + a.itemsize
            spans.append((i, neg, span))
    out_nbytes = tuple(o.nbytes for o in outs) if outs is not None else ()
    plan = Plan(function, groups, (threads, 1, 1), engine._launch_args(grid, tg), tuple(args),
                tuple(tuple(s) for s in shapes), tuple(out_dtypes), outs is None,
                tuple(spans), out_nbytes)
    plan.__dict__["_keep"] = keep  # the meta buffers the CPointers point into
    return plan
