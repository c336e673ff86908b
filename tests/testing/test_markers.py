"""Hardware markers: a skip is reported at the user's test, a required one fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_CONFTEST = """
import cunumpy._backend
import cunumpy.kernels._availability as availability

cunumpy._backend._cupy_status = (False, "no CUDA device (test)")
import cunumpy._engines._status as status

availability.metal_status = lambda: (False, "no Metal GPU (test)", None)
status.mlx_status = lambda: (False, "no Metal GPU (test)", None)
"""

_TESTS = """
import pytest


@pytest.mark.requires_cuda
def test_needs_cuda():
    pass


@pytest.mark.requires_metal
def test_needs_metal():
    pass


def test_uses_backend_fixture(backend):
    pass


def test_calls_helper():
    from cunumpy.testing._markers import cuda_skip_or_fail

    cuda_skip_or_fail("helper says no (test)")
"""


def _plugin_option() -> list[str]:
    """``-p cunumpy.testing.plugin`` when the plugin's entry point is not installed (a source
    checkout on PYTHONPATH); nothing when pip registered it (loading it twice is an error)."""
    from importlib.metadata import entry_points

    if any(ep.value == "cunumpy.testing.plugin" for ep in entry_points(group="pytest11")):
        return []
    return ["-p", "cunumpy.testing.plugin"]


def _run_pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(_CONFTEST))
    (tmp_path / "test_user.py").write_text(textwrap.dedent(_TESTS))
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("CUNUMPY_REQUIRE") and k != "CUNUMPY_BACKEND"}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         *_plugin_option(), "test_user.py"],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120,
    )


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_skips_are_reported_at_the_users_test(tmp_path):
    result = _run_pytest(tmp_path)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "1 passed, 4 skipped" in out, out
    assert "_markers.py" not in out and "plugin.py" not in out, out
    source = textwrap.dedent(_TESTS)
    for test, reason in [
        ("def test_needs_cuda", "no CUDA device (test)"),
        ("def test_needs_metal", "no Metal GPU (test)"),
        ("def test_uses_backend_fixture", "no CUDA device (test)"),
        ("def test_calls_helper", "helper says no (test)"),
    ]:
        # pytest names the line of the test's ``def`` (the decorator line for marked tests).
        lineno = _line(source, test)
        assert any(
            f"test_user.py:{n}: {reason}" in out for n in (lineno, lineno - 1)
        ), (test, out)


@pytest.mark.parametrize("variable", ["CUNUMPY_REQUIRE_CUDA", "CUNUMPY_REQUIRE_METAL"])
def test_required_hardware_fails_instead(tmp_path, variable):
    result = _run_pytest(tmp_path, **{variable: "1"})
    assert result.returncode == 1, result.stdout
    assert f"because {variable}=1" in result.stdout
