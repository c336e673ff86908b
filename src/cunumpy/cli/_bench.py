"""``cunumpy bench``: kernels timed across engines and sizes, as JSON and as a PNG.

Workloads (:mod:`cunumpy.cli._runners`): the spec's particle push (``NSTEPS`` = 200, compute-heavy),
``axpy`` (memory-bound), ``interp`` (a gather: linear interpolation of a grid field at particle
positions) and the launch overhead of a kernel on one element. Every run is split into copies to
the device, the kernel and copies back, counts its transfers and is checked against a float64
reference. The memory bandwidth is measured in the same run (a host copy, and on an NVIDIA GPU
a device-to-device copy) and drawn as the roofline of the throughput plots.

JSON layout (``schema`` = ``"cunumpy-bench/1"``)::

    {"schema", "created", "quick", "wall_s",
     "machine": backend_info(),
     "config": {"sizes": {engine: [n, ...]}, "push_nsteps", "dtype", "min_repeats", ...},
     "engines": {engine: {"available", "reason", "label", "roofline", "details"}},
     "roofline": {name: {"gbps", "how", "bytes"}},
     "results": [{"workload", "engine", "n", "bytes", "warmup_runs", "repeats",
                  "to_device_s", "kernel_s", "to_host_s", "total_s", "kernel_gbps",
                  "max_relative_error", "agrees", "details",
                  "transfers": {"to_device", "to_host", "bytes_to_device",
                  "bytes_to_host"}}],
     "launch": [{"engine", "launch_us", "calls", "launch_async_us"?}],
     "compute_row": {"workload", "n", "nsteps", "rows": [{"engine", "kernel_s", "vs_native",
                     "agrees"}]} or null,
     "failures": [{"workload", "engine", "n", "error"}]}

The ``native`` engine (:mod:`cunumpy.cli._runners_native`) is every workload as a plain C++
loop built in the run with ``-O3 -march=native -fopenmp``: the machine's limit. ``compute_row``
is issue 26's compute-bound row, the push on every engine beside it (:func:`compute_row`).

Times are medians over the repeats, in seconds, of steady-state calls: every size of every
engine first runs untimed (``warmup_runs``), so compilation, loading Numba's cache, the first
parallel region and first-touch page faults stay out of the figures. The emulators warm up at
their first size only (their compiled library does not depend on the size, and their runs are
long). A result's ``details`` holds engine facts: for Numba, whether the ``parallel=True``
variant ran, the threading layer and the thread count (``engines.numba.details`` says the rule,
see :mod:`cunumpy.cli._runners_numba`).
"""

from __future__ import annotations

import datetime
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cunumpy.cli import _runners
from cunumpy.cli._bench_plot import plot
from cunumpy.cli._console import Console

__all__ = ["SCHEMA", "plot", "run_bench"]

SCHEMA = "cunumpy-bench/1"
PUSH_NSTEPS = 200

FULL_SIZES = [2**16, 2**18, 2**20, 2**22, 2**24]
FULL_EMULATED_SIZES = [2**14, 2**16, 2**18, 2**20]
QUICK_SIZES = [2**10, 2**12, 2**14]

ROOFLINE_OF = {
    "numpy": "host",
    "numba": "host",
    "native": "host",
    "emu-cuda": "host",
    "emu-metal": "host",
    "cupy": "cuda",
    "mlx": None,
    "metal-cuda": "cuda",
}
"""Which measured bandwidth bounds each engine's kernels (None: not measured)."""


def _sizes(engine: str, quick: bool) -> list[int]:
    if quick:
        return list(QUICK_SIZES)
    return list(FULL_EMULATED_SIZES if engine in _runners.EMULATED else FULL_SIZES)


# --------------------------------------------------------------------------- bandwidth
def _best_of(fn: Callable[[], float], repeats: int) -> float:
    return min(fn() for _ in range(repeats))


