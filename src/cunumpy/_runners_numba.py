"""Numba host versions of the demo and benchmark kernels (imported only when Numba runs them).

Each kernel exists twice: a plain ``@njit`` loop and an ``@njit(parallel=True)`` one. The
public functions (:func:`push`, :func:`axpy`, :func:`interp`) call the serial one below
:data:`PARALLEL_MIN_ELEMENTS` elements and the parallel one from there on, as a user who
measured would. Why: a ``parallel=True`` call hands its loop to Numba's threading layer, and on
a machine whose cores are shared (other processes running), a worker thread that the scheduler
has parked makes the whole call wait for the next scheduler tick. Measured on a loaded 2-core
Linux machine (Numba 0.68, OpenMP layer, medians): axpy on 1,024 elements took 7.98 ms in
parallel against 0.001 ms serial, push 8.0 ms against 0.010 ms; at 2**20 elements the parallel
loop wins (axpy 0.25 ms against 0.49 ms, interp 0.57 ms against 2.4 ms) and a stall is at most
a few times the work. The workqueue layer does not stall, but cost 0.025 ms per call and gave
no speed-up on two cores (axpy at 2**20: 0.51 ms against 0.45 ms serial); TBB was not
installed. Under heavier load (load average 4.8 on the same two cores) a stall grew to ~20 ms
and the parallel loop lost even at 2**20 (axpy 20 ms against 1.0 ms serial); at 2**22 push and
interp still gained a little (114 ms against 120 ms, 53 ms against 59 ms). No fixed size suits
every load; 2**20 is where an idle machine gains and the bench's small sizes never stall.
cunumpy does not choose the layer (that is the process's choice, through
``NUMBA_THREADING_LAYER``); :func:`describe` says which one ran, and each bench and demo row
says which variant.

``cache=True`` keeps the compiled machine code beside this file, so only the first run on a
machine pays Numba's compilation; the serial and the parallel variants are separate functions,
so their cache entries never mix.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = ["PARALLEL_MIN_ELEMENTS", "axpy", "describe", "interp", "noop", "push", "uses_parallel"]

PARALLEL_MIN_ELEMENTS = 2**20
"""From this many elements on, the ``parallel=True`` variant runs (see the module docstring)."""

_CHUNK = 4096
"""Particles per block of the push: all steps of one block run while it sits in the cache."""


def uses_parallel(n: int) -> bool:
    """True when a call on ``n`` elements runs the ``parallel=True`` variant."""
    return n >= PARALLEL_MIN_ELEMENTS


def _layer() -> str | None:
    try:
        return str(numba.threading_layer())
    except ValueError:  # no parallel function has run in this process yet
        return None


def describe(n: int) -> dict[str, Any]:
    """How a call on ``n`` elements runs: variant, threading layer (once one ran) and threads."""
    parallel = uses_parallel(n)
    return {
        "parallel": parallel,
        "threading_layer": _layer() if parallel else None,
        "threads": int(numba.get_num_threads()) if parallel else 1,
    }


def summary() -> str:
    """One line for reports: the rule, and the threading layer if a parallel call ran."""
    layer = _layer()
    ran = (
        f"threading layer {layer}, {numba.get_num_threads()} threads" if layer
        else "no parallel call ran"
    )
    return (
        f"numba: @njit below {PARALLEL_MIN_ELEMENTS:,} elements, @njit(parallel=True) from there "
        f"on ({ran})"
    )


# --------------------------------------------------------------------------- push
@numba.njit(parallel=True, cache=True)
def _push_parallel(pos, vel, dt, nsteps, out):  # pragma: no cover - compiled by Numba
    # Blocks of particles in parallel; each block runs all its steps as whole-block array
    # updates, which vectorise (a per-particle loop over the steps does not: each step
    # depends on the previous one) and stay in the cache.
    n = pos.size
    for b in numba.prange((n + _CHUNK - 1) // _CHUNK):
        start = b * _CHUNK
        stop = min(start + _CHUNK, n)
        x = pos[start:stop].copy()
        d = vel[start:stop] * dt
        for _ in range(nsteps):
            x += d
        out[start:stop] = x


@numba.njit(cache=True)
def _push_serial(pos, vel, dt, nsteps, out):  # pragma: no cover - compiled by Numba
    n = pos.size
    for b in range((n + _CHUNK - 1) // _CHUNK):
        start = b * _CHUNK
        stop = min(start + _CHUNK, n)
        x = pos[start:stop].copy()
        d = vel[start:stop] * dt
        for _ in range(nsteps):
            x += d
        out[start:stop] = x


def push(pos: np.ndarray, vel: np.ndarray, dt: Any, nsteps: int, out: np.ndarray) -> None:
    """``out = pos + nsteps * (vel * dt)``, one step at a time (float32)."""
    fn = _push_parallel if uses_parallel(out.size) else _push_serial
    fn(pos, vel, dt, nsteps, out)


# --------------------------------------------------------------------------- axpy
@numba.njit(parallel=True, cache=True)
def _axpy_parallel(a, x, y, out):  # pragma: no cover - compiled by Numba
    for i in numba.prange(x.size):
        out[i] = a * x[i] + y[i]


@numba.njit(cache=True)
def _axpy_serial(a, x, y, out):  # pragma: no cover - compiled by Numba
    for i in range(x.size):
        out[i] = a * x[i] + y[i]


def axpy(a: Any, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out = a * x + y``."""
    fn = _axpy_parallel if uses_parallel(out.size) else _axpy_serial
    fn(a, x, y, out)


# --------------------------------------------------------------------------- interp
@numba.njit(parallel=True, cache=True)
def _interp_parallel(pos, fld, m, out):  # pragma: no cover - compiled by Numba
    for i in numba.prange(pos.size):
        p = pos[i]
        j = min(max(int(p), 0), m - 2)
        w = p - np.float32(j)
        out[i] = (np.float32(1.0) - w) * fld[j] + w * fld[j + 1]


@numba.njit(cache=True)
def _interp_serial(pos, fld, m, out):  # pragma: no cover - compiled by Numba
    for i in range(pos.size):
        p = pos[i]
        j = min(max(int(p), 0), m - 2)
        w = p - np.float32(j)
        out[i] = (np.float32(1.0) - w) * fld[j] + w * fld[j + 1]


def interp(pos: np.ndarray, fld: np.ndarray, m: int, out: np.ndarray) -> None:
    """Linear interpolation of ``fld`` (``m`` points) at ``pos``."""
    fn = _interp_parallel if uses_parallel(out.size) else _interp_serial
    fn(pos, fld, m, out)


@numba.njit(cache=True)
def noop(x):  # pragma: no cover - compiled by Numba
    x[0] += 1.0
