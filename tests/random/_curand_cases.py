"""The inputs of ``curand_cases.cu`` and one function that runs them on a CUDA engine.

Shared by ``tools/record_curand.py`` (which stores the H200's outputs in ``curand_h200.npz``)
and the tests, so that both run exactly the same launches.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "curand_cases.cu"
EXPECTED = HERE / "curand_h200.npz"
GENERATORS = ("xorwow", "philox", "mrg32k3a")
NU, NF, ND, NP = 41, 48, 48, 24

_SEEDS = [0, 1, 42, 1234, 0xFFFFFFFF, 2**32, 2**32 + 5, 0xDEADBEEFCAFEF00D, 2**64 - 1]
_SUBS = [0, 1, 2, 3, 7, 100, 12345, 2**20 + 3, 2**32 + 7, 2**40 + 1, 2**55 + 11, 2**63 + 5]
_OFFS = [0, 1, 2, 3, 4, 5, 7, 100, 1001, 123456, 2**32 + 1, 2**40 + 17, 2**63 - 1]
_SKIPS = [0, 1, 3, 4, 5, 17, 1000, 2**32 + 3, 2**45 + 9, 2**64 - 1]
N_CASES = 36
LAMBDAS = [0.1, 0.5, 1.0, 3.7, 10.0, 30.0, 63.9, 64.0, 80.0, 150.0, 500.0, 1000.0, 1999.0,
           2500.0, 4000.0, 4000.5, 5000.0, 20000.0, 1e6]
POISSON_STREAMS = (0, 1, 3, 4, 5, 6)
"""Cases whose (seed, subsequence, offset) the Poisson kernels use: subsequences below 2^51
(MRG32k3a's zero state above that never ends a Poisson draw, on the GPU as here)."""


def cases() -> dict[str, np.ndarray]:
    """``seed``, ``subsequence``, ``offset``, ``skip`` (uint64[N_CASES]) of the main kernels."""
    k = np.arange(N_CASES)
    return {
        "seed": np.array([_SEEDS[i % len(_SEEDS)] for i in k], dtype=np.uint64),
        "subsequence": np.array([_SUBS[(i * 5) % len(_SUBS)] for i in k], dtype=np.uint64),
        "offset": np.array([_OFFS[(i * 7) % len(_OFFS)] for i in k], dtype=np.uint64),
        "skip": np.array([_SKIPS[(i * 3) % len(_SKIPS)] for i in k], dtype=np.uint64),
    }


def poisson_cases() -> dict[str, np.ndarray]:
    """One stream per (stream, lambda) pair: ``seed``, ``subsequence``, ``offset``, ``lam``."""
    base = cases()
    rows = [(s, lam) for s in POISSON_STREAMS for lam in LAMBDAS]
    return {
        "seed": np.array([base["seed"][s] for s, _ in rows], dtype=np.uint64),
        "subsequence": np.array([base["subsequence"][s] for s, _ in rows], dtype=np.uint64),
        "offset": np.array([base["offset"][s] for s, _ in rows], dtype=np.uint64),
        "lam": np.array([lam for _, lam in rows], dtype=np.float64),
    }


@functools.cache
def outputs(engine: str) -> dict[str, np.ndarray]:
    """:func:`run_all` on ``engine`` (``"emu-cuda"`` or ``"cupy"``), once per process."""
    xp: Any = np
    if engine == "cupy":
        import cupy as xp
    return run_all(engine, xp)


def run_all(engine: str, xp: Any = np, kernels: dict | None = None) -> dict[str, np.ndarray]:
    """Every output of ``curand_cases.cu`` on ``engine``, as NumPy arrays keyed
    ``<generator>_u`` / ``_f`` / ``_d`` / ``_p``.

    ``xp`` builds the arguments (``cupy`` for a device engine); ``kernels`` caches the compiled
    :class:`~cunumpy.kernels.CudaKernel` objects between calls.
    """
    from cunumpy.kernels import CudaKernel

    kernels = {} if kernels is None else kernels
    source = SOURCE.read_text()

    def kernel(name: str) -> CudaKernel:
        key = (engine, name)
        if key not in kernels:
            kernels[key] = CudaKernel(source, name, engine=engine, options=("-std=c++17",))
        return kernels[key]

    c = {k: xp.asarray(v) for k, v in cases().items()}
    p = {k: xp.asarray(v) for k, v in poisson_cases().items()}
    n, m = N_CASES, len(poisson_cases()["lam"])
    out: dict[str, np.ndarray] = {}
    for gen, g in enumerate(GENERATORS):
        u = xp.zeros(n * NU, dtype=np.uint32)
        f = xp.zeros(n * NF, dtype=np.float32)
        d = xp.zeros(n * ND, dtype=np.float64)
        kernel("cases")(np.int32(gen), np.int32(n), c["seed"], c["subsequence"], c["offset"],
                        c["skip"], u, f, d, n_threads=n, block=64)
        pois = xp.zeros(m * NP, dtype=np.uint32)
        args = (np.int32(m), p["seed"], p["subsequence"], p["offset"], p["lam"], pois)
        kernel("poisson")(np.int32(gen), *args, n_threads=m, block=64)
        if g == "philox":
            kernel("poisson")(np.int32(3), *args, n_threads=m, block=64)
        host = (lambda a: a.get()) if hasattr(u, "get") else np.asarray
        out[f"{g}_u"] = host(u).reshape(n, NU)
        out[f"{g}_f"] = host(f).reshape(n, NF)
        out[f"{g}_d"] = host(d).reshape(n, ND)
        out[f"{g}_p"] = host(pois).reshape(m, NP)
    return out
