"""``cunumpy demo``: the particle push through every engine, its report and its exit status."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from cunumpy.cli import _runners, main


def test_demo_small_runs_every_available_engine(tmp_path):
    path = tmp_path / "demo.json"
    done = subprocess.run(
        [sys.executable, "-m", "cunumpy", "demo", "--n", "4096", "--json", str(path)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "4,096 particles x 3 float32 coordinates" in out
    assert "every engine agrees with the reference" in out
    data = json.loads(path.read_text())
    assert data["ok"] is True and data["particles"] == 4096 and data["nsteps"] == 200
    engines = {e["engine"]: e for e in data["engines"]}
    assert list(engines) == list(_runners.ENGINES)
    assert engines["numpy"]["available"]
    for name, e in engines.items():
        if e["available"]:
            assert e["agrees"] is True, e
            assert e["max_relative_error"] <= data["rtol"]
            assert e["kernel_s"] > 0
            assert name in out
        else:
            # every engine that cannot run says why, on the screen and in the JSON
            assert e["reason"]
            assert f"{name} ({e['label']}): not available here:" in out
    if engines["numba"]["available"]:  # the same steady-state rule as the bench
        from cunumpy.cli._runners_numba import uses_parallel

        details = engines["numba"]["details"]
        assert details["parallel"] is uses_parallel(4096 * 3)
        assert "numba: @njit below" in out
    expected_copies = {
        "numpy": (0, 0), "numba": (0, 0), "native": (0, 0), "emu-cuda": (0, 0),
        "cupy": (2, 1), "mlx": (3, 1), "emu-metal": (3, 1),
    }
    nbytes = 4096 * 3 * 4
    for name, (to_device, to_host) in expected_copies.items():
        e = engines[name]
        if not e["available"]:
            continue
        t = e["transfers"]
        assert (t["to_device"], t["to_host"]) == (to_device, to_host), name
        if to_host:
            assert t["bytes_to_host"] == nbytes
            # positions and velocities; Metal also copies dt as a one-element array
            assert t["bytes_to_device"] == 2 * nbytes + (4 if to_device == 3 else 0)


def test_disagreeing_engine_gives_exit_status_1(monkeypatch, capsys):
    real = _runners.Push.host_numpy

    def off_by_a_little(self, inp):
        return real(self, inp) * np.float32(1.001)

    monkeypatch.setattr(_runners.Push, "host_numpy", off_by_a_little)
    assert main(["demo", "--n", "64", "--engines", "numpy", "--plain"]) == 1
    out = capsys.readouterr().out
    assert "NO" in out and "did NOT agree" in out


def test_crashing_engine_is_reported_and_fails(monkeypatch, capsys):
    def broken(self, inp):
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr(_runners.Push, "host_numpy", broken)
    assert main(["demo", "--n", "64", "--engines", "numpy", "--plain"]) == 1
    assert "numpy: FAILED: RuntimeError: kernel exploded" in capsys.readouterr().out


def test_unavailable_engines_are_named_with_their_reason(monkeypatch, capsys):
    real = _runners.engine_status
    monkeypatch.setattr(
        _runners, "engine_status",
        lambda name: (False, "no such device in this test") if name == "mlx" else real(name),
    )
    assert main(["demo", "--n", "64", "--engines", "numpy,mlx", "--plain"]) == 0
    out = capsys.readouterr().out
    assert "mlx (Metal, MLX (GPU)): not available here: no such device in this test" in out
    assert "every engine agrees" in out


def test_default_size_is_smaller_without_a_gpu(monkeypatch):
    from cunumpy.cli import _demo

    monkeypatch.setattr(_runners, "engine_status", lambda name: (name == "numpy", "test"))
    assert _demo.default_particles(list(_runners.ENGINES)) == _demo.EMULATION_PARTICLES
    monkeypatch.setattr(_runners, "engine_status", lambda name: (name == "cupy", "test"))
    assert _demo.default_particles(list(_runners.ENGINES)) == 4 * 2**20


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--engines", "numpy,gpu9000"])
    assert "unknown engine(s) gpu9000" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--n must be"):
        main(["demo", "--n", "0"])


def test_max_relative_error():
    ref = np.array([1.0, 2.0, -4.0])
    assert _runners.max_relative_error(ref, ref) == 0.0
    assert _runners.max_relative_error(np.array([1.0, 2.2, -4.0]), ref) == pytest.approx(0.1)
    assert _runners.max_relative_error(np.array([np.nan, 2.0, -4.0]), ref) == np.inf


def test_emulators_push_a_prefix_of_the_particles(monkeypatch, tmp_path):
    from cunumpy.cli import _demo
    from cunumpy.cli._console import Console

    if not _runners.engine_status("emu-metal")[0]:
        pytest.skip(_runners.engine_status("emu-metal")[1])
    path = tmp_path / "demo.json"
    assert main(["demo", "--n", "300", "--emulator-n", "100", "--engines", "numpy,emu-metal",
                 "--plain", "--json", str(path)]) == 0
    counts = {e["engine"]: e["particles"] for e in json.loads(path.read_text())["engines"]}
    assert counts == {"numpy": 300, "emu-metal": 100}
    # Without --n, the default size applies to real engines and a capped one to the emulators.
    monkeypatch.setattr(_demo, "default_particles", lambda engines: 300)
    monkeypatch.setattr(_demo, "EMULATION_PARTICLES", 50)
    report = _demo.run_demo(engines=["numpy", "emu-metal"], console=Console(plain=True))
    assert report.ok
    assert [o.particles for o in report.outcomes] == [300, 50]
    assert report.outcomes[1].result.output.shape == (50, 3)


def test_demo_and_bench_are_listed_by_the_command(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "demo" in out and "bench" in out
