"""The generated call function of one launch plan of the ``metal-cuda`` engine.

A :class:`~cunumpy._engines.metal_cuda._fast.Plan` is made by the full front end for one kind of
call (argument classes, dtypes, shapes, strides, template, ``n_threads``, threadgroup, device).
This module writes, for that plan, a Python function that tests exactly those things inline
(class identity, dtype identity, tuple equality: no key is built, nothing is hashed) and
launches; it returns ``None`` for any call it does not serve, which then takes the plan
dictionary (:func:`~cunumpy._engines.metal_cuda._fast.fast_call`) or the full front end, with the
same results and the same errors. The text is kept beside the function
(:func:`plan_sources`), and tests read it.

The generated function, for a push ``push(pos, vel, 0.01, out=o, template={"NSTEPS": 200})``::

    def run(inputs, out, n_threads, template, threadgroup, output_shapes, output_dtypes):
        if _prof._active or _k.init_value is not None or len(inputs) != 3:
            return None
        a0, a1, a2 = inputs
        if not (a0.__class__ is _A and a0.dtype is _d0 and a0.shape == _s0
                and a0.strides == _t0):
            return None
        ...
        _f(_G, _B, (_L, a0, a1, p2, out), 0, None)
        return out
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from cunumpy import profiling
from cunumpy.profiling import _compile_generated

__all__ = ["CONST", "INPUT", "MAX_RUNS", "OUTPUT", "SMALL", "generate_run", "plan_sources"]

INPUT, OUTPUT, SMALL, CONST = range(4)
"""Kinds of a plan's kernel arguments (see :class:`~cunumpy._engines.metal_cuda._fast.Plan`)."""
MAX_RUNS = 4
"""Generated plan functions a kernel tries before the plan dictionary (most recent first)."""
_SCALAR_CACHE = 4096
_TEMPLATE_VALUES = (int, bool, str, type, np.dtype)


def plan_sources(kernel: Any) -> list[str]:
    """The texts of the generated plan functions of ``kernel`` (most recent first)."""
    return [text for text, _ in kernel.__dict__.get("_cuda_runs", ())]


def _scalar_cache(engine: Any, dtype: np.dtype,
                  small: Callable[..., Any]) -> tuple[dict[Any, Any], Callable[..., Any]]:
    """A per-input cache of number -> CPointer, and the conversion that fills it (None when
    the front end must check the number); zero is never cached (``-0.0 == 0.0``)."""
    cache: dict[Any, Any] = {}

    def convert(value: Any) -> Any:
        ptr = small(engine, dtype, value)
        if ptr is not None and value and len(cache) < _SCALAR_CACHE:
            cache[value] = ptr
        return ptr

    return cache, convert


def _compare(lines: list[str], name: str, value: Any) -> bool:
    """Add the inline test ``name`` equals ``value`` (of exactly its class); False if the value
    cannot be tested that way (the plan then gets no generated function)."""
    if value is None:
        lines.append(f"    if {name} is not None:\n        return None")
        return True
    if value.__class__ is not int:
        return False
    lines.append(f"    if {name}.__class__ is not int or {name} != {value!r}:\n        return None")
    return True


