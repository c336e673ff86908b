"""Numba host versions of the demo and benchmark kernels (imported only when Numba runs them).

``cache=True`` keeps the compiled machine code beside this file, so only the first run on a
machine pays Numba's compilation.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["axpy", "interp", "noop", "push"]


_CHUNK = 4096
"""Particles per block of the push: all steps of one block run while it sits in the cache."""


@numba.njit(parallel=True, cache=True)
def push(pos, vel, dt, nsteps, out):  # pragma: no cover - compiled by Numba
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
