"""Conversions between NumPy, CuPy and MLX arrays; each real copy is recorded in the profiler."""

from __future__ import annotations

from typing import Any

import numpy as np

from cunumpy import profiling
from cunumpy._backend import _is_cupy_array, _is_mlx_array, cupy_status, get_backend

__all__ = ["to_cunumpy", "to_cupy", "to_numpy"]


def _describe(a: Any) -> str:
    return f"{np.dtype(a.dtype).name}{list(a.shape)}"


def to_numpy(a: Any) -> np.ndarray:
    """Return ``a`` as a NumPy array, copying only when it lives elsewhere.

    A NumPy array is returned as it is (no copy). A CuPy array, an MLX array and an emulator
    device array are copied into a new NumPy array, recorded as ``to_host``. Anything else
    (lists, scalars) goes through :func:`numpy.asarray`, which is not a device transfer.
    """
    if isinstance(a, np.ndarray):
        return a
    if _is_cupy_array(a):
        host = a.get()
        if profiling._active:
            profiling._record("to_host", host.nbytes, f"to_numpy from cupy {_describe(host)}")
        return host
    if getattr(type(a), "_cunumpy_device_array", False):  # an emulator's device array
        return a.to_numpy()
    if _is_mlx_array(a):
        host = np.array(a, copy=True)
        if profiling._active:
            profiling._record("to_host", host.nbytes, f"to_numpy from mlx {_describe(host)}")
        return host
    return np.asarray(a)


def to_cupy(a: Any) -> Any:
    """Return ``a`` as a CuPy array, copying only when it is not one already.

    Raises
    ------
    RuntimeError
        CuPy is not usable here; the message says why.
    """
    if _is_cupy_array(a):
        return a
    ok, reason = cupy_status()
    if not ok:
        raise RuntimeError(f"to_cupy needs a working CuPy: {reason}")
    import cupy

    host = to_numpy(a)
    device = cupy.asarray(host)
    if profiling._active:
        profiling._record("to_device", device.nbytes, f"to_cupy {_describe(device)}")
    return device


def to_cunumpy(a: Any) -> Any:
    """Return ``a`` as an array of the active backend (see :func:`cunumpy.get_backend`)."""
    if get_backend() == "cupy":
        return to_cupy(a)
    return to_numpy(a)
