"""Many ranks through mpi4py: a device per rank, device buffers through MPI, halo exchange and
particle migration.

``import cunumpy`` never imports this module or mpi4py; ``import cunumpy.mpi`` does not import
mpi4py either (one process without MPI, ``comm=None``, needs none). Install MPI with
``pip install 'cunumpy[mpi]'`` (mpi4py and the MPICH wheel). Every function takes an mpi4py
communicator, or ``comm=None`` for one process without MPI.

- :func:`bind_device`: the node-local rank picks its GPU (CuPy backend).
- :func:`cuda_aware`: whether the MPI library takes device pointers.
- :func:`buffer`: what to hand to mpi4py for a NumPy or CuPy array (staged through pinned host
  memory when the library is not CUDA-aware; every copy counted).
- :func:`halo_exchange`: fill the ghost cells of a field decomposed over a Cartesian
  communicator (faces, edges and corners; periodic or not).
- :func:`migrate`: send rows (particles) to the ranks ``dest`` names.

The collective functions check their arguments on every rank and agree before they send
anything, so a bad argument on one rank raises the same error, naming the argument and the
rank, on every rank instead of leaving the others waiting. To run code on N ranks from a test,
see :func:`cunumpy.testing.run_ranks`.
"""

from __future__ import annotations

from cunumpy.mpi._buffers import buffer
from cunumpy.mpi._comm import MPIArgumentError
from cunumpy.mpi._device import bind_device, cuda_aware
from cunumpy.mpi._halo import halo_exchange
from cunumpy.mpi._migrate import migrate

__all__ = ["MPIArgumentError", "bind_device", "buffer", "cuda_aware", "halo_exchange", "migrate"]