def host_bandwidth(nbytes: int, repeats: int = 5) -> dict[str, Any]:
    """Host memory bandwidth from a large ``numpy.copyto`` (bytes read + bytes written)."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)

    def once() -> float:
        t0 = time.perf_counter()
        np.copyto(dst, src)
        return time.perf_counter() - t0

    seconds = _best_of(once, repeats)
    return {"gbps": 2 * src.nbytes / seconds / 1e9, "bytes": src.nbytes,
            "how": "numpy.copyto of float32 arrays, (read + write) / best time"}


def cuda_bandwidth(nbytes: int, repeats: int = 10) -> dict[str, Any]:
    """NVIDIA device-to-device copy bandwidth (read + write), timed with CUDA events."""
    import cupy

    src = cupy.ones(nbytes // 4, cupy.float32)
    dst = cupy.empty_like(src)
    cupy.copyto(dst, src)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()

    def once() -> float:
        start.record()
        cupy.copyto(dst, src)
        stop.record()
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3

    seconds = _best_of(once, repeats)
    return {"gbps": 2 * nbytes / seconds / 1e9, "bytes": nbytes,
            "how": "cupy.copyto device to device, (read + write) / best CUDA-event time"}


# --------------------------------------------------------------------------- launch overhead
def _median_call_us(call: Callable[[], Any], calls: int) -> float:
    call()  # compile, allocate
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def launch_overhead(engine: str, calls: int) -> dict[str, Any]:
    """Median time of one launch of a one-element kernel, waiting for it to finish."""
    from cunumpy.kernels import CudaKernel, MetalKernel, metal_asarray

    result: dict[str, Any] = {"engine": engine, "calls": calls}
    if engine == "numpy":
        x = np.zeros(1, np.float32)
        result["launch_us"] = _median_call_us(lambda: np.add(x, 1, out=x), calls)
    elif engine == "numba":
        from cunumpy.cli._runners_numba import noop

        x = np.zeros(1, np.float32)
        result["launch_us"] = _median_call_us(lambda: noop(x), calls)
    elif engine == "native":
        from cunumpy.cli import _runners_native

        x = np.zeros(1, np.float32)
        result["launch_us"] = _median_call_us(lambda: _runners_native.noop(x), calls)
    elif engine in ("cupy", "emu-cuda"):
        kernel = CudaKernel(_runners.NOOP_CUDA, "noop",
                            engine="cupy" if engine == "cupy" else "emulator")
        sync = kernel.engine.synchronize
        if engine == "cupy":
            import cupy

            x = cupy.zeros(1, cupy.float32)
        else:
            x = np.zeros(1, np.float32)

        def launch_and_wait() -> None:
            kernel(x, 1, n_threads=1)
            sync(None)

        result["launch_us"] = _median_call_us(launch_and_wait, calls)
        if engine == "cupy":
            t0 = time.perf_counter()
            for _ in range(calls):
                kernel(x, 1, n_threads=1)
            sync(None)
            result["launch_async_us"] = (time.perf_counter() - t0) / calls * 1e6
    else:
        eng = engine  # the engine table's name selects the Metal engine itself
        kernel = MetalKernel(_runners.NOOP_METAL, inputs=["x"], outputs=["y"], name="noop")
        x = metal_asarray(np.zeros(1, np.float32), engine=eng)

        def call() -> None:
            y = kernel(x, output_shapes=[(1,)], output_dtypes=[np.float32], engine=eng)
            if eng == "mlx":
                import mlx.core as mx

                mx.eval(y)
            elif eng == "metal-cuda":
                import cupy

                cupy.cuda.get_current_stream().synchronize()

        result["launch_us"] = _median_call_us(call, calls)
    return result


# --------------------------------------------------------------------------- the run
def _repeat(workload: _runners.Workload, engine: str, inp: _runners.Inputs, quick: bool
            ) -> tuple[_runners.RunResult, int]:
    """Median phase times over the repeats (at least 3, or 2 in quick mode)."""
    min_reps, max_reps, budget = (2, 3, 0.05) if quick else (3, 20, 0.5)
    runs: list[_runners.RunResult] = []
    start = time.perf_counter()
    while len(runs) < max_reps:
        runs.append(_runners.run(workload, engine, inp))
        if len(runs) >= min_reps and time.perf_counter() - start >= budget:
            break
    first = runs[0]
    first.to_device_s = statistics.median(r.to_device_s for r in runs)
    first.kernel_s = statistics.median(r.kernel_s for r in runs)
    first.to_host_s = statistics.median(r.to_host_s for r in runs)
    return first, len(runs)


def run_bench(
    quick: bool = False,
    engines: list[str] | None = None,
    workloads: list[str] | None = None,
    console: Console | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the benchmark and return the JSON-able results (see the module docstring)."""
    from cunumpy import backend_info

    console = console or Console()
    engines = list(engines or _runners.ENGINES)
    workloads = list(workloads or _runners.WORKLOADS)
    start = time.perf_counter()
    status = {e: _runners.engine_status(e) for e in engines}
    ready = [e for e in engines if status[e][0]]
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "quick": quick,
        "machine": backend_info(),
        "config": {
            "sizes": {e: _sizes(e, quick) for e in ready},
            "workloads": workloads,
            "push_nsteps": PUSH_NSTEPS,
            "dtype": "float32",
            "min_repeats": 2 if quick else 3,
            "statistic": "median",
        },
        "engines": {},
        "roofline": {},
        "results": [],
        "launch": [],
        "failures": [],
    }
    console.print(
        f"cunumpy bench{' --quick' if quick else ''}: {', '.join(workloads)} and launch "
        f"overhead on {', '.join(ready) or 'no engine'}"
    )
    with console.status("measuring memory bandwidth"):
        data["roofline"]["host"] = host_bandwidth(16 * 2**20 if quick else 256 * 2**20)
        if "cupy" in ready:
            data["roofline"]["cuda"] = cuda_bandwidth(256 * 2**20 if quick else 1024 * 2**20)
    for e in engines:
        ok, reason = status[e]
        roof = ROOFLINE_OF[e]
        data["engines"][e] = {
            "available": ok, "reason": reason, "label": _runners.LABELS[e],
            "roofline": roof if roof in data["roofline"] else None, "details": None,
        }
    rng = np.random.default_rng(seed)
    items = [(w, e, n) for w in workloads for e in ready for n in _sizes(e, quick)]
    made = {w: _runners.make_workload(w, **({"nsteps": PUSH_NSTEPS} if w == "push" else {}))
            for w in workloads}
    problems: dict[tuple[str, int], tuple[_runners.Inputs, np.ndarray]] = {}
    broken: set[tuple[str, str]] = set()
    with console.progress(len(items) + len(ready), "benchmark") as step:
        for w, e, n in items:
            step(f"{w} on {e}, n={n:,}")
            if (w, e) in broken:
                continue
            workload = made[w]
            if (w, n) not in problems:
                inp = workload.make_inputs((n,), rng)
                problems[(w, n)] = (inp, workload.reference(inp))
            inp, reference = problems[(w, n)]
            warmup = 1 if n == _sizes(e, quick)[0] or e not in _runners.EMULATED else 0
            try:
                for _ in range(warmup):  # untimed: compiles, loads caches, touches memory
                    _runners.run(workload, e, inp)
                result, reps = _repeat(workload, e, inp, quick)
            except Exception as exc:  # a failing port is reported, and the rest goes on
                data["failures"].append(
                    {"workload": w, "engine": e, "n": n, "error": f"{type(exc).__name__}: {exc}"}
                )
                broken.add((w, e))
                continue
            error = _runners.max_relative_error(result.output, reference)
            nbytes = workload.bytes_moved(inp)
            data["results"].append({
                "workload": w, "engine": e, "n": n, "bytes": nbytes, "warmup_runs": warmup,
                "repeats": reps,
                "to_device_s": result.to_device_s, "kernel_s": result.kernel_s,
                "to_host_s": result.to_host_s, "total_s": result.total_s,
                "kernel_gbps": nbytes / result.kernel_s / 1e9 if result.kernel_s > 0 else None,
                "max_relative_error": error, "agrees": bool(error <= workload.rtol),
                "details": dict(result.details),
                "transfers": {
                    "to_device": result.to_device, "to_host": result.to_host,
                    "bytes_to_device": result.bytes_to_device,
                    "bytes_to_host": result.bytes_to_host,
                },
            })
        for e in ready:
            step(f"launch overhead on {e}")
            if e == "numba":
                from cunumpy.cli._runners_numba import summary

                data["engines"]["numba"]["details"] = summary()
            calls = {"numpy": 2000, "numba": 2000, "native": 2000, "cupy": 2000,
                     "mlx": 200}.get(
                e, 10 if quick else 50)
            try:
                data["launch"].append(launch_overhead(e, calls))
            except Exception as exc:
                data["failures"].append({"workload": "launch", "engine": e, "n": 1,
                                         "error": f"{type(exc).__name__}: {exc}"})
    data["wall_s"] = time.perf_counter() - start
    data["compute_row"] = compute_row(data)
    _print_summary(data, console)
    return data