def generate_run(plan: Any, engine: Any, kernel: Any, inputs: tuple, out: Any, n_threads: Any,
                 template: Any, threadgroup: Any, output_shapes: Any, output_dtypes: Any,
                 device: int, small: Callable[..., Any]) -> tuple[str, Callable[..., Any]] | None:
    """The text and function serving calls like this one through ``plan`` (None: not
    expressible inline; the plan dictionary serves such calls)."""
    cupy = engine._cupy
    array = cupy.ndarray
    ns: dict[str, Any] = {
        "_A": array, "_prof": profiling, "_k": kernel, "_dev": cupy.cuda.runtime.getDevice,
        "_D": device, "_f": plan.function, "_G": plan.groups, "_B": plan.block,
        "_L": plan.launch, "_empty": cupy.empty, "_M": object(),
    }
    n = len(inputs)
    lines = [
        "def run(inputs, out, n_threads, template, threadgroup, output_shapes, output_dtypes):",
        f"    if _prof._active or _k.init_value is not None or len(inputs) != {n}:",
        "        return None",
    ]
    names = [f"a{i}" for i in range(n)]
    if n:
        lines.append(f"    {', '.join(names)}{',' if n == 1 else ''} = inputs")
    for i, a in enumerate(inputs):
        if a.__class__ is array:
            ns[f"_d{i}"], ns[f"_s{i}"], ns[f"_t{i}"] = a.dtype, tuple(a.shape), tuple(a.strides)
            lines.append(
                f"    if not (a{i}.__class__ is _A and a{i}.dtype is _d{i} and a{i}.shape == _s{i}"
                f" and a{i}.strides == _t{i}):\n        return None"
            )
        elif a.__class__ in (float, int, bool):
            lines.append(f"    if a{i}.__class__ is not {a.__class__.__name__}:\n        return None")
        else:
            return None
    # outputs
    if out is None:
        ns["_OS"], ns["_ODT"] = copy.deepcopy(output_shapes), copy.deepcopy(output_dtypes)
        lines.append(
            "    if out is not None or output_shapes != _OS or output_dtypes != _ODT:\n"
            "        return None"
        )
        outs = [f"o{j}" for j in range(len(plan.out_shapes))]
        for j, (s, d) in enumerate(zip(plan.out_shapes, plan.out_dtypes)):
            ns[f"_os{j}"], ns[f"_od{j}"] = s, d
        given: list[Any] = []
    else:
        given = [out] if out.__class__ is array else list(out)
        outs = [f"o{j}" for j in range(len(given))]
        if out.__class__ is array:
            lines.append("    o0 = out\n    if o0.__class__ is not _A:\n        return None")
        else:
            lines.append(
                f"    if out.__class__ is not tuple or len(out) != {len(given)}:\n"
                f"        return None\n    {', '.join(outs)}{',' if len(outs) == 1 else ''} = out"
            )
        lines.append("    if output_shapes is not None or output_dtypes is not None:\n"
                     "        return None")
        for j, o in enumerate(given):
            ns[f"_od{j}"], ns[f"_os{j}"], ns[f"_ot{j}"] = o.dtype, tuple(o.shape), tuple(o.strides)
            lines.append(
                f"    if not (o{j}.__class__ is _A and o{j}.dtype is _od{j} and o{j}.shape == "
                f"_os{j} and o{j}.strides == _ot{j}):\n        return None"
            )
    if not (_compare(lines, "n_threads", n_threads)
            and _compare(lines, "threadgroup", threadgroup)):
        return None
    # template
    if template is None:
        lines.append("    if template is not None:\n        return None")
    elif template.__class__ is dict:
        items = list(template.items())
        lines.append(
            f"    if template.__class__ is not dict or len(template) != {len(items)}:\n"
            "        return None"
        )
        for j, (key, value) in enumerate(items):
            if not isinstance(key, str) or not isinstance(value, _TEMPLATE_VALUES):
                return None
            ns[f"_tc{j}"], ns[f"_tv{j}"] = value.__class__, value
            lines.append(
                f"    v = template.get({key!r}, _M)\n"
                f"    if v.__class__ is not _tc{j} or v != _tv{j}:\n        return None"
            )
    else:
        return None
    lines.append("    if _dev() != _D:\n        return None")
    # an output that overlaps an input is written through a temporary: the full path
    if given and plan.spans:
        for j, size in enumerate(plan.out_nbytes):
            lines.append(f"    lo = o{j}.data.ptr")
            for index, neg, span in plan.spans:
                lines.append(
                    f"    b = a{index}.data.ptr + {neg}\n"
                    f"    if lo < b + {span} and b < lo + {size}:\n        return None"
                )
    args = ["_L"]
    for kind, index, extra in plan.args:
        if kind == INPUT:
            args.append(f"a{index}")
        elif kind == OUTPUT:
            args.append(f"o{index}")
        elif kind == SMALL:
            ns[f"_c{index}"], ns[f"_n{index}"] = _scalar_cache(engine, extra, small)
            lines.append(
                f"    p{index} = _c{index}.get(a{index})\n"
                f"    if p{index} is None:\n        p{index} = _n{index}(a{index})\n"
                f"        if p{index} is None:\n            return None"
            )
            args.append(f"p{index}")
        else:
            assert kind == CONST, kind
            ns[f"_x{len(args)}"] = extra
            args.append(f"_x{len(args)}")
    if out is None:
        for j in range(len(plan.out_shapes)):
            lines.append(f"    o{j} = _empty(_os{j}, dtype=_od{j})")
    lines.append(f"    _f(_G, _B, ({', '.join(args)},), 0, None)")
    if out is None:
        lines.append(f"    return {outs[0]}" if len(outs) == 1 else f"    return ({', '.join(outs)},)")
    else:
        lines.append("    return out")
    text = "\n".join(lines) + "\n"
    exec(_compile_generated(text, f"MetalKernel {kernel.name} metal-cuda plan"), ns)
    return text, ns["run"]
