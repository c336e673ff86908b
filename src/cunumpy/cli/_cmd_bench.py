"""``cunumpy bench``: push, axpy, a gather and launch overhead across engines and sizes."""

from __future__ import annotations

import argparse
import json
import os

from cunumpy.cli._cmd_demo import _engine_list
from cunumpy.cli._runners import WORKLOADS


def _workload_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in WORKLOADS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown workload(s) {', '.join(bad) or '(none given)'}; choose from "
            f"{', '.join(WORKLOADS)}"
        )
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repeats (well under a minute on a laptop)")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="write the results, with backend_info(), as JSON to PATH")
    parser.add_argument("--plot", metavar="PATH", default=None,
                        help="draw the results as a PNG at PATH (needs matplotlib: "
                        "pip install 'cunumpy[bench]')")
    parser.add_argument("--engines", type=_engine_list, default=None, metavar="LIST",
                        help="comma-separated engines (default: every engine available here)")
    parser.add_argument("--workloads", type=_workload_list, default=None, metavar="LIST",
                        help=f"comma-separated workloads (default: {','.join(WORKLOADS)})")
    parser.add_argument("--plain", action="store_true",
                        help="plain text output even when rich is installed")


def run(args: argparse.Namespace) -> int:
    from cunumpy.cli import _bench
    from cunumpy.cli._console import Console

    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise SystemExit(
                "cunumpy bench --plot needs matplotlib: pip install 'cunumpy[bench]'"
            ) from None
    for path in (args.json, args.plot):
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    data = _bench.run_bench(quick=args.quick, engines=args.engines, workloads=args.workloads,
                            console=Console(plain=args.plain))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(data, fh, indent=2)
    if args.plot:
        _bench.plot(data, args.plot)
    ok = not data["failures"] and all(r["agrees"] for r in data["results"])
    return 0 if ok else 1
