"""Importing cunumpy (and cunumpy.kernels) pulls in no optional library."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

OPTIONAL = ["cupy", "mlx", "numba", "pytest", "matplotlib", "rich", "hypothesis", "platformdirs"]


@pytest.mark.parametrize("statement", ["import cunumpy", "import cunumpy.kernels",
                                       "import cunumpy as xp; xp.zeros(3); xp.linalg.norm"])
def test_import_pulls_in_no_optional_library(statement):
    code = (
        f"{statement}\nimport sys, json\n"
        f"print(json.dumps(sorted(m for m in {OPTIONAL!r} if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "CUNUMPY_BACKEND": "numpy"})
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
