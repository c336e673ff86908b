"""PyTorch's ``torch.mps.compile_shader`` on machines without a Mac: kernels run on CPU tensors.

:func:`torch_mps_on_cpu` replaces ``torch.mps.compile_shader`` (and makes
``torch.mps.synchronize`` harmless) for the duration of a ``with`` block, or of a test through
the plugin's ``torch_mps_on_cpu`` fixture. The library it returns behaves like PyTorch's
(``torch/mps/__init__.py``, ``torch/csrc/mps/Module.cpp`` and ``MetalShaderLibrary`` in ATen),
rule by rule:

- the source's ``#include`` lines are embedded from torch's own include folder by torch's own
  ``_embed_headers``, as ``compile_shader`` does (``<c10/metal/...>`` headers);
- ``lib.name`` gives a kernel (a name the library lacks raises ``RuntimeError``, as PyTorch's
  ``Failed to create function state object``); ``dir(lib)`` lists the kernels;
- ``kernel(*args, threads=None, group_size=None, arg_casts=None, error_buf_idx=None)``: argument
  *i* binds to buffer index *i*; a tensor binds its storage from its storage offset (contiguous
  or not; CPU tensors, written in place); a Python float is 4 bytes of ``float``, an int 8 bytes
  of ``int64_t`` (the kernel reads those bytes as whatever it declares); a list of ints is an
  int64 array, of floats a float32 array, of tensors an array of their addresses;
  ``arg_casts`` (one cast for all, or ``{index: cast}``; ``fp16``, ``bf16``, ``int32``,
  ``int16``, ``int8``, ``uint8``) converts numbers and lists first;
- ``threads`` (an int or 1-3 ints; default the first tensor's ``numel()``) is
  ``dispatchThreads``; ``group_size`` has as many dimensions, default ``min(threads, 1024)`` in
  1-D and ``(1024, 1, 1)`` in 2-D and 3-D; a larger group raises ``ValueError``;
- kernels expose ``max_threads_per_threadgroup``, ``thread_execution_width`` and
  ``static_thread_group_memory_length``; ``[[threadgroup(i)]]`` memory cannot be sized (0 bytes);
- ``error_buf_idx`` binds c10's ``ErrorMessages`` buffer at that index; a kernel that reports an
  error (``TORCH_REPORT_ERROR``) raises ``RuntimeError`` after the launch.

The kernels run on the CPU emulator (``emu-metal``) with all its checks.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["torch_mps_on_cpu"]

INSTALL_HINT = (
    "the PyTorch drop-in needs PyTorch's CPU build: pip install 'torch==2.13.0+cpu' (or any "
    "torch with its c10/metal headers; a plain 'pip install torch' pulls the multi-GB CUDA build)"
)

_CASTS = {"fp16": np.float16, "bf16": "bfloat16", "int32": np.int32, "int16": np.int16,
          "int8": np.int8, "uint8": np.uint8}
_ERROR_MESSAGES = 30
_MESSAGE_BYTES = 512
"""``sizeof(c10::metal::ErrorMessage)``: file[128], func[128], message[250], two bytes of padding,
then ``unsigned line`` at offset 508."""
_ERROR_BYTES = 4 + _ERROR_MESSAGES * _MESSAGE_BYTES


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return torch


def _storage_bytes(t: Any) -> np.ndarray:
    """The tensor's storage from its storage offset to the end, as writable bytes."""
    if t.device.type != "cpu":
        raise RuntimeError(
            f"torch_mps_on_cpu runs kernels on CPU tensors; got a tensor on {t.device}")
    storage = t.untyped_storage()
    offset = t.storage_offset() * t.element_size()
    n = storage.nbytes() - offset
    if n <= 0:
        return np.zeros(0, dtype=np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(storage.data_ptr() + offset))


def _address(t: Any) -> int:
    return int(t.untyped_storage().data_ptr() + t.storage_offset() * t.element_size())


def _cast_dtype(cast: str) -> Any:
    if cast not in _CASTS:
        raise RuntimeError(f"Unsupported cast instruction {cast}")
    dt = _CASTS[cast]
    if dt == "bfloat16":
        from cunumpy._lang.metal_dtypes import bfloat16

        return bfloat16()
    return dt


def _value_bytes(value: Any, cast: str) -> np.ndarray:
    torch = _torch()
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            raise RuntimeError("Empty list/tuple can not be an argument to metal kernel")
        first = value[0]
        if isinstance(first, torch.Tensor):
            return np.array([_address(t) for t in value], dtype=np.uint64).view(np.uint8)
        if isinstance(first, bool) or isinstance(first, int):
            arr = np.array([int(v) for v in value], dtype=np.int64)
        elif isinstance(first, float):
            arr = np.array([float(v) for v in value], dtype=np.float32)
        else:
            raise RuntimeError("Unexpected argument types")
    elif isinstance(value, float):
        arr = np.array([value], dtype=np.float32)
    elif isinstance(value, int):  # bool included, as pybind11 takes it
        arr = np.array([int(value)], dtype=np.int64)
    else:
        raise RuntimeError("Unsupported argument type")
    if cast:
        arr = arr.astype(_cast_dtype(cast))
    return np.ascontiguousarray(arr).view(np.uint8)


def _dims(value: Any) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, int):
        return [int(value)]
    dims = [int(v) for v in value]
    if not 0 < len(dims) < 4:
        raise RuntimeError("Expected 1 to 3 dimensions")
    if any(v < 0 for v in dims):
        raise TypeError("threads and group_size take non-negative integers")
    return dims


