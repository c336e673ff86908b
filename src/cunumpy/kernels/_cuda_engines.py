"""The seam between the :class:`~cunumpy.kernels.CudaKernel` front end and what runs a launch.

The front end parses the signature, checks every argument and computes the launch geometry; an
**engine** compiles the kernel and runs it. Engines are explicit objects, looked up by name, so a
real GPU run and an emulated run can share one process:

- ``"cupy"``: :class:`~cunumpy.kernels._cuda_cupy.CupyEngine`, an NVIDIA GPU through CuPy; it
  takes device arrays (objects exposing ``__cuda_array_interface__``).
- ``"emulator"``: the CPU emulator (engine name ``"emu-cuda"``), registered by
  :mod:`cunumpy.emulation.cuda` through :func:`register_cuda_engine`; it takes NumPy arrays.

Writing an engine
-----------------
Subclass :class:`CudaEngine`, set :attr:`~CudaEngine.name` and :attr:`~CudaEngine.array_space`,
implement :meth:`~CudaEngine.launch`, and register a zero-argument factory::

    register_cuda_engine("emulator", EmuCudaEngine)

The front end calls, once per kernel and engine (at the kernel's first launch there):
:meth:`~CudaEngine.array_types` (the class accepted on the fast path after an exact dtype and
contiguity test, which reads :meth:`~CudaEngine.contiguity_attribute`),
:meth:`~CudaEngine.scalar_converter` per scalar parameter, :meth:`~CudaEngine.launch_errors`
and :meth:`~CudaEngine.prepare`. At every launch it calls the callable ``prepare`` returned with
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

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cunumpy import config

if TYPE_CHECKING:  # pragma: no cover
    from cunumpy.kernels.cuda import CudaKernel

__all__ = [
    "DEFAULT_LIMITS",
    "CudaCompileError",
    "CudaEngine",
    "CudaLaunchError",
    "CudaLimits",
    "cuda_engine_names",
    "default_cuda_engine",
    "get_cuda_engine",
    "register_cuda_engine",
]


class CudaCompileError(RuntimeError):
    """A CUDA kernel failed to compile. ``log`` holds the compiler's output, ``options`` the
    options used, ``source`` the text compiled."""

    def __init__(
        self, message: str, *, log: str = "", options: tuple[str, ...] = (), source: str = ""
    ) -> None:
        super().__init__(message)
        self.log = log
        self.options = options
        self.source = source


class CudaLaunchError(RuntimeError):
    """A launch (or, in debug mode, the kernel's execution) failed; the message names the kernel,
    the grid, the block and the dynamic shared memory."""


@dataclass(frozen=True)
class CudaLimits:
    """Launch limits of one device (CUDA's names in parentheses).

    Attributes
    ----------
    max_threads_per_block : int
        Threads in one block (``maxThreadsPerBlock``).
    max_block : tuple of int
        Block extent per dimension (``maxThreadsDim``).
    max_grid : tuple of int
        Grid extent per dimension, in blocks (``maxGridSize``).
    max_shared_mem : int
        Dynamic shared memory per block without opting in (``sharedMemPerBlock``).
    max_shared_mem_optin : int
        Dynamic shared memory per block after opting in (``sharedMemPerBlockOptin``); the CuPy
        engine opts in automatically when a launch asks for more than ``max_shared_mem``.
    """

    max_threads_per_block: int
    max_block: tuple[int, int, int]
    max_grid: tuple[int, int, int]
    max_shared_mem: int
    max_shared_mem_optin: int


DEFAULT_LIMITS = CudaLimits(
    max_threads_per_block=1024,
    max_block=(1024, 1024, 64),
    max_grid=(2**31 - 1, 65535, 65535),
    max_shared_mem=48 * 1024,
    max_shared_mem_optin=227 * 1024,
)
"""The limits of a compute-capability 9.0 device (H100/H200); the emulator's defaults."""


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

    def prepare(self, kernel: CudaKernel) -> Callable[..., None]:
        """A callable ``(grid, block, args, shared_mem, stream)`` that launches ``kernel``.

        Called once per kernel and engine; the default calls :meth:`launch`. Engines override it
        to hoist per-kernel work (compiled-function lookup) out of the launch.
        """

        def go(grid: tuple, block: tuple, args: tuple, shared_mem: int, stream: Any) -> None:
            self.launch(kernel, args, grid, block, shared_mem, stream)

        return go

    def launch(
        self,
        kernel: CudaKernel,
        args: tuple,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: Any,
    ) -> None:
        """Run one launch of ``kernel`` (compiling it first when needed)."""
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

    def reserve_shared_mem(self, kernel: CudaKernel, nbytes: int) -> None:
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

    def __repr__(self) -> str:
        return f"<CUDA engine {self.name!r} ({self.array_space} arrays)>"


_factories: dict[str, Callable[[], CudaEngine]] = {}
_engines: dict[str, CudaEngine] = {}
_lock = threading.Lock()
_PROVIDERS = {"emulator": "cunumpy.emulation.cuda"}
"""Modules imported on first lookup of a name nobody has registered yet."""
_ALIASES = {"emu-cuda": "emulator"}


def register_cuda_engine(
    name: str, factory: Callable[[], CudaEngine], *, replace: bool = False
) -> None:
    """Make ``factory()`` the engine that :func:`get_cuda_engine` returns for ``name``.

    Parameters
    ----------
    name : str
        The lookup name (``"cupy"``, ``"emulator"``, or a new one).
    factory : callable
        Zero-argument callable returning a :class:`CudaEngine`; called once, at first lookup.
    replace : bool, default False
        Allow replacing an existing registration (the old engine object is dropped).
    """
    if not callable(factory):
        raise TypeError(f"factory for CUDA engine {name!r} must be callable, got {factory!r}")
    with _lock:
        if name in _factories and not replace:
            raise ValueError(
                f"a CUDA engine named {name!r} is already registered; pass replace=True"
            )
        _factories[name] = factory
        _engines.pop(name, None)
    _default_cache[0] = _UNSET


def unregister_cuda_engine(name: str) -> None:
    """Remove a registration (used by tests that register temporary engines)."""
    with _lock:
        _factories.pop(name, None)
        _engines.pop(name, None)
    _default_cache[0] = _UNSET


def cuda_engine_names() -> tuple[str, ...]:
    """Registered lookup names (``"emulator"`` appears once its module has registered it)."""
    return tuple(_factories)


def get_cuda_engine(name: str | CudaEngine | None = None) -> CudaEngine:
    """The engine object for ``name``; ``None`` means :func:`cunumpy.config.cuda_engine`.

    ``"emu-cuda"`` is accepted for ``"emulator"``. An engine object is returned as it is.

    Raises
    ------
    ValueError
        Unknown name.
    RuntimeError
        ``"emulator"`` was asked for but its module is missing or did not register it.
    """
    if isinstance(name, CudaEngine):
        return name
    if name is None:
        name = config.cuda_engine()
    key = _ALIASES.get(name, name)
    engine = _engines.get(key)
    if engine is not None:
        return engine
    with _lock:
        engine = _engines.get(key)
        if engine is not None:
            return engine
        factory = _factories.get(key)
    if factory is None and key in _PROVIDERS:
        import importlib

        try:
            importlib.import_module(_PROVIDERS[key])
        except ImportError as exc:
            raise RuntimeError(
                f"the CUDA engine {key!r} is not available: its module {_PROVIDERS[key]} could "
                f"not be imported ({exc}); use CUNUMPY_CUDA_ENGINE=cupy on a machine with an "
                "NVIDIA GPU"
            ) from exc
        factory = _factories.get(key)
        if factory is None:
            raise RuntimeError(
                f"the CUDA engine {key!r} is not available: {_PROVIDERS[key]} did not register it"
            )
    if factory is None:
        raise ValueError(
            f"unknown CUDA engine {name!r}; known engines: "
            f"{', '.join(sorted(set(_factories) | set(_PROVIDERS)))}"
        )
    engine = factory()
    if not isinstance(engine, CudaEngine):
        raise TypeError(
            f"the factory for CUDA engine {key!r} returned {engine!r}, not a CudaEngine"
        )
    with _lock:
        engine = _engines.setdefault(key, engine)
    return engine


# The default engine is read from CUNUMPY_CUDA_ENGINE at every launch, through config's fast
# reader (the raw value), and looked up again only when that value changes.
_UNSET = object()
_default_cache: list[Any] = [_UNSET, None]
_read_env = config.raw_reader("CUNUMPY_CUDA_ENGINE")


def env_value() -> Any:
    """The raw value of ``CUNUMPY_CUDA_ENGINE`` now (compared, never interpreted)."""
    return _read_env()


def env_getter() -> Callable[[], Any]:
    """A fast zero-argument callable returning :func:`env_value`."""
    return _read_env


def default_cuda_engine() -> CudaEngine:
    """The engine named by ``CUNUMPY_CUDA_ENGINE`` now (``cupy`` when unset)."""
    raw = _read_env()
    cache = _default_cache
    if raw == cache[0] and cache[1] is not None:
        return cache[1]
    engine = get_cuda_engine(config.cuda_engine())
    cache[0], cache[1] = raw, engine
    return engine


def _register_builtin() -> None:
    def cupy_factory() -> CudaEngine:
        from cunumpy.kernels._cuda_cupy import CupyEngine

        return CupyEngine()

    _factories.setdefault("cupy", cupy_factory)


_register_builtin()
