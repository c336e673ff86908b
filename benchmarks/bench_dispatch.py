"""Kernel dispatch overhead: a :class:`cunumpy.kernels.Kernel` call against calling the port directly.

Target: dispatch adds at most 1 µs to a call. Each row times the same port two ways in one run:
called directly (``direct``), and through ``Kernel.__call__`` (``dispatched``), which decides the
port and maps the arguments. The ports are no-op stand-ins with the real call signatures, so the
difference is the dispatch itself and nothing else; the real MetalKernel on the CPU emulator is
timed too, for scale. Times are per call: loops of ``--calls`` calls, median of ``--rounds``
rounds, direct and dispatched interleaved so machine drift hits both alike. The table gives the
fastest loop of each side (the least disturbed by other processes) and the median overhead; a
calibration row times an empty Python function call, to scale the figures to another machine.

Rows:

- ``host``: NumPy arrays, no Metal port (the host kernel runs).
- ``host (metal off)``: a Metal port exists but Metal dispatch is off.
- ``metal (use_metal)``: Metal dispatch on by :func:`use_metal`; arguments mapped by name.
- ``metal (auto, env)``: Metal dispatch decided automatically (``CUNUMPY_METAL_ENGINE=emulator``
  read from the environment at every call).
- ``metal + launch kw``: as above with ``n_threads=`` and ``template=`` (keywords filtered).
- ``cuda (device arrays)``: arguments with ``__cuda_array_interface__`` (as CuPy arrays).
- ``cuda (use_port)``: the CUDA port forced with :func:`use_port`.
- ``metal emulator (real)``: the real MetalKernel on the emulator engine, 8 elements.

Usage: ``python benchmarks/bench_dispatch.py [--json PATH] [--calls N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


class _Param:
    def __init__(self, name: str, pointer: bool = True, const: bool = False) -> None:
        self.name, self.pointer, self.const = name, pointer, const


class NoopCuda:
    """A no-op stand-in with CudaKernel's call signature and ``params``."""

    engine = None

    def __init__(self) -> None:
        self.params = (_Param("x", const=True), _Param("a", pointer=False), _Param("y"))

    def __call__(self, *args: Any, n_threads=None, grid=None, block=None, shared_mem=0,
                 stream=None, check_finite=False) -> None:
        pass


class HostArrayEngine:
    name = "emu-cuda"
    array_space = "host"


class NoopMetal:
    """A no-op stand-in with MetalKernel's call signature and names."""

    input_names = ("x", "a")
    output_names = ("y",)
    init_value = None

    def __call__(self, *inputs: Any, out=None, n_threads=None, template=None,
                 output_shapes=None, output_dtypes=None, engine=None) -> Any:
        return out


class DeviceArray:
    """Looks like device memory to dispatch (has ``__cuda_array_interface__``)."""

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (8,), "typestr": "<f4", "data": (0, False), "version": 3}


def host_kernel(x, a, y):
    pass


def per_call_ns(fn: Callable[[], None], calls: int) -> float:
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(calls):
        fn()
    return (clock() - start) / calls