def compute_row(data: dict[str, Any]) -> dict[str, Any] | None:
    """Issue 26's compute-bound row: the push's kernel time on every engine at the largest size
    that the ``native`` engine (``-O3 -march=native -fopenmp``, built in this run) and every other
    engine ran (the emulators run smaller sizes), else that native and another engine both ran,
    with each engine's ratio to native. ``None`` when there is no such size."""
    push = [r for r in data["results"] if r["workload"] == "push" and r["kernel_s"] > 0]
    native = {r["n"]: r for r in push if r["engine"] == "native"}
    shared = [n for n in native if any(r["n"] == n and r["engine"] != "native" for r in push)]
    if not shared:
        return None
    engines = {r["engine"] for r in push}
    everyone = [n for n in shared
                if engines <= {r["engine"] for r in push if r["n"] == n}]
    n = max(everyone or shared)
    base = native[n]["kernel_s"]
    rows = [{"engine": _engine_label(r), "kernel_s": r["kernel_s"],
             "vs_native": r["kernel_s"] / base, "agrees": r["agrees"]}
            for r in push if r["n"] == n]
    rows.sort(key=lambda r: r["kernel_s"])
    return {"workload": "push", "n": n, "nsteps": data["config"]["push_nsteps"], "rows": rows}


def _engine_label(result: dict[str, Any]) -> str:
    """The engine of a result row, with the Numba variant that ran (``numba parallel``)."""
    if result.get("details", {}).get("parallel"):
        return f"{result['engine']} parallel"
    return result["engine"]


