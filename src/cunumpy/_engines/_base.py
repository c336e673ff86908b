"""What crosses the seam between a kernel front end and an engine.

A front end (``CudaKernel``, ``MetalKernel``) checks its arguments and launch geometry once and
hands an engine plain, frozen data: a :class:`Program` (what to compile) and a :class:`Launch`
(how to run it). An engine never reads a front-end object.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

__all__ = ["DIALECTS", "Engine", "EngineStatus", "Launch", "Program"]

DIALECTS = ("cuda", "metal")
"""Kernel languages: CUDA C++ and the Metal Shading Language."""


class EngineStatus(NamedTuple):
    """Whether an engine can launch here, and why (not)."""

    ok: bool
    reason: str


@dataclass(frozen=True)
class Program:
    """One kernel as an engine compiles it: frozen, hashable, and cheap to compare.

    Attributes
    ----------
    dialect : {"cuda", "metal"}
        The kernel language.
    name : str
        The kernel's name (for messages and the compiled symbol).
    source : str
        The source text given to the compiler.
    signature : object
        The parsed signature (``CudaSignature`` or ``MetalSignature``).
    options : tuple of str
        Compiler options.
    template : tuple
        Template values, as ``(name, value)`` pairs or positional values.
    name_expression : str or None
        The C++ name to look up (C++ linkage, template instantiations), else None.
    include_dirs : tuple of str
        Directories searched for ``#include`` files.
    folder : str or None
        The folder of the source file (searched first for quoted includes).
    header_digest : str
        Digest of the included files' contents when the program was made.
    extra : tuple of (str, object)
        Dialect-specific settings that select the compiled code, as sorted pairs.
    """

    dialect: str
    name: str
    source: str
    signature: Any = field(compare=False, hash=False)
    options: tuple[str, ...] = ()
    template: tuple[Any, ...] = ()
    name_expression: str | None = None
    include_dirs: tuple[str, ...] = ()
    folder: str | None = None
    header_digest: str = ""
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        """A digest of everything that selects the compiled code."""
        text = repr((self.dialect, self.name, self.source, self.options, self.template,
                     self.name_expression, self.include_dirs, self.folder, self.header_digest,
                     self.extra))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def setting(self, key: str, default: Any = None) -> Any:
        """One of :attr:`extra`, by name."""
        for k, v in self.extra:
            if k == key:
                return v
        return default


class Launch(NamedTuple):
    """One launch: geometry checked by the front end, arguments in the engine's space."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Any, ...]
    shared_mem: int = 0
    stream: Any = None


class Engine(Protocol):
    """What every engine offers the front ends (CUDA and Metal alike)."""

    name: str
    """The one spelling: ``cupy``, ``emu-cuda``, ``mlx``, ``emu-metal``."""
    dialect: str
    """``cuda`` or ``metal``."""
    array_space: str
    """``device`` (GPU memory) or ``host`` (NumPy arrays)."""

    def status(self) -> EngineStatus:
        """Whether this engine can launch here, and why (not)."""

    def limits(self) -> Any:
        """The launch limits of the current device."""

    def prepare(self, program: Program) -> Callable[..., Any]:
        """The launch callable for ``program`` (cached by the program)."""

    def is_device_array(self, a: Any) -> bool:
        """True for this engine's arrays, taken by a launch with no copy."""

    def to_device(self, host: Any, *args: Any) -> Any:
        """A copy of a host array in the engine's memory."""

    def host_view(self, device: Any) -> Any:
        """A NumPy view (or copy) of one of this engine's arrays."""
