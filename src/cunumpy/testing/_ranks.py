"""Run a function, a script or a module on N MPI ranks from a test, and see every rank's outcome.

The conventions come from the pytest MPI plugins: like pytest-mpiexec and the forking mode of
firedrake's pytest-mpi, the test itself runs in an ordinary pytest process and starts
``mpiexec -n N`` for the code that needs ranks (the ``mpiexec`` next to the interpreter, where
``pip install mpich`` puts it); like ``python -m mpi4py``, a rank that raises aborts the job
instead of leaving the others waiting. Code written for pytest-mpi (``mpiexec -n N python -m
pytest --with-mpi``) runs unchanged as ``run_ranks(N, ["-m", "pytest", "--with-mpi", ...])``.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import pathlib
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cunumpy import config

__all__ = ["RankOutcome", "RanksFailed", "RanksResult", "find_mpiexec", "mpi_status", "run_ranks"]


class RanksFailed(AssertionError):
    """A job of :func:`run_ranks` failed; the message has every rank's outcome."""

    def __init__(self, message: str, result: RanksResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class RankOutcome:
    """What one rank did."""

    rank: int
    status: str
    """``"ok"``, ``"failed"`` (raised, or exited with a non-zero status) or ``"lost"`` (no
    report: killed, crashed, or still running when the job ended)."""
    value: Any = None
    """The function's return value (``"ok"`` calls)."""
    error: str = ""
    """The rank's traceback (``"failed"``)."""
    output: str = ""
    """Everything the rank wrote to standard output and error (also a crash's C-level report,
    and the Python stack a stuck rank dumped when the job ended)."""


@dataclass
class RanksResult:
    """The outcome of a :func:`run_ranks` job."""

    command: list[str]
    returncode: int
    ranks: list[RankOutcome]
    launcher_output: str = ""
    """What ``mpiexec`` itself printed."""
    timed_out: bool = False
    wall_s: float = 0.0
    returns: list[Any] = field(default_factory=list)
    """Each rank's return value, in rank order."""

    @property
    def ok(self) -> bool:
        return (not self.timed_out and self.returncode == 0
                and all(r.status == "ok" for r in self.ranks))

    @property
    def outputs(self) -> list[str]:
        """Each rank's output, in rank order."""
        return [r.output for r in self.ranks]

    def report(self) -> str:
        """Every rank's outcome: tracebacks of failed ranks, output of failed and lost ones."""
        bad = [r for r in self.ranks if r.status != "ok"]
        head = ("timed out: " if self.timed_out else "") + (
            f"{len(bad)} of {len(self.ranks)} ranks failed" if bad else
            f"mpiexec exited with status {self.returncode}")
        lines = [f"{head}: {' '.join(self.command)}"]
        for r in self.ranks:
            if r.status == "ok":
                lines.append(f"--- rank {r.rank}: ok")
                continue
            what = "failed" if r.status == "failed" else (
                "no report (still running when the job ended, or killed; its stack, if it "
                "dumped one, is in its output)")
            lines.append(f"--- rank {r.rank}: {what}")
            if r.error:
                lines.append(r.error.rstrip())
            if r.output.strip():
                lines.append(f"--- rank {r.rank} output:")
                lines.append(_tail(r.output))
        if self.launcher_output.strip() and bad:
            lines.append("--- mpiexec:")
            lines.append(_tail(self.launcher_output))
        return "\n".join(lines)


def _tail(text: str, lines: int = 60) -> str:
    parts = text.rstrip().splitlines()
    if len(parts) <= lines:
        return "\n".join(parts)
    return "\n".join([f"[... {len(parts) - lines} lines before ...]", *parts[-lines:]])


def find_mpiexec() -> list[str] | None:
    """The launcher command: ``CUNUMPY_MPIEXEC``, else the ``mpiexec`` next to the interpreter,
    else the first one on ``PATH`` (None when there is none)."""
    chosen = config.mpiexec_command()
    if chosen:
        return chosen
    beside = pathlib.Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mpiexec")
    return [found] if found else None


@functools.lru_cache(maxsize=8)
def _launcher_flags(command: tuple[str, ...]) -> tuple[str, ...]:
    """Open MPI refuses more ranks than cores and runs as root only when told."""
    try:
        version = subprocess.run([*command, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    if "Open MPI" in version or "OpenRTE" in version or "PRRTE" in version:
        flags = ["--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            flags.append("--allow-run-as-root")
        return tuple(flags)
    return ()


def mpi_status() -> tuple[bool, str]:
    """``(usable, reason)``: whether :func:`run_ranks` can start jobs here (mpi4py imports, its
    MPI library loads, a launcher is found)."""
    try:
        import mpi4py
    except ImportError as exc:
        return False, f"mpi4py is not installed ({exc}); pip install 'cunumpy[mpi]'"
    found = find_mpiexec()
    if not found:
        return False, ("no mpiexec next to the interpreter or on PATH; pip install mpich "
                       "(or set CUNUMPY_MPIEXEC)")
    try:
        done = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; "
                               "print(MPI.Get_library_version().splitlines()[0])"],
                              capture_output=True, text=True, timeout=60,
                              env=config.mpi_environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"mpi4py could not start MPI: {exc}"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return False, f"mpi4py {mpi4py.__version__} cannot load an MPI library: {last}"
    return True, f"mpi4py {mpi4py.__version__}, {done.stdout.strip()}, {found[0]}"


def _job(target: Any, args: tuple[Any, ...], grace: float) -> dict[str, Any]:
    spec: dict[str, Any] = {"sys_path": [p for p in sys.path if p], "grace": grace}
    if callable(target):
        name = getattr(target, "__qualname__", "")
        if "<locals>" in name or "<lambda>" in name or not hasattr(target, "__module__"):
            raise TypeError(f"run_ranks: argument 'target' {target!r} must be a module-level "
                            "function (each rank imports it by name)")
        try:
            path = inspect.getfile(target)
        except TypeError:
            path = ""
        spec.update(kind="call", module=target.__module__, file=path, qualname=name,
                    args=pickle.dumps(args))
        return spec
    if isinstance(target, str | os.PathLike):
        path = os.fspath(target)
        if not os.path.exists(path):
            raise FileNotFoundError(f"run_ranks: script {path!r} does not exist")
        spec.update(kind="script", argv=[os.path.abspath(path), *map(str, args)])
        return spec
    argv = list(target) if isinstance(target, Sequence) else []
    if len(argv) < 2 or argv[0] != "-m":
        raise TypeError("run_ranks: argument 'target' must be a function, a script path, or "
                        f"['-m', 'module', args...]; got {target!r}")
    spec.update(kind="module", argv=[*map(str, argv), *map(str, args)])
    return spec


def run_ranks(n: int, target: Callable[..., Any] | str | os.PathLike | Sequence[str],
              *args: Any, timeout: float = 120.0, env: Mapping[str, str] | None = None,
              cwd: str | os.PathLike | None = None, grace: float = 2.0,
              check: bool = True) -> RanksResult:
    """Run ``target`` on ``n`` MPI ranks (``mpiexec -n n``) and collect every rank's outcome.

    Parameters
    ----------
    n
        Number of ranks.
    target
        A module-level function, called on every rank as ``target(*args)`` (``args`` are
        pickled; the return values come back in :attr:`RanksResult.returns`); or the path of a
        script, run as ``__main__`` with ``args`` as its command-line arguments; or
        ``["-m", "module", ...]``, run like ``python -m module ...``.
    timeout
        Seconds before the job is stopped; ranks still running then write their Python stacks
        into their output first.
    env
        Variables to add to the ranks' environment (which is this process's, without the
        variables of an MPI launcher that may have started it).
    cwd
        Working directory of the ranks.
    grace
        Seconds a failed rank waits for the others before it aborts the job.
    check
        Raise :class:`RanksFailed` (an ``AssertionError``, so a test fails with every rank's
        traceback) when a rank fails, is lost, or the job times out.

    Returns
    -------
    RanksResult
        ``returns``, ``outputs`` and each rank's :class:`RankOutcome`.

    Examples
    --------
    In a test module (the function must be importable by the ranks)::

        def check_sum():
            from mpi4py import MPI
            return MPI.COMM_WORLD.allreduce(1)

        def test_sum():
            assert run_ranks(3, check_sum).returns == [3, 3, 3]
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"run_ranks: argument 'n' must be a positive number of ranks, got {n!r}")
    launcher = find_mpiexec()
    if launcher is None:
        raise RuntimeError(mpi_status()[1])
    spec = _job(target, args, grace)
    jobdir = tempfile.mkdtemp(prefix="cunumpy-ranks-")
    try:
        with open(os.path.join(jobdir, "job.pkl"), "wb") as fh:
            pickle.dump(spec, fh)
        here = str(pathlib.Path(__file__).resolve().parents[2])
        extra = {"PYTHONUNBUFFERED": "1", **(env or {})}
        command = [*launcher, *_launcher_flags(tuple(launcher)), "-n", str(n), sys.executable,
                   "-m", "cunumpy.testing._rank_main", jobdir]
        result = _launch(command, jobdir, n, timeout, config.mpi_environment(extra, here), cwd)
    finally:
        shutil.rmtree(jobdir, ignore_errors=True)
    if check and not result.ok:
        raise RanksFailed(result.report(), result)
    return result


def _launch(command: list[str], jobdir: str, n: int, timeout: float, env: dict[str, str],
            cwd: Any) -> RanksResult:
    start = time.monotonic()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _signal_unfinished(jobdir, n, signal.SIGUSR1)  # their Python stacks, into their logs
        time.sleep(0.5)
        _signal_unfinished(jobdir, n, signal.SIGKILL)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
    wall = time.monotonic() - start
    ranks = [_outcome(jobdir, r) for r in range(n)]
    return RanksResult(command=command, returncode=proc.returncode, ranks=ranks,
                       launcher_output=out or "", timed_out=timed_out, wall_s=wall,
                       returns=[r.value for r in ranks])


def _signal_unfinished(jobdir: str, n: int, sig: int) -> None:
    host = socket.gethostname()
    for r in range(n):
        if os.path.exists(os.path.join(jobdir, f"rank{r}.result")):
            continue
        try:
            with open(os.path.join(jobdir, f"rank{r}.pid")) as fh:
                where = json.load(fh)
            if where["host"] == host:
                os.kill(int(where["pid"]), sig)
        except (OSError, ValueError, KeyError):
            continue


def _outcome(jobdir: str, rank: int) -> RankOutcome:
    try:
        output = pathlib.Path(jobdir, f"rank{rank}.log").read_text(errors="replace")
    except OSError:
        output = ""
    try:
        with open(os.path.join(jobdir, f"rank{rank}.result"), "rb") as fh:
            report = pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError):
        return RankOutcome(rank, "lost", output=output)
    except Exception as exc:  # the value's class cannot be imported here
        return RankOutcome(rank, "ok", value=f"<unreadable return value: {exc}>", output=output)
    if report["ok"]:
        return RankOutcome(rank, "ok", value=report.get("value"), output=output)
    return RankOutcome(rank, "failed", error=report.get("error") or "", output=output)
