"""The seam between the :class:`~cunumpy.kernels.CudaKernel` front end and what runs a launch.

The front end parses the signature, checks every argument and computes the launch geometry; an
**engine** compiles the kernel and runs it. Engines are explicit objects, looked up by name, so a
real GPU run and an emulated run can share one process:

- ``"cupy"``: :class:`~cunumpy._engines.cupy.CupyEngine`, an NVIDIA GPU through CuPy; it
  takes device arrays (objects exposing ``__cuda_array_interface__``).
- ``"emulator"``: the CPU emulator (engine name ``"emu-cuda"``),
  :class:`~cunumpy._engines.emu_cuda.EmuCudaEngine`; it takes NumPy arrays.

Both are registered in :mod:`cunumpy._engines._cuda_registry` and listed, with the Metal
engines, in the engine table (:mod:`cunumpy._engines._table`).

Writing an engine
-----------------
Subclass :class:`CudaEngine`, set :attr:`~CudaEngine.name` and :attr:`~CudaEngine.array_space`,
implement :meth:`~CudaEngine.launch`, and register a zero-argument factory::

    register_cuda_engine("emulator", EmuCudaEngine)

An engine never sees the ``CudaKernel``: it gets the kernel's frozen
:class:`~cunumpy._engines._base.Program` (``CudaKernel.program``; ``recompile()`` makes a new
one). The front end calls, once per program and engine (at the first launch there):
:meth:`~CudaEngine.array_types` (the class accepted on the fast path after an exact dtype and
contiguity test, which reads :meth:`~CudaEngine.contiguity_attribute`),
:meth:`~CudaEngine.scalar_converter` per scalar parameter, :meth:`~CudaEngine.launch_errors`
and :meth:`~CudaEngine.prepare` (with the program). At every launch it calls the callable ``prepare`` returned with
``(grid, block, args, shared_mem, stream)``: ``grid`` and ``block`` are 3-tuples of positive
ints inside :meth:`~CudaEngine.limits`; ``args`` has one entry per kernel parameter: arrays of
the engine's space, exactly the parameter's dtype and C-contiguous (an array that missed the
fast path went through :meth:`~CudaEngine.adopt_array`), and scalars made by the converter
(fast path) or NumPy scalars of exactly the parameter's dtype (slow path). Before a launch with
dynamic shared memory it calls :meth:`~CudaEngine.reserve_shared_mem`; in debug mode and with
``check_finite`` it calls :meth:`~CudaEngine.synchronize` (and :meth:`~CudaEngine.nonfinite`).
Zero-size launches never reach the engine. :meth:`~CudaEngine.launch` is the same operation as
one method call, for callers outside the front end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cunumpy._cuda_common import DEFAULT_LIMITS, CudaCompileError, CudaLaunchError, CudaLimits

if TYPE_CHECKING:  # pragma: no cover
    from cunumpy._engines._base import Program

__all__ = [
    "DEFAULT_LIMITS",
    "CudaCompileError",
    "CudaEngine",
    "CudaLaunchError",
    "CudaLimits",
]


class CudaEngine:
    """Base class of the engines that run :class:`~cunumpy.kernels.CudaKernel` launches.

    Attributes
    ----------
    name : str
        The engine's spelling in messages and test ids: ``"cupy"`` or ``"emu-cuda"``.
    array_space : {"device", "host"}
        Which arrays pointer parameters take: ``"device"`` (``__cuda_array_interface__``) or
        ``"host"`` (``__array_interface__``, i.e. NumPy arrays).
    """

    name: str = "?"
    array_space: str = "device"

    def array_types(self) -> tuple[type, ...]:
        """Array classes taken as they are on the fast path (after a dtype and contiguity
        check). The first one is used. Empty when none can exist in this process."""
        return ()

    def scalar_converter(self, dtype: Any) -> Callable[[Any], Any]:
        """A callable turning an in-range Python number into what :meth:`launch` takes for a
        scalar parameter of ``dtype``. Used on the fast path only (Python ``int`` for integer
        parameters, ``float`` for floating ones, ``bool`` for ``bool``); the slow path always
        passes NumPy scalars. The default is ``dtype.type`` (a NumPy scalar)."""
        return dtype.type

    def adopt_array(self, array: Any) -> Any:
        """Turn an array that passed the protocol checks into what :meth:`launch` takes, without
        copying. The default returns it unchanged."""
        return array

    def limits(self) -> CudaLimits:
        """The current device's launch limits."""
        return DEFAULT_LIMITS

    def prepare(self, program: Program) -> Callable[..., None]:
        """A callable ``(grid, block, args, shared_mem, stream)`` that launches ``program``.

        ``program`` is the kernel's frozen :class:`~cunumpy._engines._base.Program` (name,
        source given to the compiler, options, signature...); an engine never sees the
        ``CudaKernel`` itself. Called once per program and engine (``recompile()`` makes a new
        program); the default calls :meth:`launch`. Engines override it to hoist per-kernel
        work (compiled-function lookup) out of the launch.
        """

        def go(grid: tuple, block: tuple, args: tuple, shared_mem: int, stream: Any) -> None:
            self.launch(program, args, grid, block, shared_mem, stream)

        return go

    def launch(
        self,
        program: Program,
        args: tuple,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: Any,
    ) -> None:
        """Run one launch of ``program`` (compiling it first when needed)."""
        raise NotImplementedError(f"engine {self.name!r} does not implement launch")

    def synchronize(self, stream: Any) -> None:
        """Wait for the work queued on ``stream`` (debug mode, ``check_finite``)."""

    def launch_errors(self) -> tuple[type[BaseException], ...]:
        """Exception types the prepared launch raises when the launch itself is refused; the
        front end re-raises them as :class:`CudaLaunchError` naming kernel, grid and block."""
        return ()

    def contiguity_attribute(self) -> str:
        """Attribute path, on an instance of ``array_types()[0]``, that is true for a
        C-contiguous array (used by the generated fast path)."""
        return "flags.c_contiguous"

    def reserve_shared_mem(self, program: Program, nbytes: int) -> None:
        """Called before a launch asking for ``nbytes`` (> 0) of dynamic shared memory, which
        is within :meth:`limits`; the CuPy engine opts in above 48 KiB."""

    def sync_errors(self) -> tuple[type[BaseException], ...]:
        """Exception types :meth:`synchronize` raises when a kernel failed on the device; the
        front end re-raises them as :class:`CudaLaunchError` in debug mode."""
        return ()

    def nonfinite(self, array: Any) -> tuple[int, int]:
        """``(count, first flat index)`` of NaN/inf elements of ``array``; ``(0, -1)`` if none."""
        import numpy as np

        bad = ~np.isfinite(np.asarray(array).reshape(-1))
        count = int(bad.sum())
        return count, (int(bad.argmax()) if count else -1)

    def texture_handle(self, texture: Any) -> int:
        """The ``cudaTextureObject_t`` value of a :class:`~cunumpy.kernels.Texture` for this
        engine (made once per texture and kept with it)."""
        raise NotImplementedError(
            f"the {self.name} CUDA engine has no texture objects; run the kernel on 'cupy' or "
            "the emulator"
        )

    def __repr__(self) -> str:
        return f"<CUDA engine {self.name!r} ({self.array_space} arrays)>"
