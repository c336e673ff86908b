"""What the ranks of the multi-rank tests run (imported by every rank through run_ranks).

``everything`` runs all the checks of one job size on the active backend (NumPy, or CuPy with
``CUNUMPY_BACKEND=cupy``): halo exchanges against a global array, migrations against the rows
every rank sent, the bad inputs (the same error on every rank), counted transfers, ``buffer``,
and the distributed particle push against the serial run. A failed check raises on its rank
(run_ranks shows every rank's traceback); the summary it returns lets the test check that the
checks ran.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np

SENTINEL = -7


def _xp() -> Any:
    import cunumpy as xp

    return xp


def _bounds(n: int, parts: int) -> list[int]:
    return [0, *np.cumsum([len(b) for b in np.array_split(np.arange(n), parts)]).tolist()]


def _dtype_for(i: int) -> tuple[np.dtype, tuple[int, ...]]:
    kinds = [(np.float32, ()), (np.float64, (2,)), (np.int32, ()), (np.complex64, (3, 2)),
             (np.int16, (2,)), (np.float32, (1,))]
    dtype, trailing = kinds[i % len(kinds)]
    return np.dtype(dtype), trailing


def halo_case(world: Any, d: int, periods: list[bool], width: int, dtype: np.dtype,
              trailing: tuple[int, ...], strided: bool) -> None:
    """One exchange on a field decomposed over a fresh Cartesian communicator, against the
    global array (periodic wrap; the sentinel stays past non-periodic edges)."""
    from mpi4py import MPI

    from cunumpy.mpi import halo_exchange

    xp = _xp()
    dims = MPI.Compute_dims(world.Get_size(), d)
    cart = world.Create_cart(dims, periods=periods)
    try:
        shape = (9, 8, 7)[:d]
        glob = (np.arange(int(np.prod(shape + trailing))).reshape(shape + trailing) + 1)
        glob = glob.astype(dtype)
        coords = cart.Get_coords(cart.Get_rank())
        lo = [_bounds(n, k)[c] for n, k, c in zip(shape, dims, coords)]
        hi = [_bounds(n, k)[c + 1] for n, k, c in zip(shape, dims, coords)]
        local = tuple(h - lo_ + 2 * width for lo_, h in zip(lo, hi)) + trailing
        host = np.full(local, SENTINEL, dtype=dtype)
        inner = tuple(slice(width, -width) for _ in range(d))
        host[inner] = glob[tuple(slice(a, b) for a, b in zip(lo, hi))]
        if strided:  # the same field as every other column of a wider array
            wide = xp.full((local[0], 2 * local[1], *local[2:]), SENTINEL, dtype=dtype)
            field = wide[:, ::2]
            field[...] = xp.asarray(host)
        else:
            field = xp.asarray(host)
        halo_exchange(field, width, cart)
        index, valid = [], None
        for j in range(d):
            g = lo[j] + np.arange(local[j]) - width
            ok = np.ones(local[j], bool) if periods[j] else (g >= 0) & (g < shape[j])
            index.append(g % shape[j])
            valid = ok if valid is None else valid[..., None] & ok
        expected = glob[np.ix_(*index)].copy()
        expected[~valid] = SENTINEL
        got = xp.to_numpy(field)
        if not np.array_equal(got, expected):
            bad = np.argwhere(got != expected)[:5].tolist()
            raise AssertionError(
                f"rank {world.Get_rank()} coords {coords}: halo d={d} periods={periods} "
                f"width={width} {dtype.name}{trailing} strided={strided}: cells {bad} differ")
    finally:
        cart.Free()


def halo_cases(world: Any) -> int:
    count = 0
    for i, (d, kind, width) in enumerate(itertools.product(
            (2, 3), ("periodic", "open", "mixed"), (1, 2))):
        periods = [kind == "periodic" or (kind == "mixed" and j == 0) for j in range(d)]
        dtype, trailing = _dtype_for(i)
        halo_case(world, d, periods, width, dtype, trailing, strided=i % 3 == 1)
        count += 1
    return count


def migrate_case(world: Any, seed: int, mode: str) -> int:
    """Rows of several dtypes and trailing shapes to random (or fixed) ranks, against what
    every rank sent: source order, then original index; nothing lost."""
    from mpi4py import MPI

    from cunumpy.mpi import migrate

    xp = _xp()
    rank, size = world.Get_rank(), world.Get_size()
    n = 0 if (size > 2 and rank == 1) else 4 + 3 * rank
    ids = rank * 1000 + np.arange(n, dtype=np.int64)
    if mode == "random":
        dest = np.random.default_rng(seed + rank).integers(0, size, n)
    elif mode == "stay":
        dest = np.full(n, rank)
    else:  # everything to the last rank
        dest = np.full(n, size - 1, dtype=np.int32)

    def attributes(i: np.ndarray) -> tuple[np.ndarray, ...]:
        pos = (i[:, None] * np.array([1, 2, 3])).astype(np.float32)
        tens = ((i * (1 + 1j))[:, None, None] * np.ones((2, 2))).astype(np.complex64)
        return pos, tens, (i % 3 == 0), (i % 251).astype(np.uint8)

    arrays = [ids, *attributes(ids)]
    device_dest = xp.asarray(dest) if seed % 2 else dest  # a host dest for device rows too
    out = migrate(device_dest, *(xp.asarray(a) for a in arrays), comm=world)
    out = [xp.to_numpy(a) for a in out]
    everyone = world.allgather((ids, dest))
    expected = np.concatenate([i[d == rank] for i, d in everyone])
    for got, want in zip(out, [expected, *attributes(expected)]):
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            raise AssertionError(f"rank {rank}: migrate {mode} gave {got.dtype}{got.shape} "
                                 f"{got.ravel()[:6]}, expected {want.dtype}{want.shape} "
                                 f"{want.ravel()[:6]}")
    total = world.allreduce(out[0].size, op=MPI.SUM)
    if total != world.allreduce(n, op=MPI.SUM):
        raise AssertionError(f"migrate {mode}: rows not conserved")
    return int(out[0].size)


def _raises(what: str, call: Any, pattern: str, kind: type[Exception] = ValueError) -> str:
    try:
        call()
    except kind as exc:
        if not re.search(pattern, str(exc)):
            raise AssertionError(f"{what}: message {exc} does not match {pattern!r}") from exc
        return str(exc)
    raise AssertionError(f"{what}: no {kind.__name__} raised")


def error_cases(world: Any) -> list[str]:
    """Each bad input raises on every rank, naming the argument and the rank; the collective
    state stays usable after each."""
    from mpi4py import MPI

    from cunumpy.mpi import MPIArgumentError, halo_exchange, migrate

    xp = _xp()
    rank, size = world.Get_rank(), world.Get_size()
    last = size - 1
    cart = world.Create_cart(MPI.Compute_dims(size, 2), periods=[True, True])
    messages = []
    try:
        ok = xp.zeros((6, 6), dtype=xp.float32)
        short = xp.zeros((2, 6), dtype=xp.float32) if rank == last else ok
        messages.append(_raises("short axis", lambda: halo_exchange(short, 1, cart),
                                rf"rank {last}: argument 'field' float32\[2, 6\]: axis 0 has 2 "
                                r"cells, fewer than 2\*width\+1 = 3"))
        messages.append(_raises("not Cartesian", lambda: halo_exchange(ok, 1, world),
                                r"argument 'comm' on rank \d+ has no Cartesian topology",
                                MPIArgumentError))
        messages.append(_raises("width", lambda: halo_exchange(ok, 0, cart),
                                r"argument 'width' must be a whole number"))
        dest = xp.zeros(5, dtype=xp.int64)
        if rank == last:
            dest[2] = size
            dest[4] = -1
        rows = xp.zeros((5, 3), dtype=xp.float32)
        messages.append(_raises("dest range", lambda: migrate(dest, rows, comm=world),
                                rf"migrate: rank {last}: argument 'dest': row 2 goes to rank "
                                rf"{size}, outside 0\.\.{last}"))
        fine = xp.zeros(5, dtype=xp.int64)
        fewer = xp.zeros((4, 3), dtype=xp.float32) if rank == 0 else rows
        messages.append(_raises("row count", lambda: migrate(fine, rows, fewer, comm=world),
                                r"migrate: rank 0: argument 'arrays\[1\]' float32\[4, 3\] has 4 "
                                r"rows but 'dest' has 5"))
        messages.append(_raises("not an array", lambda: migrate(fine, [1, 2, 3, 4, 5],
                                                                comm=world),
                                r"rank 0: argument 'arrays\[0\]' must be a NumPy or CuPy array",
                                TypeError))
        if size > 1:
            other = rows.astype(xp.float64) if rank == last else rows
            messages.append(_raises("dtype across ranks", lambda: migrate(fine, rows, other,
                                                                           comm=world),
                                    rf"ranks disagree: rank 0 passed .*arrays\[1\] float32.* but "
                                    rf"rank {last} passed .*arrays\[1\] float64"))
            wrong = ok.astype(xp.float64) if rank == last else ok
            messages.append(_raises("halo dtype across ranks", lambda: halo_exchange(wrong, 1,
                                                                                     cart),
                                    r"ranks disagree.*field float32.*field float64"))
            dims = cart.Get_topo()[0]
            j = int(np.argmin(dims))
            grown = list(ok.shape)
            grown[j] += 1 if rank == 0 else 0
            uneven = xp.zeros(tuple(grown), dtype=xp.float32)
            messages.append(_raises("slab extents", lambda: halo_exchange(uneven, 1, cart),
                                    rf"has \d+ cells along axis {j} on rank \d+ but \d+ on rank "
                                    r"\d+, which holds the same slab"))
        # Nothing is left pending: a good exchange and a good migration still work.
        halo_exchange(ok, 1, cart)
        migrate(fine, rows, comm=world)
    finally:
        cart.Free()
    return messages


def transfer_cases(world: Any) -> dict[str, Any]:
    """What the exchanges copy between host and device: nothing on the host; on the device one
    copy each way per call when staged, none when direct (and the counts of a migration)."""
    from mpi4py import MPI

    from cunumpy.mpi import halo_exchange, migrate
    from cunumpy.mpi._device import local_cuda_aware
    from cunumpy.profiling import count_transfers

    xp = _xp()
    size = world.Get_size()
    cart = world.Create_cart(MPI.Compute_dims(size, 3), periods=[True] * 3)
    field = xp.zeros((8, 7, 6), dtype=xp.float32)
    dest = xp.asarray(np.arange(10) % size)
    rows = xp.zeros((10, 2), dtype=xp.float64)
    try:
        halo_exchange(field, 1, cart)  # the plan is made outside the counter
        with count_transfers() as halo:
            halo_exchange(field, 1, cart)
        with count_transfers() as moved:
            migrate(dest, rows, comm=world)
    finally:
        cart.Free()
    device = xp.get_backend() == "cupy"
    staged = device and not local_cuda_aware()
    remote = size > 1
    want_halo = (1, 1) if staged and remote else (0, 0)
    got_halo = (halo.to_host, halo.to_device)
    if got_halo != want_halo:
        raise AssertionError(f"halo transfers {got_halo}, expected {want_halo}:\n{halo.report()}")
    if halo.events and not all("_jobs.py" in e.site for e in halo.events):
        raise AssertionError(f"halo transfers name cunumpy's lines:\n{halo.report()}")
    want_moved = (0, 0)
    if device:
        want_moved = (1 + (staged and remote), int(staged and remote))
    if (moved.to_host, moved.to_device) != want_moved:
        raise AssertionError(f"migrate transfers {(moved.to_host, moved.to_device)}, expected "
                             f"{want_moved}:\n{moved.report()}")
    return {"halo": got_halo, "halo_bytes": halo.bytes_to_host, "staged": staged,
            "migrate": (moved.to_host, moved.to_device)}


def buffer_cases(world: Any) -> dict[str, Any]:
    """``buffer`` around a ring exchange: the data arrive, a non-contiguous receive is copied
    back, the pinned buffers are reused by a second round."""
    from mpi4py import MPI

    from cunumpy.mpi import buffer
    from cunumpy.profiling import count_transfers

    xp = _xp()
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    allocations = []
    for _ in range(2):
        send = xp.arange(12, dtype=xp.float32) + rank
        wide = xp.zeros((12, 2), dtype=xp.float32)
        recv = wide[:, 0]  # not contiguous: received into a copy, copied back at the end
        with count_transfers() as c:
            with buffer(send) as sbuf, buffer(recv, send=False, recv=True) as rbuf:
                world.Sendrecv([sbuf, MPI.FLOAT], dest=right, recvbuf=[rbuf, MPI.FLOAT],
                               source=left)
        got = xp.to_numpy(recv)
        if not np.array_equal(got, np.arange(12, dtype=np.float32) + left):
            raise AssertionError(f"rank {rank}: buffer ring received {got}")
        if xp.get_backend() == "cupy":
            from cunumpy.mpi._buffers import pinned_pool
            from cunumpy.mpi._device import local_cuda_aware

            if not local_cuda_aware() and (c.to_host, c.to_device) != (1, 1):
                raise AssertionError(f"staged buffer transfers:\n{c.report()}")
            allocations.append(pinned_pool().allocations)
        elif c.events:
            raise AssertionError(f"host buffer made transfers:\n{c.report()}")
    if allocations and allocations[0] != allocations[1]:
        raise AssertionError(f"pinned buffers not reused: {allocations}")
    return {"allocations": allocations}


def everything(ports: tuple[str, ...] = ("cuda",), demo: bool = False,
               script: str | None = None) -> dict[str, Any]:
    """All the checks for this job size; with ``demo``, ``cunumpy demo`` (which sees that
    mpiexec started it) pushes through both ports instead of ``ports``; with ``script``, that
    example runs on these ranks too."""
    import contextlib
    import io
    import runpy

    from mpi4py import MPI

    from cunumpy.cli._demo_mpi import Setup, run_distributed

    world = MPI.COMM_WORLD
    summary: dict[str, Any] = {"size": world.Get_size(), "backend": _xp().get_backend()}
    summary["halo_cases"] = halo_cases(world)
    summary["migrated"] = [migrate_case(world, seed, mode) for seed, mode in
                           ((1, "random"), (2, "random"), (3, "stay"), (4, "last"))]
    summary["errors"] = error_cases(world)
    summary["transfers"] = transfer_cases(world)
    summary["buffer"] = buffer_cases(world)
    if ports:
        cart = world.Create_cart(MPI.Compute_dims(world.Get_size(), 2), periods=[True, True])
        try:
            push = run_distributed(cart, Setup(), ports)
        finally:
            cart.Free()
        summary["push"] = {port: (r["exact"], r["conserved"],
                                  [x["particles"] for x in r["per_rank"]])
                           for port, r in push["ports"].items()}
        if not push["ok"]:
            raise AssertionError(f"rank {world.Get_rank()}: the distributed push differs from "
                                 f"the serial run: {push['ports']}")
    for what, run in (("demo", demo), ("script", script)):
        if not run:
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            if what == "demo":
                from cunumpy.cli import main

                status = main(["demo", "--plain", "--n", "600", "--steps", "6"])
            else:
                runpy.run_path(script, run_name="__main__")
                status = 0
        summary[what] = (status, printed.getvalue())
    return summary


def cuda_aware_here() -> bool:
    """The MPI library's answer on this machine (binding the rank's device first)."""
    from mpi4py import MPI

    from cunumpy.mpi import bind_device, cuda_aware

    bind_device(MPI.COMM_WORLD)
    return cuda_aware(MPI.COMM_WORLD)
