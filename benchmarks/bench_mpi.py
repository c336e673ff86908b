"""cunumpy.mpi on N ranks: halo exchange, migration and a distributed push, against raw mpi4py.

Run it under mpiexec (one rank per GPU on GPUs; ``--backend cupy`` binds each rank's device)::

    mpiexec -n 2 python benchmarks/bench_mpi.py --backend numpy,cupy     # the full sizes
    mpiexec -n 2 python benchmarks/bench_mpi.py --quick                  # small, any machine

What it measures (every time is the slowest rank's, the median of ``--repeat`` calls, each
call between barriers):

- **halo**: a periodic ``--size``\\ ³ float32 field (default 512³; global, split over a 3-D
  Cartesian communicator), ``--width`` ghost cells (default 2), all 26 neighbours.
  ``cunumpy`` is :func:`cunumpy.mpi.halo_exchange`; ``raw subarray`` is the same exchange
  written with mpi4py alone (an MPI subarray datatype per side, all ``Irecv`` then all
  ``Isend``, on the same field); ``raw packed`` sends the same bytes from contiguous buffers
  (the MPI part of a staged exchange). On device arrays, ``pinned copy`` is one device-to-host
  plus one host-to-device copy of the bytes a staged exchange moves, through pinned memory
  (the bus limit), and ``staging bandwidth`` is those bytes, both ways, over the time
  ``cunumpy`` spends beyond ``raw packed``.
- **migrate**: ``--particles`` particles (default 10 M, spread over the ranks) with 6 float32
  attributes; ``--leave`` of them (default 0.1, and 1.0 for a random destination each) go to
  another rank. ``raw`` is the same with mpi4py alone (bincount, ``Alltoall`` of the counts,
  a stable sort, one ``Alltoallv`` per attribute; on the device through ``.get()`` and
  ``cupy.asarray``).
- **push**: the ``cunumpy demo`` push (halo, ``CudaKernel`` push, migration, 9-point smoothing)
  with ``--push-particles`` per rank on ``--push-cells``\\ ² cells per rank, on 1, 2, 4, ...
  of the ranks (weak scaling: the problem grows with the ranks), time per step.

Results: ``--out`` (default ``benchmarks/results/bench_mpi_<host>_n<ranks>.json``) and the text
table on rank 0's standard output.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _timed(comm: Any, fn: Any, repeat: int, sync: Any = None) -> float:
    """Median over ``repeat`` calls of the slowest rank's time (after one untimed call)."""
    fn()
    times = []
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        if sync is not None:
            sync()
        times.append(comm.allreduce(time.perf_counter() - t0, op=_MPI.MAX))
    return statistics.median(times)


_MPI: Any = None


def _neighbour_peers(cart: Any) -> list[tuple[tuple[int, ...], int]]:
    dims, _, coords = cart.Get_topo()
    out = []
    for o in np.ndindex(3, 3, 3):
        o = tuple(c - 1 for c in o)
        if not any(o):
            continue
        target = [(c + s) % n for c, s, n in zip(coords, o, dims)]
        out.append((o, cart.Get_cart_rank(target)))
    return out


def _boxes(shape: tuple[int, ...], w: int, o: tuple[int, ...]) -> tuple[list, list]:
    send = [(w, 2 * w) if c < 0 else (n - 2 * w, n - w) if c > 0 else (w, n - w)
            for n, c in zip(shape, o)]
    recv = [(0, w) if c < 0 else (n - w, n) if c > 0 else (w, n - w) for n, c in zip(shape, o)]
    return send, recv


def _tag(o: tuple[int, ...]) -> int:
    return sum((c + 1) * 3**j for j, c in enumerate(o))


def raw_subarray_exchange(cart: Any, field: np.ndarray, w: int) -> Any:
    """The 26-neighbour exchange written with mpi4py alone: subarray datatypes on ``field``."""
    MPI = _MPI
    shape = field.shape
    plan = []
    for o, peer in _neighbour_peers(cart):
        send, recv = _boxes(shape, w, o)
        types = [MPI.FLOAT.Create_subarray(list(shape), [b - a for a, b in box],
                                           [a for a, _ in box]).Commit() for box in (send, recv)]
        plan.append((peer, _tag(o), _tag(tuple(-c for c in o)), types[0], types[1]))

    def run() -> None:
        reqs = [cart.Irecv([field, 1, rt], source=p, tag=rtag) for p, _, rtag, _, rt in plan]
        reqs += [cart.Isend([field, 1, st], dest=p, tag=stag) for p, stag, _, st, _ in plan]
        MPI.Request.Waitall(reqs)

    return run


