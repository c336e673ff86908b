"""The ``metal-cuda`` engine of MetalKernel (setting ``cuda``): Metal kernels on an NVIDIA GPU, through NVRTC and CuPy.

Each kernel variant is translated to one CUDA C++ translation unit
(:func:`cunumpy.emulation._msl_cuda.translate`), compiled by ``cupy.RawModule`` (CuPy keeps the
binary in its disk cache; the source carries a digest of the runtime headers, so a runtime change
misses that cache) and launched with one CUDA block per Metal threadgroup.

Arrays: device arrays are ``cupy.ndarray`` (used in place; resident-mode outputs are CuPy arrays).
NumPy inputs are copied to the device (recorded as ``to_device`` by the front end). Repeated calls
on CuPy arrays and Python numbers go through a cached launch plan
(:mod:`cunumpy._engines.metal_cuda._fast`), which passes the numbers by value in the kernel's
arguments (``cn::small_t``, MLX's ``constant`` buffers of fewer than 8 elements). bfloat16 arrays live on the device as ``uint16`` (CuPy has
no bfloat16), bit for bit.

CuPy is imported at the first use, never at import.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from cunumpy._engines._base import Program
from cunumpy._engines._library import LibraryLaunch
from cunumpy._engines._metal import MetalEngineBase, MetalLaunch, MetalLimits
from cunumpy._lang.metal_dtypes import is_bfloat16
from cunumpy.emulation._build import RUNTIME_DIR as _RUNTIME
from cunumpy.emulation._msl_cuda import ENGINE, MAX_DIMS, CudaUnit, nvrtc_log_as_gcc, translate

__all__ = ["CudaMetalEngine"]

_HEADERS = ("cn_rtc_std.h", "cn_metal_types.h", "cn_metal_flags.h", "cn_metal_bind.h",
            "cn_metal_cuda.h")
_LIMITS = MetalLimits(1024, (2**31 - 1, 65535, 65535))
_SMALL = 8
_VALUE_CACHE = 4096


def _runtime_digest() -> str:
    h = hashlib.sha256()
    for name in _HEADERS:
        h.update((_RUNTIME / name).read_bytes())
    return h.hexdigest()[:32]


def _storage(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.uint16) if is_bfloat16(dtype) else np.dtype(dtype)


class CudaMetalEngine(MetalEngineBase):
    """Runs MetalKernel launches on an NVIDIA GPU (the ``metal-cuda`` engine, setting ``cuda``)."""

    name = ENGINE
    device_out = True

    def __init__(self) -> None:
        super().__init__()
        self._cupy: Any = None
        self._digest: str | None = None
        self._functions: dict[tuple, tuple[Any, CudaUnit]] = {}
        self._geometry: dict[tuple, tuple[Any, Any]] = {}
        self._values: dict[tuple, tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._keep: list[Any] = []

    def limits(self) -> MetalLimits:
        """Metal's 1024 threads per threadgroup; CUDA's 65535 blocks along y and z."""
        return _LIMITS

    # -- availability and arrays ---------------------------------------------------------------
    def _module(self) -> Any:
        if self._cupy is None:
            self.check_available()
            import cupy

            self._cupy = cupy
        return self._cupy

    def check_available(self) -> None:
        from cunumpy._engines._status import cupy_engine_status

        ok, reason = cupy_engine_status()
        if not ok:
            raise RuntimeError(
                f"MetalKernel cannot launch on the {ENGINE} engine: {reason}; it needs an NVIDIA "
                "GPU with CuPy. Run Metal kernels on the CPU emulator with "
                "CUNUMPY_METAL_ENGINE=emulator"
            )

    def is_device_array(self, a: Any) -> bool:
        cupy = sys.modules.get("cupy")
        return cupy is not None and isinstance(a, cupy.ndarray)

    def describe(self, a: Any) -> tuple[np.dtype, tuple[int, ...]]:
        return np.dtype(a.dtype), tuple(a.shape)

    def to_device(self, host: np.ndarray, dtype: np.dtype, contiguous: bool) -> Any:
        cupy = self._module()
        arr = np.asarray(host, dtype=dtype)
        if contiguous or any(s < 0 for s in arr.strides):
            arr = np.ascontiguousarray(arr)
        if is_bfloat16(dtype):
            arr = np.ascontiguousarray(arr).view(np.uint16)
        return cupy.asarray(arr)

    def host_view(self, device: Any) -> np.ndarray:
        return self._module().asnumpy(device)

    def contiguous(self, device: Any) -> Any:
        if device.flags.c_contiguous:
            return device
        return self._module().ascontiguousarray(device)

    # -- compilation ---------------------------------------------------------------------------
    def compile(self, program: Program, small: tuple[bool, ...],
                threads: int) -> tuple[Any, CudaUnit]:
        """The compiled ``cupy.RawKernel`` and translation of one variant (cached by the
        program, which inputs travel by value, the threadgroup size and the device)."""
        cupy = self._module()
        key = (program, small, threads, cupy.cuda.runtime.getDevice())
        hit = self._functions.get(key)
        if hit is not None:
            return hit
        with self._lock:
            hit = self._functions.get(key)
            if hit is not None:
                return hit
            signature = program.signature
            unit = translate(signature, small_by_value=small, threads_per_group=threads)
            _, function = self.nvrtc(unit.source, unit.name, program.setting("math_mode"),
                                     f"[{ENGINE} kernel {signature.name!r}]", unit.user_text)
            hit = (function, unit)
            self._functions[key] = hit
        return hit

    def nvrtc(self, source: str, name: str, math_mode: str, tag: str,
              user_text: dict[str, str]) -> tuple[Any, Any]:
        """Compile a translation unit with NVRTC (through ``cupy.RawModule``, which keeps the
        binary in CuPy's disk cache); return the module and its function ``name``.

        Raises :class:`~cunumpy.emulation.errors.KernelCompileError` with NVRTC's messages
        pointing at the user's text (``body:3``, ``lib.metal:12``)."""
        cupy = self._module()
        if self._digest is None:
            self._digest = _runtime_digest()
        code = f"// cunumpy metal runtime {self._digest}\n{source}"
        options = [f"-I{_RUNTIME}", "-std=c++17", "--device-int128"]
        if math_mode == "fast":
            options += ["--use_fast_math", "-D__FAST_MATH__=1"]
        try:
            module = cupy.RawModule(code=code, options=tuple(options))
            function = module.get_function(name).kernel  # compiles now
        except cupy.cuda.compiler.CompileException as exc:
            from cunumpy.emulation._build import diagnostics
            from cunumpy.emulation.errors import KernelCompileError

            log = nvrtc_log_as_gcc(str(exc))
            message = "\n".join(diagnostics(f"{tag} does not compile with NVRTC:", log,
                                            user_text))
            raise KernelCompileError(message, log=log, source=code,
                                     command=tuple(options)) from None
        return module, function

    def prepare_library(self, program: Program) -> Callable[[LibraryLaunch], None]:
        """The launch callable of one kernel of a whole library (:class:`~cunumpy.kernels.MetalLibrary`):
        CuPy arrays are used in place, NumPy arrays copied to the device and back
        (:mod:`cunumpy._engines.metal_cuda._library`)."""
        from cunumpy._engines.metal_cuda._library import prepare_library

        return prepare_library(self, program)

    def _launch_args(self, grid: tuple[int, int, int], threadgroup: tuple[int, int, int]) -> Any:
        key = (grid, threadgroup)
        hit = self._geometry.get(key)
        if hit is None:
            from cupy.cuda.function import CPointer

            buf = np.array([*grid, *threadgroup], dtype=np.uint32)
            hit = self._geometry[key] = (buf, CPointer(buf.ctypes.data))
        return hit[1]

    def _small_arg(self, host: np.ndarray) -> Any:
        """A pointer to the bytes of ``cn::small_t<T>`` holding ``host`` (cached by value; the
        cached buffers are never changed, so a pointer stays valid)."""
        key = (host.dtype.str, host.tobytes())
        hit = self._values.get(key)
        if hit is None:
            from cupy.cuda.function import CPointer

            buf = np.zeros(_SMALL, dtype=_storage(host.dtype))
            buf[: host.size] = host.reshape(-1).view(buf.dtype)
            hit = (buf, CPointer(buf.ctypes.data))
            if len(self._values) < _VALUE_CACHE:
                self._values[key] = hit
            else:
                # Not cached: kept alive for a few more launches (CUDA copies a launch's
                # arguments when the launch is queued, so the call only needs it until then).
                self._keep = [*self._keep[-63:], hit]
        return hit[1]

    # -- launching -----------------------------------------------------------------------------
    def _prepare(self, program: Program) -> Callable[[MetalLaunch], list[Any]]:
        signature = program.signature
        tag = f"[{ENGINE} kernel {signature.name!r}]"
        functions: dict[tuple, tuple[Any, CudaUnit]] = {}  # this program's, by (threads, device)

        def go(launch: MetalLaunch) -> list[Any]:
            return self._launch(program, signature, tag, launch, functions)

        return go

    def _launch(self, program: Program, signature: Any, tag: str, launch: MetalLaunch,
                functions: dict[tuple, tuple[Any, CudaUnit]]) -> list[Any]:
        """Run one launch; return the outputs as CuPy arrays.

        ``launch.into`` (optional, one per output) are the caller's arrays: a C-contiguous CuPy
        array of the output's storage dtype and size is written in place; others get a fresh
        array. The front end checked the geometry against :meth:`limits`.
        """
        cupy = self._module()
        from cupy.cuda.function import CPointer

        grid, threadgroup, inputs = launch.grid, launch.threadgroup, launch.inputs
        into, init_value = launch.into, launch.init_value
        small = (False,) * len(inputs)  # every input is a CuPy array here
        threads = threadgroup[0] * threadgroup[1] * threadgroup[2]
        assert threads <= _LIMITS.max_threads_per_threadgroup, threadgroup
        groups = tuple(-(-g // t) for g, t in zip(grid, threadgroup))
        key = (threads, cupy.cuda.runtime.getDevice())
        hit = functions.get(key)
        if hit is None:
            hit = functions[key] = self.compile(program, small, threads)
        function, unit = hit
        outputs = []
        for i, (shape, dtype) in enumerate(zip(launch.output_shapes, launch.output_dtypes)):
            store = _storage(dtype)
            given = into[i] if into is not None else None
            if (given is not None and self.is_device_array(given)
                    and given.dtype == store
                    and given.flags.c_contiguous and given.size == int(np.prod(shape))
                    and not any(_overlap(given, a) for a in inputs)):
                if init_value is not None:
                    given.fill(np.array(init_value, dtype=dtype).view(store)
                               if store != dtype else init_value)
                outputs.append(given)
            elif init_value is None:
                outputs.append(cupy.empty(shape, dtype=store))
            else:
                value = np.array(init_value, dtype=dtype).view(store) if store != dtype \
                    else init_value
                outputs.append(cupy.full(shape, value, dtype=store))
        if min(grid) == 0:
            return outputs
        keep: list[Any] = []
        args: list[Any] = [self._launch_args(grid, threadgroup)]
        for a in unit.args:
            if a.kind == "output":
                args.append(outputs[a.arg])
            elif a.kind == "input":
                args.append(inputs[a.arg])
            else:
                buf = _meta(inputs[a.arg], tag, signature, a.arg)
                keep.append(buf)
                args.append(CPointer(buf.ctypes.data))
        function(groups, (threads, 1, 1), tuple(args), 0, launch.stream)
        return outputs


def _overlap(a: Any, b: Any) -> bool:
    """True when CuPy arrays ``a`` and ``b`` may share memory (an output given as an input too
    is then not written in place: the kernel reads its inputs while it writes)."""
    if not a.nbytes or not b.nbytes:
        return False
    lo_a = a.data.ptr
    lo_b = b.data.ptr + sum((n - 1) * s for n, s in zip(b.shape, b.strides) if s < 0)
    span_b = sum((n - 1) * abs(s) for n, s in zip(b.shape, b.strides)) + b.itemsize
    return lo_a < lo_b + span_b and lo_b < lo_a + a.nbytes


def _meta(a: Any, tag: str, signature: Any, index: int) -> np.ndarray:
    """The bytes of ``cn::meta_t`` (shape, element strides, ndim) for input ``a``."""
    data = a
    shape = tuple(data.shape)
    if len(shape) > MAX_DIMS:
        names = [p.name for p in signature.params if p.kind == "input" and p.arg == index]
        raise ValueError(
            f"{tag} input {names[0] if names else index!r} has {len(shape)} dimensions; the "
            f"{ENGINE} engine passes _shape/_strides for at most {MAX_DIMS}"
        )
    item = data.dtype.itemsize
    strides = tuple(int(s) // item for s in data.strides)
    buf = np.zeros(19, dtype=np.int64)  # int shape[12]; int64 strides[12]; int ndim; (padded)
    raw = buf.view(np.uint8)
    raw[: 4 * len(shape)] = np.array(shape, dtype=np.int32).view(np.uint8)
    raw[48 : 48 + 8 * len(strides)] = np.array(strides, dtype=np.int64).view(np.uint8)
    raw[144:148] = np.array([len(shape)], dtype=np.int32).view(np.uint8)
    return buf

