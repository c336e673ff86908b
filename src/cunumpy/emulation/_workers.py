"""Parallel groups: the worker threads of an emulated launch and the library copies they run.

A kernel library keeps its runtime state (the thread running now, the fiber scheduler, the
shared-memory arena, the failure report) in plain globals, so that no access in a kernel pays
for thread-local storage. To run the groups of one launch on several threads, each worker gets
its own copy of the library (the same file under another name, loaded separately: its own
globals); the workers share the buffers and take batches of groups from one cursor. The calls
go through ctypes, which releases the GIL, so the workers are ordinary Python threads.

When a launch is worth spreading is decided by :func:`plan`: enough threads, more than one
group, and nothing that needs the serial order (race checking, ``printf``).

Ctrl-C. The calling thread runs one of the calls itself (:func:`spread`), so that on the main
thread the kernel library's own SIGINT handler is installed for the whole launch (it stops every
worker between two groups, whichever thread the kernel delivers the signal to). Whatever
interrupts the calling thread (a ``KeyboardInterrupt`` at any point, also while the calls are
being handed out), :func:`spread` first has the calls stopped, then waits until none runs or can
still start, and only then lets the exception go on: no worker is left inside a launch whose
buffers and descriptors the caller is about to free. The waits are timed (:data:`POLL`), so a
signal that the kernel delivered to another thread is still handled within that time.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from typing import Any

from cunumpy import config
from cunumpy.emulation._build import Library

__all__ = [
    "MIN_THREADS", "MIN_THREADS_SYNC", "POLL", "batch_size", "instances", "plan", "pool", "spread",
]

MIN_THREADS = 1 << 17
"""Fewest threads of a launch of a kernel that never synchronises for the workers to pay. Measured
on the 2-core development machine: handing a launch to the workers costs about 45 us, a simple
element-wise thread about 1.4 ns, so two workers break even near 64 Ki threads; twice that keeps
small launches from getting slower."""

MIN_THREADS_SYNC = 1 << 13
"""The same for a kernel that synchronises (fibers: some tens of ns per thread and barrier)."""

POLL = 0.05
"""Seconds between two looks at pending signals while the calling thread waits for workers."""

_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def plan(threads: int, groups: int, sync: bool, serial: bool) -> int:
    """Workers for a launch of ``threads`` threads in ``groups`` groups (1: run it serially)."""
    if serial or groups < 2 or threads < (MIN_THREADS_SYNC if sync else MIN_THREADS):
        return 1
    return max(1, min(config.emulator_threads(), groups))


def batch_size(groups: int, workers: int) -> int:
    """Groups a worker takes from the shared cursor at a time."""
    return max(1, min(1024, groups // (workers * 32)))


def pool(workers: int) -> concurrent.futures.ThreadPoolExecutor:
    """The process's worker threads (at least ``workers`` of them)."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < workers:
            old = _POOL
            _POOL = concurrent.futures.ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="cunumpy-emulator"
            )
            _POOL_SIZE = workers
            if old is not None:
                old.shutdown(wait=False)
        return _POOL


class _Job:
    """The calls of one :func:`spread` on the pool: a call starts only while the job is open,
    and :meth:`close` returns once no call runs (worker threads get no ``KeyboardInterrupt``, so
    their side of this bookkeeping is never cut short)."""

    def __init__(self, keep: object) -> None:
        self.cond = threading.Condition()
        self.active = 0
        self.closed = False
        self.keep = keep  # what the calls point into stays alive while one may run

    def run(self, call: Callable[[], int]) -> int:
        with self.cond:
            if self.closed:
                return 0
            self.active += 1
        try:
            return call()
        finally:
            with self.cond:
                self.active -= 1
                self.cond.notify_all()

    def close(self) -> None:
        """No further call starts; wait (through further Ctrl-C) until the running ones end."""
        while True:
            try:
                with self.cond:
                    self.closed = True
                    while self.active:
                        self.cond.wait(POLL)
                return
            except KeyboardInterrupt:  # a second Ctrl-C: the workers still hold our memory
                continue


def _wait(futures: Sequence[concurrent.futures.Future]) -> None:
    """Until every future is done, in timed waits (signals are handled between two)."""
    pending = set(futures)
    while pending:
        _, pending = concurrent.futures.wait(pending, timeout=POLL)


def spread(
    calls: Sequence[Callable[[], int]], here: Callable[[], int], cancel: Callable[[], None],
    keep: Any = None,
) -> list[int]:
    """Run ``here`` on this thread and ``calls`` on the pool; their results, ``here``'s first.

    If this thread is interrupted at any point (Ctrl-C, or any other exception), ``cancel()``
    asks the calls to stop, and the exception is raised once none of them runs or can still
    start. ``keep`` is what the calls point into (descriptors, reports): it lives until then.
    """
    job = _Job(keep)
    futures: list[concurrent.futures.Future] = []
    try:
        workers = pool(len(calls))
        for call in calls:
            futures.append(workers.submit(job.run, call))
        first = here()
        _wait(futures)
        return [first] + [f.result() for f in futures]
    except BaseException:
        cancel()
        job.close()
        raise


LaunchFn = Callable[[int], int]


def _failures_upto(cdll: ctypes.CDLL) -> Callable[[int], int]:
    """The library's ``cn_failures_upto`` (failures its worker saw up to a group position)."""
    upto = cdll.cn_failures_upto
    upto.argtypes = [ctypes.c_int64]
    upto.restype = ctypes.c_int64
    return upto


def _load(path: str) -> tuple[LaunchFn, Callable[[int], int]]:
    cdll = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    fn = cdll.cn_launch
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn, _failures_upto(cdll)


def instances(lib: Library, n: int) -> list[tuple[LaunchFn, Callable[[int], int]]]:
    """``n`` independent loaded copies of ``lib`` (the first is ``lib`` itself), fewer when a
    copy cannot be written next to the library. Call with ``lib.lock`` held."""
    copies: list = lib.__dict__.setdefault("copies", [])
    if not copies:
        copies.append((lib.launch, _failures_upto(lib.cdll)))
    while len(copies) < n:
        k = len(copies)
        dst = lib.path.with_name(f"{lib.path.stem}.w{k}{lib.path.suffix}")
        try:
            # Copied afresh by each process (never an older file trusted): the library was
            # verified against its cache entry when it was loaded.
            tmp = dst.with_name(f"{dst.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            shutil.copyfile(lib.path, tmp)
            os.replace(tmp, dst)
            copies.append(_load(str(dst)))
        except OSError:
            break
    return copies[:n]
