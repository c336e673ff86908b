"""Every ```python block of docs/*.md and README.md runs, page by page, in order.

The blocks of one page share one namespace, like a reader typing them into one session. Kernel
engines are the CPU emulators (``CUNUMPY_METAL_ENGINE=emulator``, ``CUNUMPY_CUDA_ENGINE=emulator``)
so the examples run on any machine. A block whose first line is ``# requires: WHAT[, WHAT]``
runs only where each WHAT is available and is skipped with the reason elsewhere:

- ``cuda``: an NVIDIA GPU with CuPy; ``metal``: an Apple GPU with MLX;
- ``emu-cuda``, ``emu-metal``: the CPU emulators; ``numba``: Numba; ``mlx``: MLX importable
  (``mlx[cpu]`` on Linux is enough).
"""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_REQUIRES = re.compile(r"#\s*requires:\s*(.+)")
KNOWN = ("cuda", "metal", "emu-cuda", "emu-metal", "numba", "mlx")


def blocks(page: pathlib.Path) -> list[str]:
    return [m.group(1) for m in _BLOCK.finditer(page.read_text())]


def requirements(block: str) -> list[str]:
    first = block.lstrip("\n").splitlines()[0] if block.strip() else ""
    m = _REQUIRES.match(first.strip())
    if not m:
        return []
    names = [n.strip() for n in m.group(1).split(",") if n.strip()]
    unknown = [n for n in names if n not in KNOWN]
    assert not unknown, f"unknown requirement(s) {unknown}; use {', '.join(KNOWN)}"
    return names


def missing_reason(names: list[str]) -> str | None:
    """Why a block with these requirements cannot run here, or None."""
    from cunumpy import _runners

    for name in names:
        if name == "mlx":
            import importlib.util

            if importlib.util.find_spec("mlx") is None:
                return "needs mlx: pip install 'mlx[cpu]' (Linux) or mlx (macOS)"
            continue
        engine = {"cuda": "cupy", "metal": "mlx"}.get(name, name)
        ok, reason = _runners.engine_status(engine)
        if not ok:
            return f"needs {name}: {reason}"
    return None


@dataclass
class PageRun:
    namespace: dict[str, Any] = field(default_factory=dict)
    done: int = 0


_RUNS: dict[pathlib.Path, PageRun] = {}

CASES = [
    pytest.param(page, i, id=f"{page.name}-block{i + 1}")
    for page in PAGES
    for i in range(len(blocks(page)))
]


def _execute(page: pathlib.Path, index: int, code: str, namespace: dict[str, Any]) -> None:
    name = f"{page.relative_to(ROOT)}, python block {index + 1}"
    exec(compile(code, name, "exec"), namespace)


@pytest.mark.parametrize(("page", "index"), CASES)
def test_doc_example(page, index, monkeypatch, tmp_path):
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "emulator")
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")
    monkeypatch.chdir(tmp_path)
    # The pages are written for a default session (NumPy backend), also when the suite runs
    # with CUNUMPY_BACKEND=cupy; the suite's autouse fixture restores the backend afterwards.
    import cunumpy

    cunumpy.set_backend("numpy")
    code_blocks = blocks(page)
    run = _RUNS.setdefault(page, PageRun())
    # Earlier blocks of the page first (when this block is selected on its own).
    while run.done < index:
        earlier = code_blocks[run.done]
        if missing_reason(requirements(earlier)) is None:
            _execute(page, run.done, earlier, run.namespace)
        run.done += 1
    if run.done > index:  # pragma: no cover - a rerun of the same block
        pytest.skip("already ran in this session")
    code = code_blocks[index]
    run.done = index + 1
    reason = missing_reason(requirements(code))
    if reason:
        pytest.skip(reason)
    _execute(page, index, code, run.namespace)


def test_every_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        assert f": {page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


def test_requirement_markers_are_read():
    assert requirements("# requires: cuda\nx = 1\n") == ["cuda"]
    assert requirements("# requires: emu-cuda, numba\n") == ["emu-cuda", "numba"]
    assert requirements("x = 1  # requires: cuda\n") == []
    with pytest.raises(AssertionError, match="unknown requirement"):
        requirements("# requires: tpu\n")
