"""Call a compiled kernel library (the ``cn_launch`` ABI of ``cn_core.h``) and turn its failure
report into an exception. Dialect-neutral: the dialect supplies its vocabulary."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import random
import threading
from collections.abc import Sequence
from typing import Any

from cunumpy.emulation import _progress, _workers
from cunumpy.emulation._build import Library
from cunumpy.emulation._launch_types import BufferArg, Dialect
from cunumpy.emulation._rewrite import SharedDecl
from cunumpy.emulation._sites import source_lines
from cunumpy.emulation.errors import (
    BarrierDivergenceError,
    EmulationError,
    InactiveLaneError,
    OutOfBoundsError,
)

__all__ = ["ABI_VERSION", "BufferArg", "Dialect", "launch"]

ABI_VERSION = 3
"""Must equal ``CN_ABI_VERSION`` in ``cn_core.h``."""

ERR_OOB, ERR_BARRIER, ERR_INACTIVE_LANE, ERR_SHARED_LIMIT, ERR_INTERNAL, ERR_RACE = 1, 2, 3, 4, 5, 6
LAUNCH_RACES, LAUNCH_STRICT_BARRIERS, LAUNCH_PARALLEL, LAUNCH_SIGINT = 1, 2, 4, 8
LAUNCH_COOPERATIVE = 16
NO_STOP = 2**63 - 1
_MAIN = threading.main_thread()


class _Buffer(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("extent", ctypes.c_int64),
        ("bytes", ctypes.c_int64),
        ("elem", ctypes.c_int32),
        ("track", ctypes.c_int32),
    )


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
        ("thread2", ctypes.c_uint32 * 3),
        ("group2", ctypes.c_uint32 * 3),
        ("access", ctypes.c_int32 * 2),
        ("pc", ctypes.c_uint32 * 2),
        ("position", ctypes.c_int64),
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
        ("flags", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("first", ctypes.c_int64),
        ("last", ctypes.c_int64),
        ("next", ctypes.c_void_p),
        ("batch", ctypes.c_int64),
        ("stop", ctypes.c_void_p),
        ("done", ctypes.c_void_p),
        ("cancel", ctypes.c_void_p),
        ("pad2", ctypes.c_int32),
    )


class _Shared(ctypes.Structure):
    """The counters the workers of one launch share (``LaunchDesc`` points into it)."""

    _fields_ = (
        ("next", ctypes.c_int64),
        ("stop", ctypes.c_int64),
        ("done", ctypes.c_int64),
        ("cancel", ctypes.c_int32),
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
    races: bool = False,
    strict_barriers: bool = False,
    sync: bool = False,
    serial: bool = False,
    cooperative: bool = False,
) -> None:
    """Run the kernel over ``grid`` threads in groups of ``group``; raise on the first failure.

    ``cooperative`` runs every group at once (a cooperative launch, for grid-wide barriers:
    ``runtime/cn_coop.h``), serially on this thread.

    ``races`` needs a race-checking build of the library; ``strict_barriers`` makes threads
    that returned before a barrier a divergence error instead of counting them as arrived.
    Large launches run their groups on several workers (:mod:`cunumpy.emulation._workers`)
    unless ``serial`` (the kernel prints) or ``races``; ``sync`` says the kernel synchronises
    (more work per thread, so workers pay sooner). The report is the one a serial run gives:
    the first failure in the group order, and the count of failures in the groups a serial run
    reaches (all of them, or those up to a fatal failure).

    Raises
    ------
    OutOfBoundsError, BarrierDivergenceError, InactiveLaneError, DataRaceError, EmulationError
        What the library's checks reported (first failure, with a count of further ones).
    KeyboardInterrupt
        Ctrl-C (SIGINT) stopped the launch between two groups.
    """
    n = len(buffers)
    arr = (_Buffer * max(n, 1))()
    for i, b in enumerate(buffers):
        arr[i].data = b.address
        arr[i].extent = b.extent
        arr[i].bytes = b.nbytes
        arr[i].elem = b.itemsize
        arr[i].track = 1 if (races and b.track) else 0
    report = _Report()
    if random_order and seed is None:
        seed = random.getrandbits(64)
    counters = _Shared(0, NO_STOP, 0, 0)
    base = ctypes.addressof(counters)
    flags = (LAUNCH_RACES if races else 0) | (LAUNCH_STRICT_BARRIERS if strict_barriers else 0)
    flags |= LAUNCH_COOPERATIVE if cooperative else 0
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
        flags=flags,
        first=0,
        last=-1,
        done=base + _Shared.done.offset,
        cancel=base + _Shared.cancel.offset,
    )
    groups = 1
    threads = 1
    for g, b in zip(grid, group):
        b = b or 1
        groups *= -(-g // b)
        threads *= g
    workers = _workers.plan(threads, groups, sync, serial or races or cooperative)
    watch = (
        _progress.watching(counters_done(counters), groups, f"{dialect.prefix(kernel)}")
        if threads >= 4096 else contextlib.nullcontext()
    )
    with lib.lock, watch:
        if workers > 1:
            rc = _parallel(lib, desc, report, counters, workers, groups)
        else:
            if threading.current_thread() is _MAIN:
                desc.flags |= LAUNCH_SIGINT
            rc = lib.launch(ctypes.addressof(desc))
    if counters.cancel:
        raise KeyboardInterrupt(f"{dialect.prefix(kernel)} launch interrupted")
    if rc != 0:
        raise EmulationError(
            f"{dialect.prefix(kernel)} the emulator could not start the launch (code {rc}); "
            "the compiled library does not match this cunumpy, clear the cache "
            "(cunumpy.emulation.clear_cache())"
        )
    if report.count:
        order = f" (random order, seed {seed})" if random_order else ""
        raise _failure(report, dialect, kernel, buffers, shared, order, lib)


def counters_done(counters: _Shared) -> ctypes.Array:
    """``counters.done`` as a one-element array (what the progress bar reads)."""
    return (ctypes.c_int64 * 1).from_address(ctypes.addressof(counters) + _Shared.done.offset)


def _parallel(
    lib: Library, desc: _LaunchDesc, report: _Report, counters: _Shared, workers: int,
    groups: int,
) -> int:
    """Run ``desc`` on ``workers`` copies of ``lib``, the first on this thread; merge their
    reports into ``report``. On the main thread the first copy catches SIGINT for the whole
    launch (``LAUNCH_SIGINT``: the handler is process-wide and sets the shared cancel flag, so
    every worker stops between two groups whichever thread takes the signal); an exception
    here (Ctrl-C while the launch is handed out) stops the workers before it goes on
    (:func:`cunumpy.emulation._workers.spread`)."""
    copies = _workers.instances(lib, workers)
    sigint = LAUNCH_SIGINT if threading.current_thread() is _MAIN else 0
    if len(copies) < 2:
        desc.flags |= sigint
        return lib.launch(ctypes.addressof(desc))
    base = ctypes.addressof(counters)
    reports = [_Report() for _ in copies]
    descs = []
    for r in reports:
        d = _LaunchDesc()
        ctypes.pointer(d)[0] = desc
        d.report = ctypes.pointer(r)
        d.flags = desc.flags | LAUNCH_PARALLEL
        d.next = base + _Shared.next.offset
        d.stop = base + _Shared.stop.offset
        d.batch = _workers.batch_size(groups, len(copies))
        descs.append(d)
    descs[0].flags |= sigint
    calls = [functools.partial(fn, ctypes.addressof(d)) for (fn, _), d in zip(copies, descs)]

    def cancel() -> None:
        counters.cancel = 1

    codes = _workers.spread(calls[1:], calls[0], cancel, keep=(desc, descs, reports, counters))
    failed = [r for r in reports if r.count]
    if failed:
        first = min(failed, key=lambda r: r.position)
        ctypes.pointer(report)[0] = first
        if counters.stop != NO_STOP:  # a fatal failure: count what a serial run reaches
            report.count = sum(upto(counters.stop) for _, upto in copies)
        else:
            report.count = sum(r.count for r in reports)
    return next((c for c in codes if c), 0)


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
    lib: Library | None = None,
) -> EmulationError:
    prefix = dialect.prefix(kernel)
    if r.kind == ERR_RACE:
        from cunumpy.emulation._race_report import race_error

        return race_error(r, dialect, kernel, buffers, shared, order, lib)
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
        if not at and r.pc[0] and lib is not None:
            found = source_lines(lib.path, [r.pc[0]])[0]
            at = f", {found}" if found else ""
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
