"""``CUNUMPY_METAL_ON_CUDA=1``: a Kernel without a CUDA port sends device-array calls to its Metal
port on the ``cuda`` engine (the GPU run is in tests/kernels/test_metal_cuda_engine.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy import config
from cunumpy.kernels import Kernel, MetalKernel


class FakeDeviceArray:
    """Has ``__cuda_array_interface__``, so dispatch treats it as device memory."""

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}


def _kernel(**kw) -> Kernel:
    def host(x, a, y):
        y[...] = a * x

    metal = MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
                        inputs=["x", "a"], outputs=["y"], name="on_cuda")
    return Kernel(host, metal=metal, **kw)


def test_setting_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUNUMPY_METAL_ON_CUDA", raising=False)
    assert config.metal_on_cuda() is False
    monkeypatch.setenv("CUNUMPY_METAL_ON_CUDA", "1")
    assert config.metal_on_cuda() is True


def test_device_arrays_pick_the_metal_port_only_when_opted_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    k = _kernel(missing="fallback")
    x, y = FakeDeviceArray(), FakeDeviceArray()
    monkeypatch.delenv("CUNUMPY_METAL_ON_CUDA", raising=False)
    assert k.which(x, 2.0, y) == "host"  # no CUDA port: the host kernel (missing="fallback")
    monkeypatch.setenv("CUNUMPY_METAL_ON_CUDA", "1")
    assert k.which(x, 2.0, y) == "metal"
    # NumPy arrays still follow Metal dispatch as before
    assert k.which(np.zeros(4), 2.0, np.zeros(4)) in ("host", "metal")


def test_the_call_goes_to_the_cuda_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def fake_call(self, *inputs, out=None, engine=None, **kw):
        seen.update(inputs=inputs, out=out, engine=engine, kw=kw)

    monkeypatch.setattr(MetalKernel, "__call__", fake_call)
    monkeypatch.setenv("CUNUMPY_METAL_ON_CUDA", "1")
    k = _kernel(missing="raise")
    x, y = FakeDeviceArray(), FakeDeviceArray()
    k(x, 2.0, y, n_threads=4)
    assert seen["engine"] == "metal-cuda" and seen["out"] is y and seen["inputs"] == (x, 2.0)
    assert seen["kw"] == {"n_threads": 4}
