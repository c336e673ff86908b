"""The particle push of the MetalKernel spec, run through every engine this machine has.

Each engine computes the same push (``NSTEPS`` steps of ``x += v * dt`` on every coordinate of
``n`` particles in float32) from the same inputs. The result is compared with a float64
reference, and the time is split into copies to the device, the kernel and copies back, with the
transfers that :func:`cunumpy.profiling.count_transfers` recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from cunumpy import _runners
from cunumpy._console import Console

__all__ = ["DemoReport", "default_particles", "run_demo"]

GPU_PARTICLES = 4 * 2**20
"""Particles pushed when a real GPU engine is available (the spec's 4 M)."""
EMULATION_PARTICLES = 2**20
"""Particles pushed when only the host and the CPU emulators are available (well under a
minute on two cores)."""
_WARMUP_PARTICLES = 128
"""Size of the untimed first run that compiles each GPU or emulated kernel. The host engines
(NumPy, Numba) warm up on all the particles instead: Numba picks its serial or parallel variant
by size (:mod:`cunumpy._runners_numba`), so the timed run is a steady-state call, as in
``cunumpy bench``."""


@dataclass
class EngineOutcome:
    """What one engine did in the demo."""

    engine: str
    available: bool
    reason: str
    error: float | None = None
    agrees: bool | None = None
    failure: str | None = None
    result: _runners.RunResult | None = None
    compile_s: float = 0.0
    particles: int = 0
    """Particles this engine pushed (the emulators may push only the first ones)."""

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "engine": self.engine,
            "label": _runners.LABELS[self.engine],
            "available": self.available,
            "reason": self.reason,
            "max_relative_error": self.error,
            "agrees": self.agrees,
            "failure": self.failure,
            "first_run_s": self.compile_s,
            "particles": self.particles,
        }
        if self.result is not None:
            r = self.result
            d.update(
                to_device_s=r.to_device_s,
                kernel_s=r.kernel_s,
                to_host_s=r.to_host_s,
                details=dict(r.details),
                transfers={
                    "to_device": r.to_device,
                    "to_host": r.to_host,
                    "bytes_to_device": r.bytes_to_device,
                    "bytes_to_host": r.bytes_to_host,
                },
            )
        return d


@dataclass
class DemoReport:
    particles: int
    nsteps: int
    dt: float
    rtol: float
    outcomes: list[EngineOutcome]
    wall_s: float

    @property
    def ok(self) -> bool:
        """True when every available engine ran and agreed with the reference."""
        ran = [o for o in self.outcomes if o.available]
        return bool(ran) and all(o.agrees for o in ran)

    def as_dict(self) -> dict[str, Any]:
        return {
            "particles": self.particles,
            "coordinates": 3,
            "nsteps": self.nsteps,
            "dt": self.dt,
            "rtol": self.rtol,
            "ok": self.ok,
            "wall_s": self.wall_s,
            "engines": [o.as_dict() for o in self.outcomes],
        }


def default_particles(engines: list[str]) -> int:
    """The spec's 4 M particles with a real GPU, fewer when only emulation is available."""
    if any(e in _runners.REAL_GPU and _runners.engine_status(e)[0] for e in engines):
        return GPU_PARTICLES
    return EMULATION_PARTICLES


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds else "-"


def _bytes(n: int) -> str:
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if n >= 2**10:
        return f"{n / 2**10:.1f} KiB"
    return f"{n} B"


