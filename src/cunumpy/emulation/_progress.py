"""A progress bar for emulated launches that take a while.

One daemon thread watches the launches in flight (a counter of finished groups each, written by
the kernel library). A launch that has run for :data:`GRACE` seconds and is then expected to take
more than :data:`LONG` seconds in all gets a ``rich`` bar on standard error until it ends. Off when
``CUNUMPY_EMULATOR_PROGRESS`` says so (by default under ``CI`` and when standard error is not a
terminal), and when ``rich`` is not installed.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Iterator
from typing import Any

from cunumpy import config

__all__ = ["GRACE", "LONG", "watching"]

GRACE = 1.0
"""Seconds a launch runs before its expected length is judged."""
LONG = 3.0
"""Expected seconds from which a launch shows a bar."""

_LOCK = threading.Lock()
_WAKE = threading.Event()
_WATCHED: dict[int, list[Any]] = {}
_THREAD: threading.Thread | None = None


_RICH: list[bool] = []


def _enabled() -> bool:
    if not config.emulator_progress():
        return False
    if not _RICH:  # looked for once per process
        try:
            import rich.progress  # noqa: F401
        except ImportError:
            _RICH.append(False)
        else:
            _RICH.append(True)
    return _RICH[0]


@contextlib.contextmanager
def watching(done: ctypes.Array, total: int, label: str) -> Iterator[None]:
    """Within the block, ``done[0]`` counts the finished groups of a launch of ``total``."""
    if not _enabled():
        yield
        return
    global _THREAD
    key = id(done)
    with _LOCK:
        _WATCHED[key] = [done, total, label, time.monotonic(), None]
        if _THREAD is None:
            _THREAD = threading.Thread(target=_run, name="cunumpy-progress", daemon=True)
            _THREAD.start()
    _WAKE.set()
    try:
        yield
    finally:
        with _LOCK:
            item = _WATCHED.pop(key, None)
        if item is not None and item[4] is not None:
            bar, task = item[4]
            bar.update(task, completed=int(done[0]))
            bar.stop()


def _run() -> None:
    while True:
        _WAKE.wait()
        with _LOCK:
            items = list(_WATCHED.values())
            if not items:
                _WAKE.clear()
                continue
        time.sleep(0.2)
        now = time.monotonic()
        for item in items:
            done, total, label, start, shown = item
            finished = int(done[0])
            if shown is None:
                elapsed = now - start
                if elapsed < GRACE or finished <= 0 or elapsed * total / finished < LONG:
                    continue
                with _LOCK:
                    if id(done) not in _WATCHED:
                        continue
                    item[4] = shown = _bar(label, total)
            bar, task = shown
            bar.update(task, completed=finished)
            bar.refresh()


def _bar(label: str, total: int) -> tuple[Any, Any]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
        TextColumn("{task.completed}/{task.total} groups"), TimeRemainingColumn(),
        console=Console(stderr=True), transient=True, auto_refresh=False,
    )
    bar.start()
    return bar, bar.add_task(label, total=total)
