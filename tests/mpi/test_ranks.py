"""cunumpy.mpi on real MPI ranks (``mpiexec -n 1..4``): halo exchanges in 2-D and 3-D, periodic,
open and mixed, widths 1 and 2, against a global array; migrations against what every rank
sent; the bad inputs, raised alike on every rank; counted transfers; ``buffer``; and the
distributed particle push (``CudaKernel`` and ``MetalKernel`` ports, on the emulators or the
GPU) against the serial run. One job per size runs every check (``_jobs.everything``); the
2-rank job also runs ``cunumpy demo`` (which finds itself under mpiexec), the 4-rank job the
example ``examples/mpi_particle_push.py`` (each rank start costs a second or two)."""

from __future__ import annotations

import pathlib

import pytest
from _jobs import everything

from cunumpy.testing import run_ranks

pytestmark = pytest.mark.requires_mpi

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "mpi_particle_push.py"


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_check_on_n_ranks(n, rank_env):
    ports = () if n == 2 else ("cuda",)  # on 2 ranks the demo pushes through both ports
    script = str(EXAMPLE) if n == 4 else None
    result = run_ranks(n, everything, ports, n == 2, script, env=rank_env, timeout=240)
    summaries = result.returns
    assert [s["size"] for s in summaries] == [n] * n
    assert {s["backend"] for s in summaries} == {rank_env["CUNUMPY_BACKEND"]}
    for s in summaries:
        assert s["halo_cases"] == 12
        for port in ports:
            exact, conserved, counts = s["push"][port]
            assert exact and conserved and sum(counts) == 400 and len(counts) == n
    moved = [s["migrated"] for s in summaries]
    assert [sum(col) for col in zip(*moved)][:2] == [sum(4 + 3 * r for r in range(n)
                                                       if not (n > 2 and r == 1))] * 2
    # The same error on every rank (the one naming the communicator names each rank's own).
    errors = [[m for m in s["errors"] if "Cartesian" not in m] for s in summaries]
    assert all(e == errors[0] for e in errors)
    assert len(errors[0]) == (5 if n == 1 else 7)
    transfers = summaries[0]["transfers"]
    if rank_env["CUNUMPY_BACKEND"] == "numpy":
        assert transfers["halo"] == (0, 0) and transfers["migrate"] == (0, 0)
    if n == 2:
        status, printed = summaries[0]["demo"]
        assert status == 0, printed
        assert "cunumpy demo on 2 MPI ranks" in printed
        for port in ("cuda", "metal"):
            assert f"{port} rank 0:" in printed and f"{port} rank 1:" in printed
            assert f"{port} global: 600 particles conserved; all agree with the serial run " \
                "exactly" in printed
        assert printed.rstrip().endswith("OK")
        assert summaries[1]["demo"] == (0, "")  # rank 0 prints for everyone
    if n == 4:
        printed = summaries[0]["script"][1]
        assert "4 ranks: all 3000 particles agree with the serial run exactly" in printed
        assert all(f"rank {r}:" in s["script"][1] for r, s in enumerate(summaries))
