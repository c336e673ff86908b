"""Run CUDA C and Metal Shading Language kernels on the CPU, compiled as C++, with checks.

Each kernel variant becomes one C++ translation unit (the runtime headers in ``runtime/``, the
kernel's header and body) compiled into a shared library, cached on disk
(:func:`clear_cache`; root: ``CUNUMPY_CACHE_DIR`` or the user cache directory) and kept loaded
for the rest of the process.

- :mod:`cunumpy.emulation.metal`: the Metal engine (``run_metal``), what it checks and what not.
- :mod:`cunumpy.emulation.cuda`: the CUDA engine (``emu-cuda``; ``CUNUMPY_CUDA_ENGINE=emulator``),
  what it checks and what not; :func:`emulate_cuda_kernel` runs one CudaKernel launch on it.
- :class:`EmulatorOptions`: checks, random threadgroup order, isolated (child-process) launches;
  defaults from ``CUNUMPY_EMULATOR_CHECKS``, ``CUNUMPY_EMULATOR_ORDER``,
  ``CUNUMPY_EMULATOR_ISOLATED``; what undefined behaviour does (``CUNUMPY_EMULATOR_UNDEFINED``).
- :mod:`cunumpy.emulation.errors`: the exceptions (all subclasses of :class:`EmulationError`).

Importing this package neither runs nor looks for a compiler; the first launch does.
"""

from __future__ import annotations

from cunumpy.emulation._cache import CacheCorruptWarning, clear_cache
from cunumpy.emulation._options import EmulatorOptions
from cunumpy.emulation._toolchain import (
    Compiler,
    CompilerNotFoundError,
    find_compiler,
    toolchain_info,
)
from cunumpy.emulation.errors import (
    BarrierDivergenceError,
    EmulationError,
    EmulatorWarning,
    InactiveLaneError,
    KernelCompileError,
    KernelCrashError,
    OutOfBoundsError,
    UndefinedBehaviorError,
    UndefinedBehaviorWarning,
    UnsafeCacheError,
    UnwrittenOutputError,
)

__all__ = [
    "BarrierDivergenceError",
    "CacheCorruptWarning",
    "Compiler",
    "CompilerNotFoundError",
    "EmulationError",
    "EmulatorOptions",
    "EmulatorWarning",
    "InactiveLaneError",
    "KernelCompileError",
    "KernelCrashError",
    "OutOfBoundsError",
    "UndefinedBehaviorError",
    "UndefinedBehaviorWarning",
    "UnsafeCacheError",
    "UnwrittenOutputError",
    "clear_cache",
    "emulate_cuda_kernel",
    "find_compiler",
    "toolchain_info",
]


def __getattr__(name: str):
    # Imported on first use: cunumpy.emulation.cuda pulls in the CudaKernel front end.
    if name == "emulate_cuda_kernel":
        from cunumpy.emulation.cuda import emulate_cuda_kernel

        return emulate_cuda_kernel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
