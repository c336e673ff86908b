"""CUDA launch limits and the CUDA compile/launch errors: plain types every layer uses.

The front end checks geometry against :class:`CudaLimits`; the engines (CuPy, the CPU
emulator) raise :class:`CudaCompileError` and the front end :class:`CudaLaunchError`. Re-exported
by :mod:`cunumpy.kernels`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "CudaCompileError", "CudaLaunchError", "CudaLimits"]


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
