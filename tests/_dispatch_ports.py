"""Stand-in ports and arrays for dispatch tests that need no compiler and no GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Param:
    name: str
    pointer: bool = True
    const: bool = False


class FakeCuda:
    """Records its calls; looks like a CudaKernel to Kernel (``params``, ``engine``)."""

    def __init__(self, *params: Param, engine: Any = None) -> None:
        self.params = params
        self.engine = engine
        self.calls: list[tuple[tuple, dict]] = []

    def __call__(self, *args: Any, **kw: Any) -> None:
        self.calls.append((args, kw))


class FakeMetal:
    """Records its calls; looks like a MetalKernel to Kernel (``input_names``/``output_names``)."""

    def __init__(self, inputs: list[str], outputs: list[str]) -> None:
        self.input_names = tuple(inputs)
        self.output_names = tuple(outputs)
        self.init_value = None
        self.calls: list[tuple[tuple, dict]] = []

    def __call__(self, *inputs: Any, out: Any = None, **kw: Any) -> Any:
        self.calls.append((inputs, {"out": out, **kw}))
        return out


class HostEngine:
    """A CUDA engine stand-in that takes host arrays (as the emulator does)."""

    name = "emu-cuda"
    array_space = "host"


class DeviceEngine:
    """A CUDA engine stand-in that takes device arrays only (as CuPy does)."""

    name = "cupy"
    array_space = "device"


class FakeDeviceArray:
    """An object with ``__cuda_array_interface__``: dispatch must treat it as device memory."""

    def __init__(self, n: int) -> None:
        self.shape = (n,)
        self.dtype = np.dtype(np.float32)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": "<f4", "data": (0, False), "version": 3}


class Recorder:
    """A host kernel ``saxpy(x, a, y)`` that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, x: Any, a: Any, y: Any) -> None:
        self.calls.append((x, a, y))


def saxpy_ports() -> tuple[Any, FakeCuda, FakeMetal]:
    """A recording host ``saxpy(x, a, y)`` with matching fake CUDA and Metal ports."""

    calls: list[tuple] = []

    def saxpy(x, a, y):
        calls.append((x, a, y))

    saxpy.calls = calls  # type: ignore[attr-defined]
    cuda = FakeCuda(Param("x", const=True), Param("a", pointer=False, const=True), Param("y"))
    metal = FakeMetal(["x", "a", "y"], ["y_out"])
    return saxpy, cuda, metal
