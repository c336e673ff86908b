"""Compile-and-list sweep of public Metal libraries with cunumpy.kernels.MetalLibrary.

For each ``.metal`` file under the given checkouts: preprocess and list its kernels (host names),
then compile a sample of them on the CPU emulator (every kernel with ``--all``) and record why
the others do not load (the first compiler error, or the front end's message). The public code
is read from the checkouts given; nothing of it is copied anywhere.

Usage::

    python tools/metal_library_sweep.py --candle /tmp/candle --mlx /tmp/mlx \\
        --ggml /tmp/ggml [--pytorch /tmp/pytorch] [--sample 3 | --all] [--json out.json]

Each checkout is the root of the project's repository (candle: ``candle-metal-kernels/src``;
MLX: ``mlx/backend/metal/kernels``; ggml or llama.cpp: ``ggml/src/ggml-metal`` or
``src/ggml-metal``; PyTorch: ``aten/src/ATen/native/mps/kernels`` with the installed torch's
``c10/metal`` headers).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

FOLDERS = {
    "candle": ["candle-metal-kernels/src/metal_src"],
    "mlx": ["mlx/backend/metal/kernels"],
    "ggml": ["ggml/src/ggml-metal", "src/ggml-metal"],
    "pytorch": ["aten/src/ATen/native/mps/kernels"],
}


def include_dirs(project: str, root: Path, folder: Path) -> list[Path]:
    dirs = [folder]
    if project == "mlx":
        dirs.append(root)  # #include "mlx/backend/metal/kernels/..."
    elif project == "ggml":
        dirs += [folder.parent, root / "include", root / "ggml" / "include"]
    elif project == "pytorch":
        dirs += [root / "aten" / "src", root]
        try:
            import torch

            dirs.append(Path(torch.__file__).parent / "include")
        except ImportError:
            pass
    return dirs


def sweep_file(project: str, root: Path, path: Path, sample: int | None, rng: random.Random
               ) -> dict:
    import numpy as np  # noqa: F401

    from cunumpy.emulation.errors import KernelCompileError
    from cunumpy.emulation.metal_library import value_sizes
    from cunumpy.kernels import MetalLibrary

    record: dict = {"file": str(path.relative_to(root)), "kernels": 0, "compiled": 0,
                    "failed": {}, "error": None}
    t0 = time.perf_counter()
    try:
        lib = MetalLibrary(path.read_text(), filename=path.name,
                           include_dirs=include_dirs(project, root, path.parent))
    except Exception as exc:  # the sweep records every failure class
        record["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        return record
    names = lib.names
    record["kernels"] = len(names)
    record["list_s"] = round(time.perf_counter() - t0, 3)
    chosen = names if sample is None else rng.sample(names, min(sample, len(names)))
    for name in chosen:
        fn = lib.kernel(name)
        if fn.kernel.unsupported:
            record["failed"][name] = "unsupported: " + fn.kernel.unsupported
            continue
        try:
            value_sizes(lib._parsed, fn.kernel, {}, lib._files)
            record["compiled"] += 1
        except KernelCompileError as exc:
            first = next((ln for ln in exc.log.splitlines() if "error" in ln), str(exc))
            record["failed"][name] = "compile: " + first.strip()[:300]
        except Exception as exc:
            record["failed"][name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    record["tried"] = len(chosen)
    record["seconds"] = round(time.perf_counter() - t0, 2)
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for project in FOLDERS:
        ap.add_argument(f"--{project}", type=Path, help=f"{project} checkout")
    ap.add_argument("--sample", type=int, default=3, help="kernels compiled per file")
    ap.add_argument("--all", action="store_true", help="compile every kernel")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    results: dict = {}
    for project in FOLDERS:
        root = getattr(args, project)
        if root is None:
            continue
        folder = next((root / f for f in FOLDERS[project] if (root / f).is_dir()), None)
        if folder is None:
            print(f"{project}: no kernel folder under {root}", file=sys.stderr)
            continue
        files = sorted(folder.rglob("*.metal"))
        rows = []
        for path in files:
            rec = sweep_file(project, root, path, None if args.all else args.sample, rng)
            rows.append(rec)
            status = rec["error"] or f"{rec['kernels']} kernels, {rec.get('compiled', 0)}/" \
                f"{rec.get('tried', 0)} compiled"
            print(f"{project}: {rec['file']}: {status}", flush=True)
            for name, why in rec["failed"].items():
                print(f"    {name}: {why}", flush=True)
        listed = sum(r["kernels"] for r in rows)
        tried = sum(r.get("tried", 0) for r in rows)
        compiled = sum(r.get("compiled", 0) for r in rows)
        results[project] = {"files": len(rows), "files_listed": sum(not r["error"] for r in rows),
                            "kernels_listed": listed, "tried": tried, "compiled": compiled,
                            "rows": rows}
        print(f"== {project}: {results[project]['files_listed']}/{len(rows)} files list "
              f"{listed} kernels; {compiled}/{tried} sampled kernels compile", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
