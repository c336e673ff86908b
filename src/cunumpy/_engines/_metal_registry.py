"""The engines that run MetalKernel launches, by the engine table's name or a setting.

An engine owns "device" arrays and the copies to and from them; the front end
(:mod:`cunumpy.kernels.metal`) validates arguments, builds the signature and records transfers,
and never knows which engine runs.

``mlx`` (:mod:`cunumpy._engines.mlx`)
    A real Apple GPU through ``mx.fast.metal_kernel``. Device arrays are ``mlx.core.array``.
``emu-metal``, setting ``emulator`` (:mod:`cunumpy._engines.emu_metal`)
    The CPU emulator (:mod:`cunumpy.emulation.metal`). Device arrays are
    :class:`~cunumpy._engines.emu_metal.EmulatedDeviceArray`.
``metal-cuda``, setting ``cuda`` (:mod:`cunumpy._engines.metal_cuda`)
    An NVIDIA GPU: the kernel is translated to CUDA and compiled with NVRTC through CuPy.
    Device arrays are ``cupy.ndarray``.

Every engine gets the kernel's frozen :class:`~cunumpy._engines._base.Program` and a
:class:`~cunumpy._engines._metal.MetalLaunch` per call (:mod:`cunumpy._engines._metal`),
never the ``MetalKernel``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from cunumpy import config
from cunumpy._engines._base import Program
from cunumpy._engines._metal import MetalLaunch, MetalLimits
from cunumpy._engines._status import mlx_status
from cunumpy._engines._table import canonical_name, engine_names

__all__ = ["MetalEngine", "get_metal_engine", "resolve_metal_engine", "warn_auto_fallback"]


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


@functools.cache
def _engine(name: str) -> MetalEngine:
    """The one engine object of each engine table name."""
    if name == "mlx":
        from cunumpy._engines.mlx import MLXEngine

        return MLXEngine()
    if name == "metal-cuda":
        from cunumpy._engines.metal_cuda import CudaMetalEngine

        return CudaMetalEngine()
    if name == "emu-metal":
        from cunumpy._engines.emu_metal import EmuMetalEngine

        return EmuMetalEngine()
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
        return "mlx" if mlx_status()[0] else "emu-metal"
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
    ok, reason, _ = mlx_status()
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
