"""Call a compiled kernel library (the ``cn_launch`` ABI of ``cn_core.h``) and turn its failure
report into an exception. Dialect-neutral: the dialect supplies its vocabulary."""

from __future__ import annotations

import ctypes
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cunumpy.emulation._build import Library
from cunumpy.emulation._rewrite import SharedDecl
from cunumpy.emulation.errors import (
    BarrierDivergenceError,
    EmulationError,
    InactiveLaneError,
    OutOfBoundsError,
)

__all__ = ["ABI_VERSION", "BufferArg", "Dialect", "launch"]

ABI_VERSION = 1
"""Must equal ``CN_ABI_VERSION`` in ``cn_core.h``."""

ERR_OOB, ERR_BARRIER, ERR_INACTIVE_LANE, ERR_SHARED_LIMIT, ERR_INTERNAL = 1, 2, 3, 4, 5


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


class _Buffer(ctypes.Structure):
    _fields_ = (("data", ctypes.c_void_p), ("extent", ctypes.c_int64))


class _Report(ctypes.Structure):
    _fields_ = (
        ("kind", ctypes.c_int32),
        ("buffer", ctypes.c_int32),
        ("index", ctypes.c_int64),
        ("extent", ctypes.c_int64),
        ("thread", ctypes.c_uint32 * 3),
        ("group", ctypes.c_uint32 * 3),
        ("count", ctypes.c_int64),
        ("line", ctypes.c_int32),
        ("lane", ctypes.c_int32),
        ("file", ctypes.c_char * 32),
        ("detail", ctypes.c_char * 512),
    )


class _LaunchDesc(ctypes.Structure):
    _fields_ = (
        ("abi", ctypes.c_int32),
        ("nbuffers", ctypes.c_int32),
        ("buffers", ctypes.POINTER(_Buffer)),
        ("grid", ctypes.c_uint32 * 3),
        ("group", ctypes.c_uint32 * 3),
        ("random_order", ctypes.c_int32),
        ("simd_width", ctypes.c_int32),
        ("seed", ctypes.c_uint64),
        ("shared_limit", ctypes.c_int64),
        ("report", ctypes.POINTER(_Report)),
    )


def _xyz(v: Any) -> str:
    return f"({v[0]},{v[1]},{v[2]})"


def launch(
    lib: Library,
    dialect: Dialect,
    kernel: str,
    buffers: Sequence[BufferArg],
    grid: Sequence[int],
    group: Sequence[int],
    *,
    random_order: bool = False,
    seed: int | None = None,
    shared: Sequence[SharedDecl] = (),
) -> None:
    """Run the kernel over ``grid`` threads in groups of ``group``; raise on the first failure.

    Raises
    ------
    OutOfBoundsError, BarrierDivergenceError, InactiveLaneError, EmulationError
        What the library's checks reported (first failure, with a count of further ones).
    """
    n = len(buffers)
    arr = (_Buffer * max(n, 1))()
    for i, b in enumerate(buffers):
        arr[i].data = b.address
        arr[i].extent = b.extent
    report = _Report()
    if random_order and seed is None:
        seed = random.getrandbits(64)
    desc = _LaunchDesc(
        abi=ABI_VERSION,
        nbuffers=n,
        buffers=arr,
        grid=(ctypes.c_uint32 * 3)(*grid),
        group=(ctypes.c_uint32 * 3)(*group),
        random_order=1 if random_order else 0,
        simd_width=dialect.simd_width,
        seed=(seed or 0) & 0xFFFFFFFFFFFFFFFF,
        shared_limit=dialect.shared_limit,
        report=ctypes.pointer(report),
    )
    with lib.lock:
        rc = lib.launch(ctypes.addressof(desc))
    if rc != 0:
        raise EmulationError(
            f"{dialect.prefix(kernel)} the emulator could not start the launch (code {rc}); "
            "the compiled library does not match this cunumpy, clear the cache "
            "(cunumpy.emulation.clear_cache())"
        )
    if report.count:
        order = f" (random order, seed {seed})" if random_order else ""
        raise _failure(report, dialect, kernel, buffers, shared, order)


def _null_name(label: str) -> str:
    """The parameter name in ``argument 'x' (...)``, for a hint."""
    parts = label.split("'")
    return parts[1] if len(parts) > 2 else "p"


def _failure(
    r: _Report,
    dialect: Dialect,
    kernel: str,
    buffers: Sequence[BufferArg],
    shared: Sequence[SharedDecl],
    order: str,
) -> EmulationError:
    prefix = dialect.prefix(kernel)
    where = f"at thread {_xyz(r.thread)} {dialect.group} {_xyz(r.group)}"
    more = r.count - 1
    further = f"; {more} further failure{'s' if more != 1 else ''}" if more else ""
    file = r.file.decode(errors="replace")
    site = f" at {file}:{r.line}" if r.line and file else ""
    detail = r.detail.decode(errors="replace")
    if r.kind == ERR_OOB:
        word = "size"
        if r.buffer >= 0:
            label = buffers[r.buffer].label if r.buffer < len(buffers) else f"buffer {r.buffer}"
            if callable(label):
                label = label()
            if r.buffer < len(buffers):
                word = buffers[r.buffer].extent_word
        else:
            k = -1 - r.buffer
            decl = next((d for d in shared if d.slot == k), None)
            label = (f"{dialect.shared} '{decl.name}' ({decl.describe()})" if decl
                     else f"{dialect.shared} {k}")
        at = f", {file}:{r.line}" if r.line and file else ""  # where the dialect knows it
        if 0 <= r.buffer < len(buffers) and buffers[r.buffer].address == 0 and r.extent == 0:
            return OutOfBoundsError(
                f"{prefix} null pointer dereference: {label} was accessed at index {r.index} "
                f"{where}{at}; pass an array, or guard the access (if ({_null_name(label)}))"
                f"{further}{order}"
            )
        return OutOfBoundsError(
            f"{prefix} {label}: index {r.index} out of bounds ({word} {r.extent}) {where}"
            f"{at}{further}{order}"
        )
    if r.kind == ERR_BARRIER:
        return BarrierDivergenceError(
            f"{prefix} barrier divergence in {dialect.group} {_xyz(r.group)}: {detail}{further}"
            f"{order}"
        )
    if r.kind == ERR_INACTIVE_LANE:
        return InactiveLaneError(
            f"{prefix} {dialect.lanes} function{site} read lane {r.lane}, which is inactive "
            f"(it has returned, waits elsewhere, or does not exist in this {dialect.group}) "
            f"{where}{further}{order}"
        )
    if r.kind == ERR_SHARED_LIMIT:
        return EmulationError(f"{prefix} {detail} in {dialect.group} {_xyz(r.group)}{order}")
    return EmulationError(f"{prefix} {detail}{site} {where}{order}")
