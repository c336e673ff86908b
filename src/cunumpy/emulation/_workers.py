"""Parallel groups: the worker threads of an emulated launch and the library copies they run.

A kernel library keeps its runtime state (the thread running now, the fiber scheduler, the
shared-memory arena, the failure report) in plain globals, so that no access in a kernel pays
for thread-local storage. To run the groups of one launch on several threads, each worker gets
its own copy of the library (the same file under another name, loaded separately: its own
globals); the workers share the buffers and take batches of groups from one cursor. The calls
go through ctypes, which releases the GIL, so the workers are ordinary Python threads.

When a launch is worth spreading is decided by :func:`plan`: enough threads, more than one
group, and nothing that needs the serial order (race checking, ``printf``).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import shutil
import threading
from collections.abc import Callable

from cunumpy import config
from cunumpy.emulation._build import Library

__all__ = ["MIN_THREADS", "MIN_THREADS_SYNC", "batch_size", "instances", "plan", "pool"]

MIN_THREADS = 1 << 17
"""Fewest threads of a launch of a kernel that never synchronises for the workers to pay. Measured
on the 2-core development machine: handing a launch to the workers costs about 45 us, a simple
element-wise thread about 1.4 ns, so two workers break even near 64 Ki threads; twice that keeps
small launches from getting slower."""

MIN_THREADS_SYNC = 1 << 13
"""The same for a kernel that synchronises (fibers: some tens of ns per thread and barrier)."""

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
