"""Numba ``@njit`` host kernels: parameter names come from ``py_func``; calls run compiled code."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.kernels import Kernel, MetalKernel, SignatureMismatchError, use_metal
from cunumpy.testing import assert_kernels_agree

numba = pytest.importorskip("numba", reason="numba is not installed (pip install 'cunumpy[numba]')")


@numba.njit(cache=False)
def push(pos, vel, dt, pos_new):
    for i in range(pos.shape[0]):
        pos_new[i] = pos[i] + dt * vel[i]


PUSH_METAL = MetalKernel(
    "uint i = thread_position_in_grid.x; pos_new[i] = pos[i] + dt[0] * vel[i];",
    inputs=["pos", "vel", "dt"],
    outputs=["pos_new"],
    name="push",
)


def push_args(backend, seed):
    rng = np.random.default_rng(seed)
    pos = rng.random(256, dtype=np.float32)
    vel = rng.standard_normal(256, dtype=np.float32)
    return pos, vel, 0.01, np.zeros_like(pos)


def test_names_come_from_py_func():
    k = Kernel(push)
    assert k.param_names == ("pos", "vel", "dt", "pos_new")
    assert k.name == "push"
    assert k.host is push


def test_host_call_runs_the_compiled_function():
    k = Kernel(push, metal=PUSH_METAL)
    pos, vel, dt, new = push_args("numpy", 0)
    with use_metal(False):
        k(pos, vel, dt, new)
    np.testing.assert_allclose(new, pos + np.float32(dt) * vel, rtol=1e-6)
    assert push.signatures  # numba compiled it


def test_metal_names_checked_against_njit_parameters():
    bad = MetalKernel("uint i = thread_position_in_grid.x; out[i] = x[i];",
                      inputs=["x"], outputs=["out"], name="bad")
    with pytest.raises(SignatureMismatchError, match=r"(?s)push\(pos, vel, dt, pos_new\).*metal "
                                                     r"input 'x' matches no host parameter"):
        Kernel(push, metal=bad)


def test_njit_host_against_metal_port(emu_metal):
    k = Kernel(push, metal=PUSH_METAL)
    assert assert_kernels_agree(k, push_args) == {"metal": "emu-metal"}