def _print_summary(data: dict[str, Any], console: Console) -> None:
    rows, styles = [], []
    for r in data["results"]:
        gbps = r["kernel_gbps"]
        rows.append([
            r["workload"], _engine_label(r), f"{r['n']:,}", f"{r['to_device_s'] * 1e3:.3f}",
            f"{r['kernel_s'] * 1e3:.3f}", f"{r['to_host_s'] * 1e3:.3f}",
            f"{gbps:.2f}" if gbps else "-", f"{r['max_relative_error']:.1e}",
            f"{r['transfers']['to_device']}/{r['transfers']['to_host']}",
        ])
        styles.append(None if r["agrees"] else "red")
    console.table(
        "time per phase (ms, median), kernel throughput and agreement with float64",
        ["workload", "engine", "n", "to device", "kernel", "to host", "GB/s", "max rel. err",
         "copies in/out"],
        rows, styles,
    )
    row = data.get("compute_row")
    if row:
        console.print(
            f"compute-bound row (push, {row['nsteps']} steps, n={row['n']:,}; kernel time and "
            "ratio to native C++ -O3 -march=native -fopenmp): " + ", ".join(
                f"{r['engine']} {r['kernel_s'] * 1e3:.3f} ms ({r['vs_native']:.2f}x)"
                for r in row["rows"]))
    if data["launch"]:
        console.print("launch overhead (one element, waiting for completion): " + ", ".join(
            f"{x['engine']} {x['launch_us']:.1f} us" for x in data["launch"]))
    for name, roof in data["roofline"].items():
        console.print(f"roofline {name}: {roof['gbps']:.1f} GB/s ({roof['how']})")
    for e, info in data["engines"].items():
        if not info["available"]:
            console.print(f"{e} ({info['label']}): not available here: {info['reason']}")
        elif info.get("details"):
            console.print(info["details"])
    for f in data["failures"]:
        console.print(f"FAILED {f['workload']} on {f['engine']} (n={f['n']}): {f['error']}",
                      style="red")
    bad = [r for r in data["results"] if not r["agrees"]]
    if bad:
        console.print(f"{len(bad)} result(s) disagree with the float64 reference", style="red")
    console.print(f"{data['wall_s']:.1f} s in all")
