"""The ``emu-metal`` engine (setting ``emulator``): MetalKernel launches on the CPU emulator.

The adapter between the Metal seam (:mod:`cunumpy._engines._metal`) and the emulator
(:func:`cunumpy.emulation.metal.launch_metal`). Device memory is host memory: a device array is
an :class:`EmulatedDeviceArray`, a NumPy array the emulator treats as GPU memory, and the front
end hands inputs of the right layout and outputs (``MetalLaunch.into``) over in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cunumpy import profiling
from cunumpy._engines._base import Program
from cunumpy._engines._library import LibraryLaunch
from cunumpy._engines._metal import MetalEngineBase, MetalLaunch

__all__ = ["EmuMetalEngine", "EmulatedDeviceArray"]


class EmulatedDeviceArray:
    """An array in the Metal emulator's "device memory".

    Returned by resident-mode launches on the emulator engine and accepted by the next launch
    without a copy, as an ``mlx.core.array`` is on the real engine. Convert it back with
    :func:`cunumpy.to_numpy` (or ``numpy.asarray``), which copies once and records a
    ``to_host`` transfer.
    """

    __slots__ = ("_data",)
    _cunumpy_device_array = True

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def to_numpy(self) -> np.ndarray:
        """Copy to a new NumPy array (recorded as ``to_host``)."""
        host = self._data.copy()
        if profiling._active:
            profiling._record(
                "to_host", host.nbytes, f"emu-metal array {host.dtype.name}{list(host.shape)}"
            )
        return host

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        host = self.to_numpy()
        return host if dtype is None else host.astype(dtype, copy=False)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"EmulatedDeviceArray({self.dtype.name}{list(self.shape)})"


class EmuMetalEngine(MetalEngineBase):
    """Runs MetalKernel launches on the CPU emulator (``emu-metal``)."""

    name = "emu-metal"
    array_space = "host"
    host_resident = True
    """Device memory is host memory: the front end passes arrays of the right layout and dtype
    in place (:meth:`borrow`) and lets the launch write NumPy outputs directly (given as
    ``MetalLaunch.into``)."""

    def check_available(self) -> None:
        from cunumpy.emulation import find_compiler

        find_compiler()  # raises CompilerNotFoundError (a RuntimeError) saying what to install

    def is_device_array(self, a: Any) -> bool:
        return isinstance(a, EmulatedDeviceArray)

    def describe(self, a: EmulatedDeviceArray) -> tuple[np.dtype, tuple[int, ...]]:
        return a.dtype, a.shape

    def to_device(self, host: np.ndarray, dtype: np.dtype, contiguous: bool) -> EmulatedDeviceArray:
        # order="K" keeps a transposed layout when the kernel reads strides itself.
        return EmulatedDeviceArray(np.array(host, dtype=dtype, order="C" if contiguous else "K"))

    def borrow(self, host: np.ndarray) -> EmulatedDeviceArray:
        """``host`` as a launch input, without a copy (the kernel reads it, never writes it)."""
        return EmulatedDeviceArray(host)

    def host_view(self, device: EmulatedDeviceArray) -> np.ndarray:
        return device._data

    def buffer_info(self, a: EmulatedDeviceArray) -> tuple[np.dtype, int, bool]:
        return a.dtype, a.nbytes, bool(a._data.flags.c_contiguous)

    def contiguous(self, device: EmulatedDeviceArray) -> EmulatedDeviceArray:
        if device._data.flags.c_contiguous:
            return device
        return EmulatedDeviceArray(np.ascontiguousarray(device._data))

    def _prepare(self, program: Program) -> Callable[[MetalLaunch], list[EmulatedDeviceArray]]:
        from cunumpy.emulation.metal import launch_metal

        signature = program.signature
        options = program.setting("emulator_options")
        math_mode = program.setting("math_mode")

        def go(launch: MetalLaunch) -> list[EmulatedDeviceArray]:
            init_value = launch.init_value
            if launch.into is not None:  # the caller's NumPy outputs, written in place
                outputs = list(launch.into)
            else:
                outputs = [np.empty(shape, dtype=dtype)
                           for shape, dtype in zip(launch.output_shapes, launch.output_dtypes)]
            if init_value is not None:
                for o in outputs:
                    o.fill(init_value)
            launch_metal(signature, [a._data for a in launch.inputs], outputs, launch.grid,
                         launch.threadgroup, init_value=init_value, options=options,
                         math_mode=math_mode)
            return [EmulatedDeviceArray(o) for o in outputs]

        return go

    def prepare_library(self, program: Program) -> Callable[[LibraryLaunch], None]:
        """The launch callable of one kernel of a whole library (:class:`~cunumpy.kernels.MetalLibrary`).

        Buffers are NumPy arrays, written in place. Before the first launch the sizes the compiled
        kernel declares (``sizeof`` of each pointee, referenced or by-value type) are read from the
        library, and every buffer is checked against them: a pointer's buffer must hold whole
        values, a reference's at least one.
        """
        from cunumpy._engines._library import check_buffer_sizes, parsed
        from cunumpy.emulation.metal_library import launch_library, value_sizes

        lib = parsed(program.source)
        kernel = program.signature
        constants = dict(program.template)
        files = dict(program.setting("files"))
        options = program.setting("emulator_options")
        math_mode = program.setting("math_mode")
        tag = f"[emu-metal kernel '{kernel.host_name}']"
        checked: list[Any] = []

        def go(launch: LibraryLaunch) -> None:
            buffers = {i: a._data if isinstance(a, EmulatedDeviceArray) else a
                       for i, a in launch.buffers}
            if not checked:
                checked.append(value_sizes(lib, kernel, constants, files, options, math_mode))
            check_buffer_sizes(tag, kernel, checked[0], {i: a.nbytes for i, a in buffers.items()})
            launch_library(lib, kernel, constants, files, buffers, dict(launch.threadgroup_memory),
                           launch.grid, launch.threadgroup, options=options, math_mode=math_mode)

        return go
