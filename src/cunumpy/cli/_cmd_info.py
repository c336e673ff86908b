"""``cunumpy info``: a table of what this machine offers, or ``--json`` for backend_info()."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print backend_info() as JSON")


def _rows(info: dict[str, Any]) -> list[tuple[str, str, str]]:
    cupy = info["cupy"]
    mlx = info["mlx"]
    emu = info["emulation"]
    rows = [
        ("cunumpy", info["cunumpy"], f"Python {info['python']} on {info['platform']}"),
        ("numpy", info["numpy"], "always available"),
        ("active backend", info["backend"], "set with CUNUMPY_BACKEND or cunumpy.set_backend"),
        ("cupy", ("stand-in (CPU)" if cupy.get("stand_in") else "yes") if cupy["available"]
         else "no", cupy["reason"]),
    ]
    for dev in cupy.get("devices", []):
        rows.append(
            (
                f"  device {dev['index']}",
                dev["name"],
                f"compute capability {dev['compute_capability']}, "
                f"{dev['memory_bytes'] / 2**30:.0f} GiB, {dev['multiprocessors']} SMs",
            )
        )
    rows += [
        ("mlx / metal", "yes" if mlx["metal_available"] else "no", mlx["reason"]),
        (
            "metal-cuda",
            "yes" if cupy["available"] and not cupy.get("stand_in") else "no",
            "MetalKernel engine metal-cuda, setting cuda (Metal translated to CUDA, NVRTC "
            "through CuPy)"
            + ("" if cupy["available"] and not cupy.get("stand_in")
               else f": {cupy['reason']}"),
        ),
        (
            "emulation compiler",
            emu["compiler"] or "none",
            (emu["version"] + "; " if emu.get("version") else "") + emu["reason"],
        ),
    ]
    for kind, entry in info.get("kernel_engines", {}).items():
        rows.append(_engine_row(kind, entry))
    return rows


def _engine_row(kind: str, entry: dict[str, Any]) -> tuple[str, str, str]:
    """``<kind> kernels | engine that will run | the setting, why, and what to do``."""
    label = "CudaKernel" if kind == "cuda" else "MetalKernel"
    engine = entry["engine"] or "none"
    value = engine if entry["available"] else f"{engine}: cannot run"
    setting = f"{entry['variable']}={entry['setting']}" if entry["setting"] else entry["variable"]
    if entry["default"] and entry["engine"]:
        setting = f"{entry['variable']} unset, default {entry['setting']}"
    detail = f"{setting}; {entry['reason']}"
    if entry["hint"]:
        detail += f" -> {entry['hint']}"
    return (f"{kind} engine ({label})", value, detail)


def run(args: argparse.Namespace) -> int:
    from cunumpy import backend_info

    info = backend_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    rows = _rows(info)
    try:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        width = max(len(r[0]) for r in rows)
        for name, value, detail in rows:
            print(f"{name:<{width}}  {value}  ({detail})")
        return 0
    table = Table(title="cunumpy info", show_lines=False)
    table.add_column("component", style="bold")
    table.add_column("status")
    table.add_column("details", overflow="fold")
    for name, value, detail in rows:
        style = "red" if value in ("no", "none") or value.endswith("cannot run") else None
        table.add_row(escape(name), escape(value), escape(detail), style=style)
    Console().print(table)
    return 0
