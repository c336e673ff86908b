"""Hand-written GPU kernels: CUDA (:class:`CudaKernel`), Metal (:class:`MetalKernel`), dispatch.

Importing this module imports neither CuPy nor MLX; engines import them at first launch.
"""

from __future__ import annotations

from cunumpy._engines._cuda import CudaCompileError, CudaEngine, CudaLaunchError
from cunumpy._engines._cuda_registry import cuda_engine_names, get_cuda_engine, register_cuda_engine
from cunumpy._engines.emu_metal import EmulatedDeviceArray
from cunumpy._lang.cuda_types import cuda_dtype
from cunumpy.kernels._availability import cuda_available, metal_available
from cunumpy.kernels._mlx_api import metal_kernel
from cunumpy.kernels._texture import Texture
from cunumpy.kernels.cuda import CudaKernel
from cunumpy.kernels.dispatch import (
    Kernel,
    MissingPortError,
    PortFallbackWarning,
    SignatureMismatchError,
    force_port,
    forced_port,
    metal_dispatch_enabled,
    set_metal_dispatch,
    use_metal,
    use_port,
)
from cunumpy.kernels.metal import MetalKernel, metal_asarray
from cunumpy.kernels.metal_library import MetalFunction, MetalLibrary

__all__ = [
    "CudaCompileError",
    "CudaEngine",
    "CudaKernel",
    "CudaLaunchError",
    "EmulatedDeviceArray",
    "Kernel",
    "MetalFunction",
    "MetalKernel",
    "MetalLibrary",
    "MissingPortError",
    "PortFallbackWarning",
    "SignatureMismatchError",
    "Texture",
    "cuda_available",
    "cuda_dtype",
    "cuda_engine_names",
    "force_port",
    "forced_port",
    "get_cuda_engine",
    "metal_asarray",
    "metal_available",
    "metal_dispatch_enabled",
    "metal_kernel",
    "register_cuda_engine",
    "set_metal_dispatch",
    "use_metal",
    "use_port",
]
