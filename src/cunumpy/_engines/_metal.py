"""The Metal half of the seam: what a :class:`~cunumpy.kernels.MetalKernel` hands its engines.

The front end checks a call once (arguments, outputs, template values, geometry against the
engine's :meth:`MetalEngineBase.limits`), builds the call's
:class:`~cunumpy._lang.metal_signature.MetalSignature`, and gives the engine two pieces of plain,
frozen data:

- a :class:`~cunumpy._engines._base.Program` of dialect ``metal`` (made by
  :func:`metal_program`, one per kernel variant and math mode; the engine reads
  ``program.signature`` and ``program.setting(...)``), and
- a :class:`MetalLaunch` per call: geometry, the input arrays already in the engine's memory,
  the outputs' shapes and dtypes, ``init_value`` and, on engines that write caller arrays in
  place, those arrays.

``engine.prepare(program)`` returns the launch callable (cached by the program); calling it with
a :class:`MetalLaunch` runs the kernel and returns the outputs as the engine's arrays. An engine
never sees the ``MetalKernel``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from cunumpy._engines._base import EngineStatus, Program

__all__ = ["MetalEngineBase", "MetalLaunch", "MetalLimits", "check_threadgroup", "metal_program"]

_MAX_PROGRAMS = 4096
"""Programs whose launch callables an engine remembers (each is small)."""


class MetalLaunch(NamedTuple):
    """One launch of a Metal program, checked by the front end.

    Attributes
    ----------
    grid : tuple of 3 int
        Threads per dimension (Metal ``dispatchThreads``), none zero.
    threadgroup : tuple of 3 int
        Threads per threadgroup, clamped to the grid, within the engine's limits.
    inputs : tuple
        One array per input, in input order, already in the engine's memory (row-contiguous
        when the program's ``ensure_row_contiguous`` setting is on).
    output_shapes : tuple of tuple of int
    output_dtypes : tuple of numpy.dtype
        What the kernel writes (the dtypes Metal computes in: float64 already cast).
    init_value : scalar or None
        Fill the outputs with this first; None leaves them uninitialised.
    into : tuple or None
        The caller's device arrays to write in place (one per output), on engines whose
        ``device_out`` is true, or the caller's NumPy ``out=`` arrays on the host-resident
        emulator (``emu-metal``, when they have the outputs' exact shape and dtype and alias no
        input); None otherwise.
    stream : object or None
        The engine's stream (None: its default).
    """

    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    inputs: tuple[Any, ...]
    output_shapes: tuple[tuple[int, ...], ...]
    output_dtypes: tuple[Any, ...]
    init_value: Any = None
    into: tuple[Any, ...] | None = None
    stream: Any = None


class MetalLimits(NamedTuple):
    """Launch limits of a Metal engine, checked by the front end before a launch."""

    max_threads_per_threadgroup: int = 1024
    max_threadgroups: tuple[int, int, int] = (2**32 - 1, 2**32 - 1, 2**32 - 1)
    """Threadgroups per dimension (``ceil(grid / threadgroup)``)."""


def metal_program(
    signature: Any,
    *,
    input_names: tuple[str, ...],
    output_names: tuple[str, ...],
    atomic_outputs: bool,
    ensure_row_contiguous: bool,
    math_mode: str = "safe",
    emulator_options: Any = None,
) -> Program:
    """The :class:`~cunumpy._engines._base.Program` of one Metal kernel variant.

    ``signature`` is the variant's :class:`~cunumpy._lang.metal_signature.MetalSignature`. The
    program compares equal for equal inputs: MLX's kernel name (which spells the argument
    dtypes and address spaces), the body, the header, the template values and their types
    (``True == 1`` in Python, but ``bool N`` and ``int N`` are different kernels), and the
    settings below.

    Settings (``program.setting(name)``): ``header``, ``kernel_name``, ``inputs``, ``outputs``,
    ``atomic_outputs``, ``ensure_row_contiguous``, ``math_mode`` (MLX's ``safe``, ``relaxed``
    or ``fast``), ``emulator_options`` (the CPU emulator's, or None for the environment's) and
    ``template_types``.
    """
    template = tuple(signature.template)
    return Program(
        dialect="metal",
        name=signature.name,
        source=signature.source,
        signature=signature,
        template=template,
        extra=(
            ("atomic_outputs", bool(atomic_outputs)),
            ("emulator_options", emulator_options),
            ("ensure_row_contiguous", bool(ensure_row_contiguous)),
            ("header", signature.header),
            ("inputs", tuple(input_names)),
            ("kernel_name", signature.kernel_name),
            ("math_mode", math_mode),
            ("outputs", tuple(output_names)),
            ("template_types", tuple(type(v).__name__ for _, v in template)),
        ),
    )


def check_threadgroup(threadgroup: Any) -> tuple[int, int, int]:
    """A MetalKernel threadgroup (an int or 1 to 3 positive ints, at most 1024 threads) as 3 ints.

    Shared by the front end and the ``metal-cuda`` fast path, so both raise the same error.
    """
    dims = (threadgroup,) if isinstance(threadgroup, (int, np.integer)) else threadgroup
    if (
        isinstance(dims, (str, bytes))
        or not isinstance(dims, Sequence)
        or not 1 <= len(dims) <= 3
        or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0
                   for d in dims)
    ):
        raise ValueError(
            f"MetalKernel threadgroup must be 1 to 3 positive ints, got {threadgroup!r}"
        )
    size = math.prod(int(d) for d in dims)
    if size > 1024:
        raise ValueError(
            f"MetalKernel threadgroup {tuple(dims)} has {size} threads; Metal allows at most "
            "1024 per threadgroup"
        )
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


class MetalEngineBase:
    """What the Metal engines (``mlx``, ``emu-metal``, ``metal-cuda``) share.

    Subclasses set :attr:`name` and :attr:`array_space`, implement :meth:`_prepare` (the launch
    callable of one program) and the array methods the front end uses (``is_device_array``,
    ``describe``, ``to_device``, ``host_view``, ``contiguous``, ``check_available``).
    """

    name: str = "?"
    dialect = "metal"
    array_space = "device"
    device_out = False
    """True when the engine writes device arrays given as ``out=`` in place (``metal-cuda``)."""

    def __init__(self) -> None:
        self._prepared: dict[Program, Callable[[MetalLaunch], list[Any]]] = {}

    def status(self) -> EngineStatus:
        """Whether this engine can launch here, and why (not): the engine table's answer."""
        from cunumpy._engines._table import engine_status

        return engine_status(self.name)

    def limits(self) -> MetalLimits:
        """The launch limits the front end checks a call against."""
        return MetalLimits()

    def prepare(self, program: Program) -> Callable[[MetalLaunch], list[Any]]:
        """The launch callable of ``program`` (cached by the program): called with a
        :class:`MetalLaunch`, it runs the kernel and returns the outputs as engine arrays."""
        go = self._prepared.get(program)
        if go is None:
            assert program.dialect == "metal", program.dialect
            go = self._prepare(program)
            if len(self._prepared) >= _MAX_PROGRAMS:
                self._prepared.clear()
            self._prepared[program] = go
        return go

    def _prepare(self, program: Program) -> Callable[[MetalLaunch], list[Any]]:
        raise NotImplementedError(f"engine {self.name!r} does not implement prepare")

    def buffer_info(self, a: Any) -> tuple[np.dtype, int, bool]:
        """(dtype, bytes, C-contiguous) of a device array bound to a Metal buffer (what the
        :class:`~cunumpy.kernels.MetalLibrary` front end checks it against)."""
        dtype, _ = self.describe(a)
        flags = getattr(a, "flags", None)
        return np.dtype(dtype), int(a.nbytes), bool(getattr(flags, "c_contiguous", True))

    def launch(self, program: Program, launch: MetalLaunch) -> list[Any]:
        """Run one launch of ``program`` (the same as ``prepare(program)(launch)``)."""
        return self.prepare(program)(launch)

    def __repr__(self) -> str:
        return f"<Metal engine {self.name!r} ({self.array_space} arrays)>"
