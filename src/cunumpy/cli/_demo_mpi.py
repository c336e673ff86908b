"""``cunumpy demo`` under ``mpiexec``: a particle push on a decomposed field, checked against the
serial run of the same kernels.

The domain is a periodic ``nx`` by ``ny`` grid of cells holding a potential ``phi``, split into
blocks over a 2-D Cartesian communicator; each block carries one ghost cell at each end. Every
step fills the ghost cells (:func:`cunumpy.mpi.halo_exchange`), pushes the particles with the
field's gradient at their cell (a ``CudaKernel`` and a ``MetalKernel`` port of the same push,
each on the GPU or on the CPU emulator), sends particles that left their block to its new owner
(:func:`cunumpy.mpi.migrate`) and smooths the field with a 9-point stencil (which reads the
corner ghosts). The serial run does the same on the whole grid (its ghost cells filled by
``halo_exchange(..., comm=None)``). Every particle must end bit for bit where the serial run
puts it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PORTS", "Setup", "run_cli", "run_distributed", "simulate"]

PUSH_CUDA = r"""
extern "C" __global__ void push(int n, float dt, float q, const float* phi, int ny, int ox,
                                int oy, float lx, float ly, float* x, float* v)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    float px = x[2 * p], py = x[2 * p + 1];
    int i = (int)floorf(px) - ox, j = (int)floorf(py) - oy;
    float ex = 0.5f * (phi[(i - 1) * ny + j] - phi[(i + 1) * ny + j]);
    float ey = 0.5f * (phi[i * ny + j - 1] - phi[i * ny + j + 1]);
    float vx = v[2 * p] + q * ex * dt, vy = v[2 * p + 1] + q * ey * dt;
    px += vx * dt;
    py += vy * dt;
    px -= lx * floorf(px / lx);
    py -= ly * floorf(py / ly);
    if (px >= lx) px -= lx;
    if (py >= ly) py -= ly;
    x[2 * p] = px; x[2 * p + 1] = py;
    v[2 * p] = vx; v[2 * p + 1] = vy;
}
"""

PUSH_METAL = """
int p = int(thread_position_in_grid.x);
if (p >= n) return;
float px = x[2 * p], py = x[2 * p + 1];
int i = int(floor(px)) - ox, j = int(floor(py)) - oy;
float ex = 0.5f * (phi[(i - 1) * ny + j] - phi[(i + 1) * ny + j]);
float ey = 0.5f * (phi[i * ny + j - 1] - phi[i * ny + j + 1]);
float vx = v[2 * p] + q * ex * dt, vy = v[2 * p + 1] + q * ey * dt;
px += vx * dt;
py += vy * dt;
px -= lx * floor(px / lx);
py -= ly * floor(py / ly);
if (px >= lx) px -= lx;
if (py >= ly) py -= ly;
x_out[2 * p] = px; x_out[2 * p + 1] = py;
v_out[2 * p] = vx; v_out[2 * p + 1] = vy;
"""

PORTS = ("cuda", "metal")
"""The ports the demo pushes with."""

_kernels: dict[str, Any] = {}


def _kernel(port: str) -> Any:
    engine = engines()["cuda"] if port == "cuda" else None
    if (port, engine) not in _kernels:
        from cunumpy.kernels import CudaKernel, MetalKernel

        if port == "cuda":
            kernel = CudaKernel(PUSH_CUDA, "push", engine=engine)
        else:  # the engine is a call argument
            kernel = MetalKernel(
                PUSH_METAL, inputs=["phi", "x", "v", "n", "ny", "ox", "oy", "dt", "q", "lx", "ly"],
                outputs=["x_out", "v_out"], name="push2d")
        _kernels[port, engine] = kernel
    return _kernels[port, engine]


@dataclass(frozen=True)
class Setup:
    """The problem: grid, particles, steps."""

    nx: int = 24
    ny: int = 20
    particles: int = 400
    steps: int = 6
    dt: float = 0.25
    q: float = 4.0
    smooth: float = 0.05
    seed: int = 0


def initial_field(s: Setup) -> np.ndarray:
    i = np.arange(s.nx)[:, None]
    j = np.arange(s.ny)[None, :]
    return (np.sin(2 * np.pi * i / s.nx) * np.cos(4 * np.pi * j / s.ny)
            + 0.3 * np.cos(2 * np.pi * (i + j) / s.nx)).astype(np.float32)


def initial_particles(s: Setup) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, x, v)`` of every particle: ids ``int64``, positions and velocities ``(n, 2)``."""
    rng = np.random.default_rng(s.seed)
    x = (rng.random((s.particles, 2)) * np.array([s.nx, s.ny])).astype(np.float32)
    v = rng.standard_normal((s.particles, 2)).astype(np.float32)
    return np.arange(s.particles, dtype=np.int64), x, v


