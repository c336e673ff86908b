"""``halo_exchange``: fill the ghost cells of a decomposed field from its neighbours, in place.

Three ways to move the data, chosen per call from the field (one plan per layout, kept with the
communicator):

- **host, C-contiguous**: every message is an MPI subarray datatype over the field itself (MPI
  packs the faces; no copy of cunumpy's own);
- **host, other strides**: all faces are gathered into one buffer (``numpy.take`` over the
  field's memory) and scattered back after the exchange;
- **device** (CuPy): the same single gather and scatter, as kernels on the device; the packed
  faces go to MPI directly when the library is CUDA-aware, else through one pinned host buffer
  each way (one ``to_host`` and one ``to_device`` transfer per call).

Every receive is posted first, then every send: all faces, edges and corners are in flight at
once. Sides whose neighbour is this rank itself (a periodic axis of one process) are copied
locally, without MPI.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as _field
from typing import Any

import numpy as np

from cunumpy.mpi import _layout
from cunumpy.mpi._buffers import from_pinned, pinned_pool, to_pinned
from cunumpy.mpi._comm import Problem, TypeProblem, agree, check_comm, load_mpi, state
from cunumpy.mpi._device import check_device, is_device, local_cuda_aware, synchronize

__all__ = ["halo_exchange"]

WHERE = "halo_exchange"


def _describe(a: Any) -> str:
    return f"{np.dtype(a.dtype).name}{list(a.shape)}"


def _check_width(width: Any) -> int:
    if isinstance(width, bool) or not isinstance(width, int | np.integer) or width < 1:
        raise ValueError(f"{WHERE}: argument 'width' must be a whole number of ghost cells, at "
                         f"least 1, got {width!r}")
    return int(width)


def _local_problem(field: Any, d: int, width: int) -> Problem | None:
    """What is wrong with ``field`` on this rank (None: nothing)."""
    if not (isinstance(field, np.ndarray) or is_device(field)):
        return TypeProblem(f"argument 'field' must be a NumPy or CuPy array, got "
                           f"{type(field).__name__}")
    if field.dtype.kind == "O":
        return TypeProblem("argument 'field' has dtype object (Python references cannot travel "
                           "between processes)")
    return _shape_problem(field, d, width)


def _shape_problem(field: Any, d: int, width: int) -> Problem | None:
    desc = f"argument 'field' {_describe(field)}"
    if field.ndim < d:
        return Problem(f"{desc} has {field.ndim} axes but the communicator decomposes {d}; the "
                       f"first {d} axes of the field are the decomposed ones")
    for j, n in enumerate(field.shape[:d]):
        if n < 2 * width + 1:
            return Problem(f"{desc}: axis {j} has {n} cells, fewer than 2*width+1 = "
                           f"{2 * width + 1} ({width} ghost cells at each end and at least one "
                           "interior cell)")
        if n - 2 * width < width:
            return Problem(f"{desc}: axis {j} has {n - 2 * width} interior cells, fewer than "
                           f"the width {width}: its ghost cells would need cells of more than one "
                           "neighbour; use fewer ranks along that axis or a smaller width")
    if any(s % field.itemsize for s in field.strides):
        return Problem(f"{desc} has strides {field.strides} that are not multiples of its item "
                       "size; pass a copy")
    if any(s == 0 and n > 1 for n, s in zip(field.shape, field.strides)):
        return Problem(f"{desc} has a zero stride (a broadcast view): its cells overlap; pass a "
                       "copy")
    if is_device(field):
        problem = check_device(field)
        if problem:
            return Problem(f"{desc}: {problem}")
    elif not field.flags.writeable:
        return Problem(f"{desc} is read-only; the ghost cells are written in place")
    return None


@dataclass
class _Plan:
    """How one layout (shape, strides, dtype, width, neighbours) is exchanged."""

    kind: str
    """``"types"`` (host subarray datatypes), ``"host"`` or ``"device"`` (gather/scatter)."""
    remote: list[_layout.Message]
    local: list[_layout.Message]
    types: list[tuple[Any, Any]] = _field(default_factory=list)
    """Send and receive datatypes of each remote message (``"types"`` plans)."""
    send_index: Any = None
    recv_index: Any = None
    local_send: Any = None
    local_recv: Any = None
    spans: list[tuple[int, int]] = _field(default_factory=list)
    """Item ``(start, stop)`` of each remote message in the packed buffers."""
    items: int = 0
    """Items in the packed buffers (each way)."""

    def free(self) -> None:
        for send, recv in self.types:
            for t in (send, recv):
                try:
                    t.Free()
                except Exception:  # MPI is finalizing
                    pass
        self.types.clear()


def _make_plan(field: Any, d: int, width: int, peers: dict) -> _Plan:
    shape = tuple(field.shape)
    msgs = _layout.messages(shape[:d], width, peers)
    remote = [m for m in msgs if m.peer != _layout.SELF]
    local = [m for m in msgs if m.peer == _layout.SELF]
    trailing = shape[d:]
    device = is_device(field)
    if not device and field.flags.c_contiguous:
        plan = _Plan("types", remote, local)
        if not remote:
            return plan
        MPI = load_mpi()
        cell = MPI.BYTE.Create_contiguous(field.itemsize * int(np.prod(trailing, dtype=np.int64)))
        for m in remote:
            pair = []
            for box in (m.send, m.recv):
                t = cell.Create_subarray(list(shape[:d]), [s.stop - s.start for s in box],
                                         [s.start for s in box], order=MPI.ORDER_C)
                pair.append(t.Commit())
            plan.types.append((pair[0], pair[1]))
        cell.Free()
        return plan
    if device:
        import cupy as xp
    else:
        xp = np
    plan = _Plan("device" if device else "host", remote, local)
    item_strides = tuple(s // field.itemsize for s in field.strides)
    _, low = _layout.flat_view(xp, field)

    def offsets(boxes: list[tuple[slice, ...]]) -> Any:
        parts = [_layout.box_offsets(xp, b, trailing, item_strides, low) for b in boxes]
        return xp.concatenate(parts) if parts else xp.zeros(0, dtype=xp.int64)

    plan.send_index = offsets([m.send for m in remote])
    plan.recv_index = offsets([m.recv for m in remote])
    plan.local_send = offsets([m.send for m in local])
    plan.local_recv = offsets([m.recv for m in local])
    per_cell = int(np.prod(trailing, dtype=np.int64))
    start = 0
    for m in remote:
        plan.spans.append((start, start + m.cells * per_cell))
        start += m.cells * per_cell
    plan.items = start
    return plan


def _check_layouts(comm: Any, coords: list[int], shape: tuple[int, ...]) -> None:
    """Ranks that share a slab of the decomposition must agree on its extent (collective)."""
    every = comm.allgather((tuple(coords), shape))
    for j in range(len(coords)):
        seen: dict[int, tuple[int, int]] = {}
        for rank, (c, s) in enumerate(every):
            first = seen.setdefault(c[j], (rank, s[j]))
            if first[1] != s[j]:
                raise ValueError(
                    f"{WHERE}: argument 'field' has {s[j]} cells along axis {j} on rank {rank} "
                    f"but {first[1]} on rank {first[0]}, which holds the same slab of that axis "
                    f"(Cartesian coordinate {c[j]}); ranks with the same coordinate along an "
                    "axis must have the same extent along it, or their faces would not match"
                )


def halo_exchange(field: Any, width: int, comm: Any = None) -> None:
    """Fill the ghost cells of ``field`` from its neighbours, in place (collective).

    The first ``comm.ndim`` axes of ``field`` are decomposed over the Cartesian communicator
    ``comm`` and carry ``width`` ghost cells at each end; trailing axes (components, species)
    travel whole. Every ghost cell that lies inside the global domain receives the value of the
    interior cell it stands for: faces, edges and corners (the diagonal neighbours a 9- or
    27-point stencil reads), across periodic boundaries too. Ghost cells past a non-periodic
    edge of the domain are left as they are (set your boundary condition there).

    With ``comm=None`` (one process, no MPI) every axis of ``field`` is decomposed over one
    periodic process: the ghost cells are filled from the opposite side of the field itself.

    Parameters
    ----------
    field
        A NumPy or CuPy array, any dtype, written in place. Each decomposed axis must have at
        least ``2 * width + 1`` cells (and at least ``width`` interior cells). Ranks that share
        a slab of the decomposition must have the same extent along it, and every rank must
        pass the same dtype and trailing shape.
    width
        Ghost cells at each end of each decomposed axis (1 for 3- to 27-point stencils).
    comm
        A Cartesian mpi4py communicator (``comm.Create_cart(...)``), or None.

    Raises
    ------
    ValueError
        On every rank, naming the argument and the first rank concerned, when any rank's
        arguments are wrong or the ranks disagree on dtype, trailing shape or width.
    TypeError
        ``comm`` is not an mpi4py communicator, or has no Cartesian topology
        (:class:`~cunumpy.mpi.MPIArgumentError`, also a ``ValueError``).

    Notes
    -----
    Every receive is posted before any send, so all ``3**d - 1`` messages are in flight at once.
    Device faces are packed by one gather kernel and unpacked by one scatter kernel; without a
    CUDA-aware MPI they go through one pinned host buffer each way (a ``to_host`` and a
    ``to_device`` transfer per call, see :func:`cunumpy.profiling.count_transfers`). The
    arguments are checked on every call with one small ``Allreduce``; a layout seen for the
    first time costs one ``allgather`` more.
    """
    width = _check_width(width)
    if comm is None:
        problem = _local_problem(field, getattr(field, "ndim", 0), width)
        if problem:
            raise problem.kind(f"{WHERE}: {problem} (one process, comm=None)")
        d = field.ndim
        if field.size == 0:
            return
        peers = dict.fromkeys(_layout.directions(d), _layout.SELF)
        _run(_make_plan(field, d, width, peers), field, None)
        return
    check_comm(comm, WHERE, cartesian=True)
    mine = state(comm)
    dims, periods, coords = comm.Get_topo()
    d = len(dims)
    problem = _local_problem(field, d, width)
    signature = ("sig", "?") if problem else (
        "sig", f"field {np.dtype(field.dtype).name} with trailing shape {tuple(field.shape[d:])}",
        f"width {width}")
    layout_key = tuple(field.shape[:d])
    if agree(mine.comm, WHERE, problem, signature,
             new_layout=layout_key not in mine.validated):
        _check_layouts(mine.comm, coords, layout_key)
    mine.validated.add(layout_key)
    if field.size == 0:
        return
    device = is_device(field)
    key = ("halo", tuple(field.shape), tuple(field.strides), np.dtype(field.dtype).str, width,
           device, field.device.id if device else None,
           bool(field.flags.c_contiguous) and not device)

    def make() -> _Plan:
        peers = _layout.neighbours(dims, [bool(p) for p in periods], coords,
                                   comm.Get_cart_rank, comm.Get_rank())
        return _make_plan(field, d, width, peers)

    _run(mine.plan(key, make), field, mine.comm)


def _run(plan: _Plan, field: Any, comm: Any) -> None:
    if plan.kind == "types":
        _run_types(plan, field, comm)
    elif plan.kind == "host":
        _run_gather(plan, field, comm, np, staged=False)
    else:
        import cupy

        synchronize()  # the kernels that wrote the field, on every stream
        _run_gather(plan, field, comm, cupy, staged=not local_cuda_aware())


def _run_types(plan: _Plan, field: np.ndarray, comm: Any) -> None:
    if not plan.remote:
        for m in plan.local:
            field[m.recv] = field[m.send]
        return
    requests = [comm.Irecv([field, 1, recv], source=m.peer, tag=m.recv_tag)
                for m, (_, recv) in zip(plan.remote, plan.types)]
    for m in plan.local:
        field[m.recv] = field[m.send]
    requests += [comm.Isend([field, 1, send], dest=m.peer, tag=m.send_tag)
                 for m, (send, _) in zip(plan.remote, plan.types)]
    load_mpi().Request.Waitall(requests)


def _run_gather(plan: _Plan, field: Any, comm: Any, xp: Any, staged: bool) -> None:
    flat, _ = _layout.flat_view(xp, field)
    if plan.local:
        flat[plan.local_recv] = flat.take(plan.local_send)
    if not plan.remote:
        return
    MPI = load_mpi()
    what = f"halo_exchange field {_describe(field)}: faces staged through pinned host memory"
    send = flat.take(plan.send_index)
    recv = xp.empty(plan.items, dtype=field.dtype)
    if not staged:
        requests = _receive(comm, MPI, plan, recv)
        if xp is not np:
            xp.cuda.get_current_stream().synchronize()  # the gather, before MPI reads it
        MPI.Request.Waitall(requests + _send(comm, MPI, plan, send))
        flat[plan.recv_index] = recv
        return
    pool = pinned_pool()
    with pool.lease(send.nbytes) as send_block, pool.lease(recv.nbytes) as recv_block:
        host_send = send_block.view(send.dtype)
        host_recv = recv_block.view(recv.dtype)
        requests = _receive(comm, MPI, plan, host_recv)
        to_pinned(send, host_send, what)
        MPI.Request.Waitall(requests + _send(comm, MPI, plan, host_send))
        from_pinned(host_recv, recv, what)
    flat[plan.recv_index] = recv


def _receive(comm: Any, MPI: Any, plan: _Plan, recv: Any) -> list[Any]:
    return [comm.Irecv([recv[a:b], MPI.BYTE], source=m.peer, tag=m.recv_tag)
            for m, (a, b) in zip(plan.remote, plan.spans)]


def _send(comm: Any, MPI: Any, plan: _Plan, send: Any) -> list[Any]:
    return [comm.Isend([send[a:b], MPI.BYTE], dest=m.peer, tag=m.send_tag)
            for m, (a, b) in zip(plan.remote, plan.spans)]