def raw_packed_exchange(cart: Any, field: np.ndarray, w: int) -> tuple[Any, int]:
    """The same messages from and into contiguous buffers (no packing): the MPI part alone.
    Sides whose neighbour is this rank are left out, as cunumpy copies them locally."""
    MPI = _MPI
    me = cart.Get_rank()
    plan, total = [], 0
    for o, peer in _neighbour_peers(cart):
        if peer == me:
            continue
        send, _ = _boxes(field.shape, w, o)
        count = int(np.prod([b - a for a, b in send]))
        plan.append((peer, _tag(o), _tag(tuple(-c for c in o)), total, total + count))
        total += count
    out, into = np.zeros(total, np.float32), np.zeros(total, np.float32)

    def run() -> None:
        reqs = [cart.Irecv([into[a:b], MPI.FLOAT], source=p, tag=rt) for p, _, rt, a, b in plan]
        reqs += [cart.Isend([out[a:b], MPI.FLOAT], dest=p, tag=st) for p, st, _, a, b in plan]
        MPI.Request.Waitall(reqs)

    return run, total * 4


def _pinned_copy(cupy: Any, comm: Any, nbytes: int, repeat: int) -> float:
    """Time of one device-to-host and one host-to-device copy of ``nbytes`` via pinned memory."""
    n = max(1, nbytes // 4)
    device = cupy.zeros(n, cupy.float32)
    host = np.frombuffer(cupy.cuda.alloc_pinned_memory(n * 4), np.float32, n)

    def both() -> None:
        device.get(out=host)
        device.set(host)

    return _timed(comm, both, repeat, cupy.cuda.runtime.deviceSynchronize)


def bench_halo(args: Any, world: Any, backend: str) -> dict:
    import cunumpy as xp
    from cunumpy.mpi import halo_exchange
    from cunumpy.profiling import count_transfers

    MPI = _MPI
    w, n = args.width, args.size
    cart = world.Create_cart(MPI.Compute_dims(world.Get_size(), 3), periods=[True] * 3)
    dims, _, coords = cart.Get_topo()
    local = tuple(len(np.array_split(np.arange(n), k)[c]) + 2 * w for k, c in zip(dims, coords))
    host = np.zeros(local, np.float32)
    host[w:-w, w:-w, w:-w] = 1.0
    out: dict[str, Any] = {"global": [n] * 3, "width": w, "dims": list(dims),
                           "local": list(local)}
    sync = None
    with xp.use_backend(backend):
        field = xp.asarray(host)
        if backend == "cupy":
            import cupy

            sync = cupy.cuda.runtime.deviceSynchronize
        out["cunumpy_s"] = _timed(cart, lambda: halo_exchange(field, w, cart), args.repeat, sync)
        with count_transfers() as c:
            halo_exchange(field, w, cart)
        out["staged_bytes_each_way"] = c.bytes_to_host
        out["transfers_per_call"] = [c.to_host, c.to_device]
    packed, nbytes = raw_packed_exchange(cart, host, w)
    out["mpi_bytes_sent"] = nbytes
    out["raw_subarray_s"] = _timed(cart, raw_subarray_exchange(cart, host, w), args.repeat)
    out["raw_packed_s"] = _timed(cart, packed, args.repeat)
    if backend == "numpy":
        out["ratio_to_raw_subarray"] = out["cunumpy_s"] / out["raw_subarray_s"]
    else:
        import cupy

        moved = max(out["staged_bytes_each_way"], 1)
        out["pinned_copy_s"] = _pinned_copy(cupy, cart, moved, args.repeat)
        out["pinned_GBps"] = 2 * moved / out["pinned_copy_s"] / 1e9
        beyond = out["cunumpy_s"] - out["raw_packed_s"]
        out["staging_GBps"] = 2 * moved / beyond / 1e9 if beyond > 0 else float("inf")
        out["staging_over_pinned"] = out["staging_GBps"] / out["pinned_GBps"]
        out["ratio_to_raw_packed"] = out["cunumpy_s"] / out["raw_packed_s"]
    cart.Free()
    return out


def _raw_migrate(comm: Any, xp: Any, dest: Any, attrs: list) -> list:
    MPI = _MPI
    size = comm.Get_size()
    counts = xp.bincount(dest, minlength=size)
    counts = counts.get() if hasattr(counts, "get") else counts
    counts = counts.astype(np.int64)
    recv = np.empty(size, np.int64)
    comm.Alltoall([counts, MPI.INT64_T], [recv, MPI.INT64_T])
    sd = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rd = np.concatenate([[0], np.cumsum(recv)[:-1]])
    order = xp.argsort(dest, kind="stable")
    out = []
    for a in attrs:
        rows = a[order]
        rows = rows.get() if hasattr(rows, "get") else rows
        into = np.empty(int(recv.sum()), np.float32)
        comm.Alltoallv([rows, (counts, sd), MPI.FLOAT], [into, (recv, rd), MPI.FLOAT])
        out.append(xp.asarray(into))
    return out


def bench_migrate(args: Any, world: Any, backend: str, leave: float) -> dict:
    import cunumpy as xp
    from cunumpy.mpi import migrate
    from cunumpy.profiling import count_transfers

    rank, size = world.Get_rank(), world.Get_size()
    n = args.particles // size
    rng = np.random.default_rng(rank)
    dest = np.full(n, rank, np.int64)
    if size > 1:
        go = rng.random(n) < leave
        dest[go] = (rank + rng.integers(1, size, int(go.sum()))) % size
    out: dict[str, Any] = {"particles": n * size, "attributes": 6, "leave": leave}
    with xp.use_backend(backend):
        attrs = [xp.asarray(rng.random(n, dtype=np.float32)) for _ in range(6)]
        d = xp.asarray(dest)
        sync = None
        if backend == "cupy":
            import cupy

            sync = cupy.cuda.runtime.deviceSynchronize
        repeat = max(3, args.repeat // 2)
        out["cunumpy_s"] = _timed(world, lambda: migrate(d, *attrs, comm=world), repeat, sync)
        out["raw_s"] = _timed(world, lambda: _raw_migrate(world, xp, d, attrs), repeat, sync)
        with count_transfers() as c:
            migrate(d, *attrs, comm=world)
        out["staged_bytes"] = [c.bytes_to_host, c.bytes_to_device]
        out["ratio_to_raw"] = out["cunumpy_s"] / out["raw_s"]
        if backend == "cupy":
            moved = max(c.bytes_to_host, 1)
            out["pinned_copy_s"] = _pinned_copy(cupy, world, moved, repeat)
            out["pinned_GBps"] = 2 * moved / out["pinned_copy_s"] / 1e9
    return out


def bench_push(args: Any, world: Any, backend: str) -> list[dict]:
    import cunumpy as xp
    from cunumpy.cli._demo_mpi import Setup, simulate

    MPI = _MPI
    rows = []
    p = 1
    while p <= world.Get_size():
        sub = world.Split(0 if world.Get_rank() < p else MPI.UNDEFINED, world.Get_rank())
        elapsed = 0.0
        if sub != MPI.COMM_NULL:
            cart = sub.Create_cart(MPI.Compute_dims(p, 2), periods=[True, True])
            dims = cart.Get_topo()[0]
            setup = Setup(nx=args.push_cells * dims[0], ny=args.push_cells * dims[1],
                          particles=args.push_particles * p, steps=args.steps, dt=0.05, q=1.0)
            timings: dict = {}
            with xp.use_backend(backend):
                simulate(Setup(nx=setup.nx, ny=setup.ny, particles=64 * p, steps=1), "cuda",
                         cart)  # compiles, makes the plans
                simulate(setup, "cuda", cart, timings)
            elapsed = cart.allreduce(timings["steps_s"], op=MPI.MAX)
            cart.Free()
            sub.Free()
        elapsed = world.bcast(elapsed, root=0)
        per_step = elapsed / args.steps
        rows.append({"ranks": p, "particles_per_rank": args.push_particles,
                     "cells_per_rank": args.push_cells**2, "step_s": per_step,
                     "particle_steps_per_s_per_rank": args.push_particles / per_step})
        p *= 2
    for r in rows:
        r["weak_efficiency"] = rows[0]["step_s"] / r["step_s"]
    return rows


def _text(results: dict) -> str:
    lines = [f"bench_mpi on {results['ranks']} ranks, {results['host']}: {results['mpi']}"]
    for backend, r in results["backends"].items():
        h = r["halo"]
        lines.append(f"[{backend}] halo {h['global'][0]}^3 float32 width {h['width']} dims "
                     f"{h['dims']}: cunumpy {h['cunumpy_s'] * 1e3:.3f} ms, raw subarray "
                     f"{h['raw_subarray_s'] * 1e3:.3f} ms, raw packed {h['raw_packed_s'] * 1e3:.3f}"
                     f" ms ({h['mpi_bytes_sent'] / 2**20:.1f} MiB sent per rank)")
        if "ratio_to_raw_subarray" in h:
            lines.append(f"    ratio to raw subarray {h['ratio_to_raw_subarray']:.3f}")
        if "pinned_GBps" in h:
            lines.append(f"    staged {h['staged_bytes_each_way'] / 2**20:.1f} MiB each way, "
                         f"{h['transfers_per_call']} transfers; pinned copy {h['pinned_GBps']:.1f}"
                         f" GB/s, staging {h['staging_GBps']:.1f} GB/s = "
                         f"{h['staging_over_pinned']:.2f} of pinned; ratio to raw packed "
                         f"{h['ratio_to_raw_packed']:.3f}")
        for m in r["migrate"]:
            extra = f", pinned {m['pinned_GBps']:.1f} GB/s" if "pinned_GBps" in m else ""
            lines.append(f"[{backend}] migrate {m['particles']} x 6 float32, leave {m['leave']}: "
                         f"cunumpy {m['cunumpy_s'] * 1e3:.2f} ms, raw {m['raw_s'] * 1e3:.2f} ms "
                         f"(ratio {m['ratio_to_raw']:.3f}){extra}")
        for p in r.get("push", []):
            lines.append(f"[{backend}] push on {p['ranks']} ranks: {p['step_s'] * 1e3:.2f} ms per "
                         f"step, {p['particle_steps_per_s_per_rank'] / 1e6:.2f} M particle-steps/s "
                         f"per rank, weak efficiency {p['weak_efficiency']:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    global _MPI
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="numpy", help="numpy, cupy or numpy,cupy")
    parser.add_argument("--size", type=int, default=512, help="global field edge (default 512)")
    parser.add_argument("--width", type=int, default=2)
    parser.add_argument("--particles", type=int, default=10_000_000)
    parser.add_argument("--leave", default="0.1,1.0", help="fractions of particles that leave")
    parser.add_argument("--push-particles", type=int, default=4_000_000)
    parser.add_argument("--push-cells", type=int, default=512)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-push", action="store_true")
    parser.add_argument("--push-backend", default=None,
                        help="the backend of the push (default: cupy when it is benchmarked, "
                        "else numpy, where the kernel runs on the CPU emulator)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes (48^3 field, 200 k particles, 5 k per rank pushed)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.particles, args.push_particles = 48, 200_000, 5_000
        args.push_cells, args.steps, args.repeat = 64, 4, 3
    from mpi4py import MPI

    from cunumpy.mpi import bind_device, cuda_aware

    _MPI = MPI
    world = MPI.COMM_WORLD
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    results: dict[str, Any] = {
        "ranks": world.Get_size(), "host": platform.node(),
        "mpi": MPI.Get_library_version().splitlines()[0].strip(), "args": vars(args),
        "backends": {},
    }
    if "cupy" in backends:
        import cunumpy as xp

        with xp.use_backend("cupy"):
            results["device"] = bind_device(world)
            results["cuda_aware"] = cuda_aware(world)
    for backend in backends:
        r: dict[str, Any] = {"halo": bench_halo(args, world, backend)}
        r["migrate"] = [bench_migrate(args, world, backend, float(f))
                        for f in args.leave.split(",")]
        push_backend = args.push_backend or ("cupy" if "cupy" in backends else "numpy")
        if not args.no_push and backend == push_backend:
            r["push"] = bench_push(args, world, backend)
        results["backends"][backend] = r
    if world.Get_rank() == 0:
        text = _text(results)
        print(text, flush=True)
        out = Path(args.out or Path(__file__).parent / "results" /
                   f"bench_mpi_{platform.node()}_n{world.Get_size()}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
        out.with_suffix(".txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
