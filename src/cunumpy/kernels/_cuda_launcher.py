"""The per-call function of a :class:`~cunumpy.kernels.CudaKernel`, generated per engine.

One inline test per parameter (exact array class, exact dtype object, C-contiguity; or exact
Python number type and range), then the launch; anything that misses those tests goes to the
general checks of :mod:`cunumpy.kernels._cuda_args`, which give the error messages. The text is
shown by :meth:`CudaKernel.launcher_source`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cunumpy.kernels._cuda_engines import DEFAULT_LIMITS, CudaEngine, env_getter, env_value
from cunumpy.profiling import _compile_generated

if TYPE_CHECKING:  # pragma: no cover
    from cunumpy.kernels.cuda import CudaKernel

__all__ = ["MISSING", "build_launcher", "dim3"]

MISSING = object()
"""Default of every generated launcher parameter: marks an argument that was not given."""


class _NoArrayType:
    """Stands for 'no array class is accepted on the fast path' (CuPy absent, say)."""


def dim3(value: Any) -> tuple[int, int, int] | None:
    """``value`` as an (x, y, z) tuple of ints when it is an int or a 1-3 tuple of ints, else None.

    The launcher's fast path for explicit ``grid=``/``block=`` uses it; anything it cannot read
    goes to the general path, which explains what is wrong.
    """
    if value.__class__ is int:
        return (value, 1, 1)
    if value.__class__ is not tuple:
        return None
    n = len(value)
    if n == 3:
        x, y, z = value
    elif n == 1:
        x, y, z = value[0], 1, 1
    elif n == 2:
        (x, y), z = value, 1
    else:
        return None
    if x.__class__ is int and y.__class__ is int and z.__class__ is int:
        return (x, y, z)
    return None


def build_launcher(kernel: CudaKernel, engine: CudaEngine) -> Any:
    """Generate the per-call function for ``engine`` (see the module docstring)."""
    follow_env = kernel._engine is None
    cell = [env_value()]
    kernel._env_cells[engine] = cell
    ns: dict[str, Any] = {
        "_k": kernel,
        "_eng": engine,
        "_go": kernel._prepared[engine],
        "_slow": kernel._slow,
        "_dim3": dim3,
        "_M": MISSING,
        "_errs": engine.launch_errors(),
        "_envget": env_getter(),
        "_cell": cell,
    }
    kw = "n_threads=None, grid=None, block=None, shared_mem=0, stream=None, check_finite=False"
    kwd = (
        "dict(n_threads=n_threads, grid=grid, block=block, shared_mem=shared_mem, "
        "stream=stream, check_finite=check_finite)"
    )
    if not kernel.check_signature or kernel.signature is None:
        lines = [f"def launch(*args, {kw}):"]
        if follow_env:
            lines.append(
                f"    if _envget() != _cell[0]:\n        return _k._redispatch(args, {kwd})"
            )
        if kernel._nparams >= 0:
            lines.append(
                f"    if len(args) != {kernel._nparams}:\n        _k._wrong_arity(_eng, args)"
            )
        lines.append(
            "    _slow(_eng, args, n_threads, grid, block, shared_mem, stream, check_finite)"
        )
        text = "\n".join(lines) + "\n"
        kernel._sources[engine] = text
        exec(_compile_generated(text, f"CudaKernel {kernel.name} launcher"), ns)
        return ns["launch"]
    types = engine.array_types()
    ns["_AT"] = types[0] if types else _NoArrayType
    contiguous = engine.contiguity_attribute()
    ns["_array"] = lambda i, v: kernel._check_array(engine, i, v)
    ns["_scalar"] = lambda i, v: kernel._check_scalar(engine, i, v)
    names = [f"v{i}" for i in range(len(kernel._params))]
    tup = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    lines = []
    if names:
        lines.append(
            f"    if {names[-1]} is _M or extra:\n        _k._wrong_arity(_eng, {tup} + extra)"
        )
    else:
        lines.append("    if extra:\n        _k._wrong_arity(_eng, extra)")
    if follow_env:
        lines.append(
            f"    if _envget() != _cell[0]:\n        return _k._redispatch({tup} + extra, {kwd})"
        )
    for i, p in enumerate(kernel._params):
        v = names[i]
        if p.pointer:
            if p.dtype is None:  # void*: any dtype
                lines.append(
                    f"    if {v}.__class__ is not _AT or not {v}.{contiguous}:\n"
                    f"        {v} = _array({i}, {v})"
                )
            else:
                ns[f"_d{i}"] = p.dtype
                lines.append(
                    f"    if {v}.__class__ is not _AT or {v}.dtype is not _d{i} "
                    f"or not {v}.{contiguous}:\n"
                    f"        {v} = _array({i}, {v})"
                )
            if engine.array_space == "host" and not p.const:
                lines.append(
                    f"    elif not {v}.flags.writeable:\n        {v} = _array({i}, {v})"
                )
            continue
        dt = p.dtype
        assert dt is not None
        ns[f"_c{i}"] = engine.scalar_converter(dt)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            cond = f"{v}.__class__ is int and {info.min} <= {v} <= {info.max}"
        elif dt.kind == "f":
            big = float(np.finfo(dt).max)
            cond = f"{v}.__class__ is float and {-big!r} <= {v} <= {big!r}"
        elif dt.kind == "b":
            cond = f"{v}.__class__ is bool"
        else:
            cond = "False"
        if p.kind in ("vector", "struct", "tag") or dt.kind == "V":
            # vectors, structs, bfloat16: always the general conversion to a 0-d array
            lines.append(f"    {v} = _scalar({i}, {v})")
            continue
        # A NumPy scalar of exactly the parameter's type (``np.float32(2)`` for a float, as
        # CuPy users write them) needs neither a range check nor a conversion.
        ns[f"_t{i}"] = dt.type
        lines.append(
            f"    if {cond}:\n        {v} = _c{i}({v})\n"
            f"    elif {v}.__class__ is _t{i}:\n        {v} = _c{i}({v})\n    else:\n"
            f"        {v} = _scalar({i}, {v})"
        )
    bs = kernel.block_size
    max_n = DEFAULT_LIMITS.max_grid[0] * bs
    try:  # the engine's own limits bound the explicit-geometry fast path
        limits = engine.limits()
    except (ImportError, RuntimeError):  # engine unusable: the launch itself will say why
        limits = DEFAULT_LIMITS
    gx, gy, gz = limits.max_grid
    bx, by, bz = limits.max_block
    bt = limits.max_threads_per_block
    if kernel._first_array is not None:
        v = f"v{kernel._first_array}"  # None (a null pointer) has no size: the slow path says so
        size = f"({v}.size if {v} is not None else None) if n_threads is None else n_threads"
    else:
        size = "n_threads"
    params = ", ".join(f"{n}=_M" for n in names)
    head = f"def launch({params}, *extra, {kw}):" if names else f"def launch(*extra, {kw}):"
    body = "\n".join(lines)
    text = (
        f"{head}\n"
        f"{body}\n"
        "    if grid is None and block is None and shared_mem == 0 and not check_finite "
        "and not _k.debug:\n"
        f"        n = {size}\n"
        f"        if n.__class__ is int and 0 < n <= {max_n}:\n"
        "            try:\n"
        f"                _go(((n + {bs - 1}) // {bs}, 1, 1), ({bs}, 1, 1), {tup}, 0, stream)\n"
        "            except _errs as exc:\n"
        f"                _k._launch_failed(_eng, exc, ((n + {bs - 1}) // {bs}, 1, 1), "
        f"({bs}, 1, 1), 0)\n"
        "            return\n"
        # Explicit (x, y, z) grid and block of positive ints within every CUDA device's
        # limits: launch as given; anything else gets the full checks of the general path.
        # Explicit (x, y, z) grid and block of positive ints within the engine's limits: launch
        # as given; anything else gets the full checks of the general path. One-element tuples
        # (the common 1-D launch) are read inline, without calls.
        "    elif n_threads is None and grid is not None and block is not None "
        "and shared_mem == 0 and not check_finite and not _k.debug:\n"
        "        if (grid.__class__ is tuple and block.__class__ is tuple\n"
        "                and len(grid) == 1 and len(block) == 1):\n"
        "            g = grid[0]\n"
        "            b = block[0]\n"
        f"            if (g.__class__ is int and b.__class__ is int and 0 < g <= {gx}\n"
        f"                    and 0 < b <= {min(bx, bt)}):\n"
        "                g = (g, 1, 1)\n"
        "                b = (b, 1, 1)\n"
        "            else:\n"
        "                g = None\n"
        "        else:\n"
        "            g = _dim3(grid)\n"
        "            b = _dim3(block)\n"
        "            if not (g is not None and b is not None\n"
        f"                    and 0 < g[0] <= {gx} and 0 < g[1] <= {gy} and 0 < g[2] <= {gz}\n"
        f"                    and 0 < b[0] <= {bx} and 0 < b[1] <= {by} and 0 < b[2] <= {bz}\n"
        f"                    and b[0] * b[1] * b[2] <= {bt}):\n"
        "                g = None\n"
        "        if g is not None:\n"
        "            try:\n"
        f"                _go(g, b, {tup}, 0, stream)\n"
        "            except _errs as exc:\n"
        "                _k._launch_failed(_eng, exc, g, b, 0)\n"
        "            return\n"
        f"    _slow(_eng, {tup}, n_threads, grid, block, shared_mem, stream, check_finite)\n"
    )
    kernel._sources[engine] = text
    exec(_compile_generated(text, f"CudaKernel {kernel.name} launcher"), ns)
    return ns["launch"]
