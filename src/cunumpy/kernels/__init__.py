"""Hand-written GPU kernels: CUDA (:class:`CudaKernel`), Metal (:class:`MetalKernel`), dispatch.

Importing this module imports neither CuPy nor MLX; engines import them at first launch.
"""

from __future__ import annotations

from cunumpy.kernels._availability import cuda_available, metal_available

__all__ = ["cuda_available", "metal_available"]
