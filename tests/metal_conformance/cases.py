"""Metal conformance kernels: MSL bodies written as a Metal programmer would, each with its
arguments and a NumPy reference.

A :class:`Case` is engine-neutral. ``make_args(rng)`` draws the inputs (NumPy arrays, Python
numbers) and the output arrays; ``reference(*inputs)`` computes the expected outputs on host
copies of the inputs. ``harness.py`` launches the case through :class:`cunumpy.kernels.MetalKernel`
on whichever engine is active (MLX on an Apple GPU, the CPU emulator elsewhere), so the same
text is checked by both.

Assumptions about the hardware that a kernel relies on are stated next to it: SIMD groups of 32
lanes (every Apple GPU), quad groups of 4, ``dispatchThreads`` semantics (exactly ``n_threads``
threads, partial edge threadgroups).
"""

from __future__ import annotations

# The topic modules register their cases in _case.CASES when imported, in this order.
from . import cases_compute, cases_reductions, cases_types  # noqa: F401  (registration)
from ._case import CASES, Case, Launch

__all__ = ["CASES", "Case", "Launch"]
