"""Measure how much CuPy-based code runs unchanged on cunumpy's CuPy stand-in (issue 23).

Usage::

    python tools/cupy_corpus.py DIR [--timeout 300] [--json out.json] [-k SUBSTRING]

``DIR`` holds case files (``*.py``), kept outside this repository (public projects' code is
fetched for a measurement, never committed). Each file defines ``cases()``, which yields
``(name, run)`` pairs: ``run()`` calls a kernel-using function of the project on stand-in arrays
(``import cupy`` gives the stand-in) and its NumPy/SciPy counterpart, and returns
``(got, expected)`` or ``(got, expected, rtol)``; ``got`` may be a stand-in array (it is read with
``cupy.asnumpy``). A case file may put the project's source folder on ``sys.path`` itself.

Every file runs in a fresh Python process in which :func:`cunumpy.testing.install_cupy_on_cpu`
was called first, so ``import cupy`` inside the project gives the stand-in. Each case ends as
``ok`` (agrees with the reference within ``rtol``, default 1e-5, and ``atol`` = ``rtol`` times
the reference's largest magnitude), ``mismatch`` (runs, disagrees) or ``error`` (an exception:
its type and first line are kept, so refusals such as ``NotImplementedError`` can be told from
failures). The report gives the counts per file and in all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import importlib.util, json, sys, traceback
import cunumpy.testing as t
t.install_cupy_on_cpu()
import cupy
import numpy as np

path, pattern = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("corpus_case", path)
mod = importlib.util.module_from_spec(spec)
results = []

def first_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"

try:
    spec.loader.exec_module(mod)
    cases = list(mod.cases())
except Exception as exc:
    print(json.dumps([{"name": "<import>", "status": "error", "detail": first_line(exc),
                       "trace": traceback.format_exc()[-2000:]}]))
    sys.exit(0)
for name, run in cases:
    if pattern and pattern not in name:
        continue
    try:
        out = run()
        got, expected = out[0], out[1]
        rtol = out[2] if len(out) > 2 else 1e-5
        got = cupy.asnumpy(got) if isinstance(got, cupy.ndarray) else np.asarray(got)
        expected = np.asarray(expected)
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        if got.shape != expected.shape:
            status, detail = "mismatch", f"shape {got.shape} != {expected.shape}"
        elif np.allclose(got, expected, rtol=rtol, atol=rtol * scale, equal_nan=True):
            status, detail = "ok", ""
        else:
            err = float(np.max(np.abs(got - expected)))
            status, detail = "mismatch", f"max abs error {err:.3g} (scale {scale:.3g})"
        results.append({"name": name, "status": status, "detail": detail})
    except Exception as exc:
        results.append({"name": name, "status": "error", "detail": first_line(exc),
                        "trace": traceback.format_exc()[-2000:]})
print(json.dumps(results))
"""


def run_file(path: Path, timeout: float, pattern: str) -> list[dict]:
    """Run one case file in a fresh process; its results."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), pattern], capture_output=True, text=True,
            timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired:
        return [{"name": "<file>", "status": "error", "detail": f"timeout after {timeout}s"}]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("[")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        return [{"name": "<file>", "status": "error",
                 "detail": f"exit {proc.returncode}: {tail[0][:300]}"}]
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case file")
    ap.add_argument("--json", type=Path, help="write every case's result here")
    ap.add_argument("-k", default="", help="run only the cases whose name contains this")
    args = ap.parse_args(argv)
    files = sorted(args.directory.glob("*.py"))
    if not files:
        ap.error(f"no .py case files in {args.directory}")
    everything = {}
    totals = {"ok": 0, "mismatch": 0, "error": 0}
    for f in files:
        results = run_file(f, args.timeout, args.k)
        everything[f.name] = results
        counts = {k: sum(r["status"] == k for r in results) for k in totals}
        for k in totals:
            totals[k] += counts[k]
        print(f"{f.name}: {counts['ok']} ok, {counts['mismatch']} mismatch, "
              f"{counts['error']} error")
        for r in results:
            if r["status"] != "ok":
                print(f"  {r['status']:8} {r['name']}: {r['detail']}")
    n = sum(totals.values())
    share = 100.0 * totals["ok"] / n if n else 0.0
    print(f"total: {totals['ok']}/{n} agree ({share:.0f}%), {totals['mismatch']} mismatch, "
          f"{totals['error']} error")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
