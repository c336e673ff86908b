"""Every script in examples/ runs to completion in a fresh interpreter and says what it did.

The scripts are collected by globbing, so an example added later is run without touching this
file. Each runs in a subprocess (as a user would run it) with the cunumpy this test imports.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import cunumpy

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_the_examples_are_there():
    names = {p.name for p in EXAMPLES}
    assert {"particle_push.py", "shared_memory_reduction.py"} <= names, names
    assert "examples/" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script):
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError as exc:  # the examples run their ports on the CPU emulators
        pytest.skip(f"the examples need the emulators' C++ compiler: {exc}")
    env = dict(os.environ)
    here = str(pathlib.Path(cunumpy.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    env.pop("PYTEST_CURRENT_TEST", None)  # the script is not inside a test
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{script.name} printed nothing"
