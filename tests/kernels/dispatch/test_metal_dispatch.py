"""Kernel calls that reach a real MetalKernel, run on the CPU emulator engine."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernels import Kernel, MetalKernel, metal_dispatch_enabled, use_metal


def saxpy(x, a, y):
    y += a * x


SAXPY_METAL = MetalKernel(
    "uint i = thread_position_in_grid.x; y_out[i] = a[0] * x[i] + y[i];",
    inputs=["x", "a", "y"],
    outputs=["y_out"],
    name="saxpy",
)


def test_emulator_engine_turns_metal_dispatch_on(emu_metal):
    assert metal_dispatch_enabled()
    assert Kernel(saxpy, metal=SAXPY_METAL).which(np.ones(2, np.float32), 1.0,
                                                  np.ones(2, np.float32)) == "metal"


def test_in_out_parameter_through_the_metal_port(emu_metal):
    k = Kernel(saxpy, metal=SAXPY_METAL)
    rng = np.random.default_rng(1)
    x = rng.random(1000, dtype=np.float32)
    y = rng.random(1000, dtype=np.float32)
    expected = y + np.float32(3.0) * x
    with xp.profiling.count_transfers() as counter:
        k(x, 3.0, y)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert counter.to_device == 3 and counter.to_host == 1  # x, a, y in; y_out back into y
    with use_metal(False), xp.profiling.count_transfers() as counter:
        k(x, 3.0, y)  # host kernel: no copies
    assert counter.transfers == 0
    np.testing.assert_allclose(y, expected + 3 * x, rtol=1e-6)


def test_launch_keywords_reach_the_metal_port(emu_metal):
    def first_n_scaled(x, y):
        y[:] = 0
        y[: 4] = 2 * x[: 4]

    metal = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = i < N ? F * x[i] : 0.0f;",
        inputs=["x"], outputs=["y"], name="first_n_scaled", init_value=0.0,
    )
    k = Kernel(first_n_scaled, metal=metal)
    x = np.arange(1.0, 9.0, dtype=np.float32)
    y = np.full(8, -1.0, np.float32)
    k(x, y, template={"N": 4, "F": 2}, n_threads=6, block=64)  # block: CUDA only, ignored
    assert y.tolist() == [2.0, 4.0, 6.0, 8.0, 0.0, 0.0, 0.0, 0.0]


def test_float64_cast_port_through_dispatch(emu_metal):
    def scale(x, a, y):
        y[:] = a * x

    metal = MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
                        inputs=["x", "a"], outputs=["y"], name="scale_cast", float64="cast")
    k = Kernel(scale, metal=metal)
    x = np.linspace(0, 1, 50)
    y = np.empty_like(x)
    k(x, 1.0 / 3.0, y)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, x / 3, rtol=1e-6)
    assert not np.array_equal(y, x / 3)  # computed in float32


def test_float64_without_cast_names_the_argument(emu_metal):
    k = Kernel(saxpy, metal=SAXPY_METAL)
    with pytest.raises(TypeError, match="MetalKernel 'saxpy' input 'x' is float64"):
        k(np.ones(4), 1.0, np.ones(4, np.float32))
