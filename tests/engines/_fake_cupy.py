"""A stand-in for CuPy with no GPU: device arrays wrap NumPy arrays, kernels compile to
recorders (nothing runs), so the host side of the ``metal-cuda`` engine can be tested here.

``install(monkeypatch)`` puts it in ``sys.modules`` as ``cupy`` (and makes cunumpy believe CuPy
works) and returns the module; ``module.launches`` lists every launch as
``(code, grid, block, args)``.
"""

from __future__ import annotations

import sys
import types

import numpy as np


class _Memory:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _Flags:
    def __init__(self, a: np.ndarray) -> None:
        self.c_contiguous = a.flags.c_contiguous


class ndarray:
    """A device array: a NumPy array behind CuPy's attributes."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self.dtype = a.dtype
        self.shape = a.shape
        self.strides = a.strides
        self.size = a.size
        self.nbytes = a.nbytes
        self.itemsize = a.itemsize
        self.ndim = a.ndim
        self.data = _Memory(a.__array_interface__["data"][0])

    @property
    def flags(self) -> _Flags:
        return _Flags(self._a)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.data.ptr, False), "strides": self.strides}

    def __getitem__(self, key):
        return ndarray(self._a[key])

    def __setitem__(self, key, value):
        self._a[key] = value._a if isinstance(value, ndarray) else value

    def reshape(self, *shape):
        return ndarray(self._a.reshape(*shape))

    def fill(self, value):
        self._a.fill(value)


class _Function:
    def __init__(self, module: types.ModuleType, code: str) -> None:
        self._module, self.code = module, code

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        self._module.launches.append((self.code, grid, block, args))


class _Raw:
    def __init__(self, module: types.ModuleType, code: str) -> None:
        self.kernel = _Function(module, code)


class CPointer:
    def __init__(self, ptr: int = 0) -> None:
        self.ptr = ptr


class CompileException(Exception):
    pass


def install(monkeypatch) -> types.ModuleType:
    """Make ``import cupy`` give the stand-in for this test; returns it."""
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "0-fake"
    cupy.launches = []
    cupy.ndarray = ndarray
    cupy.empty = lambda shape, dtype=np.float32: ndarray(np.empty(shape, dtype))
    cupy.full = lambda shape, v, dtype=np.float32: ndarray(np.full(shape, v, dtype))
    cupy.asarray = lambda a, dtype=None: a if isinstance(a, ndarray) else ndarray(
        np.array(a, dtype=dtype))
    cupy.asnumpy = lambda a: a._a.copy()
    cupy.ascontiguousarray = lambda a: ndarray(np.ascontiguousarray(a._a))

    class RawModule:
        def __init__(self, code, options=(), name_expressions=()):
            self.code = code

        def get_function(self, name):
            return _Raw(cupy, self.code)

    cupy.RawModule = RawModule
    cuda = types.ModuleType("cupy.cuda")
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.getDevice = lambda: 0
    runtime.getDeviceCount = lambda: 1
    function = types.ModuleType("cupy.cuda.function")
    function.CPointer = CPointer
    compiler = types.ModuleType("cupy.cuda.compiler")
    compiler.CompileException = CompileException
    cuda.runtime, cuda.function, cuda.compiler = runtime, function, compiler
    cupy.cuda = cuda
    for name, mod in (("cupy", cupy), ("cupy.cuda", cuda), ("cupy.cuda.runtime", runtime),
                      ("cupy.cuda.function", function), ("cupy.cuda.compiler", compiler)):
        monkeypatch.setitem(sys.modules, name, mod)
    from cunumpy import _backend

    monkeypatch.setattr(_backend, "_cupy_status", (True, "CuPy 0-fake with 1 CUDA device(s)"))
    return cupy