def _bounds(n: int, parts: int) -> np.ndarray:
    return np.array([0, *np.cumsum([len(b) for b in np.array_split(np.arange(n), parts)])])


class _Blocks:
    """This rank's block of the grid, and who owns a cell (a 2-D Cartesian communicator, or
    the whole grid on one process)."""

    def __init__(self, s: Setup, comm: Any) -> None:
        if comm is None:
            dims, coords = [1, 1], [0, 0]
            ranks = np.zeros((1, 1), dtype=np.int64)
        else:
            dims, _, coords = comm.Get_topo()
            ranks = np.array([[comm.Get_cart_rank([a, b]) for b in range(dims[1])]
                              for a in range(dims[0])], dtype=np.int64)
        self.bx, self.by = _bounds(s.nx, dims[0]), _bounds(s.ny, dims[1])
        self.lo = (int(self.bx[coords[0]]), int(self.by[coords[1]]))
        self.hi = (int(self.bx[coords[0] + 1]), int(self.by[coords[1] + 1]))
        self.ranks = ranks
        self.comm = comm

    def owner(self, xp: Any, x: Any) -> Any:
        cells = xp.floor(x).astype(xp.int64)
        bx, by = xp.asarray(self.bx[1:-1]), xp.asarray(self.by[1:-1])
        cx = xp.searchsorted(bx, cells[:, 0], side="right")
        cy = xp.searchsorted(by, cells[:, 1], side="right")
        return xp.asarray(self.ranks)[cx, cy]


def _smooth(phi: Any, a: np.float32) -> None:
    c = phi[1:-1, 1:-1]
    s = ((phi[:-2, :-2] + phi[:-2, 1:-1]) + (phi[:-2, 2:] + phi[1:-1, :-2])) + (
        (phi[1:-1, 2:] + phi[2:, :-2]) + (phi[2:, 1:-1] + phi[2:, 2:]))
    phi[1:-1, 1:-1] = c + a * (s - 8 * c)


def _push(port: str, xp: Any, s: Setup, phi: Any, blocks: _Blocks, x: Any, v: Any) -> tuple:
    n = int(x.shape[0])
    if n == 0:
        return x, v
    ox, oy = blocks.lo[0] - 1, blocks.lo[1] - 1
    ny = int(phi.shape[1])
    kernel = _kernel(port)
    if port == "cuda":
        kernel(n, s.dt, s.q, phi, ny, ox, oy, float(s.nx), float(s.ny), x, v, n_threads=n)
        return x, v
    x_out, v_out = xp.empty_like(x), xp.empty_like(v)
    kernel(phi, x, v, n, ny, ox, oy, s.dt, s.q, float(s.nx), float(s.ny), out=(x_out, v_out),
           n_threads=n, engine=engines()["metal"])
    return x_out, v_out


