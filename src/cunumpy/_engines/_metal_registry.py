"""The engines that run MetalKernel launches, behind one seam.

An engine owns "device" arrays and the copies to and from them; the front end
(:mod:`cunumpy.kernels.metal`) validates arguments, builds the signature and records transfers,
and never knows which engine runs.

``mlx``
    A real Apple GPU through ``mx.fast.metal_kernel``. Device arrays are ``mlx.core.array``.
``emu-metal`` (setting ``emulator``)
    The CPU emulator (:mod:`cunumpy.emulation.metal`). Device arrays are
    :class:`EmulatedDeviceArray`, a NumPy array the emulator treats as GPU memory.
``metal-cuda`` (setting ``cuda``)
    An NVIDIA GPU: the kernel is translated to CUDA and compiled with NVRTC through CuPy
    (:mod:`cunumpy.kernels._metal_cuda`). Device arrays are ``cupy.ndarray``.

The names are the engine table's (:mod:`cunumpy._engines._table`). Every engine gets the
kernel's frozen :class:`~cunumpy._engines._base.Program` and a
:class:`~cunumpy._engines._metal.MetalLaunch` per call (:mod:`cunumpy._engines._metal`),
never the ``MetalKernel``.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from cunumpy import config, profiling
from cunumpy._engines._base import Program
from cunumpy._engines._metal import MetalEngineBase, MetalLaunch, MetalLimits
from cunumpy._engines._table import canonical_name, engine_names

__all__ = [
    "EmulatedDeviceArray",
    "MetalEngine",
    "get_metal_engine",
    "resolve_metal_engine",
    "warn_auto_fallback",
]


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


class MetalEngine(Protocol):
    """What the MetalKernel front end needs from an engine (see :mod:`cunumpy._engines._metal`)."""

    name: str
    """The engine table's name: ``mlx``, ``emu-metal`` or ``metal-cuda``."""
    device_out: bool
    """True when device arrays given as ``out=`` are written in place (``metal-cuda``)."""

    def check_available(self) -> None:
        """Raise ImportError/RuntimeError saying why this engine cannot launch here."""

    def limits(self) -> MetalLimits:
        """The launch limits the front end checks a call against."""

    def is_device_array(self, a: Any) -> bool:
        """True for this engine's device arrays (taken by a launch with no copy)."""

    def describe(self, a: Any) -> tuple[np.dtype, tuple[int, ...]]:
        """NumPy dtype and shape of one of this engine's device arrays."""

    def to_device(self, host: np.ndarray, dtype: np.dtype, contiguous: bool) -> Any:
        """Copy a host array to the device (exactly one copy, converting to ``dtype``)."""

    def host_view(self, device: Any) -> np.ndarray:
        """A NumPy view of a device array's data (no copy where the engine allows)."""

    def contiguous(self, device: Any) -> Any:
        """The device array made row-contiguous on the device (no host transfer)."""

    def prepare(self, program: Program) -> Callable[[MetalLaunch], list[Any]]:
        """The launch callable of ``program`` (cached by the program): it takes a
        :class:`~cunumpy._engines._metal.MetalLaunch` and returns the outputs as device
        arrays."""


class EmulatorEngine(MetalEngineBase):
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


