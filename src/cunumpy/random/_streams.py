"""State arrays for CUDA kernels, the Metal header, and per-rank streams for MPI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cunumpy._lang.cuda_types import TOOLKIT_STRUCTS
from cunumpy._lang.library_headers import library_header_text
from cunumpy.random._philox import Philox4x32_10, backend_namespace

METAL_INCLUDE = "cunumpy/random.h"
"""What a Metal kernel's header includes to get the Philox stream (``#include <cunumpy/random.h>``)."""

STATE_DTYPES: dict[str, np.dtype] = {
    "xorwow": TOOLKIT_STRUCTS["curandStateXORWOW_t"][0],
    "philox": TOOLKIT_STRUCTS["curandStatePhilox4_32_10_t"][0],
    "mrg32k3a": TOOLKIT_STRUCTS["curandStateMRG32k3a_t"][0],
}
"""The GPU's layout of each cuRAND state (48, 64 and 48 bytes) as a NumPy structured dtype."""

DEFAULT_PER_RANK = 2**40
"""Subsequences reserved for each rank by :func:`rank_subsequences` (2**24 ranks fit)."""


def metal_header() -> str:
    """The Metal text of ``<cunumpy/random.h>``: Philox4x32-10 with cuRAND's names.

    ``curandStatePhilox4_32_10_t``, ``curand_init``, ``skipahead``, ``skipahead_sequence``,
    ``curand``, ``curand4``, ``curand_uniform(4)``, ``curand_normal(2, 4)``,
    ``curand_log_normal(2, 4)`` (no double forms: Metal GPUs have no double). Every Metal
    engine inlines it where a kernel includes it; code that builds Metal source by hand can
    paste this text instead.
    """
    return library_header_text(METAL_INCLUDE)


def curand_states(n: int, generator: str = "xorwow", *, xp: Any = None) -> Any:
    """Zeroed memory for ``n`` cuRAND states, as a ``uint8[n, size]`` array.

    A kernel parameter ``curandState*`` (or ``curandStatePhilox4_32_10_t*``, ...) takes it on
    every engine (CuPy has no structured dtypes; on NumPy ``a.view(STATE_DTYPES[g])`` shows the
    fields). ``generator`` is ``"xorwow"`` (``curandState``), ``"philox"`` or ``"mrg32k3a"``.
    """
    if generator not in STATE_DTYPES:
        raise ValueError(f"cunumpy.random.curand_states: generator must be one of "
                         f"{sorted(STATE_DTYPES)}, not {generator!r}")
    if int(n) != n or n < 0:
        raise ValueError(f"cunumpy.random.curand_states: n must be a count >= 0, not {n!r}")
    xp = backend_namespace() if xp is None else xp
    return xp.zeros((int(n), STATE_DTYPES[generator].itemsize), dtype=np.uint8)


def _rank_size(comm: Any, rank: int | None, size: int | None) -> tuple[int, int]:
    if comm is not None:
        if hasattr(comm, "Get_rank"):  # an mpi4py communicator
            rank, size = comm.Get_rank(), comm.Get_size()
        elif hasattr(comm, "rank") and hasattr(comm, "size"):
            rank, size = comm.rank, comm.size
        else:
            rank, size = comm
    if rank is None or size is None:
        raise TypeError("cunumpy.random: give a communicator (comm=MPI.COMM_WORLD, or anything "
                        "with rank and size) or rank= and size=")
    rank, size = int(rank), int(size)
    if not 0 <= rank < size:
        raise ValueError(f"cunumpy.random: rank {rank} is not in [0, size={size})")
    return rank, size


def rank_subsequences(comm: Any = None, *, rank: int | None = None, size: int | None = None,
                      per_rank: int = DEFAULT_PER_RANK) -> range:
    """The subsequences this rank owns: ``range(rank * per_rank, (rank + 1) * per_rank)``.

    Ranks never share a subsequence, so a kernel that calls
    ``curand_init(seed, first + i, 0, &s)`` with ``first = rank_subsequences(comm).start``
    draws numbers no other rank draws. ``comm`` is an mpi4py communicator, an object with
    ``rank`` and ``size``, or a ``(rank, size)`` pair (mpi4py is never imported here).
    """
    rank, size = _rank_size(comm, rank, size)
    if per_rank < 1 or size * per_rank > 2**64:
        raise ValueError(f"cunumpy.random: {size} ranks of {per_rank} subsequences do not fit "
                         "in the 2**64 subsequences of a seed; pass a smaller per_rank")
    return range(rank * per_rank, (rank + 1) * per_rank)


def rank_streams(seed: int, n: int, comm: Any = None, *, rank: int | None = None,
                 size: int | None = None, offset: int = 0, per_rank: int = DEFAULT_PER_RANK,
                 xp: Any = None) -> Philox4x32_10:
    """``n`` Philox streams of this rank: subsequences ``rank_subsequences(...)[:n]``.

    Stream ``i`` of rank ``r`` equals a CUDA port's ``curand_init(seed, r * per_rank + i,
    offset, &s)``.
    """
    subs = rank_subsequences(comm, rank=rank, size=size, per_rank=per_rank)
    if not 0 <= n <= per_rank:
        raise ValueError(f"cunumpy.random.rank_streams: n={n} streams do not fit in the "
                         f"{per_rank} subsequences of a rank")
    first = np.uint64(subs.start)
    return Philox4x32_10(seed, first + np.arange(n, dtype=np.uint64), offset, xp=xp)


def header_file() -> Path:
    """Where ``<cunumpy/random.h>`` lives (the CUDA emulator shares its Philox core)."""
    from cunumpy._lang.library_headers import library_header_path

    return library_header_path(METAL_INCLUDE)
