"""Compile-and-list sweep of public Metal libraries with cunumpy.kernels.MetalLibrary.

For each ``.metal`` file under the given checkouts: preprocess and list its kernels (host names),
then compile a sample of them on the CPU emulator (every kernel with ``--all``) and record why
the others do not load (the first compiler error, or the front end's message). The public code
is read from the checkouts given; nothing of it is copied anywhere.

Usage::

    python tools/metal_library_sweep.py --candle /tmp/candle --mlx /tmp/mlx \\
        --ggml /tmp/ggml [--pytorch /tmp/pytorch] [--sample 3 | --all] [--engines] \\
        [--json out.json]

With ``--engines`` each sampled kernel is also translated for the other engines: its
``metal-cuda`` CUDA unit is compiled by the host C++ compiler against the test suite's host
stand-in of CUDA (``tests/kernels/cuda_host/cn_cuda_host.h``, ``-fsyntax-only``: NVRTC itself
needs a GPU machine), and its ``mlx`` kernel text (header and body for ``mx.fast.metal_kernel``)
is generated (compiling it needs a Mac).

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
import warnings
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


STANDIN = Path(__file__).resolve().parents[1] / "tests" / "kernels" / "cuda_host" / "cn_cuda_host.h"


def other_engines(lib, fn, record: dict) -> None:
    """The kernel's metal-cuda unit through the host compiler, and its mlx text (``--engines``)."""
    import subprocess
    import tempfile

    from cunumpy._engines.mlx._library import buffer_layout, mlx_kernel_text
    from cunumpy.emulation._build import RUNTIME_DIR
    from cunumpy.emulation._msl_cuda_library import translate_library
    from cunumpy.emulation._toolchain import find_compiler

    k = fn.kernel
    try:
        unit = translate_library(lib._parsed, k, {}, lib._files, threads_per_group=256)
        with tempfile.NamedTemporaryFile("w", suffix=".cu", delete=False) as f:
            f.write(unit.source)
        done = subprocess.run(
            [*find_compiler().command, "-std=c++17", "-fsyntax-only", "-w", "-x", "c++", "-include",
             str(STANDIN), f"-I{RUNTIME_DIR}", f.name], capture_output=True, text=True)
        Path(f.name).unlink()
        if done.returncode == 0:
            record["cuda_host"] += 1
        else:
            first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.stderr)
            record["cuda_failed"][fn.name] = first.strip()[:300]
    except Exception as exc:
        record["cuda_failed"][fn.name] = f"{type(exc).__name__}: {str(exc)[:300]}"
    try:
        layouts = {p.index: buffer_layout(p, 8) for p in k.params if p.kind == "buffer"}
        tg = {p.index: 1024 for p in k.params if p.kind == "threadgroup"}
        mlx_kernel_text(lib._parsed, k, {}, lib._system, layouts, tg)
        record["mlx_text"] += 1
    except Exception as exc:
        record["mlx_failed"][fn.name] = f"{type(exc).__name__}: {str(exc)[:300]}"


def sweep_file(project: str, root: Path, path: Path, sample: int | None, rng: random.Random,
               engines: bool = False) -> dict:
    import numpy as np  # noqa: F401

    from cunumpy.emulation.errors import EmulatorWarning, KernelCompileError
    from cunumpy.emulation.metal_library import value_sizes
    from cunumpy.kernels import MetalLibrary

    record: dict = {"file": str(path.relative_to(root)), "kernels": 0, "compiled": 0,
                    "failed": {}, "unchecked": {}, "error": None, "cuda_host": 0,
                    "cuda_failed": {}, "mlx_text": 0, "mlx_failed": {}}
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
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", EmulatorWarning)
                value_sizes(lib._parsed, fn.kernel, {}, lib._files)
            record["compiled"] += 1
            for w in caught:
                if issubclass(w.category, EmulatorWarning) and "bounds checks" in str(w.message):
                    record["unchecked"][name] = str(w.message).split("(", 1)[-1][:300]
        except KernelCompileError as exc:
            first = next((ln for ln in exc.log.splitlines() if "error:" in ln), str(exc))
            record["failed"][name] = "compile: " + first.strip()[:300]
        except Exception as exc:
            record["failed"][name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        if engines:
            other_engines(lib, fn, record)
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
    ap.add_argument("--engines", action="store_true",
                    help="also translate for metal-cuda (host compile) and mlx (text)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--files", default="", help="only files whose path contains this text")
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
        files = [f for f in sorted(folder.rglob("*.metal")) if args.files in str(f)]
        rows = []
        for path in files:
            rec = sweep_file(project, root, path, None if args.all else args.sample, rng,
                             args.engines)
            rows.append(rec)
            status = rec["error"] or f"{rec['kernels']} kernels, {rec.get('compiled', 0)}/" \
                f"{rec.get('tried', 0)} compiled"
            print(f"{project}: {rec['file']}: {status}", flush=True)
            for name, why in rec["failed"].items():
                print(f"    {name}: {why}", flush=True)
            for name, why in rec["unchecked"].items():
                print(f"    {name}: compiled with unchecked buffers ({why})", flush=True)
            for name, why in rec["cuda_failed"].items():
                print(f"    metal-cuda {name}: {why}", flush=True)
            for name, why in rec["mlx_failed"].items():
                print(f"    mlx {name}: {why}", flush=True)
        listed = sum(r["kernels"] for r in rows)
        tried = sum(r.get("tried", 0) for r in rows)
        compiled = sum(r.get("compiled", 0) for r in rows)
        unchecked = sum(len(r.get("unchecked", {})) for r in rows)
        results[project] = {"files": len(rows), "files_listed": sum(not r["error"] for r in rows),
                            "kernels_listed": listed, "tried": tried, "compiled": compiled,
                            "unchecked": unchecked, "rows": rows}
        print(f"== {project}: {results[project]['files_listed']}/{len(rows)} files list "
              f"{listed} kernels; {compiled}/{tried} sampled kernels compile ({unchecked} of "
              "them with unchecked buffers)", flush=True)
        if args.engines:
            cuda = sum(r["cuda_host"] for r in rows)
            mlx = sum(r["mlx_text"] for r in rows)
            results[project].update(cuda_host=cuda, mlx_text=mlx)
            print(f"   metal-cuda units that compile for the host: {cuda}/{tried}; mlx texts "
                  f"generated: {mlx}/{tried}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
