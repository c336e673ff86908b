"""Run one launch in a child process, so that a crashing kernel cannot take Python down.

The parent pickles the call into a private temporary directory; the child
(``python -m cunumpy.emulation._isolated DIR``) runs it with isolation off, saves the outputs as
``.npy`` files and the exception (if any) and its warnings as a pickle; the parent re-issues the
warnings and raises the exception. A child killed by a signal becomes a
:class:`~cunumpy.emulation.errors.KernelCrashError` naming the signal.
"""

from __future__ import annotations

import importlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cunumpy.emulation.errors import EmulationError, KernelCrashError

__all__ = ["run_isolated"]


def run_isolated(
    target: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    outputs: Sequence[np.ndarray],
    prefix: str,
    timeout: float | None = None,
    outputs_arg: int = 2,
) -> None:
    """Call ``target`` (``"module:function"``) with ``args``/``kwargs`` in a child process and
    copy the child's outputs (the arrays in ``args[outputs_arg]``) back into ``outputs``."""
    work = Path(tempfile.mkdtemp(prefix="cunumpy-isolated-"))
    try:
        with open(work / "call.pkl", "wb") as f:
            pickle.dump((target, args, kwargs, outputs_arg), f, protocol=pickle.HIGHEST_PROTOCOL)
        done = subprocess.run(
            [sys.executable, "-m", "cunumpy.emulation._isolated", str(work)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
        if done.returncode < 0:
            sig = -done.returncode
            try:
                signame = signal.Signals(sig).name
            except ValueError:
                signame = f"signal {sig}"
            raise KernelCrashError(
                f"{prefix} crashed its process with {signame} (isolated mode). Run it with "
                "checks on (the default) to find out-of-bounds accesses; pointers made by casts "
                "or &x[i] are not checked" + _tail(done.stderr)
            )
        result = work / "result.pkl"
        if not result.exists():
            raise EmulationError(
                f"{prefix} the isolated child process failed (exit status {done.returncode})"
                + _tail(done.stderr)
            )
        with open(result, "rb") as f:
            exc = pickle.load(f)
            caught = pickle.load(f)  # the child's warnings, re-issued here
        for category, message in caught:
            warnings.warn(message, category, stacklevel=3)
        if exc is not None:
            raise exc
        for i, out in enumerate(outputs):
            np.copyto(out, np.load(work / f"out{i}.npy"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _tail(text: str) -> str:
    text = text.strip()
    return f"\nchild stderr:\n{text[-2000:]}" if text else ""


def _child(work: Path) -> None:
    with open(work / "call.pkl", "rb") as f:
        target, args, kwargs, outputs_arg = pickle.load(f)
    module, _, name = target.partition(":")
    func = getattr(importlib.import_module(module), name)
    outputs = args[outputs_arg]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            func(*args, **kwargs)
            exc = None
        except Exception as e:  # handed to the parent, which raises it
            exc = e
    caught = []
    for w in seen:
        category = w.category if isinstance(w.category, type) else UserWarning
        caught.append((category, str(w.message)))
    for i, out in enumerate(outputs):
        np.save(work / f"out{i}.npy", out)
    with open(work / "result.pkl.tmp", "wb") as f:
        try:
            pickle.dump(exc, f)
        except Exception:  # an unpicklable exception: send its text
            f.seek(0)
            f.truncate()
            pickle.dump(EmulationError(f"{type(exc).__name__}: {exc}"), f)
        try:
            pickle.dump(caught, f)
        except Exception:  # a warning class that does not pickle: send the text
            pickle.dump([(UserWarning, m) for _, m in caught], f)
    os.replace(work / "result.pkl.tmp", work / "result.pkl")


if __name__ == "__main__":
    _child(Path(sys.argv[1]))
