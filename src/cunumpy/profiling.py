"""Transfer accounting: every copy cunumpy makes between host and device is recorded.

A copy is one *event*: its kind (``"to_device"`` or ``"to_host"``; ``"implicit_to_host"`` a
synchronising read the code did not ask for as a copy, e.g. ``float(a)`` or ``a.item()`` on a
device array of the CuPy stand-in; ``"fallback"`` marks a host kernel run in place of a missing
port), its size in bytes, a description, and the call site, the
first stack frame outside the cunumpy package, so a report points at the user's line. Code that
cunumpy generates at run time (the ``Kernel`` dispatcher's ``__call__``, the ``CudaKernel``
launchers) counts as inside the package: it is compiled by ``_compile_generated()``, under a
file name from ``_generated_filename()``.

>>> import numpy as np, cunumpy as xp
>>> with xp.profiling.count_transfers() as c:
...     _ = xp.to_numpy(np.zeros(3))        # already NumPy: no copy, no event
>>> c.to_device, c.to_host
(0, 0)

Recording hook for engines (internal, but stable)
--------------------------------------------------
Code inside cunumpy that copies data calls::

    from cunumpy import profiling
    if profiling._active:
        profiling._record("to_device", nbytes, "MetalKernel 'push' input 'x'")

With no counter active the cost is that one truth test. MetalKernel records NumPy to MLX copies as
``to_device`` and MLX to NumPy copies as ``to_host``.
"""

from __future__ import annotations

import contextlib
import hashlib
import linecache
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from types import CodeType, TracebackType
from typing import NamedTuple

__all__ = [
    "TransferCounter",
    "TransferEvent",
    "assert_no_transfers",
    "count_transfers",
]

KINDS = ("to_device", "to_host", "implicit_to_host", "fallback")

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_GENERATED_PREFIX = "<cunumpy "
"""File names of code cunumpy compiles at run time start with this (see _generated_filename)."""

_active: list[TransferCounter] = []
"""Counters currently open, innermost last. Empty means recording is off."""


class TransferEvent(NamedTuple):
    """One recorded copy (or fallback)."""

    kind: str
    """``"to_device"``, ``"to_host"``, ``"implicit_to_host"`` or ``"fallback"``."""
    nbytes: int
    """Bytes copied (0 for a fallback)."""
    description: str
    """What was copied, e.g. ``"to_cupy float32[1000]"``."""
    site: str
    """``file:line in function`` of the first frame outside cunumpy."""


def _generated_filename(what: str) -> str:
    """The file name to give ``compile()`` for code cunumpy generates, e.g. ``"Kernel push call"``.

    Frames of such code are skipped when a transfer's call site is looked for, like frames of
    the package's own modules, so a report names the user's line rather than generated code.
    """
    return f"{_GENERATED_PREFIX}{what}>"


def _compile_generated(text: str, what: str) -> CodeType:
    """Compile generated Python ``text`` under :func:`_generated_filename` ``(what)``.

    The text is also registered with :mod:`linecache`, so a traceback through the generated
    function shows its lines (the code has no file to read them from).
    """
    filename = _generated_filename(what)
    lines = text.splitlines(True)
    known = linecache.cache.get(filename)
    if known is not None and known[2] != lines:  # another text under this name: tell them apart
        digest = hashlib.blake2s(text.encode(), digest_size=4).hexdigest()
        filename = _generated_filename(f"{what} {digest}")
    linecache.cache[filename] = (len(text), None, lines, filename)
    return compile(text, filename, "exec")


def _internal(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR) or filename.startswith(_GENERATED_PREFIX)


def _call_site() -> str:
    frame = sys._getframe(2)
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    code = frame.f_code
    return f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"


def _record(kind: str, nbytes: int, description: str) -> None:
    """Record one event in every active counter. Call only when ``_active`` is true."""
    if kind not in KINDS:
        raise ValueError(f"transfer kind {kind!r} is not one of {KINDS}")
    event = TransferEvent(kind, int(nbytes), description, _call_site())
    for counter in _active:
        counter.events.append(event)


