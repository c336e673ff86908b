"""assert_kernels_agree outside pytest: an ordinary exception (or warning) instead of a skip."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cunumpy.kernels import Kernel
from cunumpy.testing import (
    PortsNotRunError,
    PortsNotRunWarning,
    _agree,
    _markers,
    assert_kernels_agree,
)


def scale(x, a, y):
    y[:] = a * x


class _HostCuda:
    """A stand-in CUDA port computing on host arrays (as the CUDA emulator takes them)."""

    param_names = ("x", "a", "y")

    def __call__(self, x, a, y, **launch):
        y[:] = a * x


class _Metal:
    """A stand-in Metal port (never run in these tests)."""

    input_names = ("x", "a")
    output_names = ("y",)
    init_value = None

    def __call__(self, *inputs, out=None, **launch):
        raise AssertionError("the Metal stand-in must not run")


def make_args(backend, seed):
    x = np.random.default_rng(seed).random(16, dtype=np.float32)
    return x, 2.0, np.empty_like(x)


@pytest.fixture
def outside_pytest(monkeypatch):
    """Make assert_kernels_agree behave as in a script; CUDA runs, Metal cannot."""
    monkeypatch.setattr(_markers, "in_pytest_test", lambda: False)
    monkeypatch.setattr(_agree, "_cuda_where", lambda port: _agree._Where("numpy", "stand-in"))
    monkeypatch.setattr(_agree, "_metal_where", lambda port: "no Metal GPU here (test)")
    for var in ("CUNUMPY_REQUIRE_CUDA", "CUNUMPY_REQUIRE_METAL"):
        monkeypatch.delenv(var, raising=False)


def test_no_port_can_run_raises_a_normal_exception(outside_pytest):
    kernel = Kernel(scale, metal=_Metal())
    with pytest.raises(PortsNotRunError) as info:
        assert_kernels_agree(kernel, make_args)
    message = str(info.value)
    assert "[kernel 'scale'] metal port cannot run here: no Metal GPU here (test)" in message
    assert "no port was checked" in message
    assert info.value.not_run == {"metal": "no Metal GPU here (test)"}
    assert info.value.checked == {}
    assert not isinstance(info.value, pytest.skip.Exception)
    assert isinstance(info.value, Exception)


def test_some_ports_checked_warns_and_returns_them(outside_pytest):
    kernel = Kernel(scale, cuda=_HostCuda(), metal=_Metal(), check=False)
    with pytest.warns(PortsNotRunWarning, match="metal port cannot run here: no Metal GPU") as w:
        assert assert_kernels_agree(kernel, make_args) == {"cuda": "stand-in"}
    assert w[0].filename == __file__  # the warning points at the caller


def test_a_required_port_that_cannot_run_raises(outside_pytest, monkeypatch):
    monkeypatch.setenv("CUNUMPY_REQUIRE_METAL", "1")
    kernel = Kernel(scale, cuda=_HostCuda(), metal=_Metal(), check=False)
    with pytest.raises(PortsNotRunError, match="required by CUNUMPY_REQUIRE_METAL=1") as info:
        assert_kernels_agree(kernel, make_args)
    assert info.value.checked == {"cuda": "stand-in"}


def test_inside_a_pytest_test_it_still_skips(monkeypatch):
    monkeypatch.setattr(_agree, "_metal_where", lambda port: "no Metal GPU here (test)")
    monkeypatch.delenv("CUNUMPY_REQUIRE_METAL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="metal port cannot run here"):
        assert_kernels_agree(Kernel(scale, metal=_Metal()), make_args)


def test_a_script_gets_the_exception(tmp_path):
    """In a real script (no pytest running, even with pytest's variable inherited)."""
    script = tmp_path / "check.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from cunumpy.kernels import Kernel, MetalKernel
        from cunumpy.testing import PortsNotRunError, assert_kernels_agree

        def scale(x, a, y):
            y[:] = a * x

        port = MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
                           inputs=["x", "a"], outputs=["y"], name="scale")

        def make_args(backend, seed):
            x = np.ones(4, dtype=np.float32)
            return x, 2.0, np.empty_like(x)

        try:
            assert_kernels_agree(Kernel(scale, metal=port), make_args)
        except PortsNotRunError as exc:
            print("raised:", exc)
        else:
            print("ran:", "no exception")
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUNUMPY_REQUIRE")}
    env["CUNUMPY_METAL_ENGINE"] = "mlx"  # no emulator: without a Metal GPU the port cannot run
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    from cunumpy.kernels._availability import metal_status

    if metal_status()[0]:
        assert result.stdout.startswith("ran:"), result.stdout
    else:
        assert result.stdout.startswith("raised: [kernel 'scale'] metal port cannot run here"), (
            result.stdout + result.stderr
        )
