"""The README's first two commands are what CI runs, so they stay true."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README must start with a bash block of the two set-up commands"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_two_commands_that_ci_runs():
    setup, tests = _readme_commands()[:2]
    ci = (ROOT / ".ci" / "run").read_text()
    install, main_job = (part.strip() for part in setup.split("&&"))
    assert install in ci
    assert main_job in ci
    assert tests in ci


def _python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^```python[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S)


def test_readme_examples_warn_about_nothing(monkeypatch):
    """A reader running the README on a machine without a GPU sees no warning from it."""
    import warnings

    import cunumpy

    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "emulator")
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")
    namespace: dict[str, object] = {}
    ran = 0
    with warnings.catch_warnings(), cunumpy.use_backend("numpy"):
        warnings.simplefilter("error")
        for block in _python_blocks():
            if block.lstrip().startswith("# requires:"):
                continue
            exec(compile(block, "README.md", "exec"), namespace)
            ran += 1
    assert ran >= 1
