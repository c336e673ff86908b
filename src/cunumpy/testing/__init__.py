"""Test helpers for kernel ports. Importing :mod:`cunumpy` does not import this module or pytest.

- :func:`assert_kernels_agree`: run each port of a :class:`~cunumpy.kernels.Kernel` (on the GPU,
  or on the CPU emulators) and compare every output with the host kernel's.
- :func:`tolerance_for` and :data:`DEFAULT_TOLERANCES`: the per-dtype default tolerances.
- :func:`mlx_metal_on_cpu`: inside it, MLX's ``mx.fast.metal_kernel`` runs custom kernels on the
  CPU emulator (test an MLX project's kernels on Linux CI).
- The pytest plugin (:mod:`cunumpy.testing.plugin`, registered automatically) provides the
  ``backend``, ``cuda_engine``, ``metal_engine`` and ``mlx_metal_on_cpu`` fixtures and the ``requires_cuda`` /
  ``requires_metal`` markers.

pytest itself is imported only when a check has to skip or fail a test.
"""

from __future__ import annotations

from cunumpy.testing._agree import DEFAULT_TOLERANCES, assert_kernels_agree, tolerance_for
from cunumpy.testing._mlx import mlx_metal_on_cpu

__all__ = ["DEFAULT_TOLERANCES", "assert_kernels_agree", "mlx_metal_on_cpu", "tolerance_for"]
