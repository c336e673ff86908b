"""Host/device copies: ``cunumpy.to_numpy`` / ``to_cupy`` against CuPy and the pinned limit.

All figures come from one run on one device, sizes 1 MiB to 1 GiB (float32 arrays):

- **device to host, fresh array**: ``xp.to_numpy(d)`` against ``cupy.asnumpy(d)`` (both allocate
  the NumPy array, so page faults are part of the figure, as they are for a user);
- **device to host, preallocated**: ``xp.to_numpy(d, out=h)`` against ``cupy.asnumpy(d, out=h)``
  into a warm (already touched) pageable array, each side its own array, filled again and again
  as a loop would (cunumpy pins an ``out=`` array of 32 MiB or more the second time it fills it);
  ``to_numpy(d, out=h) first 2`` is the rate of the first two calls into a fresh warm array
  (the second one pins it), so that the cost of pinning is in the table too;
- **host to device**: ``xp.to_cupy(h)`` against ``cupy.asarray(h)`` from a warm pageable array;
- **pinned limit**: the same copy between the device array and a pinned host array
  (``cupy.cuda.alloc_pinned_memory``), the bus limit for one copy engine.

Each figure is the median of several timed calls (wall clock around the call; every call ends
synchronised, as the calls themselves do). Rows are interleaved per size so that drift affects
all sides alike. ``--json PATH`` keeps the numbers, ``--plot PATH`` draws GB/s against size.

Usage: ``python benchmarks/bench_transfers.py [--json PATH] [--plot PATH] [--max-mib N]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

ROWS = {
    "d2h fresh": ("to_numpy(d)", "cupy.asnumpy(d)"),
    "d2h out=": ("to_numpy(d, out=h)", "cupy.asnumpy(d, out=h)"),
    "h2d": ("to_cupy(h)", "cupy.asarray(h)"),
}


def _median_seconds(fn, min_reps: int = 3, budget_s: float = 0.6) -> float:
    fn()  # warm: pools, pinned buffers, code paths
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or (time.perf_counter() - start < budget_s and len(times) < 25):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _sync(stream, fn):
    def call():
        fn()
        stream.synchronize()

    return call


def _measure_size(cupy, xp, nbytes: int) -> dict:
    """GB/s of every row for one array size (fresh device and host arrays)."""
    stream = cupy.cuda.get_current_stream()
    n = nbytes // 4
    host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    warm = np.zeros_like(host)
    warm_cupy = np.zeros_like(host)  # not the same array: ours may get pinned
    dev = cupy.asarray(host)
    pinned_mem = cupy.cuda.alloc_pinned_memory(nbytes)
    pinned = np.frombuffer(pinned_mem, np.float32, n)
    pinned[:] = host
    cases = {
        "to_numpy(d)": lambda: xp.to_numpy(dev),
        "cupy.asnumpy(d)": lambda: cupy.asnumpy(dev),
        "to_numpy(d, out=h)": lambda: xp.to_numpy(dev, out=warm),
        "cupy.asnumpy(d, out=h)": lambda: cupy.asnumpy(dev, out=warm_cupy),
        "pinned d2h": lambda: dev.get(out=pinned),
        "to_cupy(h)": lambda: xp.to_cupy(host),
        "cupy.asarray(h)": lambda: cupy.asarray(host),
        "pinned h2d": lambda: dev.set(pinned),
    }
    seconds = {name: _median_seconds(_sync(stream, fn)) for name, fn in cases.items()}
    fresh = np.zeros_like(host)
    first = _sync(stream, lambda: xp.to_numpy(dev, out=fresh))
    t0 = time.perf_counter()
    first()
    first()
    seconds["to_numpy(d, out=h) first 2"] = (time.perf_counter() - t0) / 2
    assert np.array_equal(fresh, host), "to_numpy(out=) returned wrong data"
    assert np.array_equal(warm, host), "to_numpy(out=) returned wrong data"
    assert np.array_equal(xp.to_numpy(dev), host), "to_numpy returned wrong data"
    assert np.array_equal(cupy.asnumpy(xp.to_cupy(host)), host), "to_cupy returned wrong data"
    row = {"bytes": nbytes}
    row.update({name: nbytes / s / 1e9 for name, s in seconds.items()})
    return row


def measure(max_mib: int) -> dict:
    import cupy

    import cunumpy as xp

    sizes = [1 << k for k in range(20, 31) if (1 << k) <= max_mib << 20]
    results = []
    for nbytes in sizes:
        row = _measure_size(cupy, xp, nbytes)
        results.append(row)
        print(
            f"{nbytes >> 20:6d} MiB  "
            + "  ".join(f"{name} {value:6.1f}" for name, value in row.items() if name != "bytes"),
            flush=True,
        )
        cupy.get_default_memory_pool().free_all_blocks()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    return {
        "device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "cupy": cupy.__version__,
        "host": platform.platform(),
        "threshold_bytes": __import__("cunumpy").config.staging_threshold(),
        "unit": "GB/s (1e9 bytes per second)",
        "results": results,
    }


def _sweep_size(cupy, xp, nbytes: int) -> list[dict]:
    from cunumpy import _convert, _staging

    stream = cupy.cuda.get_current_stream()
    host = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
    warm = np.zeros_like(host)
    dev = cupy.asarray(host)
    calls = {
        "d2h fresh": _sync(stream, lambda: xp.to_numpy(dev)),
        "d2h out=": _sync(stream, lambda: xp.to_numpy(dev, out=warm)),
        "h2d": _sync(stream, lambda: xp.to_cupy(host)),
    }
    rows = []
    for chunk_mib in (16, 32, 64):
        _convert._staging = _staging.CupyStaging(cupy, chunk=chunk_mib << 20)
        for threads in (4, 8, 12, 16):
            _staging.set_threads(threads)
            row = {"bytes": nbytes, "chunk_mib": chunk_mib, "threads": threads}
            for name, fn in calls.items():
                row[name] = nbytes / _median_seconds(fn, budget_s=0.3) / 1e9
            rows.append(row)
            print(
                f"sweep {nbytes >> 20:5d} MiB chunk {chunk_mib:3d} MiB threads {threads:2d}: "
                + "  ".join(f"{k} {row[k]:5.1f}" for k in calls),
                flush=True,
            )
    return rows


def sweep(nbytes_list: list[int]) -> list[dict]:
    """Tuning runs (internal knobs: host threads, chunk size); the public calls are timed."""
    import os

    import cupy

    import cunumpy as xp
    from cunumpy import _convert, _staging

    rows = [row for nbytes in nbytes_list for row in _sweep_size(cupy, xp, nbytes)]
    _convert._staging = None
    _staging.set_threads(min(_staging.MAX_THREADS, os.cpu_count() or 1))
    return rows


def table(data: dict) -> str:
    lines = [f"{data['device']}, CuPy {data['cupy']}; GB/s, median of timed calls", ""]
    head = f"{'size':>9}  {'row':<10} {'cunumpy':>8} {'cupy':>8} {'ratio':>6} {'pinned':>8}"
    lines.append(head)
    for row in data["results"]:
        size = f"{row['bytes'] >> 20} MiB"
        for label, (ours, theirs) in ROWS.items():
            limit = row["pinned h2d" if label == "h2d" else "pinned d2h"]
            lines.append(
                f"{size:>9}  {label:<10} {row[ours]:8.1f} {row[theirs]:8.1f} "
                f"{row[ours] / row[theirs]:5.2f}x {limit:8.1f}"
            )
            if label == "d2h out=" and "to_numpy(d, out=h) first 2" in row:
                first = row["to_numpy(d, out=h) first 2"]
                lines.append(f"{'':>9}  {'  first 2':<10} {first:8.1f}")
    return "\n".join(lines)


def plot(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["bytes"] / (1 << 20) for r in data["results"]]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=True)
    for ax, (label, (ours, theirs)) in zip(axes, ROWS.items()):
        limit = "pinned h2d" if label == "h2d" else "pinned d2h"
        for name, style, colour in ((ours, "-o", "C0"), (theirs, "-s", "C1"), (limit, "--", "0.4")):
            ax.plot(sizes, [r[name] for r in data["results"]], style, color=colour, label=name)
        ax.set_xscale("log", base=2)
        ax.set_title(label)
        ax.set_xlabel("array size (MiB)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("GB/s")
    fig.suptitle(f"host/device copies on {data['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--max-mib", type=int, default=1024)
    parser.add_argument(
        "--sweep", action="store_true", help="also try chunk sizes and thread counts (tuning)"
    )
    args = parser.parse_args()
    if args.sweep:
        sweep([8 << 20, 16 << 20, 256 << 20])
    data = measure(args.max_mib)
    print()
    print(table(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))
    if args.plot:
        plot(data, args.plot)


if __name__ == "__main__":
    main()
