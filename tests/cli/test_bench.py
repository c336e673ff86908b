"""``cunumpy bench``: the JSON results, the PNG, and failures."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from cunumpy.cli import _bench, _runners, main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("bench")
    json_path, png_path = out / "results" / "bench.json", out / "bench.png"
    status = main(["bench", "--quick", "--json", str(json_path), "--plot", str(png_path),
                   "--plain"])
    return status, json.loads(json_path.read_text()), png_path


def test_quick_bench_exit_status_and_png(quick_run):
    status, data, png = quick_run
    assert status == 0, data["failures"]
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert png.stat().st_size > 20_000


def test_quick_bench_json_schema(quick_run):
    _, data, _ = quick_run
    assert data["schema"] == _bench.SCHEMA
    assert data["quick"] is True
    assert set(data) >= {"created", "wall_s", "machine", "config", "engines", "roofline",
                         "results", "launch", "failures"}
    # machine information is backend_info()
    assert set(data["machine"]) >= {"cunumpy", "numpy", "cupy", "mlx", "emulation", "platform"}
    assert data["failures"] == []
    assert list(data["engines"]) == list(_runners.ENGINES)
    for info in data["engines"].values():
        assert set(info) == {"available", "reason", "label", "roofline", "details"}
        assert info["reason"]
    ready = [e for e, info in data["engines"].items() if info["available"]]
    assert "numpy" in ready
    assert data["roofline"]["host"]["gbps"] > 0
    assert data["engines"]["numpy"]["roofline"] == "host"
    keys = {(r["workload"], r["engine"], r["n"]) for r in data["results"]}
    for w in _runners.WORKLOADS:
        for e in ready:
            for n in data["config"]["sizes"][e]:
                assert (w, e, n) in keys
    for r in data["results"]:
        assert r["agrees"] is True, r
        assert r["kernel_s"] > 0 and r["repeats"] >= 2
        assert r["warmup_runs"] >= (0 if r["engine"] in _runners.EMULATED else 1)
        if r["engine"] == "numba":
            assert set(r["details"]) == {"parallel", "threading_layer", "threads"}
        assert r["total_s"] == pytest.approx(r["to_device_s"] + r["kernel_s"] + r["to_host_s"])
        assert r["kernel_gbps"] == pytest.approx(r["bytes"] / r["kernel_s"] / 1e9)
        t = r["transfers"]
        if _runners.FAMILY[r["engine"]] == "host" or r["engine"] == "emu-cuda":
            assert t == {"to_device": 0, "to_host": 0, "bytes_to_device": 0, "bytes_to_host": 0}
        else:
            assert t["to_host"] == 1 and t["bytes_to_host"] == 4 * r["n"]
    assert {x["engine"] for x in data["launch"]} == set(ready)
    assert all(x["launch_us"] > 0 for x in data["launch"])
    json.dumps(data)  # plain JSON types only


def test_quick_sizes_are_small():
    assert max(_bench.QUICK_SIZES) <= 2**16


def test_failing_port_is_recorded_and_gives_exit_status_1(monkeypatch, tmp_path, capsys):
    def broken(self, inp):
        raise RuntimeError("port exploded")

    monkeypatch.setattr(_runners.Axpy, "host_numpy", broken)
    path = tmp_path / "b.json"
    assert main(["bench", "--quick", "--engines", "numpy", "--workloads", "axpy,interp",
                 "--json", str(path), "--plain"]) == 1
    data = json.loads(path.read_text())
    assert [f["engine"] for f in data["failures"]] == ["numpy"]
    assert "port exploded" in data["failures"][0]["error"]
    assert {r["workload"] for r in data["results"]} == {"interp"}
    assert "FAILED axpy on numpy" in capsys.readouterr().out


def test_plot_of_a_gpu_machine(quick_run, tmp_path):
    """The PNG also draws results this machine cannot make: CuPy runs with the CUDA roofline."""
    _, data, _ = quick_run
    data = copy.deepcopy(data)
    data["engines"]["cupy"] = {"available": True, "reason": "test", "label": "CUDA",
                               "roofline": "cuda"}
    data["roofline"]["cuda"] = {"gbps": 4200.0, "bytes": 1, "how": "test"}
    for r in [r for r in data["results"] if r["engine"] == "numpy"]:
        gpu = dict(r, engine="cupy", kernel_s=r["kernel_s"] / 100, to_device_s=1e-4)
        gpu["kernel_gbps"] = gpu["bytes"] / gpu["kernel_s"] / 1e9
        data["results"].append(gpu)
    data["launch"].append({"engine": "cupy", "launch_us": 10.9, "calls": 1})
    png = tmp_path / "gpu.png"
    _bench.plot(data, str(png))
    assert png.read_bytes()[:8] == PNG_MAGIC


# ------------------------------------------------------------------ steady-state figures
class _ScriptedRuns:
    """Stands in for ``_runners.run``: the first call per key is slow (compiling), later fast."""

    SLOW, FAST = 1.0, 1e-4

    def __init__(self, key) -> None:
        self.key = key
        self.seen: set = set()
        self.calls: list = []

    def __call__(self, workload, engine, inp):
        key = self.key(engine, inp.size)
        kernel_s = self.FAST if key in self.seen else self.SLOW
        self.seen.add(key)
        self.calls.append((engine, inp.size, kernel_s))
        return _runners.RunResult(
            engine=engine, workload=workload.name, n=inp.size, to_device_s=0.0,
            kernel_s=kernel_s, to_host_s=0.0, to_device=0, to_host=0, bytes_to_device=0,
            bytes_to_host=0, output=workload.reference(inp).astype(np.float32),
        )


def _bench_with(monkeypatch, runs, engines):
    from cunumpy.cli._console import Console

    monkeypatch.setattr(_runners, "run", runs)
    monkeypatch.setattr(_runners, "engine_status", lambda e: (True, "test"))
    monkeypatch.setattr(_bench, "launch_overhead",
                        lambda e, calls: {"engine": e, "launch_us": 1.0, "calls": calls})
    return _bench.run_bench(quick=True, engines=engines, workloads=["axpy"],
                            console=Console(plain=True))


def test_host_figures_are_warm_calls_at_every_size(monkeypatch):
    """A first call at a new size (a Numba variant compiling, pages faulting) is never timed."""
    runs = _ScriptedRuns(key=lambda engine, n: (engine, n))
    data = _bench_with(monkeypatch, runs, ["numpy", "numba"])
    assert {r["engine"] for r in data["results"]} == {"numpy", "numba"}
    for r in data["results"]:
        assert r["warmup_runs"] == 1
        assert r["kernel_s"] == _ScriptedRuns.FAST, r
    # every (engine, size) was called once more than it was timed
    for r in data["results"]:
        calls = [c for c in runs.calls if c[:2] == (r["engine"], r["n"])]
        assert len(calls) == r["repeats"] + 1 and calls[0][2] == _ScriptedRuns.SLOW


def test_emulator_figures_exclude_the_compiling_first_run(monkeypatch):
    runs = _ScriptedRuns(key=lambda engine, n: engine)  # compiles once, whatever the size
    data = _bench_with(monkeypatch, runs, ["emu-cuda"])
    warmups = [r["warmup_runs"] for r in sorted(data["results"], key=lambda r: r["n"])]
    assert warmups == [1] + [0] * (len(warmups) - 1)
    assert all(r["kernel_s"] == _ScriptedRuns.FAST for r in data["results"])


def test_numba_picks_its_variant_by_size_and_reports_the_layer():
    pytest.importorskip("numba")
    from cunumpy.cli import _runners_numba

    big = _runners_numba.PARALLEL_MIN_ELEMENTS
    assert not _runners_numba.uses_parallel(big - 1) and _runners_numba.uses_parallel(big)
    workload = _runners.make_workload("axpy")
    rng = np.random.default_rng(0)
    small = _runners.run(workload, "numba", workload.make_inputs((1024,), rng))
    assert small.details == {"parallel": False, "threading_layer": None, "threads": 1}
    large = _runners.run(workload, "numba", workload.make_inputs((big,), rng))
    assert large.details["parallel"] is True
    assert large.details["threading_layer"]  # the layer that ran: omp, tbb or workqueue
    assert large.details["threads"] >= 1
    assert f"threading layer {large.details['threading_layer']}" in _runners_numba.summary()


# ------------------------------------------------------------------------------ the plot
def _rgb(colour):
    from matplotlib.colors import to_rgb

    return tuple(round(c, 4) for c in to_rgb(colour))


def test_plot_gives_each_engine_one_colour_and_linear_phase_shares(quick_run):
    import matplotlib.pyplot as plt

    from cunumpy.cli import _bench_plot

    _, data, _ = quick_run
    colours = {e: _rgb(c) for e, c in _bench_plot.engine_colours().items()}
    assert len(set(colours.values())) == len(colours)  # distinct
    fig = _bench_plot.figure(data)
    try:
        top = fig.axes[: len(data["config"]["workloads"]) + 1]  # row-major: the first row
        seen: dict[str, set] = {}
        for ax in top[:-1]:  # the phase panels
            assert ax.get_xscale() == "linear" and ax.get_xlim() == (0.0, 100.0)
            names = [t.get_text().split("\n")[0] for t in ax.get_yticklabels()]
            widths: dict[str, float] = {}
            for rect in ax.patches:
                e = names[round(rect.get_y() + rect.get_height() / 2)]
                widths[e] = widths.get(e, 0.0) + rect.get_width()
                seen.setdefault(e, set()).add(_rgb(rect.get_facecolor()))
            assert widths and all(w == pytest.approx(100.0) for w in widths.values()), widths
        launch = top[-1]
        for name, rect in zip((t.get_text() for t in launch.get_xticklabels()), launch.patches):
            seen.setdefault(name, set()).add(_rgb(rect.get_facecolor()))
        for ax in fig.axes:
            for line in ax.get_lines():
                if line.get_label() in colours:
                    seen.setdefault(line.get_label(), set()).add(_rgb(line.get_color()))
        assert seen
        for e, used in seen.items():
            assert used == {colours[e]}, (e, used)
    finally:
        plt.close(fig)


def test_summary_table_names_the_numba_variant():
    assert _bench._engine_label({"engine": "numba", "details": {"parallel": True}}) == (
        "numba parallel"
    )
    assert _bench._engine_label({"engine": "numba", "details": {"parallel": False}}) == "numba"
    assert _bench._engine_label({"engine": "numpy", "details": {}}) == "numpy"


def test_native_engine_equals_the_emulated_push_bit_for_bit():
    """The native limit (-O3 -march=native -fopenmp, built in the run) computes the kernels'
    float32 roundings, so the compute-bound row compares like with like."""
    ok, reason = _runners.engine_status("native")
    if not ok:
        pytest.skip(reason)
    ok, reason = _runners.engine_status("emu-cuda")
    if not ok:
        pytest.skip(reason)
    rng = np.random.default_rng(3)
    for name in _runners.WORKLOADS:
        workload = _runners.make_workload(name, **({"nsteps": 37} if name == "push" else {}))
        inp = workload.make_inputs((3000,), rng)
        native = _runners.run(workload, "native", inp)
        emulated = _runners.run(workload, "emu-cuda", inp)
        assert (native.to_device, native.to_host) == (0, 0)
        np.testing.assert_array_equal(native.output, emulated.output, err_msg=name)
        assert _runners.max_relative_error(native.output, workload.reference(inp)) <= (
            workload.rtol)


def test_compute_row_puts_every_engine_beside_native():
    def result(engine, n, kernel_s, parallel=None):
        return {"workload": "push", "engine": engine, "n": n, "kernel_s": kernel_s,
                "agrees": True, "details": {} if parallel is None else {"parallel": parallel}}

    data = {"config": {"push_nsteps": 200}, "results": [
        result("native", 1024, 0.001), result("native", 4096, 0.004),
        result("emu-cuda", 1024, 0.002), result("emu-cuda", 4096, 0.010),
        result("numba", 4096, 0.005, parallel=True), result("numpy", 4096, 0.040),
        result("emu-metal", 1024, 0.003),
        {**result("native", 4096, 1.0), "workload": "axpy"},
    ]}
    row = _bench.compute_row(data)
    assert (row["workload"], row["n"], row["nsteps"]) == ("push", 4096, 200)
    assert [(r["engine"], r["vs_native"]) for r in row["rows"]] == [
        ("native", 1.0), ("numba parallel", 1.25), ("emu-cuda", 2.5), ("numpy", 10.0)]
    assert _bench.compute_row({"config": {"push_nsteps": 200}, "results": [
        result("emu-cuda", 1024, 0.002)]}) is None
    # The emulators run smaller sizes: the row is taken where every engine ran.
    data["results"] += [result("numba", 1024, 0.0015), result("numpy", 1024, 0.01),
                        result("native", 16384, 0.016), result("numpy", 16384, 0.2)]
    row = _bench.compute_row(data)
    assert row["n"] == 1024
    assert [r["engine"] for r in row["rows"]] == [
        "native", "numba", "emu-cuda", "emu-metal", "numpy"]
