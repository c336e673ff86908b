"""Functions the run_ranks tests run on every rank (imported by the ranks by name)."""

from __future__ import annotations

import time


def sums(x):
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    print(f"hello from rank {world.rank}")
    return world.allreduce(x), world.rank


def fail_on_rank_zero():
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    if world.rank == 0:
        raise AssertionError("rank 0 found a wrong value")
    world.recv(source=0, tag=5)  # waits for a message rank 0 will never send


def sleep_forever():
    while True:
        time.sleep(0.05)