def simulate(s: Setup, port: str, comm: Any = None,
             timings: dict | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run the push with ``port`` on ``comm`` (None: the serial run); this rank's final
    ``(ids, x, v)`` as NumPy arrays. ``timings`` (a dict) receives ``steps_s``, the wall time
    of the steps alone (``benchmarks/bench_mpi.py``)."""
    import cunumpy as xp
    from cunumpy.mpi import halo_exchange, migrate

    blocks = _Blocks(s, comm)
    (lx, ly), (hx, hy) = blocks.lo, blocks.hi
    phi = np.zeros((hx - lx + 2, hy - ly + 2), dtype=np.float32)
    phi[1:-1, 1:-1] = initial_field(s)[lx:hx, ly:hy]
    ids, x, v = initial_particles(s)
    cells = np.floor(x).astype(np.int64)
    mine = ((cells[:, 0] >= lx) & (cells[:, 0] < hx) & (cells[:, 1] >= ly) & (cells[:, 1] < hy))
    phi = xp.asarray(phi)
    ids, x, v = (xp.asarray(a[mine]) for a in (ids, x, v))
    a = np.float32(s.smooth)
    start = time.perf_counter()
    for _ in range(s.steps):
        halo_exchange(phi, 1, comm)
        x, v = _push(port, xp, s, phi, blocks, x, v)
        if comm is not None:
            ids, x, v = migrate(blocks.owner(xp, x), ids, x, v, comm=comm)
        _smooth(phi, a)
    if timings is not None:
        if xp.get_backend() == "cupy":
            import cupy

            cupy.cuda.runtime.deviceSynchronize()
        timings["steps_s"] = time.perf_counter() - start
    return xp.to_numpy(ids), xp.to_numpy(x), xp.to_numpy(v)


def run_distributed(comm: Any, s: Setup | None = None, ports: tuple[str, ...] = PORTS) -> dict:
    """Each port's distributed run against its serial run (collective over the 2-D Cartesian
    ``comm``): per rank its particle count and whether every particle matches exactly; globally
    whether the particles were conserved and all match."""
    s = s or Setup()
    rank = comm.Get_rank()
    chosen = engines()
    names = {("cuda", "emulator"): "emu-cuda", ("metal", "emulator"): "emu-metal",
             ("metal", "cuda"): "metal-cuda"}
    report: dict[str, Any] = {
        "setup": s.__dict__, "ranks": comm.Get_size(), "ports": {},
        "engines": {p: names.get((p, chosen[p]), chosen[p] or "the environment's engine")
                    for p in ports}}
    for port in ports:
        start = time.perf_counter()
        serial = simulate(s, port, None) if rank == 0 else None  # also compiles, once
        serial = comm.bcast(serial, root=0)
        ids, x, v = simulate(s, port, comm)
        order = np.argsort(serial[0])
        sx, sv = serial[1][order][ids], serial[2][order][ids]
        diff = float(max(np.abs(x - sx).max(initial=0), np.abs(v - sv).max(initial=0)))
        exact = bool(np.array_equal(x, sx) and np.array_equal(v, sv))
        per_rank = comm.allgather({"rank": rank, "particles": int(ids.size), "exact": exact,
                                   "max_abs_diff": diff})
        total = sum(r["particles"] for r in per_rank)
        everyone = comm.allgather(ids)
        unique = np.unique(np.concatenate(everyone)).size
        report["ports"][port] = {
            "per_rank": per_rank,
            "particles": total,
            "conserved": total == s.particles and unique == s.particles,
            "exact": all(r["exact"] for r in per_rank),
            "wall_s": time.perf_counter() - start,
        }
    report["ok"] = all(p["exact"] and p["conserved"] for p in report["ports"].values())
    return report


def print_report(report: dict, console: Any) -> None:
    """Rank 0's summary of :func:`run_distributed`."""
    s = report["setup"]
    console.print(f"cunumpy demo on {report['ranks']} MPI ranks: {s['particles']} particles, "
                  f"{s['steps']} steps on a periodic {s['nx']}x{s['ny']} field with a halo of 1, "
                  "against the serial run")
    console.print("  engines: " + ", ".join(f"{p} port on {e}" for p, e in
                                           report["engines"].items()))
    for port, r in report["ports"].items():
        for row in r["per_rank"]:
            verdict = "agrees exactly" if row["exact"] else (
                f"DIFFERS (max |diff| {row['max_abs_diff']:.3g})")
            console.print(f"  {port:>5} rank {row['rank']}: {row['particles']:5d} particles, "
                          f"{verdict}")
        state = "conserved" if r["conserved"] else "NOT conserved"
        verdict = "agree with the serial run exactly" if r["exact"] else "DIFFER"
        console.print(f"  {port:>5} global: {r['particles']} particles {state}; all {verdict} "
                      f"({r['wall_s']:.2f} s)")
    console.print("OK" if report["ok"] else "FAILED")


def engines() -> dict[str, str | None]:
    """The engine of each port: what ``CUNUMPY_CUDA_ENGINE`` / ``CUNUMPY_METAL_ENGINE`` name
    when set (None: the kernel reads the setting at each call), else the GPU where the backend
    has one, else the CPU emulator."""
    import cunumpy as xp
    from cunumpy import config

    gpu = xp.get_backend() == "cupy"
    cuda = None if config.setting_text("CUNUMPY_CUDA_ENGINE") else ("cupy" if gpu else "emulator")
    metal: str | None = None
    if not config.setting_text("CUNUMPY_METAL_ENGINE"):
        metal = "mlx" if xp.kernels.metal_available() else ("cuda" if gpu else "emulator")
    return {"cuda": cuda, "metal": metal}


def run_cli(args: Any, console: Any) -> int | None:
    """``cunumpy demo`` on MPI ranks; None when this is one process and ``--mpi`` was not
    given (the ordinary demo runs then)."""
    import json

    from cunumpy.mpi import bind_device
    from cunumpy.mpi._comm import load_mpi

    MPI = load_mpi()
    world = MPI.COMM_WORLD
    if world.Get_size() == 1 and not args.mpi:
        return None
    bind_device(world)
    if args.n is not None and args.n < 1:
        raise SystemExit("cunumpy demo: --n must be a positive number of particles")
    steps = 10 if args.steps is None else args.steps
    if steps < 1:
        raise SystemExit("cunumpy demo: --steps must be at least 1")
    setup = Setup(particles=args.n or 2000, steps=steps, seed=args.seed)
    cart = world.Create_cart(MPI.Compute_dims(world.Get_size(), 2), periods=[True, True])
    try:
        report = run_distributed(cart, setup)
    finally:
        cart.Free()
    if world.Get_rank() == 0:
        print_report(report, console)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=2)
    return 0 if report["ok"] else 1