def run_demo(
    particles: int | None = None,
    nsteps: int = 200,
    emulator_particles: int | None = None,
    dt: float = 1e-3,
    engines: list[str] | None = None,
    seed: int = 0,
    rtol: float | None = None,
    console: Console | None = None,
) -> DemoReport:
    """Push ``particles`` particles through every engine in ``engines`` and report.

    Parameters
    ----------
    particles : int, optional
        Number of particles (3 float32 coordinates each). Default: :func:`default_particles`.
    nsteps : int, default 200
        Steps of the push, a compile-time constant (``NSTEPS``) of the GPU ports.
    emulator_particles : int, optional
        The CPU emulators push only the first ``emulator_particles`` particles. Default: all of
        them when ``particles`` is given, at most :data:`EMULATION_PARTICLES` otherwise (so that
        the default run on a GPU machine does not wait minutes for the emulators).
    dt : float, default 1e-3
        Time step.
    engines : list of str, optional
        Engines to try (default all of :data:`cunumpy._runners.ENGINES`); those that cannot
        run here are reported with the reason.
    seed : int, default 0
        Seed of the random positions and velocities.
    rtol : float, optional
        Largest relative error that counts as agreement; default from the number of steps.
    console : Console, optional
        Where to print progress and results.
    """
    console = console or Console()
    engines = list(engines or _runners.ENGINES)
    for e in engines:
        if e not in _runners.ENGINES:
            raise ValueError(f"unknown engine {e!r}; known engines: {', '.join(_runners.ENGINES)}")
    if particles is None:
        particles = default_particles(engines)
        if emulator_particles is None:
            emulator_particles = min(particles, EMULATION_PARTICLES)
    emulator_particles = min(particles, emulator_particles or particles)
    if emulator_particles < 1:
        raise ValueError(f"emulator_particles={emulator_particles} must be at least 1")
    if particles < 1 or 3 * particles >= 2**31:
        raise ValueError(f"particles={particles} must be between 1 and {(2**31 - 1) // 3}")
    start = time.perf_counter()
    workload = _runners.Push(nsteps=nsteps, dt=dt)
    tol = workload.rtol if rtol is None else float(rtol)
    rng = np.random.default_rng(seed)
    console.print(
        f"cunumpy demo: particle push, {particles:,} particles x 3 float32 coordinates, "
        f"NSTEPS={nsteps}, dt={workload.dt:g}"
    )
    with console.status("making the particles and the float64 reference"):
        inp = workload.make_inputs((particles, 3), rng)
        reference = workload.reference(inp)
        warm = workload.make_inputs((_WARMUP_PARTICLES, 3), rng)
    outcomes = []
    for engine in engines:
        ok, reason = _runners.engine_status(engine)
        outcome = EngineOutcome(engine, ok, reason)
        outcomes.append(outcome)
        if not ok:
            continue
        label = f"{engine} ({_runners.LABELS[engine]})"
        count = emulator_particles if engine in _runners.EMULATED else particles
        outcome.particles = count
        # A prefix of the particles: rows of a C-ordered (n, 3) array stay contiguous.
        mine = inp if count == particles else _runners.Inputs(
            {k: a[:count] for k, a in inp.arrays.items()}, inp.scalars, (count, 3))
        host = _runners.FAMILY[engine] == "host"
        try:  # an untimed first run: compilation, cache loading and first touches stay out
            with console.status(f"{label}: first run (untimed), compiles the kernel"):
                t0 = time.perf_counter()
                _runners.run(workload, engine, mine if host else warm)
                outcome.compile_s = time.perf_counter() - t0
            with console.status(f"{label}: pushing {count:,} particles"):
                result = _runners.run(workload, engine, mine)
        except Exception as exc:  # a failing port is a result of the demo, not a crash
            outcome.failure = f"{type(exc).__name__}: {exc}"
            outcome.agrees = False
            continue
        outcome.result = result
        outcome.error = _runners.max_relative_error(result.output, reference[:count])
        outcome.agrees = outcome.error <= tol
    report = DemoReport(particles, nsteps, workload.dt, tol, outcomes, time.perf_counter() - start)
    _print_report(report, console)
    return report


def _print_report(report: DemoReport, console: Console) -> None:
    columns = ["engine", "runs on", "particles", "max rel. error", "agrees", "to device",
               "kernel", "to host", "transfers (count, bytes)"]
    rows, styles = [], []
    for o in report.outcomes:
        if not o.available:
            continue
        if o.result is None:
            rows.append([o.engine, _runners.LABELS[o.engine], f"{o.particles:,}", "-", "FAILED",
                         "-", "-", "-", "-"])
            styles.append("red")
            continue
        r = o.result
        transfers = (
            f"{r.to_device} to_device ({_bytes(r.bytes_to_device)}), "
            f"{r.to_host} to_host ({_bytes(r.bytes_to_host)})"
        )
        rows.append([
            o.engine, _runners.LABELS[o.engine], f"{o.particles:,}", f"{o.error:.2e}",
            "yes" if o.agrees else "NO",
            _ms(r.to_device_s), _ms(r.kernel_s), _ms(r.to_host_s), transfers,
        ])
        styles.append(None if o.agrees else "red")
    console.table(
        f"agreement with the float64 reference (tolerance {report.rtol:.1e}) and time per phase",
        columns, rows, styles,
    )
    failed = [o for o in report.outcomes if o.available and o.failure]
    for o in failed:
        console.print(f"{o.engine}: FAILED: {o.failure}", style="red")
    missing = [o for o in report.outcomes if not o.available]
    if missing:
        console.print("not run:")
        for o in missing:
            console.print(f"  {o.engine} ({_runners.LABELS[o.engine]}): not available here: "
                          f"{o.reason}")
    compiled = [o for o in report.outcomes if o.result is not None and o.compile_s]
    if compiled:
        console.print(
            "first runs (untimed, not in the table; the GPU and emulated ports on a few "
            "particles): " + ", ".join(f"{o.engine} {o.compile_s:.2f} s" for o in compiled)
        )
    numba = [o for o in report.outcomes if o.engine == "numba" and o.result is not None]
    if numba:
        from cunumpy._runners_numba import summary

        console.print(summary())
    verdict = (
        "every engine agrees with the reference"
        if report.ok
        else "some engine did NOT agree with the reference (exit status 1)"
    )
    console.print(f"{verdict}; {report.wall_s:.1f} s in all", style=None if report.ok else "red")