def measure(pairs: dict[str, tuple[Callable, Callable, Callable | None]], calls: int,
            rounds: int) -> dict[str, dict[str, float]]:
    """Median ns per call of each (direct, dispatched) pair; ``setup`` runs before each side."""
    samples = {name: ([], []) for name in pairs}
    for _ in range(rounds):
        for name, (direct, dispatched, context) in pairs.items():
            if context is None:
                samples[name][0].append(per_call_ns(direct, calls))
                samples[name][1].append(per_call_ns(dispatched, calls))
            else:
                with context():
                    samples[name][0].append(per_call_ns(direct, calls))
                    samples[name][1].append(per_call_ns(dispatched, calls))
    out = {}
    for name, (d, k) in samples.items():
        out[name] = {
            "direct_ns": min(d),
            "dispatched_ns": min(k),
            "overhead_ns": min(k) - min(d),
            "direct_median_ns": statistics.median(d),
            "dispatched_median_ns": statistics.median(k),
            "overhead_median_ns": statistics.median(k) - statistics.median(d),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--calls", type=int, default=20000, help="calls per timing loop")
    parser.add_argument("--rounds", type=int, default=15, help="timing loops per row (median)")
    parser.add_argument("--no-emulator", action="store_true",
                        help="skip the real MetalKernel row (needs a C++ compiler)")
    args = parser.parse_args(argv)

    os.environ.pop("CUNUMPY_USE_METAL", None)
    os.environ.pop("CUNUMPY_KERNEL_PORT", None)
    os.environ.pop("CUNUMPY_METAL_ENGINE", None)
    import cunumpy as xp
    from cunumpy.kernels import Kernel, use_metal, use_port

    x = np.ones(8, np.float32)
    y = np.zeros(8, np.float32)
    cuda, metal = NoopCuda(), NoopMetal()
    k_host = Kernel(host_kernel)
    k_all = Kernel(host_kernel, cuda, metal)
    dx, dy = DeviceArray(), DeviceArray()
    cuda_host = NoopCuda()
    cuda_host.engine = HostArrayEngine()
    k_forced = Kernel(host_kernel, cuda_host, metal)

    class _env:
        def __enter__(self):
            os.environ["CUNUMPY_METAL_ENGINE"] = "emulator"

        def __exit__(self, *exc):
            os.environ.pop("CUNUMPY_METAL_ENGINE", None)

    pairs: dict[str, tuple[Callable, Callable, Callable | None]] = {
        "host": (lambda: host_kernel(x, 2.0, y), lambda: k_host(x, 2.0, y), None),
        "host (metal off)": (lambda: host_kernel(x, 2.0, y), lambda: k_all(x, 2.0, y),
                             lambda: use_metal(False)),
        "metal (use_metal)": (lambda: metal(x, 2.0, out=y), lambda: k_all(x, 2.0, y),
                              lambda: use_metal(True)),
        "metal (auto, env)": (lambda: metal(x, 2.0, out=y), lambda: k_all(x, 2.0, y), _env),
        "metal + launch kw": (lambda: metal(x, 2.0, out=y, n_threads=8, template={"N": 1}),
                              lambda: k_all(x, 2.0, y, n_threads=8, template={"N": 1}),
                              lambda: use_metal(True)),
        "cuda (device arrays)": (lambda: cuda(dx, 2.0, dy), lambda: k_all(dx, 2.0, dy), None),
        "cuda (use_port)": (lambda: cuda_host(x, 2.0, y), lambda: k_forced(x, 2.0, y),
                            lambda: use_port("cuda")),
    }
    if not args.no_emulator:
        real = xp.kernels.MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
                                      inputs=["x", "a"], outputs=["y"], name="bench_scale")
        k_real = Kernel(host_kernel, metal=real)
        with _env():
            real(x, 2.0, out=y)  # compile (or load from the disk cache) before timing
        pairs["metal emulator (real)"] = (lambda: real(x, 2.0, out=y),
                                          lambda: k_real(x, 2.0, y), _env)
    # sanity: each dispatched call reaches the port of its row
    with use_metal(True):
        assert k_all.which(x, 2.0, y) == "metal"
    assert k_all.which(dx, 2.0, dy) == "cuda"
    with use_port("cuda"):
        assert k_forced.which(x, 2.0, y) == "cuda"

    results = measure(pairs, args.calls, args.rounds)
    if "metal emulator (real)" in results:
        # the real launch is ~1000x slower: time it with fewer calls per loop
        results.update(measure({"metal emulator (real)": pairs["metal emulator (real)"]},
                               max(200, args.calls // 100), args.rounds))

    def empty() -> None:
        pass

    calibration = min(per_call_ns(empty, args.calls) for _ in range(args.rounds))
    width = max(len(n) for n in results)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Kernel dispatch overhead (best of {args.rounds} loops of {args.calls} calls; Python "
          f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {load:.1f})")
    print(f"empty Python function call: {calibration:.0f} ns")
    print(f"{'row':<{width}}  {'direct':>10}  {'dispatched':>10}  {'overhead':>9}  "
          f"{'(median)':>9}")
    for name, r in results.items():
        print(f"{name:<{width}}  {r['direct_ns'] / 1000:>8.3f}µs  {r['dispatched_ns'] / 1000:>8.3f}µs"
              f"  {r['overhead_ns'] / 1000:>+7.3f}µs  {r['overhead_median_ns'] / 1000:>+7.3f}µs")
    worst = max(r["overhead_ns"] for n, r in results.items() if n != "metal emulator (real)")
    print(f"largest overhead on the stand-in rows: {worst / 1000:.3f} µs (target <= 0.5 µs, issue 14), "
          f"{worst / calibration:.0f} empty function calls")
    if args.json:
        payload = {
            "benchmark": "dispatch",
            "python": platform.python_version(),
            "machine": platform.machine(),
            "processor": platform.processor(),
            "calls": args.calls,
            "rounds": args.rounds,
            "rows": results,
            "max_overhead_ns": worst,
            "empty_call_ns": calibration,
            "load_average": load,
            "target_ns": 1000,
        }
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