class MPSKernelOnCPU:
    """One kernel of a :class:`MPSLibraryOnCPU` (PyTorch's ``_mps_MetalKernel``)."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    @property
    def max_threads_per_threadgroup(self) -> int:
        return self._fn.max_threads_per_threadgroup

    @property
    def thread_execution_width(self) -> int:
        return self._fn.thread_execution_width

    @property
    def static_thread_group_memory_length(self) -> int:
        return self._fn.static_threadgroup_memory_length

    def __call__(self, *args: Any, threads: Any = None, group_size: Any = None,
                 arg_casts: Any = None, error_buf_idx: Any = None) -> None:
        torch = _torch()
        default_cast, cast_map = "", {}
        if isinstance(arg_casts, str):
            default_cast = arg_casts
        elif isinstance(arg_casts, dict):
            cast_map = {int(k): str(v) for k, v in arg_casts.items()}
        elif arg_casts is not None:
            raise RuntimeError(f"Unexpected caster arg type {type(arg_casts).__name__}")
        dims = _dims(threads)
        group = _dims(group_size)
        buffers: dict[int, np.ndarray] = {}
        for idx, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                buffers[idx] = _storage_bytes(a)
                if dims is None:
                    dims = [int(a.numel())]
                continue
            buffers[idx] = _value_bytes(a, cast_map.get(idx, default_cast))
        errors = None
        if error_buf_idx is not None:
            errors = np.zeros(_ERROR_BYTES, dtype=np.uint8)
            buffers[int(error_buf_idx)] = errors
        if dims is None:
            raise RuntimeError("Number of threads is undefined or has wrong dimension")
        if group is not None and len(group) != len(dims):
            raise RuntimeError("size and group_size must have same number of dimensions")
        most = self.max_threads_per_threadgroup
        if len(dims) == 1:
            tg = [group[0] if group is not None else min(dims[0], most)]
        else:
            tg = list(group) if group is not None else [most]
        tg3 = tuple(tg) + (1,) * (3 - len(tg))
        if int(np.prod(tg3)) > most:
            raise ValueError(f"Threadgroup size exceeds {most} limit")
        grid3 = tuple(dims) + (1,) * (3 - len(dims))
        tg3 = tuple(max(1, min(t, g)) for t, g in zip(tg3, grid3))
        kernel = self._fn.kernel
        for p in kernel.params:
            if p.kind == "buffer" and p.index not in buffers:
                raise RuntimeError(
                    f"kernel {self._fn.name!r} reads buffer {p.index} ({p.name}: {p.declared}), "
                    f"but the call passed {len(args)} argument(s)")
        tgmem = {p.index: 0 for p in kernel.params if p.kind == "threadgroup"}
        self._fn.launch_buffers(buffers, grid3, tg3, tgmem, "emu-metal")
        if errors is not None:
            _raise_reported(errors)

    def __repr__(self) -> str:
        return f"<torch_mps_on_cpu kernel {self._fn.name!r}>"


def _raise_reported(errors: np.ndarray) -> None:
    count = int(errors[:4].view(np.uint32)[0])
    if not count:
        return
    first = errors[4: 4 + _MESSAGE_BYTES]

    def text(a: np.ndarray) -> str:
        return bytes(a).split(b"\0", 1)[0].decode(errors="replace")

    line = int(first[508:512].view(np.uint32)[0])
    raise RuntimeError(f"{text(first[:128])}:{line}: {text(first[128:256])}: "
                       f"{text(first[256:506])}")


class MPSLibraryOnCPU:
    """What ``torch.mps.compile_shader`` returns under :func:`torch_mps_on_cpu`."""

    def __init__(self, source: str) -> None:
        from cunumpy.kernels.metal_library import MetalLibrary

        self._library = MetalLibrary(source, filename="shader.metal")
        self._kernels: dict[str, MPSKernelOnCPU] = {}

    def __getattr__(self, name: str) -> MPSKernelOnCPU:
        if name.startswith("__"):
            raise AttributeError(name)
        k = self._kernels.get(name)
        if k is None:
            if name not in self._library.names:
                raise RuntimeError(f"Failed to create function state object for: {name}")
            k = self._kernels[name] = MPSKernelOnCPU(self._library.kernel(name))
        return k

    def __dir__(self) -> Sequence[str]:
        return list(self._library.names)


def compile_shader(source: str) -> MPSLibraryOnCPU:
    """``torch.mps.compile_shader``, on the CPU: headers embedded as PyTorch embeds them."""
    _torch()
    import torch.mps as mps
    from torch.utils._cpp_embed_headers import _embed_headers

    include = Path(mps.__file__).parent.parent / "include"
    text = _embed_headers([line + "\n" for line in source.split("\n")], [include], set())
    return MPSLibraryOnCPU(text)


@contextlib.contextmanager
def torch_mps_on_cpu() -> Iterator[None]:
    """Make ``torch.mps.compile_shader`` run its kernels on CPU tensors (see the module).

    Raises
    ------
    ImportError
        PyTorch is not installed (the message says which wheel to install).
    """
    torch = _torch()
    import torch.mps as mps

    saved = (mps.compile_shader, mps.synchronize)
    mps.compile_shader = compile_shader
    mps.synchronize = lambda: None
    try:
        yield
    finally:
        mps.compile_shader, mps.synchronize = saved
        del torch
