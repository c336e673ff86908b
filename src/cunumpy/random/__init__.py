"""Random numbers that are the same on every engine: cuRAND's Philox4x32-10 stream.

A Monte Carlo kernel has three versions in cunumpy: the host version (NumPy or CuPy), its CUDA
port (which calls cuRAND's device API) and its Metal port. With one counter-based stream for all
three, the ports can be checked against the host element by element:

- :class:`Philox4x32_10` gives the stream on the host, vectorised over NumPy or CuPy arrays of
  ``seed`` / ``subsequence`` / ``offset``: the numbers of
  ``curand_init(seed, subsequence, offset, &s)`` followed by ``curand``, ``curand_uniform``,
  ``curand_normal``, ... (float and double forms), equal to the GPU's;
- a CUDA port includes ``<curand_kernel.h>`` as usual: on the ``cupy`` engine cuRAND itself, on
  ``emu-cuda`` the emulator's cuRAND, which gives the same numbers;
- a Metal port writes ``#include <cunumpy/random.h>`` in its header (or a Metal library's
  source) and calls the same functions on a ``curandStatePhilox4_32_10_t`` (float forms only:
  Metal GPUs have no double); every Metal engine receives the text of :func:`metal_header`.

For many ranks, :func:`rank_streams` gives each rank its own range of subsequences, and
:func:`curand_states` makes the state arrays that CUDA kernels keep between launches.

Every other name is the active backend's own ``random`` module's (``numpy.random`` or
``cupy.random``), looked up at each access: ``xp.random.default_rng(0)`` keeps working with
``import cunumpy as xp``.
"""

from __future__ import annotations

from typing import Any as _Any

from cunumpy.random._philox import Philox4x32_10
from cunumpy.random._streams import (
    METAL_INCLUDE,
    STATE_DTYPES,
    curand_states,
    metal_header,
    rank_streams,
    rank_subsequences,
)


def __getattr__(name: str) -> _Any:
    from cunumpy.random._philox import backend_namespace

    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(backend_namespace().random, name)
    except AttributeError:
        raise AttributeError(f"module 'cunumpy.random' has no attribute {name!r} (nor has the "
                             "active backend's random module)") from None


def __dir__() -> list[str]:
    from cunumpy.random._philox import backend_namespace

    return sorted(set(__all__) | {n for n in dir(backend_namespace().random)
                                  if not n.startswith("_")})


__all__ = [
    "METAL_INCLUDE",
    "STATE_DTYPES",
    "Philox4x32_10",
    "curand_states",
    "metal_header",
    "rank_streams",
    "rank_subsequences",
]
