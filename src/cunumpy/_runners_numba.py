"""Numba host versions of the demo and benchmark kernels (imported only when Numba runs them).

``cache=True`` keeps the compiled machine code beside this file, so only the first run on a
machine pays Numba's compilation.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["axpy", "interp", "noop", "push"]


@numba.njit(parallel=True, cache=True)
def push(pos, vel, dt, nsteps, out):  # pragma: no cover - compiled by Numba
    for i in numba.prange(pos.size):
        x = pos[i]
        d = vel[i] * dt
        for _ in range(nsteps):
            x += d
        out[i] = x


@numba.njit(parallel=True, cache=True)
def axpy(a, x, y, out):  # pragma: no cover - compiled by Numba
    for i in numba.prange(x.size):
        out[i] = a * x[i] + y[i]


@numba.njit(parallel=True, cache=True)
def interp(pos, fld, m, out):  # pragma: no cover - compiled by Numba
    for i in numba.prange(pos.size):
        p = pos[i]
        j = min(max(int(p), 0), m - 2)
        w = p - np.float32(j)
        out[i] = (np.float32(1.0) - w) * fld[j] + w * fld[j + 1]


@numba.njit(cache=True)
def noop(x):  # pragma: no cover - compiled by Numba
    x[0] += 1.0
