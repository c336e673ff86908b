"""Exceptions raised by the CPU emulators.

Every message starts with the engine and kernel, ``[emu-metal kernel 'saxpy'] ...`` (or
``[emu-cuda kernel 'saxpy'] ...``), then says what failed, where (argument, index, thread and
group), and, where it helps, what to do instead.
"""

from __future__ import annotations

__all__ = [
    "BarrierDivergenceError",
    "EmulationError",
    "EmulatorWarning",
    "InactiveLaneError",
    "KernelCompileError",
    "KernelCrashError",
    "OutOfBoundsError",
    "UndefinedBehaviorError",
    "UndefinedBehaviorWarning",
    "UnsafeCacheError",
    "UnwrittenOutputError",
]


class EmulationError(RuntimeError):
    """A kernel failed on a CPU emulator (base class of the errors below)."""


class KernelCompileError(EmulationError):
    """The kernel's source does not compile as C++.

    The message shows the compiler's diagnostics with line numbers of the user's text
    (``body:LINE`` for the kernel body, ``header:LINE`` for the header) and the offending lines.

    Attributes
    ----------
    log : str
        The compiler's full output.
    source : str
        The generated C++ translation unit.
    command : tuple of str
        The compiler command that failed.
    """

    def __init__(self, message: str, *, log: str = "", source: str = "",
                 command: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.log = log
        self.source = source
        self.command = command

    def __reduce__(self):  # keep the attributes across processes (isolated mode)
        return (_rebuild_compile_error, (str(self), self.log, self.source, self.command))


def _rebuild_compile_error(message, log, source, command):
    return KernelCompileError(message, log=log, source=source, command=command)


class OutOfBoundsError(EmulationError, IndexError):
    """A thread read or wrote outside a buffer or a threadgroup (shared) array."""


class UnwrittenOutputError(EmulationError):
    """Some output elements were never written by the kernel (outputs start poisoned)."""


class BarrierDivergenceError(EmulationError):
    """A barrier was not reached by every thread of its group, or threads waited at different
    barriers."""


class UndefinedBehaviorError(EmulationError):
    """The kernel did something whose result the language leaves undefined, so a GPU may give
    any value: a warp shuffle reading a lane that the mask leaves out or that takes no part in
    the call, a calling lane missing from its own mask, a shuffle width that is not a power of
    two. The message names the rule, the source line and the lanes. It is a property of the
    kernel, not a limitation of the emulator; ``EmulatorOptions(undefined="warn")`` (or
    ``CUNUMPY_EMULATOR_UNDEFINED=warn``) reports it as an :class:`UndefinedBehaviorWarning` and
    runs on."""


class InactiveLaneError(UndefinedBehaviorError):
    """A SIMD-group (warp) function read a lane that does not take part (it has exited, waits
    elsewhere, or does not exist in a partial group): undefined behaviour of one kind."""


class KernelCrashError(EmulationError):
    """The kernel crashed the process it ran in (isolated mode): a signal such as SIGSEGV."""


class UnsafeCacheError(EmulationError, PermissionError):
    """The emulation cache directory is not private to the current user, so loading compiled
    code from it could run someone else's code."""


class EmulatorWarning(UserWarning):
    """The emulator runs a kernel with less checking than asked for, and says why."""


class UndefinedBehaviorWarning(EmulatorWarning):
    """Undefined behaviour (see :class:`UndefinedBehaviorError`) in a launch run with
    ``undefined="warn"``: the launch went on."""
