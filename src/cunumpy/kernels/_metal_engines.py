"""The engines that run MetalKernel launches, behind one seam.

An engine owns "device" arrays and the copies to and from them; the front end
(:mod:`cunumpy.kernels.metal`) validates arguments, builds the signature and records transfers,
and never knows which engine runs.

``mlx``
    A real Apple GPU through ``mx.fast.metal_kernel``. Device arrays are ``mlx.core.array``.
``emulator`` (spelled ``emu-metal`` in messages)
    The CPU emulator (:mod:`cunumpy.emulation.metal`). Device arrays are
    :class:`EmulatedDeviceArray`, a NumPy array the emulator treats as GPU memory.
``cuda``
    An NVIDIA GPU: the kernel is translated to CUDA and compiled with NVRTC through CuPy
    (:mod:`cunumpy.kernels._metal_cuda`). Device arrays are ``cupy.ndarray``.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from cunumpy import config, profiling

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
    """What the MetalKernel front end needs from an engine."""

    name: str
    """Spelling in messages and test ids: ``mlx``, ``emu-metal`` or ``cuda``."""

    def check_available(self) -> None:
        """Raise ImportError/RuntimeError saying why this engine cannot launch here."""

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

    def launch(
        self,
        kernel: Any,
        signature: Any,
        inputs: Sequence[Any],
        output_shapes: Sequence[tuple[int, ...]],
        output_dtypes: Sequence[np.dtype],
        grid: tuple[int, int, int],
        threadgroup: tuple[int, int, int],
        template: Sequence[tuple[str, Any]],
        *,
        init_value: Any = None,
        math_mode: str = "safe",
    ) -> list[Any]:
        """Run one launch; return the outputs as device arrays.

        ``init_value`` fills the outputs first (None: uninitialised); ``math_mode`` is MLX's
        ``compile_options["math_mode"]`` (``safe``, ``relaxed`` or ``fast``).
        """


class EmulatorEngine:
    """Runs MetalKernel launches on the CPU emulator."""

    name = "emu-metal"
    host_resident = True
    """Device memory is host memory: the front end passes arrays of the right layout and dtype
    in place (:meth:`borrow`) and lets the launch write NumPy outputs directly."""

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

    def launch(self, kernel, signature, inputs, output_shapes, output_dtypes, grid, threadgroup,
               template, *, init_value=None, math_mode="safe",
               into=None) -> list[EmulatedDeviceArray]:
        from cunumpy.emulation.metal import run_metal

        if into is not None:  # the caller's NumPy outputs, written in place
            outputs = list(into)
        else:
            outputs = [np.empty(shape, dtype=dtype) for shape, dtype in zip(output_shapes,
                                                                             output_dtypes)]
        if init_value is not None:
            for o in outputs:
                o.fill(init_value)
        run_metal(signature, [a._data for a in inputs], outputs, grid, threadgroup,
                  init_value=init_value, options=kernel.emulator_options, math_mode=math_mode)
        return [EmulatedDeviceArray(o) for o in outputs]


class MLXEngine:
    """Runs MetalKernel launches on an Apple GPU through MLX."""

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

    def launch(self, kernel, signature, inputs, output_shapes, output_dtypes, grid, threadgroup,
               template, *, init_value=None, math_mode="safe") -> list[Any]:
        from cunumpy.kernels._metal_mlx import launch_mlx

        return launch_mlx(
            signature,
            signature.source,
            kernel.input_names,
            kernel.output_names,
            kernel.header,
            list(inputs),
            [tuple(s) for s in output_shapes],
            list(output_dtypes),
            grid,
            threadgroup,
            template=list(template),
            init_value=init_value,
            atomic_outputs=kernel.atomic_outputs,
            ensure_row_contiguous=kernel.ensure_row_contiguous,
            compile_options=() if math_mode == "safe" else (("math_mode", math_mode),),
        )


@functools.cache
def _engine(name: str) -> MetalEngine:
    if name == "mlx":
        return MLXEngine()
    if name == "cuda":
        from cunumpy.kernels._metal_cuda import CudaMetalEngine

        return CudaMetalEngine()
    if name == "emulator":
        return EmulatorEngine()
    raise ValueError(f"unknown Metal engine {name!r}; valid engines are mlx, emulator, cuda")


_warned_auto = [False]


def resolve_metal_engine(name: str | None = None) -> str:
    """``"mlx"``, ``"emulator"`` or ``"cuda"``: the engine ``name`` stands for here.

    ``None`` reads ``CUNUMPY_METAL_ENGINE``; ``"auto"`` (the default) is ``"mlx"`` where MLX
    reports a working Metal GPU and ``"emulator"`` elsewhere (a launch then warns once, see
    :func:`warn_auto_fallback`). ``"emu-metal"`` is ``"emulator"``.
    """
    if name is None:
        name = config.metal_engine()
    if name == "emu-metal":
        name = "emulator"
    if name not in config.METAL_ENGINES:
        raise ValueError(
            f"unknown Metal engine {name!r}; valid engines are {', '.join(config.METAL_ENGINES)}"
        )
    if name != "auto":
        return name
    from cunumpy.kernels._availability import metal_status

    return "mlx" if metal_status()[0] else "emulator"


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
    """The engine called ``name`` (``"auto"``, ``"mlx"``, ``"emulator"`` or ``"cuda"``).

    ``None`` reads ``CUNUMPY_METAL_ENGINE`` (see :func:`cunumpy.config.metal_engine`); ``auto``
    is resolved by :func:`resolve_metal_engine`.
    """
    return _engine(resolve_metal_engine(name))
