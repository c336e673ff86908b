"""No Python module of the package, its tests or benchmarks grows past 800 lines."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIMIT = 800


def test_no_module_over_the_limit():
    long = []
    for folder in ("src", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            lines = path.read_text(errors="replace").count("\n")
            if lines > LIMIT:
                long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not long, f"split these by topic (limit {LIMIT} lines):\n" + "\n".join(long)
