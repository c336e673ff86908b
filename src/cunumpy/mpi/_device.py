"""One device per rank, and whether the MPI library takes device pointers.

:func:`bind_device` gives each rank of a node its own GPU (the node-local rank comes from
``MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)``, not from launcher variables). :func:`cuda_aware`
answers from ``CUNUMPY_MPI_CUDA_AWARE`` when it is set, else from the library's own query
(``MPIX_Query_cuda_support``, which MPICH and Open MPI export, and ``MPIX_GPU_query_support``),
else from a probe that sends a device buffer to itself in a child process, so that a library
that is not CUDA-aware crashes the child, not the job.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from typing import Any

from cunumpy import config
from cunumpy._backend import _is_cupy_array, get_backend
from cunumpy.mpi._comm import check_comm, load_mpi

__all__ = ["bind_device", "check_device", "cuda_aware", "is_device", "library_cuda_support",
           "local_cuda_aware", "synchronize"]


def is_device(a: Any) -> bool:
    """Whether ``a`` is a CuPy array (device memory)."""
    return _is_cupy_array(a)


def _cupy() -> Any:
    import cupy

    return cupy


def check_device(a: Any) -> str | None:
    """Why the device array ``a`` cannot be used on this rank (None when it can): it lives on a
    device other than the rank's current one."""
    cupy = _cupy()
    here = cupy.cuda.runtime.getDevice()
    there = a.device.id
    if there == here:
        return None
    return (f"it lives on device {there} but this rank's current device is {here} (the one "
            f"bind_device chose); make the array after bind_device, or inside "
            f"cupy.cuda.Device({here})")


def synchronize() -> None:
    """Wait for every kernel and copy queued on the current device (all streams)."""
    _cupy().cuda.runtime.deviceSynchronize()


def _node_local_rank(comm: Any) -> int:
    if comm is None:
        return 0
    MPI = load_mpi()
    check_comm(comm, "bind_device")
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        return local.Get_rank()
    finally:
        local.Free()


def bind_device(comm: Any = None) -> int | None:
    """Give this rank its own GPU: the node-local rank modulo the node's device count.

    Collective over ``comm``. The node-local rank is this rank's rank among the ranks that share
    its memory (``MPI_Comm_split_type`` with ``MPI_COMM_TYPE_SHARED``), so it is right whatever
    launcher started the job. On the CuPy backend the chosen device becomes the current one
    (``cupy.cuda.Device(d).use()``) and its number is returned; on the NumPy backend nothing is
    bound and the result is None. With ``comm=None`` (one process) device 0 is chosen.

    Call it right after ``import cunumpy``, before the first CUDA call of the program (before
    any CuPy array, kernel or stream of your own): arrays made earlier stay on the device that
    was current then. With ``CUNUMPY_BACKEND=cupy`` the import's check of the GPU runs a tiny
    computation on the default device, which leaves a small CUDA context there on every rank;
    where that matters, give each rank one visible device (``CUDA_VISIBLE_DEVICES``), and
    ``bind_device`` then picks device 0 of each.

    Parameters
    ----------
    comm
        An mpi4py communicator (usually ``MPI.COMM_WORLD``), or None.

    Returns
    -------
    int or None
        The device now current on this rank, or None on the NumPy backend.
    """
    local = _node_local_rank(comm)
    if get_backend() != "cupy":
        return None
    cupy = _cupy()
    count = cupy.cuda.runtime.getDeviceCount()
    device = local % count
    cupy.cuda.Device(device).use()
    return device


def library_cuda_support() -> bool | None:
    """The MPI library's own answer (a local call): True or False where it exports
    ``MPIX_Query_cuda_support`` or ``MPIX_GPU_query_support``, else None."""
    MPI = load_mpi()
    try:
        lib = ctypes.CDLL(MPI.__file__)  # its symbols and those of the MPI library it loaded
    except OSError:
        return None
    query = getattr(lib, "MPIX_Query_cuda_support", None)
    if query is not None:
        query.restype, query.argtypes = ctypes.c_int, []
        if query():
            return True
    gpu = getattr(lib, "MPIX_GPU_query_support", None)
    if gpu is not None:
        gpu.restype = ctypes.c_int
        gpu.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        supported = ctypes.c_int(0)
        if gpu(0, ctypes.byref(supported)) == 0:  # 0: MPIX_GPU_SUPPORT_CUDA; 0 back: success
            return bool(supported.value)
    return False if query is not None else None


_known: bool | None = None
"""This process's answer, once :func:`cuda_aware` found one."""


def local_cuda_aware() -> bool:
    """Whether to hand this rank's device buffers to MPI directly (no collective call): the
    override, else an answer found before, else the library's query, else False (staging)."""
    override = config.mpi_cuda_aware()
    if override is not None:
        return override
    if _known is not None:
        return _known
    return bool(library_cuda_support())


_PROBE = """
import sys
import cupy
from mpi4py import MPI
cupy.cuda.Device(int(sys.argv[1])).use()
a = cupy.arange(1, 5, dtype=cupy.float32)
b = cupy.zeros(4, dtype=cupy.float32)
cupy.cuda.runtime.deviceSynchronize()
MPI.COMM_SELF.Sendrecv([a, MPI.FLOAT], 0, 7, [b, MPI.FLOAT], 0, 7)
print("cunumpy-probe", bool((b == a).all()))
"""


def probe_in_child(device: int, timeout: float = 60.0) -> bool:
    """Send a device buffer to itself through MPI in a fresh child process (its own one-rank
    job); True when the data arrived. A library that is not CUDA-aware crashes the child or
    sends the wrong bytes: False either way, and this process is untouched."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(device)],
                              env=config.mpi_environment(), capture_output=True, text=True,
                              timeout=timeout, cwd=os.path.dirname(sys.executable) or None)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "cunumpy-probe True" in done.stdout


def cuda_aware(comm: Any = None) -> bool:
    """Whether the MPI library takes device (CuPy) buffers directly.

    Collective over ``comm``: every rank gets the same answer (True only when it holds on every
    rank). In order: False on the NumPy backend; ``CUNUMPY_MPI_CUDA_AWARE=0|1`` when set; the
    library's own query where it has one (``MPIX_Query_cuda_support``,
    ``MPIX_GPU_query_support``); else a probe: one rank per node sends a device buffer to
    itself in a child process (a library that is not CUDA-aware crashes the child, never the
    job). Call it with the same communicator on every rank (usually ``MPI.COMM_WORLD``), after
    :func:`bind_device`. The answer is kept for the process; :func:`buffer`, :func:`halo_exchange` and
    :func:`migrate` use it from then on (before it is known they use the override or the
    library's query, and stage through host memory when neither says yes).

    With ``comm=None`` (one process without MPI) the override decides, else False.
    """
    global _known
    if get_backend() != "cupy":
        return False
    override = config.mpi_cuda_aware()
    if comm is None:
        return bool(override)
    MPI = load_mpi()
    check_comm(comm, "cuda_aware")
    if override is not None:
        return override
    if _known is None:
        answer = library_cuda_support()
        if answer is None:  # no query: one probe per node, shared within the node
            local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
            try:
                mine = None
                if local.Get_rank() == 0:
                    mine = probe_in_child(_cupy().cuda.runtime.getDevice())
                answer = local.bcast(mine, root=0)
            finally:
                local.Free()
        _known = bool(comm.allreduce(bool(answer), op=MPI.LAND))
    return _known
