"""The plain records a launch is described with: the kernel language's words and limits
(:class:`Dialect`) and one buffer slot (:class:`BufferArg`).

They live apart from :mod:`cunumpy.emulation._launch` so that the modules it calls (the race
report) can name them without importing the launcher back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BufferArg", "Dialect"]


@dataclass(frozen=True)
class Dialect:
    """Words and limits of one kernel language, for messages and launches."""

    engine: str
    """Engine spelling in messages and cache paths: ``emu-metal`` or ``emu-cuda``."""
    group: str
    """What a group of threads is called: ``threadgroup`` or ``block``."""
    shared: str
    """What a shared-memory array is called: ``threadgroup array`` or ``shared array``."""
    lanes: str
    """What a lockstep group is called: ``SIMD group`` or ``warp``."""
    shared_limit: int
    """Bytes of shared memory one group may use."""
    simd_width: int = 32
    barrier: str = "__syncthreads()"
    """The barrier that orders shared memory, as the dialect spells it."""
    device_barrier: str = "__syncthreads()"
    """The barrier that orders device memory within a group."""
    lane_sync: str = "__syncwarp()"
    """What orders the lanes of one SIMD group / warp."""

    def prefix(self, kernel: str) -> str:
        """``[emu-metal kernel 'name']``."""
        return f"[{self.engine} kernel '{kernel}']"


@dataclass
class BufferArg:
    """One buffer slot of a launch."""

    label: str | Callable[[], str]
    """How messages name it: ``argument 'x' (float32[1024])``, or a function that says it
    (called only when a message needs it)."""
    address: int
    extent: int
    """Elements reachable from ``address`` (the strided extent of a view)."""
    keep: Any = None
    """Object that owns the memory (kept alive during the launch)."""
    extent_word: str = "size"
    """How messages call ``extent``: ``size``, or ``strided extent`` for a view."""
    nbytes: int = 0
    """Bytes reachable from ``address`` (race checking)."""
    itemsize: int = 1
    """Bytes per element (race reports give element indices)."""
    track: bool = False
    """Race checking watches this buffer (the kernel may write it)."""