class MLXEngine(MetalEngineBase):
    """Runs MetalKernel launches on an Apple GPU through MLX (``mlx``)."""

    name = "mlx"

    @staticmethod
    def _mx() -> Any:
        try:
            import mlx.core as mx
        except ImportError as exc:
            raise ImportError(
                "MetalKernel's mlx engine needs MLX: pip install 'cunumpy[metal]' on an Apple "
                "silicon Mac, or run on the CPU emulator with CUNUMPY_METAL_ENGINE=emulator"
            ) from exc
        return mx

    def check_available(self) -> None:
        self._mx()
        from cunumpy.kernels._availability import metal_status

        ok, reason, _ = metal_status()
        if not ok:
            raise RuntimeError(f"MetalKernel cannot launch on the mlx engine: {reason}")

    def is_device_array(self, a: Any) -> bool:
        mx = sys.modules.get("mlx.core")
        return mx is not None and isinstance(a, mx.array)

    def describe(self, a: Any) -> tuple[np.dtype, tuple[int, ...]]:
        from cunumpy.kernels._metal_mlx import numpy_dtype

        return numpy_dtype(a.dtype), tuple(a.shape)

    def to_device(self, host: np.ndarray, dtype: np.dtype, contiguous: bool) -> Any:
        from cunumpy.kernels._metal_mlx import from_numpy

        self._mx()
        return from_numpy(host, dtype)

    def host_view(self, device: Any) -> np.ndarray:
        from cunumpy.kernels._metal_mlx import to_numpy

        return to_numpy(device)

    def contiguous(self, device: Any) -> Any:
        return device  # MLX makes inputs row-contiguous itself when the kernel asks for it

    def _prepare(self, program: Program) -> Callable[[MetalLaunch], list[Any]]:
        from cunumpy.kernels._metal_mlx import launch_mlx

        signature = program.signature
        inputs, outputs = program.setting("inputs"), program.setting("outputs")
        atomic = program.setting("atomic_outputs")
        contiguous = program.setting("ensure_row_contiguous")
        math_mode = program.setting("math_mode")
        options = () if math_mode == "safe" else (("math_mode", math_mode),)

        def go(launch: MetalLaunch) -> list[Any]:
            return launch_mlx(
                signature, signature.source, inputs, outputs, signature.header,
                list(launch.inputs), [tuple(s) for s in launch.output_shapes],
                list(launch.output_dtypes), launch.grid, launch.threadgroup,
                template=list(program.template), init_value=launch.init_value,
                atomic_outputs=atomic, ensure_row_contiguous=contiguous,
                compile_options=options,
            )

        return go


@functools.cache
def _engine(name: str) -> MetalEngine:
    """The one engine object of each engine table name."""
    if name == "mlx":
        return MLXEngine()
    if name == "metal-cuda":
        from cunumpy.kernels._metal_cuda import CudaMetalEngine

        return CudaMetalEngine()
    if name == "emu-metal":
        return EmulatorEngine()
    raise ValueError(f"unknown Metal engine {name!r}; engines are {', '.join(_NAMES)}")


_NAMES = engine_names("metal")
_warned_auto = [False]
_by_setting: dict[str, MetalEngine] = {}
"""Engine objects by the (non-``auto``) setting or name that selected them: a call's fast path."""


def resolve_metal_engine(name: str | None = None) -> str:
    """The engine table's name (``mlx``, ``emu-metal``, ``metal-cuda``) that ``name`` selects.

    ``None`` reads ``CUNUMPY_METAL_ENGINE``. Accepted: the table's names and the settings
    ``auto``, ``emulator`` (``emu-metal``) and ``cuda`` (``metal-cuda``). ``auto`` (the default)
    is ``mlx`` where MLX reports a working Metal GPU and ``emu-metal`` elsewhere (a launch then
    warns once, see :func:`warn_auto_fallback`).
    """
    if name is None:
        name = config.metal_engine()
    if name == "auto":
        from cunumpy.kernels._availability import metal_status

        return "mlx" if metal_status()[0] else "emu-metal"
    try:
        return canonical_name("metal", name)
    except ValueError:
        raise ValueError(
            f"unknown Metal engine {name!r}; valid engines are "
            f"{', '.join(config.METAL_ENGINES)} (emulator is emu-metal, cuda is metal-cuda)"
        ) from None


def warn_auto_fallback(requested: str | None, stacklevel: int = 4) -> None:
    """Warn once per process that ``auto`` fell back to the emulator (called at a launch)."""
    if _warned_auto[0]:
        return
    name = config.metal_engine() if requested is None else requested
    if name != "auto":
        return
    from cunumpy.kernels._availability import metal_status

    ok, reason, _ = metal_status()
    if ok:
        return
    _warned_auto[0] = True
    from cunumpy.emulation.errors import EmulatorWarning

    warnings.warn(
        f"MetalKernel runs on the CPU emulator (emu-metal): {reason.split(';')[0]}. Set "
        "CUNUMPY_METAL_ENGINE=emulator to silence this, or =mlx to require a Metal GPU",
        EmulatorWarning,
        stacklevel=stacklevel,
    )


def get_metal_engine(name: str | None = None) -> MetalEngine:
    """The engine ``name`` selects (an engine table name or a ``CUNUMPY_METAL_ENGINE`` value).

    ``None`` reads ``CUNUMPY_METAL_ENGINE`` (see :func:`cunumpy.config.metal_engine`); ``auto``
    is resolved by :func:`resolve_metal_engine` at every call.
    """
    if name is None:
        name = config.metal_engine()
    eng = _by_setting.get(name)  # type: ignore[arg-type]
    if eng is None:
        eng = _engine(resolve_metal_engine(name))
        if name != "auto" and isinstance(name, str):
            _by_setting[name] = eng
    return eng
