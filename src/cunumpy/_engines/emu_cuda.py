"""The ``emu-cuda`` engine: CudaKernel launches on the CPU emulator (:mod:`cunumpy.emulation.cuda`).

The engine gets the kernel's frozen :class:`~cunumpy._engines._base.Program` and turns it into
the emulator's :class:`~cunumpy.emulation.cuda.CudaProgram` once per program; the front end has
already checked the arguments (NumPy arrays of exactly the parameter's dtype, C-contiguous;
scalars range-checked) and the geometry against :meth:`EmuCudaEngine.limits`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cunumpy._cuda_common import DEFAULT_LIMITS, CudaLimits
from cunumpy._engines._base import Program
from cunumpy._engines._cuda import CudaEngine
from cunumpy.emulation.cuda import CudaProgram, program_for, run_cuda

__all__ = ["EmuCudaEngine"]

_MAX_PROGRAMS = 4096
"""Programs remembered per engine (each is a few hundred bytes of metadata)."""


class EmuCudaEngine(CudaEngine):
    """Runs :class:`~cunumpy.kernels.CudaKernel` launches on the CPU (``emu-cuda``).

    Takes NumPy arrays for pointer parameters (C-contiguous, exactly the dtype; never copied).
    Options (checks, random order, isolation) come from the environment at each launch:
    ``CUNUMPY_EMULATOR_CHECKS``, ``CUNUMPY_EMULATOR_ORDER``, ``CUNUMPY_EMULATOR_ISOLATED``;
    :func:`~cunumpy.emulation.emulate_cuda_kernel` takes them explicitly.
    """

    name = "emu-cuda"
    dialect = "cuda"
    array_space = "host"

    def __init__(self) -> None:
        self._programs: dict[Program, CudaProgram] = {}

    def array_types(self) -> tuple[type, ...]:
        return (np.ndarray,)

    def adopt_array(self, array: Any) -> Any:
        return array if isinstance(array, np.ndarray) else np.asarray(array)

    def limits(self) -> CudaLimits:
        return DEFAULT_LIMITS

    def texture_handle(self, texture: Any) -> int:
        """The address of the emulator's descriptor of ``texture`` (which keeps it alive)."""
        from cunumpy.emulation._cuda_texture import texture_descriptor

        def make() -> Any:
            return texture_descriptor(
                texture.data, texture.shape, texture.ndim, texture.channels,
                filter=texture.filter, address=texture.address,
                normalized=texture.normalized_coords, read_mode=texture.read_mode,
                border=texture.border, memory=texture.memory,
            )

        record = texture.handle(self.name, make)
        return int(record.__array_interface__["data"][0])

    def program(self, program: Program) -> CudaProgram:
        """The emulator's :class:`~cunumpy.emulation.cuda.CudaProgram` of ``program``."""
        prog = self._programs.get(program)
        if prog is None:
            prog = program_for(program)
            if len(self._programs) >= _MAX_PROGRAMS:
                self._programs.clear()
            self._programs[program] = prog
        return prog

    def prepare(self, program: Program):
        prog = self.program(program)

        def go(grid: tuple, block: tuple, args: tuple, shared_mem: int, stream: Any) -> None:
            run_cuda(prog, args, grid, block, shared_mem)

        return go

    def launch(self, program: Program, args, grid, block, shared_mem, stream) -> None:
        run_cuda(self.program(program), args, grid, block, shared_mem)
