"""Attribute lookup cost: ``xp.zeros`` against ``np.zeros``, measured side by side in one run.

Target (issue: foundation): ``xp.zeros`` lookup <= 1.5x ``np.zeros`` lookup.

    python benchmarks/bench_namespace.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import timeit

import numpy as np

import cunumpy as xp


def _per_lookup_ns(stmt: str, namespace: dict, number: int, repeat: int) -> float:
    times = timeit.repeat(stmt, globals=namespace, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e9


def measure(number: int = 2_000_000, repeat: int = 15) -> dict[str, float]:
    env = {"np": np, "xp": xp}
    results: dict[str, float] = {}
    # Interleave the two so drift in machine speed hits both alike.
    np_runs, xp_runs, base_runs = [], [], []
    for _ in range(repeat):
        base_runs.append(_per_lookup_ns("np", env, number, 1))
        np_runs.append(_per_lookup_ns("np.zeros", env, number, 1))
        xp_runs.append(_per_lookup_ns("xp.zeros", env, number, 1))
    base = statistics.median(base_runs)
    results["np.zeros_ns"] = statistics.median(np_runs)
    results["xp.zeros_ns"] = statistics.median(xp_runs)
    results["name_load_ns"] = base
    results["ratio"] = results["xp.zeros_ns"] / results["np.zeros_ns"]
    results["ratio_net_of_name_load"] = (results["xp.zeros_ns"] - base) / (
        results["np.zeros_ns"] - base
    )
    results["xp.linalg.norm_ns"] = _per_lookup_ns("xp.linalg.norm", env, number, 5)
    results["np.linalg.norm_ns"] = _per_lookup_ns("np.linalg.norm", env, number, 5)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--number", type=int, default=2_000_000)
    args = parser.parse_args()
    r = measure(args.number)
    print(f"np.zeros lookup       {r['np.zeros_ns']:6.1f} ns")
    print(f"xp.zeros lookup       {r['xp.zeros_ns']:6.1f} ns")
    print(f"ratio xp/np           {r['ratio']:6.2f}   (target <= 1.5)")
    print(f"ratio net of name load{r['ratio_net_of_name_load']:6.2f}")
    print(f"np.linalg.norm lookup {r['np.linalg.norm_ns']:6.1f} ns")
    print(f"xp.linalg.norm lookup {r['xp.linalg.norm_ns']:6.1f} ns")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(r, fh, indent=2)


if __name__ == "__main__":
    main()
