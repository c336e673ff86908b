"""The program every rank of a :func:`cunumpy.testing.run_ranks` job runs.

``python -m cunumpy.testing._rank_main JOBDIR``: reads the job (``JOBDIR/job.pkl``), sends this
rank's standard output and error (file descriptors 1 and 2, so C output too) to
``JOBDIR/rank<r>.log``, runs the target and writes ``JOBDIR/rank<r>.result``: the return value,
or the formatted traceback. A rank that fails waits a moment for the others to finish or fail
too, asks those still running (on its own host) to write their Python stacks into their logs
(``SIGUSR1``, through :mod:`faulthandler`), then aborts the job, as ``python -m mpi4py`` does, so
that no rank is left waiting for it.
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.util
import json
import os
import pickle
import runpy
import signal
import socket
import sys
import time
import traceback
from typing import Any

__all__ = ["main"]


def _write(path: str, payload: bytes) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(payload)
    os.replace(tmp, path)


def _function(spec: dict[str, Any]) -> Any:
    name, path, qualname = spec["module"], spec["file"], spec["qualname"]
    module = None
    if name != "__main__":
        try:
            module = importlib.import_module(name)
        except ImportError:
            module = None
    if module is None or (path and os.path.abspath(getattr(module, "__file__", "") or "")
                          != os.path.abspath(path)):
        loader = importlib.util.spec_from_file_location(
            "__cunumpy_rank_target__" if name == "__main__" else name, path)
        if loader is None or loader.loader is None:
            raise ImportError(f"cannot load {path} to find {qualname}")
        module = importlib.util.module_from_spec(loader)
        sys.modules[loader.name] = module
        loader.loader.exec_module(module)
    target: Any = module
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _run(spec: dict[str, Any]) -> Any:
    kind = spec["kind"]
    if kind == "call":
        return _function(spec)(*pickle.loads(spec["args"]))
    argv = list(spec["argv"])
    if kind == "script":
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    else:  # module: ["-m", name, args...]
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    return None


def _format(exc: BaseException) -> str:
    """The traceback of ``exc`` from the target's first frame on (this runner's are left out)."""
    tb = exc.__traceback__
    here = os.path.abspath(__file__)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == here:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _unfinished(jobdir: str, size: int) -> list[int]:
    return [r for r in range(size) if not os.path.exists(os.path.join(jobdir, f"rank{r}.result"))]


def _dump_stuck(jobdir: str, ranks: list[int]) -> None:
    host = socket.gethostname()
    for r in ranks:
        try:
            with open(os.path.join(jobdir, f"rank{r}.pid")) as fh:
                where = json.load(fh)
            if where["host"] == host:
                os.kill(int(where["pid"]), signal.SIGUSR1)
        except (OSError, ValueError, KeyError):
            continue


def main(jobdir: str) -> int:
    with open(os.path.join(jobdir, "job.pkl"), "rb") as fh:
        spec = pickle.load(fh)
    for entry in reversed(spec["sys_path"]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    log = open(os.path.join(jobdir, f"rank{rank}.log"), "w", buffering=1)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    faulthandler.enable(file=log, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=log, all_threads=True)
    _write(os.path.join(jobdir, f"rank{rank}.pid"),
           json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode())
    try:
        value = _run(spec)
        outcome: dict[str, Any] = {"ok": True, "value": value}
    except SystemExit as exc:
        ok = exc.code in (None, 0)
        outcome = {"ok": ok, "value": None,
                   "error": None if ok else f"SystemExit: {exc.code}\n"}
    except BaseException as exc:  # every failure, Ctrl-C too, is this rank's report
        outcome = {"ok": False, "error": _format(exc), "type": type(exc).__name__}
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        payload = pickle.dumps(outcome)
    except Exception as exc:  # a return value that cannot be pickled
        payload = pickle.dumps({"ok": outcome["ok"], "value": None,
                                "error": outcome.get("error"),
                                "unpicklable": f"{type(exc).__name__}: {exc}"})
    _write(os.path.join(jobdir, f"rank{rank}.result"), payload)
    if outcome["ok"]:
        return 0
    deadline = time.monotonic() + float(spec["grace"])
    while _unfinished(jobdir, size) and time.monotonic() < deadline:
        time.sleep(0.05)
    stuck = _unfinished(jobdir, size)
    if not stuck:
        return 1
    _dump_stuck(jobdir, stuck)
    time.sleep(0.3)
    world.Abort(1)
    return 1  # pragma: no cover - Abort does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
