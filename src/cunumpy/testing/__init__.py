"""Test helpers for kernel ports, and the active backend's testing functions.

- :func:`assert_kernels_agree`: run each port of a :class:`~cunumpy.kernels.Kernel` (on the GPU,
  or on the CPU emulators) and compare every output with the host kernel's.
- :func:`tolerance_for` and :data:`DEFAULT_TOLERANCES`: the per-dtype default tolerances.
- Every public name of the active backend's testing module: ``numpy.testing`` on the NumPy
  backend, ``cupy.testing`` on the CuPy backend (``cunumpy.testing.assert_allclose``,
  ``assert_array_equal``, ...), looked up at each access, so a backend switch is followed.
  A name ``cupy.testing`` lacks (``assert_raises``, ``assert_warns``, ...) comes from
  ``numpy.testing``.
  CuPy is never imported here: its testing module is used only while the CuPy backend (which
  has imported CuPy already) is active.
- :func:`install_cupy_on_cpu`: make ``import cupy`` give a strict CuPy stand-in whose arrays
  live in pretend device memory and whose kernels run on the CPU emulator (test CuPy code on
  CI without a GPU; ``CUNUMPY_CUPY_ON_CPU=1`` does it for a pytest run).
- :func:`run_ranks`: run a function, a script or a module on N MPI ranks (``mpiexec``) and
  see every rank's traceback when one fails (:class:`RanksFailed`).
- :func:`mlx_metal_on_cpu`: inside it, MLX's ``mx.fast.metal_kernel`` runs custom kernels on the
  CPU emulator (test an MLX project's kernels on Linux CI).
- :func:`torch_mps_on_cpu`: inside it, PyTorch's ``torch.mps.compile_shader`` returns a library
  whose kernels run on CPU tensors on the CPU emulator (test a PyTorch project's Metal shaders
  on Linux CI).
- The pytest plugin (:mod:`cunumpy.testing.plugin`, registered automatically) provides the
  ``backend``, ``cuda_engine``, ``metal_engine``, ``mlx_metal_on_cpu`` and ``torch_mps_on_cpu`` fixtures and the
  ``requires_cuda`` / ``requires_metal`` markers.

pytest itself is imported only when a check has to skip or fail a test.
"""

from __future__ import annotations

import importlib as _importlib
from types import ModuleType as _ModuleType
from typing import Any as _Any

from cunumpy.testing._agree import DEFAULT_TOLERANCES, assert_kernels_agree, tolerance_for
from cunumpy.testing._markers import PortsNotRunError, PortsNotRunWarning
from cunumpy.testing._mlx import mlx_metal_on_cpu
from cunumpy.testing._ranks import RankOutcome, RanksFailed, RanksResult, run_ranks
from cunumpy.testing._torch_mps import torch_mps_on_cpu
from cunumpy.testing.cupy_on_cpu._activate import CupyOnCpuRefused, install_cupy_on_cpu

__all__ = [
    "DEFAULT_TOLERANCES",
    "CupyOnCpuRefused",
    "PortsNotRunError",
    "PortsNotRunWarning",
    "RankOutcome",
    "RanksFailed",
    "RanksResult",
    "assert_kernels_agree",
    "install_cupy_on_cpu",
    "mlx_metal_on_cpu",
    "run_ranks",
    "tolerance_for",
    "torch_mps_on_cpu",
]
"""cunumpy's own testing names; the backend's testing names are reached through attributes."""


def _backend_testing() -> list[tuple[str, _ModuleType]]:
    """The testing modules to search, in order: the active backend's, then NumPy's."""
    from cunumpy._backend import get_backend

    name = get_backend() or "numpy"
    modules = [(name, _importlib.import_module(f"{name}.testing"))]
    if name != "numpy":
        modules.append(("numpy", _importlib.import_module("numpy.testing")))
    return modules


def __getattr__(name: str) -> _Any:
    if name.startswith("_"):
        raise AttributeError(f"module 'cunumpy.testing' has no attribute {name!r}")
    modules = _backend_testing()
    for _, module in modules:
        try:
            return getattr(module, name)
        except AttributeError:
            continue
    looked = " nor ".join(f"{backend}.testing" for backend, _ in modules)
    raise AttributeError(
        f"module 'cunumpy.testing' has no attribute {name!r} (neither cunumpy's test helpers "
        f"nor {looked} provide it)"
    )


def __dir__() -> list[str]:
    public = {n for _, m in _backend_testing() for n in dir(m) if not n.startswith("_")}
    return sorted(set(globals()) | public)
