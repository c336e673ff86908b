"""Hand-written GPU kernels: CUDA (:class:`CudaKernel`), Metal (:class:`MetalKernel`), dispatch.

Importing this module imports neither CuPy nor MLX; engines import them at first launch.
"""

from __future__ import annotations

from cunumpy.kernels._availability import cuda_available, metal_available
from cunumpy.kernels._metal_engines import EmulatedDeviceArray
from cunumpy.kernels.metal import MetalKernel, metal_asarray

__all__ = [
    "EmulatedDeviceArray",
    "MetalKernel",
    "cuda_available",
    "metal_asarray",
    "metal_available",
]
