"""run_ranks: a function, a script or a module on N MPI ranks; every rank's return value or
traceback, the stack of a rank that hangs, a timeout that stops the job."""

from __future__ import annotations

import sys

import pytest
from _rank_targets import fail_on_rank_zero, sleep_forever, sums

from cunumpy.testing import RanksFailed, run_ranks

pytestmark = pytest.mark.requires_mpi


def test_a_function_on_two_ranks_returns_every_value():
    result = run_ranks(2, sums, 5)
    assert result.ok and result.returns == [(10, 0), (10, 1)]
    assert [o.strip() for o in result.outputs] == ["hello from rank 0", "hello from rank 1"]
    assert result.command[-3:-1] == ["-m", "cunumpy.testing._rank_main"]


def test_a_failure_shows_every_rank():
    with pytest.raises(RanksFailed) as info:
        run_ranks(2, fail_on_rank_zero, grace=1, timeout=60)
    text = str(info.value)
    assert "2 of 2 ranks failed" in text
    rank0, _, rank1 = text.partition("--- rank 1")
    assert "AssertionError: rank 0 found a wrong value" in rank0
    assert "_rank_targets.py" in rank0 and "_rank_main.py" not in rank0
    # Rank 1 was waiting for rank 0: its Python stack says where.
    assert "no report" in rank1 and "in fail_on_rank_zero" in rank1
    outcomes = info.value.result.ranks
    assert [o.status for o in outcomes] == ["failed", "lost"]


def test_a_timeout_stops_the_job_and_shows_where_it_was():
    result = run_ranks(1, sleep_forever, timeout=3, check=False)
    assert result.timed_out and not result.ok
    assert result.ranks[0].status == "lost"
    assert "in sleep_forever" in result.ranks[0].output
    assert result.wall_s < 30


def test_scripts_and_modules(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import sys\nfrom mpi4py import MPI\n"
                      "print(MPI.COMM_WORLD.rank, sys.argv[1:])\n"
                      "sys.exit(3 if MPI.COMM_WORLD.rank == 1 else 0)\n")
    result = run_ranks(2, script, "a", 7, check=False, grace=0.2)
    assert [o.strip() for o in result.outputs] == ["0 ['a', '7']", "1 ['a', '7']"]
    assert [o.status for o in result.ranks] == ["ok", "failed"]
    assert "SystemExit: 3" in result.ranks[1].error
    module = run_ranks(1, ["-m", "json.tool", "--help"])
    assert "usage" in module.outputs[0]


def test_bad_targets_are_refused_before_anything_starts():
    with pytest.raises(TypeError, match="must be a module-level function"):
        run_ranks(2, lambda: None)
    with pytest.raises(ValueError, match="argument 'n' must be a positive number of ranks"):
        run_ranks(0, sums, 1)
    with pytest.raises(FileNotFoundError):
        run_ranks(1, "/nonexistent/job.py")
    with pytest.raises(TypeError, match="must be a function, a script path"):
        run_ranks(1, [sys.executable])
