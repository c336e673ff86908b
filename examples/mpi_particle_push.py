"""A particle push on a field split over MPI ranks: halo exchange, migration, a CUDA kernel.

The periodic domain is a grid of ``NX`` by ``NY`` cells holding a potential ``phi``. Each rank
owns one block of the grid (a 2-D Cartesian decomposition) with one ghost cell at each end, and
the particles inside its block. Every step:

1. ``halo_exchange`` fills the ghost cells (faces and corners) from the neighbouring blocks;
2. a ``CudaKernel`` accelerates each particle by the field's gradient at its cell and moves it;
3. ``migrate`` hands the particles that left the block to the rank that owns them now;
4. the field relaxes with a 9-point stencil, which reads the corner ghosts.

At the end rank 0 gathers every particle and checks it against the serial run (the same steps
on the whole grid, on one rank): they must agree bit for bit.

Run it on four ranks (no GPU needed: without CuPy the kernel runs on the CPU emulator)::

    mpiexec -n 4 python3 examples/mpi_particle_push.py

On GPUs the same script runs unchanged with ``CUNUMPY_BACKEND=cupy`` (one GPU per rank through
``bind_device``). Without mpi4py it runs the serial push only.
"""

from __future__ import annotations

import os

import numpy as np

import cunumpy as xp
from cunumpy.mpi import bind_device, halo_exchange, migrate

try:
    from mpi4py import MPI
except (ImportError, RuntimeError):  # one process, no MPI (or no MPI library)
    MPI = None

if xp.get_backend() != "cupy":
    os.environ.setdefault("CUNUMPY_CUDA_ENGINE", "emulator")

NX, NY, PARTICLES, STEPS, DT = 32, 24, 3000, 12, np.float32(0.2)

PUSH = r"""
extern "C" __global__ void push(int n, float dt, const float* phi, int ny, int ox, int oy,
                                float lx, float ly, float* x, float* v)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    int i = (int)floorf(x[2 * p]) - ox, j = (int)floorf(x[2 * p + 1]) - oy;
    v[2 * p] += 0.5f * (phi[(i - 1) * ny + j] - phi[(i + 1) * ny + j]) * dt;
    v[2 * p + 1] += 0.5f * (phi[i * ny + j - 1] - phi[i * ny + j + 1]) * dt;
    for (int k = 0; k < 2; ++k) {
        float l = k ? ly : lx, q = x[2 * p + k] + v[2 * p + k] * dt;
        q -= l * floorf(q / l);
        x[2 * p + k] = q >= l ? q - l : q;  // a tiny negative q rounds up to l
    }
}
"""
push = xp.kernels.CudaKernel(PUSH, "push")


def split(n: int, parts: int) -> np.ndarray:
    """Block boundaries of ``n`` cells over ``parts`` ranks."""
    return np.array([0, *np.cumsum([len(b) for b in np.array_split(np.arange(n), parts)])])


def run(comm):
    """This rank's particles ``(ids, x, v)`` after ``STEPS`` steps (``comm=None``: serial)."""
    dims, coords = comm.Get_topo()[::2] if comm is not None else ([1, 1], [0, 0])
    bx, by = split(NX, dims[0]), split(NY, dims[1])
    x0, x1, y0, y1 = bx[coords[0]], bx[coords[0] + 1], by[coords[1]], by[coords[1] + 1]
    owner = np.array([[comm.Get_cart_rank([a, b]) if comm is not None else 0
                       for b in range(dims[1])] for a in range(dims[0])])

    i, j = np.meshgrid(np.arange(x0, x1), np.arange(y0, y1), indexing="ij")
    phi = np.zeros((x1 - x0 + 2, y1 - y0 + 2), dtype=np.float32)
    phi[1:-1, 1:-1] = np.sin(2 * np.pi * i / NX) * np.cos(4 * np.pi * j / NY)
    rng = np.random.default_rng(7)  # every rank draws all particles and keeps its own
    x = (rng.random((PARTICLES, 2)) * [NX, NY]).astype(np.float32)
    v = rng.standard_normal((PARTICLES, 2)).astype(np.float32)
    ids = np.arange(PARTICLES)
    mine = (x[:, 0] >= x0) & (x[:, 0] < x1) & (x[:, 1] >= y0) & (x[:, 1] < y1)
    phi, ids, x, v = (xp.asarray(a) for a in (phi, ids[mine], x[mine], v[mine]))

    for _ in range(STEPS):
        halo_exchange(phi, 1, comm)
        if len(x):
            push(len(x), DT, phi, phi.shape[1], x0 - 1, y0 - 1, float(NX), float(NY), x, v,
                 n_threads=len(x))
        if comm is not None:
            cx = xp.searchsorted(xp.asarray(bx[1:-1]), xp.floor(x[:, 0]).astype(xp.int64),
                                 side="right")
            cy = xp.searchsorted(xp.asarray(by[1:-1]), xp.floor(x[:, 1]).astype(xp.int64),
                                 side="right")
            ids, x, v = migrate(xp.asarray(owner)[cx, cy], ids, x, v, comm=comm)
        c = phi[1:-1, 1:-1]
        around = (phi[:-2, :-2] + phi[:-2, 1:-1] + phi[:-2, 2:] + phi[1:-1, :-2]
                  + phi[1:-1, 2:] + phi[2:, :-2] + phi[2:, 1:-1] + phi[2:, 2:])
        phi[1:-1, 1:-1] = c + np.float32(0.05) * (around - 8 * c)
    return xp.to_numpy(ids), xp.to_numpy(x), xp.to_numpy(v)


def main() -> None:
    world = MPI.COMM_WORLD if MPI is not None else None
    bind_device(world)
    if world is None:
        ids, x, v = run(None)
        print(f"one process without MPI: pushed {len(ids)} particles for {STEPS} steps")
        return
    comm = world.Create_cart(MPI.Compute_dims(world.size, 2), periods=[True, True])
    ids, x, v = run(comm)
    print(f"rank {comm.rank}: {len(ids)} particles in block {comm.coords}", flush=True)
    parts = comm.gather((ids, x, v), root=0)
    if comm.rank == 0:
        ids, x, v = (np.concatenate(p) for p in zip(*parts))
        order = np.argsort(ids)
        sids, sx, sv = run(None)  # the serial run, on rank 0 alone
        assert np.array_equal(ids[order], sids), "particles were lost or duplicated"
        assert np.array_equal(x[order], sx) and np.array_equal(v[order], sv)
        print(f"{world.size} ranks: all {len(ids)} particles agree with the serial run exactly")
    comm.Free()


if __name__ == "__main__":
    main()
