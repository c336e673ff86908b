"""``migrate``: send rows (particles) to the ranks that own them now.

Each rank counts its rows per destination (on the device for CuPy arrays: ``bincount``), the
ranks swap the counts (``Alltoall``), the rows are ordered by destination with a stable sort
(so rows to one rank keep their order), and the rows move in one ``Alltoallv`` per array on
the host. On the device all arrays travel together as one table of fixed-size records: packed
by one gather per array, sent once (directly on a CUDA-aware MPI, else through one pinned host
buffer each way), and split again on the device. Rows that stay on their rank never leave the
device.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from cunumpy import profiling
from cunumpy._convert import to_cupy, to_numpy
from cunumpy.mpi._buffers import from_pinned, pinned_pool, to_pinned
from cunumpy.mpi._comm import Problem, TypeProblem, agree, check_comm, load_mpi, state
from cunumpy.mpi._device import check_device, is_device, local_cuda_aware, synchronize

__all__ = ["migrate"]

WHERE = "migrate"


def _describe(a: Any) -> str:
    return f"{np.dtype(a.dtype).name}{list(a.shape)}"


def _arrays_problem(dest: Any, arrays: tuple[Any, ...]) -> tuple[Problem | None, bool]:
    """``(problem, on_device)`` for the arguments' types and shapes on this rank."""
    if not (isinstance(dest, np.ndarray) or is_device(dest)):
        return TypeProblem(f"argument 'dest' must be a NumPy or CuPy array of ranks, got "
                           f"{type(dest).__name__}"), False
    if dest.ndim != 1 or np.dtype(dest.dtype).kind not in "iu":
        return Problem(f"argument 'dest' {_describe(dest)} must be a 1-d array of integer ranks, "
                       "one per row"), False
    sides = set()
    for k, a in enumerate(arrays):
        if not (isinstance(a, np.ndarray) or is_device(a)):
            return TypeProblem(f"argument 'arrays[{k}]' must be a NumPy or CuPy array, got "
                               f"{type(a).__name__}"), False
        if a.dtype.kind == "O":
            return TypeProblem(f"argument 'arrays[{k}]' has dtype object (Python references "
                               "cannot travel between processes)"), False
        if a.ndim < 1 or a.shape[0] != dest.shape[0]:
            rows = a.shape[0] if a.ndim else "no"
            return Problem(f"argument 'arrays[{k}]' {_describe(a)} has {rows} rows but 'dest' "
                           f"has {dest.shape[0]}; every array needs one row per entry of dest"), False
        sides.add(is_device(a))
        if is_device(a):
            problem = check_device(a)
            if problem:
                return Problem(f"argument 'arrays[{k}]' {_describe(a)}: {problem}"), True
    if len(sides) > 1:
        return Problem("the arrays mix NumPy and CuPy arrays; pass them all on the host or all "
                       "on the device"), False
    on_device = sides == {True} or (not arrays and is_device(dest))
    if is_device(dest):
        problem = check_device(dest)
        if problem:
            return Problem(f"argument 'dest' {_describe(dest)}: {problem}"), on_device
    return None, on_device


def _signature(arrays: tuple[Any, ...]) -> tuple:
    return ("sig", f"{len(arrays)} arrays", *(
        f"arrays[{k}] {np.dtype(a.dtype).name} with rows of shape {tuple(a.shape[1:])}"
        for k, a in enumerate(arrays)))


def _counts(xp: Any, dest: Any, size: int) -> tuple[np.ndarray, Any]:
    """Rows per destination (on the host) and the destinations as int64 (on dest's side); the
    last count is the number of rows whose destination is out of range."""
    d = dest.astype(xp.int64, copy=False)
    if xp is np and (d.size == 0 or (d.min() >= 0 and d.max() < size)):  # fewer passes
        return np.append(np.bincount(d, minlength=size), 0).astype(np.int64), d
    valid = (d >= 0) & (d < size)  # one pass and one small copy to the host on the device
    counts = xp.bincount(xp.where(valid, d, size), minlength=size + 1)
    return to_numpy(counts).astype(np.int64), d


