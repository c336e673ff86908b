"""MetalLibrary: the kernels of a whole Metal Shading Language source, on every Metal engine."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cunumpy import profiling
from cunumpy._engines._base import Program
from cunumpy._engines._library import LibraryLaunch, library_program
from cunumpy._engines._metal_registry import get_metal_engine
from cunumpy._lang.metal_library import KernelParam, LibraryKernel, parse_library
from cunumpy._lang.preprocess import preprocess
from cunumpy.kernels._library_args import (
    bind_value,
    check_array,
    label,
    param_info,
)
from cunumpy.kernels._library_args import threadgroup_memory as threadgroup_sizes

__all__ = ["MetalFunction", "MetalLibrary"]

_THREADGROUP_DECL = re.compile(
    r"\bthreadgroup\s+([\w:<>, ]+?)\s+(\w+)((?:\s*\[[^\]]+\])*)\s*;")
MAX_THREADS_PER_THREADGROUP = 1024
"""What ``maxTotalThreadsPerThreadgroup`` an Apple GPU reports for most kernels."""
THREAD_EXECUTION_WIDTH = 32
"""SIMD-group width of Apple GPUs (``threadExecutionWidth``)."""


def _dims(value: Any, what: str, kernel: str) -> tuple[int, ...]:
    dims = (value,) if isinstance(value, (int, np.integer)) else value
    if (isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) or not 1 <= len(dims) <= 3
            or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
                       for d in dims)):
        raise ValueError(
            f"MetalLibrary kernel {kernel!r} {what} must be 1 to 3 non-negative ints, got "
            f"{value!r}")
    return tuple(int(d) for d in dims)


def default_threadgroup(grid: Sequence[int], most: int = MAX_THREADS_PER_THREADGROUP
                        ) -> tuple[int, int, int]:
    """PyTorch's choice (``MetalKernelFunction::dispatch``): ``min(threads, most)`` for a 1-D
    grid, ``(most, 1, 1)`` for a 2-D or 3-D one."""
    if len(grid) == 1:
        return (max(1, min(int(grid[0]), most)), 1, 1)
    return (most, 1, 1)


class MetalFunction:
    """One kernel of a :class:`MetalLibrary`, with one set of function-constant values.

    Call it with the kernel's buffer arguments, in buffer-index order or by parameter name::

        k(out, x, 2.0, grid=n)                  # dispatchThreads: n threads in all
        k(out, x, 2.0, threadgroups=(g, 1, 1), threadgroup=(256, 1, 1))

    Parameters of the call
    ----------------------
    *args, **named
        One value per buffer parameter (``[[buffer(i)]]``, or parameters without an index, which
        take the next free index in declaration order). Arrays bind to ``device`` and
        ``constant`` pointers (written in place through non-const ``device`` pointers); numbers,
        NumPy structured scalars, small arrays and ``bytes`` bind to ``constant T&`` and
        by-value parameters (see :mod:`cunumpy.kernels._library_args` for the rules).
    grid : int or tuple of 1-3 ints
        Threads per dimension (Metal ``dispatchThreads``: edge threadgroups are smaller).
    threadgroups : int or tuple of 1-3 ints
        Instead of ``grid``: threadgroups per dimension (``dispatchThreadgroups``); needs
        ``threadgroup``.
    threadgroup : int or tuple of 1-3 ints, optional
        Threads per threadgroup. Default as PyTorch chooses it: ``min(grid, max)`` for a 1-D
        grid, ``(max, 1, 1)`` otherwise (clamped to the grid), where ``max`` is
        :attr:`max_threads_per_threadgroup`.
    threadgroup_memory : dict, optional
        ``{i: nbytes}`` for each ``[[threadgroup(i)]]`` parameter (multiples of 16).
    engine : str, optional
        ``emulator`` (``emu-metal``), ``cuda`` (``metal-cuda``) or ``mlx``; default
        ``CUNUMPY_METAL_ENGINE``.
    """

    def __init__(self, library: MetalLibrary, kernel: LibraryKernel,
                 constants: Mapping[str, Any]) -> None:
        self.library = library
        self.kernel = kernel
        self.name = kernel.host_name
        self.constants = dict(constants)
        self.params = kernel.params
        self.buffer_params = tuple(sorted((p for p in kernel.params if p.kind == "buffer"),
                                          key=lambda p: p.index))
        self._programs: dict[Any, Program] = {}
        self._prepared: dict[Any, Any] = {}
        self._info = {p.name: param_info(p, library._parsed.structs, library._parsed.aliases)
                      for p in kernel.params}

    # -- what Metal reports of a pipeline --------------------------------------------------
    @property
    def max_threads_per_threadgroup(self) -> int:
        """``maxTotalThreadsPerThreadgroup``: the kernel's
        ``[[max_total_threads_per_threadgroup(N)]]`` where it has one (at most 1024), else 1024
        (what Apple GPUs report for most kernels). Launches with larger threadgroups are
        refused, as Metal refuses them."""
        declared = self.kernel.max_threads
        if declared is None:
            return MAX_THREADS_PER_THREADGROUP
        value = self.kernel.max_threads_value
        if value is None or value < 1:
            raise ValueError(
                f"MetalLibrary kernel {self.name!r}: [[max_total_threads_per_threadgroup"
                f"({declared})]] is no positive integer constant here; write a number or an "
                "expression of the kernel's template parameters")
        return min(value, MAX_THREADS_PER_THREADGROUP)

    @property
    def thread_execution_width(self) -> int:
        """``threadExecutionWidth``: the SIMD-group width, 32."""
        return THREAD_EXECUTION_WIDTH

    @property
    def static_threadgroup_memory_length(self) -> int:
        """Bytes of the ``threadgroup`` variables the kernel's body declares (each rounded up
        to 16 bytes); ``[[threadgroup(i)]]`` parameters are not counted (their size is set at
        each dispatch)."""
        return self.library._static_threadgroup(self.kernel)

    def __repr__(self) -> str:
        args = ", ".join(f"{p.name}: {p.declared}" for p in self.buffer_params)
        return f"<MetalLibrary kernel {self.name!r} ({args})>"

    # -- programs ----------------------------------------------------------------------------
    def program(self, math_mode: str = "safe") -> Program:
        """The frozen program an engine gets for this kernel."""
        prog = self._programs.get(math_mode)
        if prog is None:
            lib = self.library
            prog = library_program(lib._text, self.kernel, self.constants, files=lib._files,
                                   original=lib.source, emulator_options=lib.emulator_options,
                                   math_mode=math_mode, system=lib._system)
            self._programs[math_mode] = prog
        return prog

    def _bind(self, args: tuple, named: dict[str, Any]) -> dict[int, Any]:
        params = self.buffer_params
        by_name = {p.name: p for p in params}
        if len(args) > len(params):
            raise TypeError(
                f"MetalLibrary kernel {self.name!r} takes {len(params)} buffer arguments "
                f"({', '.join(p.name for p in params)}), got {len(args)}")
        values: dict[str, Any] = {p.name: a for p, a in zip(params, args)}
        for key, value in named.items():
            if key not in by_name:
                raise TypeError(
                    f"MetalLibrary kernel {self.name!r} has no buffer parameter {key!r}; it has "
                    f"{', '.join(by_name) or 'none'}")
            if key in values:
                raise TypeError(
                    f"MetalLibrary kernel {self.name!r} got argument {key!r} twice")
            values[key] = value
        missing = [p.name for p in params if p.name not in values]
        if missing:
            raise TypeError(
                f"MetalLibrary kernel {self.name!r} is missing argument(s) {', '.join(missing)} "
                f"(buffer order: {', '.join(f'{p.name} [[buffer({p.index})]]' for p in params)})")
        return {p.index: values[p.name] for p in params}

    def __call__(self, *args: Any, grid: Any = None, threadgroups: Any = None,
                 threadgroup: Any = None, threadgroup_memory: Mapping[int, int] | None = None,
                 engine: str | None = None, **named: Any) -> None:
        """Launch the kernel (see the class docstring); buffers are written in place."""
        if self.kernel.unsupported:
            raise NotImplementedError(
                f"MetalLibrary kernel {self.name!r}: {self.kernel.unsupported}; no engine of "
                "cunumpy runs it")
        eng = get_metal_engine(engine)
        values = self._bind(args, named)
        grid3, tg3 = self._geometry(grid, threadgroups, threadgroup)
        tgmem = threadgroup_sizes(label(self.name, eng.name), self.params, threadgroup_memory,
                                  required=True)
        buffers, writes = self._buffers(values, eng)
        self.launch_buffers(buffers, grid3, tg3, tgmem, eng)
        _finish(eng, self.name, writes, buffers)
        return None

    def launch_buffers(self, buffers: Mapping[int, Any], grid: tuple[int, int, int],
                       threadgroup: tuple[int, int, int], threadgroup_memory: Mapping[int, int],
                       engine: Any = None) -> None:
        """Launch with buffers already bound (by buffer index; arrays of bytes or of any dtype,
        as Metal binds memory), skipping the front end's value checks (the engine still checks
        sizes). The PyTorch drop-in binds tensors this way."""
        eng = engine if engine is not None and not isinstance(engine, str) \
            else get_metal_engine(engine)
        _check_limits(eng, self.name, grid, threadgroup)
        if 0 in grid:
            return
        eng.check_available()
        key = (eng.name, "safe")
        go = self._prepared.get(key)
        if go is None:
            go = self._prepared[key] = _prepare(eng, self.program())
        go(LibraryLaunch(tuple(grid), tuple(threadgroup), tuple(sorted(buffers.items())),
                         tuple(sorted(threadgroup_memory.items()))))

    def _geometry(self, grid: Any, threadgroups: Any, threadgroup: Any
                  ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        if (grid is None) == (threadgroups is None):
            raise TypeError(
                f"MetalLibrary kernel {self.name!r} needs grid= (threads, Metal's "
                "dispatchThreads) or threadgroups= (dispatchThreadgroups), exactly one")
        if threadgroup is not None:
            tg = _dims(threadgroup, "threadgroup", self.name)
            if 0 in tg:
                raise ValueError(
                    f"MetalLibrary kernel {self.name!r} threadgroup {threadgroup!r} must be "
                    "positive in every dimension")
        elif threadgroups is not None:
            raise TypeError(
                f"MetalLibrary kernel {self.name!r}: threadgroups= (dispatchThreadgroups) needs "
                "threadgroup= too, the threads of each group")
        else:
            tg = default_threadgroup(_dims(grid, "grid", self.name),
                                     self.max_threads_per_threadgroup)
        tg3 = tuple(tg) + (1,) * (3 - len(tg))
        most = self.max_threads_per_threadgroup
        if math.prod(tg3) > most:
            why = (f"its [[max_total_threads_per_threadgroup({self.kernel.max_threads})]]"
                   if self.kernel.max_threads is not None else "Apple GPUs")
            raise ValueError(
                f"MetalLibrary kernel {self.name!r} threadgroup {tg3} has {math.prod(tg3)} "
                f"threads; the kernel allows at most {most} ({why})")
        if grid is not None:
            g = _dims(grid, "grid", self.name)
            g3 = g + (1,) * (3 - len(g))
            tg3 = tuple(max(1, min(t, n)) for t, n in zip(tg3, g3))
        else:
            groups = _dims(threadgroups, "threadgroups", self.name)
            groups3 = groups + (1,) * (3 - len(groups))
            g3 = tuple(a * b for a, b in zip(groups3, tg3))
        if any(v >= 2**32 for v in g3):
            raise ValueError(
                f"MetalLibrary kernel {self.name!r} grid {g3} needs fewer than 2**32 threads per "
                "dimension")
        return g3, tg3  # type: ignore[return-value]

    def _buffers(self, values: dict[int, Any], eng: Any) -> tuple[dict[int, Any], list]:
        lib = self.library._parsed
        tag = label(self.name, eng.name)
        buffers: dict[int, Any] = {}
        writes = []
        for p in self.buffer_params:
            value = values[p.index]
            info = self._info[p.name]
            if p.pointer or p.writable:  # memory the kernel reads (and may write) in place
                buffers[p.index] = self._array(tag, p, value, info, eng, writes)
                continue
            if eng.is_device_array(value):  # a value parameter reads the array's bytes
                value = eng.host_view(value)
            buffers[p.index] = bind_value(tag, p, value, info, lib.structs, lib.aliases)
        return buffers, writes

    def _array(self, tag: str, p: KernelParam, value: Any, info: Any, eng: Any,
               writes: list) -> Any:
        if isinstance(value, np.ndarray):
            check_array(tag, p, value.dtype, value.nbytes, value.flags.c_contiguous,
                        value.flags.writeable, info)
            if p.writable:
                writes.append((p, value))
            if profiling._active:
                profiling._record("to_device", value.nbytes,
                                  f"{eng.name} kernel {self.name!r} argument {p.name!r} "
                                  f"{value.dtype.name}{list(value.shape)}")
            return value
        if eng.is_device_array(value):
            dtype, nbytes, contiguous = eng.buffer_info(value)
            check_array(tag, p, dtype, nbytes, contiguous, True, info)
            return value
        what = "is written by the kernel" if p.writable and not p.pointer else "is a buffer"
        raise TypeError(
            f"{tag} argument {p.name!r} ({p.declared}) {what}; pass an array (NumPy, or the "
            f"{eng.name} engine's device arrays), not {type(value).__name__}")


def _check_limits(eng: Any, kernel: str, grid: Sequence[int], threadgroup: Sequence[int]) -> None:
    """The geometry against the engine's launch limits (``engine.limits()``)."""
    limits = eng.limits()
    threads = math.prod(threadgroup)
    if threads > limits.max_threads_per_threadgroup:
        raise ValueError(
            f"[{eng.name} kernel {kernel!r}] threadgroup {tuple(threadgroup)} has {threads} "
            f"threads; the engine allows at most {limits.max_threads_per_threadgroup}")
    groups = tuple(-(-int(g) // int(t)) for g, t in zip(grid, threadgroup))
    for axis, (n, most) in enumerate(zip(groups, limits.max_threadgroups)):
        if n > most:
            raise ValueError(
                f"[{eng.name} kernel {kernel!r}] grid {tuple(grid)} needs {n} threadgroups along "
                f"{'xyz'[axis]}; the {eng.name} engine allows at most {most} (use larger "
                "threadgroups, or another axis)")


def _prepare(eng: Any, program: Program) -> Any:
    """The engine's launch callable for a library kernel (``engine.prepare_library``)."""
    prepare = getattr(eng, "prepare_library", None)
    if prepare is not None:
        return prepare(program)
    raise NotImplementedError(
        f"[{eng.name} kernel {program.name!r}] the {eng.name} engine does not launch "
        "MetalLibrary kernels (emu-metal, metal-cuda and mlx do)")


def _finish(eng: Any, kernel: str, writes: list, buffers: dict[int, Any]) -> None:
    if profiling._active:
        for p, value in writes:
            profiling._record("to_host", value.nbytes,
                              f"{eng.name} kernel {kernel!r} argument {p.name!r} "
                              f"{value.dtype.name}{list(value.shape)}")


class MetalLibrary:
    """The kernels of a whole Metal Shading Language source.

    Parameters
    ----------
    source : str
        The library's text, as the Metal compiler takes it (``#include <metal_stdlib>``,
        structs, helpers, ``kernel`` functions, templates instantiated with
        ``template [[host_name("...")]] ...``, function constants).
    include_dirs : sequence of path, optional
        Where ``#include "..."`` and ``<...>`` look, after the source's own folder.
    defines : dict, optional
        Macros defined before the source (as ``-D`` would).
    filename : str, optional
        The name messages and reports give the source (default ``library.metal``).
    emulator_options : EmulatorOptions, optional
        Checks, races, order and isolation on the CPU emulator (default: the environment).

    Notes
    -----
    The preprocessor runs first (:mod:`cunumpy._lang.preprocess`), then the kernels are found
    (:mod:`cunumpy._lang.metal_library`): :attr:`names` lists their host names. Each kernel
    compiles at its first launch on an engine, once per set of function-constant values
    (:meth:`kernel`); the emulator caches the compiled code on disk.

    Examples
    --------
    >>> import numpy as np
    >>> import cunumpy as xp
    >>> lib = xp.kernels.MetalLibrary('''
    ... kernel void scale(device float* y [[buffer(0)]], device const float* x [[buffer(1)]],
    ...                   constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    ...     y[i] = a * x[i];
    ... }''')
    >>> lib.names
    ['scale']
    >>> x = np.arange(4, dtype=np.float32); y = np.zeros_like(x)
    >>> lib.scale(y, x, 2.0, grid=4, engine="emulator")
    >>> y.tolist()
    [0.0, 2.0, 4.0, 6.0]
    """

    def __init__(self, source: str, *, include_dirs: Sequence[str | Path] = (),
                 defines: Mapping[str, str] | None = None, filename: str = "library.metal",
                 emulator_options: Any = None) -> None:
        if not isinstance(source, str) or not source.strip():
            raise ValueError("MetalLibrary source must be the (non-empty) text of a Metal "
                             "library")
        self.source = source
        self.filename = filename
        self.emulator_options = emulator_options
        pre = preprocess(source, filename=filename, defines=defines,
                         include_dirs=list(include_dirs))
        self._text = pre.text
        self._files = pre.files
        self._system = pre.system
        self._parsed = parse_library(pre.text)
        self._kernels: dict[Any, MetalFunction] = {}

    @property
    def names(self) -> list[str]:
        """Host names of the library's kernels, in source order."""
        return list(self._parsed.kernels)

    @property
    def function_constants(self) -> dict[str, tuple[str, int]]:
        """The library's function constants: name -> (type, index)."""
        return {c.name: (c.ctype, c.index) for c in self._parsed.constants}

    def preprocessed(self) -> str:
        """The source after the preprocessor (with ``#line`` markers)."""
        return self._text

    def kernel(self, name: str, constants: Mapping[Any, Any] | None = None) -> MetalFunction:
        """The kernel ``name`` with function constants set (by name or index).

        A function constant left out is undefined, as in Metal: ``is_function_constant_defined``
        is false for it, and a value the source derives from it with a default
        (``is_function_constant_defined(c) ? c : 4``) takes the default.
        """
        if name not in self._parsed.kernels:
            raise KeyError(
                f"MetalLibrary has no kernel {name!r}; its kernels: "
                f"{', '.join(self.names[:20]) or 'none'}{' ...' if len(self.names) > 20 else ''}")
        values = self._constants(name, constants or {})
        key = (name, tuple(sorted((k, type(v).__name__, v) for k, v in values.items())))
        fn = self._kernels.get(key)
        if fn is None:
            fn = self._kernels[key] = MetalFunction(self, self._parsed.kernels[name], values)
        return fn

    def _constants(self, kernel: str, given: Mapping[Any, Any]) -> dict[str, Any]:
        decl = {c.name: c for c in self._parsed.constants}
        by_index = {c.index: c for c in self._parsed.constants}
        out: dict[str, Any] = {}
        for key, value in given.items():
            c = by_index.get(key) if isinstance(key, int) else decl.get(key)
            if c is None:
                raise KeyError(
                    f"MetalLibrary kernel {kernel!r}: no function constant {key!r}; the library "
                    f"declares {', '.join(f'{n} ({d.index})' for n, d in decl.items()) or 'none'}")
            out[c.name] = _constant_value(kernel, c.name, c.ctype, value)
        return out

    def _static_threadgroup(self, kernel: LibraryKernel) -> int:
        from cunumpy._lang.msl_layout import type_info

        if kernel.body is None:
            return 0
        body = self._text[kernel.body[0]: kernel.body[1]]
        total = 0
        for m in _THREADGROUP_DECL.finditer(body):
            info = type_info(m.group(1), self._parsed.structs, self._parsed.aliases)
            if info is None:
                continue
            count = 1
            for d in re.findall(r"\[([^\]]+)\]", m.group(3)):
                try:
                    count *= int(d.strip().rstrip("uU"), 0)
                except ValueError:
                    count = 0
            total += -(-info.size * count // 16) * 16
        return total

    def __getitem__(self, name: str) -> MetalFunction:
        return self.kernel(name)

    def __getattr__(self, name: str) -> MetalFunction:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.kernel(name)
        except KeyError as exc:
            raise AttributeError(str(exc)) from None

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.names))

    def __repr__(self) -> str:
        return f"<MetalLibrary {self.filename!r}: {len(self.names)} kernels>"


def _constant_value(kernel: str, name: str, ctype: str, value: Any) -> Any:
    base = ctype.replace("const", "").strip()
    where = f"MetalLibrary kernel {kernel!r} function constant {name!r} ({base})"
    if base == "bool":
        if not isinstance(value, (bool, np.bool_, int, np.integer)) or value not in (0, 1):
            raise TypeError(f"{where} takes a bool, got {value!r}")
        return bool(value)
    from cunumpy._lang.msl_layout import SCALARS

    dtype = np.dtype(SCALARS.get(base, (4, "float32"))[1]) if base in SCALARS else None
    if dtype is not None and dtype.kind in "iu":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{where} takes an int, got {value!r}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise OverflowError(f"{where}: {value} does not fit in {dtype.name}")
        return int(value)
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        raise TypeError(f"{where} takes a number, got {value!r}")
    return float(value)
