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
"""

from __future__ import annotations

from cunumpy.random._philox import Philox4x32_10
from cunumpy.random._streams import (
    METAL_INCLUDE,
    STATE_DTYPES,
    curand_states,
    metal_header,
    rank_streams,
    rank_subsequences,
)

__all__ = [
    "METAL_INCLUDE",
    "STATE_DTYPES",
    "Philox4x32_10",
    "curand_states",
    "metal_header",
    "rank_streams",
    "rank_subsequences",
]
