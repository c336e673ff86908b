"""Conversions between NumPy, CuPy and MLX arrays; each real copy is recorded in the profiler."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from cunumpy import config, profiling
from cunumpy._backend import (
    _is_cupy_array,
    _is_mlx_array,
    cupy_stand_in,
    cupy_status,
    get_backend,
)

__all__ = ["to_cunumpy", "to_cupy", "to_numpy"]


def _describe(a: Any) -> str:
    return f"{np.dtype(a.dtype).name}{list(a.shape)}"


def _check_out(out: Any, a: Any) -> np.ndarray:
    """``out`` as given to :func:`to_numpy`, refused unless ``a`` can be copied into it as is."""
    if not isinstance(out, np.ndarray):
        raise TypeError(
            f"to_numpy: out= must be a numpy.ndarray, got {type(out).__name__}; allocate it "
            "with numpy.empty(a.shape, a.dtype)"
        )
    shape, dtype = tuple(a.shape), np.dtype(a.dtype)
    if out.shape != shape or out.dtype != dtype:
        raise ValueError(
            f"to_numpy: out= is {out.dtype.name}{list(out.shape)} but the array is "
            f"{dtype.name}{list(shape)}; give an array of the same shape and dtype"
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(
            "to_numpy: out= must be C-contiguous and writeable; allocate it with "
            "numpy.empty(a.shape, a.dtype)"
        )
    return out


_staging: Any = None
_staging_failed = False
_staging_lock = threading.Lock()


def _cupy_staging(nbytes: int) -> Any:
    """The process's pinned staging pool when a copy of ``nbytes`` should use it, else None."""
    global _staging, _staging_failed
    threshold = config.staging_threshold()
    if threshold is None or nbytes < threshold or _staging_failed:
        return None
    if _staging is None:
        with _staging_lock:
            if _staging is None and not _staging_failed:
                import cupy

                from cunumpy._staging import CupyStaging

                try:
                    _staging = CupyStaging(cupy)
                except Exception:  # pinned memory refused (limits, drivers): plain copies
                    _staging_failed = True
                    return None
    return _staging


def _cupy_to_host(a: Any, out: np.ndarray | None) -> np.ndarray:
    staging = _cupy_staging(a.nbytes)
    if staging is not None and out is not None and a.flags.c_contiguous:
        import cupy

        from cunumpy._pinning import cupy_pinned

        if cupy_pinned(cupy).prepare(out):  # a destination used again: pinned, one DMA
            runtime = cupy.cuda.runtime
            stream = cupy.cuda.get_current_stream()
            runtime.memcpyAsync(out.ctypes.data, a.data.ptr, a.nbytes,
                                runtime.memcpyDeviceToHost, stream.ptr)
            stream.synchronize()
            return out
    if staging is not None and staging.lock.acquire(blocking=False):
        try:
            if not a.flags.c_contiguous:
                import cupy

                a = cupy.ascontiguousarray(a)
            host = np.empty(a.shape, a.dtype) if out is None else out
            staging.to_host(a, host)
            return host
        finally:
            staging.lock.release()
    if out is None:
        return a.get()
    return a.get(out=out)


def to_numpy(a: Any, out: np.ndarray | None = None) -> np.ndarray:
    """Return ``a`` as a NumPy array, copying only when it lives elsewhere.

    A NumPy array is returned as it is (no copy). A CuPy array, an MLX array and an emulator
    device array are copied into a new NumPy array, recorded as ``to_host``. Anything else
    (lists, scalars) goes through :func:`numpy.asarray`, which is not a device transfer.

    Parameters
    ----------
    a
        The array to bring to the host.
    out
        A preallocated, C-contiguous, writeable NumPy array of ``a``'s shape and dtype to copy
        into (returned). Filling a warm array skips the page faults of a fresh one; for a NumPy
        ``a`` it is a plain host copy.

    Notes
    -----
    CuPy arrays of at least ``CUNUMPY_STAGING_THRESHOLD`` bytes (default 16 MiB) are copied in
    chunks through pinned staging buffers, with the host side spread over threads; smaller
    ones through ``cupy.ndarray.get``. An ``out=`` array of 32 MiB or more that is filled a
    second time is pinned in place (``cudaHostRegister``, up to 8 GiB of such arrays, unpinned
    when the array is freed) and filled in one DMA from then on. Either way the copy is one
    ``to_host`` event.
    """
    if out is not None:
        if not hasattr(a, "shape") or not hasattr(a, "dtype"):
            a = np.asarray(a)
        out = _check_out(out, a)
    if isinstance(a, np.ndarray):
        if out is None:
            return a
        np.copyto(out, a)
        return out
    if _is_cupy_array(a):
        host = _cupy_to_host(a, out)
        if profiling._active and not cupy_stand_in():  # the CuPy stand-in records its copies
            profiling._record("to_host", host.nbytes, f"to_numpy from cupy {_describe(host)}")
        return host
    if getattr(type(a), "_cunumpy_device_array", False):  # an emulator's device array
        host = a.to_numpy()
        if out is None:
            return host
        np.copyto(out, host)
        return out
    if _is_mlx_array(a):
        host = np.array(a, copy=True)
        if profiling._active:
            profiling._record("to_host", host.nbytes, f"to_numpy from mlx {_describe(host)}")
        if out is None:
            return host
        np.copyto(out, host)
        return out
    return np.asarray(a)


def to_cupy(a: Any) -> Any:
    """Return ``a`` as a CuPy array, copying only when it is not one already.

    Host arrays of at least ``CUNUMPY_STAGING_THRESHOLD`` bytes (default 16 MiB) go through
    pinned staging buffers (see :func:`to_numpy`); the copy is one ``to_device`` event.

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
    device = _host_to_cupy(cupy, host)
    if profiling._active and not cupy_stand_in():  # the CuPy stand-in records its copies
        profiling._record("to_device", device.nbytes, f"to_cupy {_describe(device)}")
    return device


def _host_to_cupy(cupy: Any, host: np.ndarray) -> Any:
    staging = _cupy_staging(host.nbytes)
    if (
        staging is not None
        and host.flags.c_contiguous
        and host.dtype.isnative
        and staging.lock.acquire(blocking=False)
    ):
        try:
            device = cupy.empty(host.shape, host.dtype)
            staging.to_device(host, device)
            return device
        finally:
            staging.lock.release()
    return cupy.asarray(host)


def to_cunumpy(a: Any) -> Any:
    """Return ``a`` as an array of the active backend (see :func:`cunumpy.get_backend`)."""
    if get_backend() == "cupy":
        return to_cupy(a)
    return to_numpy(a)