@dataclass
class TransferCounter(contextlib.ContextDecorator):
    """Counts the transfers made while it is active.

    Use it as a context manager (``with count_transfers() as c``) or as a decorator. Counters
    nest: an event is recorded in every open counter. A counter stops counting when its block
    exits, also when the block raises. Used as a decorator, one counter accumulates over all
    calls of the decorated function.
    """

    events: list[TransferEvent] = field(default_factory=list)

    def __enter__(self) -> TransferCounter:
        _active.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Remove this very counter even if an inner one was left open by a bug elsewhere.
        for i in range(len(_active) - 1, -1, -1):
            if _active[i] is self:
                del _active[i]
                break

    def _count(self, kind: str) -> int:
        return sum(1 for e in self.events if e.kind == kind)

    def _bytes(self, kind: str) -> int:
        return sum(e.nbytes for e in self.events if e.kind == kind)

    @property
    def to_device(self) -> int:
        """Number of host-to-device copies."""
        return self._count("to_device")

    @property
    def to_host(self) -> int:
        """Number of device-to-host copies."""
        return self._count("to_host")

    @property
    def implicit_to_host(self) -> int:
        """Number of implicit synchronising device-to-host reads (``float(a)``, ``a.item()``)."""
        return self._count("implicit_to_host")

    @property
    def bytes_to_device(self) -> int:
        """Bytes copied host to device."""
        return self._bytes("to_device")

    @property
    def bytes_to_host(self) -> int:
        """Bytes copied device to host."""
        return self._bytes("to_host")

    @property
    def fallbacks(self) -> int:
        """Number of times a host kernel ran because a port was missing."""
        return self._count("fallback")

    @property
    def transfers(self) -> int:
        """Copies in either direction (implicit reads included)."""
        return self.to_device + self.to_host + self.implicit_to_host

    def reset(self) -> None:
        """Forget the events recorded so far."""
        self.events.clear()

    def report(self) -> str:
        """A readable summary: totals, then the events grouped by call site."""
        lines = [
            f"{self.to_device} to_device ({_fmt_bytes(self.bytes_to_device)}), "
            f"{self.to_host} to_host ({_fmt_bytes(self.bytes_to_host)})"
            + (f", {self.implicit_to_host} implicit_to_host" if self.implicit_to_host else "")
            + (f", {self.fallbacks} fallback" if self.fallbacks else "")
        ]
        by_site: dict[str, list[TransferEvent]] = defaultdict(list)
        for event in self.events:
            by_site[event.site].append(event)
        for site, events in by_site.items():
            lines.append(f"  {site}:")
            for event in events:
                size = f" {_fmt_bytes(event.nbytes)}" if event.kind != "fallback" else ""
                lines.append(f"    {event.kind:<9}{size}  {event.description}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"TransferCounter(to_device={self.to_device}, to_host={self.to_host}, "
            f"bytes_to_device={self.bytes_to_device}, bytes_to_host={self.bytes_to_host})"
        )


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def count_transfers() -> TransferCounter:
    """Count host/device copies made inside a ``with`` block or a decorated function.

    Returns
    -------
    TransferCounter
        Has ``to_device``, ``to_host``, ``bytes_to_device``, ``bytes_to_host``, ``events`` and
        ``report()``.

    Examples
    --------
    >>> import numpy as np
    >>> from cunumpy.profiling import count_transfers
    >>> with count_transfers() as c:
    ...     pass
    >>> c.transfers
    0
    """
    return TransferCounter()


class _NoTransfers(TransferCounter):
    def __exit__(self, exc_type, exc, tb) -> None:  # type: ignore[override]
        super().__exit__(exc_type, exc, tb)
        if exc_type is None and self.transfers:
            raise AssertionError(
                "host/device copies happened where none were expected:\n" + self.report()
            )


def assert_no_transfers() -> TransferCounter:
    """Raise AssertionError, with the report, if a host/device copy happens inside.

    Works as a context manager and as a decorator. Fallback events alone do not fail it.
    An exception raised by the block itself passes through unchanged.
    """
    return _NoTransfers()