def _first_bad(xp: Any, d: Any, dest: Any, size: int) -> str:
    bad = (d < 0) | (d >= size)
    row = int(xp.argmax(bad))
    value = int(dest[row])
    if profiling._active and xp is not np:
        profiling._record("to_host", 16, "migrate: the first bad row of dest")
    return (f"argument 'dest': row {row} goes to rank {value}, outside 0..{size - 1} (the "
            f"communicator has {size} ranks)")


def _displacements(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


_row_types: dict[int, Any] = {}
_row_lock = threading.Lock()


def _row_type(MPI: Any, nbytes: int) -> Any:
    """A committed datatype of ``nbytes`` contiguous bytes (one row), kept for the process."""
    with _row_lock:
        found = _row_types.get(nbytes)
        if found is None:
            found = _row_types[nbytes] = MPI.BYTE.Create_contiguous(nbytes).Commit()
        return found


def _row_bytes(a: Any) -> int:
    return int(a.itemsize * np.prod(a.shape[1:], dtype=np.int64))


def migrate(dest: Any, *arrays: Any, comm: Any = None) -> tuple[Any, ...]:
    """Send row ``i`` of every array to rank ``dest[i]`` (collective).

    On each rank the result holds the rows sent to it, in order of source rank, then of their
    index on the source (so a rank's own staying rows keep their order, after those of lower
    ranks). Every array keeps its dtype and its trailing shape (``(n, 3)`` positions,
    ``(n,)`` ids, ``(n, 2, 2)`` tensors: any dtype).

    Parameters
    ----------
    dest
        One integer rank per row (a NumPy or CuPy array; on the arrays' side, or it is copied
        there).
    *arrays
        NumPy or CuPy arrays (all on one side) with ``len(dest)`` rows each. Every rank must pass
        the same number of arrays, with the same dtypes and trailing shapes.
    comm
        An mpi4py communicator, or None for one process without MPI (every row stays; dest must
        be 0 throughout).

    Returns
    -------
    tuple
        One new array per input array (NumPy or CuPy as the input), with the rows this rank
        received.

    Raises
    ------
    ValueError
        On every rank, naming the argument and the first rank concerned: a destination out of
        range (with the first bad row), arrays whose row count differs from ``dest``'s, a
        device array on a device other than the rank's, or dtypes or trailing shapes that
        differ between ranks.

    Notes
    -----
    The counts are taken where the rows are (``bincount`` on the device for CuPy arrays) and
    only the counts are copied to the host (one small ``to_host`` transfer). Device rows travel
    as one record table: without a CUDA-aware MPI, one ``to_host`` and one ``to_device``
    transfer per call of the rows that change rank; rows that stay never leave the device.
    """
    problem, on_device = _arrays_problem(dest, arrays)
    if comm is None:
        if problem:
            raise problem.kind(f"{WHERE}: {problem} (one process, comm=None)")
        return _migrate_alone(dest, arrays)
    check_comm(comm, WHERE)
    mine = state(comm)
    size, me = comm.Get_size(), comm.Get_rank()
    xp: Any = np
    if on_device:
        import cupy as xp
    counts = None
    if problem is None:
        dest = to_cupy(dest) if on_device else to_numpy(dest)
        if on_device:
            synchronize()  # the kernels that wrote the rows, on every stream
        counts, d64 = _counts(xp, dest, size)
        if counts[size]:
            problem = Problem(_first_bad(xp, d64, dest, size))
    agree(mine.comm, WHERE, problem, _signature(arrays) if problem is None else ("sig", "?"))
    assert counts is not None
    MPI = load_mpi()
    if not arrays:
        return ()
    counts = counts[:size]
    received = np.empty(size, dtype=np.int64)
    mine.comm.Alltoall([counts, MPI.INT64_T], [received, MPI.INT64_T])
    if on_device:
        return _migrate_device(mine.comm, MPI, xp, d64, arrays, counts, received, me)
    order = np.argsort(d64, kind="stable")
    return tuple(_alltoallv_host(mine.comm, MPI, a[order], counts, received) for a in arrays)


def _migrate_alone(dest: Any, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    xp: Any = np
    if is_device(dest):
        import cupy as xp
    d = dest.astype(xp.int64, copy=False)
    bad = d != 0
    if dest.size and bool(bad.any()):
        row = int(xp.argmax(bad))
        raise ValueError(f"{WHERE}: argument 'dest': row {row} goes to rank {int(dest[row])}, "
                         "but there is one process (comm=None): every row stays on rank 0")
    return tuple(a.copy() for a in arrays)


def _alltoallv_host(comm: Any, MPI: Any, rows: np.ndarray, counts: np.ndarray,
                    received: np.ndarray) -> np.ndarray:
    out = np.empty((int(received.sum()), *rows.shape[1:]), dtype=rows.dtype)
    nbytes = _row_bytes(rows)
    if nbytes == 0:  # the same on every rank (the signatures agree)
        return out
    row = _row_type(MPI, nbytes)
    comm.Alltoallv([rows, (counts, _displacements(counts)), row],
                   [out, (received, _displacements(received)), row])
    return out


def _migrate_device(comm: Any, MPI: Any, cupy: Any, d64: Any, arrays: tuple[Any, ...],
                    counts: np.ndarray, received: np.ndarray, me: int) -> tuple[Any, ...]:
    size = counts.size
    widths = [_row_bytes(a) for a in arrays]
    record = sum(widths)
    total = int(received.sum())
    outs = [cupy.empty((total, *a.shape[1:]), dtype=a.dtype) for a in arrays]
    if record == 0:
        return tuple(outs)
    # Rows that change rank first (by destination), then those that stay, in their order.
    order = cupy.argsort(cupy.where(d64 == me, size, d64), kind="stable")
    n = int(d64.shape[0])
    packed = cupy.empty((n, record), dtype=cupy.uint8)
    start = 0
    for a, w in zip(arrays, widths):
        if w:
            packed[:, start:start + w] = cupy.ascontiguousarray(a[order]).view(
                cupy.uint8).reshape(n, w)
        start += w
    send = counts.copy()
    send[me] = 0
    recv = received.copy()
    recv[me] = 0
    moving_out, moving_in = int(send.sum()), int(recv.sum())
    incoming = cupy.empty((moving_in, record), dtype=cupy.uint8)
    row = _row_type(MPI, record)
    spec_send = (send, _displacements(send))
    spec_recv = (recv, _displacements(recv))
    if local_cuda_aware():
        cupy.cuda.get_current_stream().synchronize()  # the packing, before MPI reads it
        comm.Alltoallv([packed[:moving_out], spec_send, row], [incoming, spec_recv, row])
    else:
        what = f"migrate {len(arrays)} arrays: rows staged through pinned host memory"
        pool = pinned_pool()
        with pool.lease(moving_out * record) as out_block, \
                pool.lease(moving_in * record) as in_block:
            host_out = out_block.reshape(moving_out, record)
            host_in = in_block.reshape(moving_in, record)
            if moving_out:
                to_pinned(packed[:moving_out], host_out, what)
            comm.Alltoallv([host_out, spec_send, row], [host_in, spec_recv, row])
            if moving_in:
                from_pinned(host_in, incoming, what)
    before = int(received[:me].sum())
    stay = int(counts[me])
    table = cupy.empty((total, record), dtype=cupy.uint8)
    table[:before] = incoming[:before]
    table[before:before + stay] = packed[moving_out:]
    table[before + stay:] = incoming[before:]
    start = 0
    for out, w in zip(outs, widths):
        if w:
            out.view(cupy.uint8).reshape(total, w)[...] = table[:, start:start + w]
        start += w
    return tuple(outs)
