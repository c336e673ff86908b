"""The CuPy engine: compiles a :class:`~cunumpy.kernels.CudaKernel` with NVRTC and launches it.

CuPy is imported at the first launch (or the first :meth:`CupyEngine.array_types` call), never
at import. Compilation goes through ``cupy.RawModule``: lazily, once per device and kernel
variant (source, options, name expression, contents of the included headers). CuPy keeps the
compiled binary in its own disk cache (``~/.cupy/kernel_cache`` unless ``CUPY_CACHE_DIR`` says
otherwise); the engine adds a comment with the digest of the included headers to the compiled
text, so a header change also misses that cache.

A launch calls the compiled ``cupy.cuda.Function`` directly (not ``RawKernel.__call__``), with
the argument tuple the front end checked; a kernel that synchronises the grid
(``cg::this_grid().sync()``) is launched cooperatively (``cuLaunchCooperativeKernel``: every
block resident, or the launch fails). Errors CUDA reports at launch are re-raised by the
front end as :class:`~cunumpy.kernels.CudaLaunchError` naming the kernel, grid and block.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cunumpy._engines._cuda import DEFAULT_LIMITS, CudaCompileError, CudaEngine, CudaLimits
from cunumpy._engines._cuda_libraries import library_include_options
from cunumpy._lang.cuda_features import uses_grid_sync

if TYPE_CHECKING:  # pragma: no cover
    from cunumpy._engines._base import Program

__all__ = ["CupyEngine"]

_OPTIN_THRESHOLD = 48 * 1024

SCALAR_CACHE_SIZE = 1024
"""Distinct values cached per scalar parameter type by :meth:`CupyEngine.scalar_converter`."""

_CTYPES = {
    "b1": ctypes.c_bool,
    "i1": ctypes.c_int8,
    "u1": ctypes.c_uint8,
    "i2": ctypes.c_int16,
    "u2": ctypes.c_uint16,
    "i4": ctypes.c_int32,
    "u4": ctypes.c_uint32,
    "i8": ctypes.c_int64,
    "u8": ctypes.c_uint64,
    "f4": ctypes.c_float,
    "f8": ctypes.c_double,
}


class CupyEngine(CudaEngine):
    """Runs CUDA kernels on an NVIDIA GPU through CuPy. Takes device arrays only."""

    name = "cupy"
    array_space = "device"

    def __init__(self) -> None:
        self._cupy: Any = None
        self._limits: dict[int, CudaLimits] = {}
        self._compiled: dict[tuple, tuple[Any, Any]] = {}
        self._optin: dict[tuple, int] = {}
        self._launches: dict[Program, Callable[..., None]] = {}
        self._lock = threading.Lock()

    # -- CuPy access ---------------------------------------------------------------------------
    def _status(self) -> tuple[bool, str]:
        from cunumpy._engines._status import cupy_engine_status

        return tuple(cupy_engine_status())  # type: ignore[return-value]

    def _module(self) -> Any:
        if self._cupy is None:
            ok, reason = self._status()
            if not ok:
                raise RuntimeError(
                    f"the cupy CUDA engine cannot run here: {reason}; run CUDA kernels on the CPU "
                    "emulator with CUNUMPY_CUDA_ENGINE=emulator (or CudaKernel(..., "
                    "engine='emulator'))"
                )
            import cupy

            self._cupy = cupy
        return self._cupy

    def array_types(self) -> tuple[type, ...]:
        ok, _ = self._status()
        if not ok:
            return ()
        return (self._module().ndarray,)

    def scalar_converter(self, dtype: Any) -> Callable[[Any], Any]:
        """Python number -> a cached ``cupy.cuda.function.CPointer`` to its C value.

        CUDA reads each kernel parameter from the address it is given, with the size the
        compiled kernel declares, when the launch is queued. Handing CuPy a pointer to a
        ready-made C value skips building a NumPy scalar (and CuPy's own conversion of it) at
        every call. Values are cached per parameter type, never freed or changed (so a pointer
        stays valid in every thread); past :data:`SCALAR_CACHE_SIZE` distinct values, and for
        zero (``-0.0 == 0.0``), a NumPy scalar is passed instead.
        """
        make = dtype.type
        ctype = _CTYPES.get(dtype.str[1:]) if dtype.isnative else None
        try:
            from cupy.cuda.function import CPointer
        except ImportError:  # pragma: no cover - CuPy without the class: NumPy scalars
            return make
        if ctype is None:
            return make
        cache: dict[Any, Any] = {}
        keep: list[Any] = []
        limit = SCALAR_CACHE_SIZE
        addressof = ctypes.addressof

        def convert(value: Any) -> Any:
            hit = cache.get(value)
            if hit is not None:
                return hit
            if not value or len(cache) >= limit:
                return make(value)
            c_value = ctype(value)
            keep.append(c_value)
            pointer = cache[value] = CPointer(addressof(c_value))
            return pointer

        return convert

    def adopt_array(self, array: Any) -> Any:
        cupy = self._module()
        if isinstance(array, cupy.ndarray):
            return array
        # Another library's device array (__cuda_array_interface__): a zero-copy CuPy view.
        view = cupy.asarray(array)
        ptr = array.__cuda_array_interface__["data"][0]
        if view.size and view.data.ptr != ptr:  # pragma: no cover - CuPy guarantees a view
            raise RuntimeError("internal error: cupy.asarray copied a device array")
        return view

    # -- limits --------------------------------------------------------------------------------
    def limits(self) -> CudaLimits:
        cupy = self._module()
        dev = cupy.cuda.runtime.getDevice()
        lim = self._limits.get(dev)
        if lim is None:
            props = cupy.cuda.runtime.getDeviceProperties(dev)

            def get(key: str, default: Any) -> Any:
                value = props.get(key, props.get(key.encode(), default))
                return default if value in (None, 0, -1) else value

            lim = CudaLimits(
                max_threads_per_block=int(get("maxThreadsPerBlock", 1024)),
                max_block=tuple(int(v) for v in get("maxThreadsDim", DEFAULT_LIMITS.max_block)),
                max_grid=tuple(int(v) for v in get("maxGridSize", DEFAULT_LIMITS.max_grid)),
                max_shared_mem=int(get("sharedMemPerBlock", DEFAULT_LIMITS.max_shared_mem)),
                max_shared_mem_optin=int(
                    get("sharedMemPerBlockOptin", get("sharedMemPerBlock", 48 * 1024))
                ),
            )
            self._limits[dev] = lim
        return lim

    # -- compilation ---------------------------------------------------------------------------
    @staticmethod
    def _key(program: Program, device: int) -> tuple:
        """Everything that selects the compiled function: the device, the code, the options
        and the function itself (its name, or its name expression for C++ linkage). One source
        often holds several ``extern "C"`` kernels, which differ only in the name."""
        return (device, program.source, program.options, program.name, program.name_expression)

    def compile(self, program: Program, device: int | None = None) -> Any:
        """Compile ``program`` for ``device`` (default: the current one); return the function.

        Cached per device and variant for the process; a new :class:`CudaKernel` whose included
        headers changed gets a new variant.
        """
        cupy = self._module()
        dev = cupy.cuda.runtime.getDevice() if device is None else int(device)
        key = self._key(program, dev)
        code, options, expression = program.source, program.options, program.name_expression
        hit = self._compiled.get(key)
        if hit is not None:
            return hit[1]
        with self._lock:
            hit = self._compiled.get(key)
            if hit is not None:
                return hit[1]
            with cupy.cuda.Device(dev):
                try:
                    # cuRAND's headers are not on NVRTC's path: add their directory
                    options = options + library_include_options(code, cupy, program.name)
                except FileNotFoundError as exc:
                    raise CudaCompileError(str(exc), log=str(exc), options=options,
                                           source=code) from exc
                try:
                    if expression is None:
                        module = cupy.RawModule(code=code, options=options)
                        # extern "C" in a namespace: the symbol has no qualifier
                        raw = module.get_function(program.name.rsplit("::", 1)[-1])
                    else:
                        module = cupy.RawModule(
                            code=code, options=options, name_expressions=(expression,)
                        )
                        raw = module.get_function(expression)
                    function = raw.kernel
                except cupy.cuda.compiler.CompileException as exc:
                    log = str(exc)
                    raise CudaCompileError(
                        f"[cupy kernel {program.name!r}] NVRTC could not compile it with options "
                        f"{list(options)}:\n{log}",
                        log=log,
                        options=options,
                        source=code,
                    ) from exc
            self._compiled[key] = (raw, function)
        return function

    def reserve_shared_mem(self, program: Program, nbytes: int) -> None:
        """Opt the kernel in to more than 48 KiB of dynamic shared memory on this device."""
        if nbytes <= _OPTIN_THRESHOLD:
            return
        cupy = self._module()
        dev = cupy.cuda.runtime.getDevice()
        self.compile(program, dev)
        key = self._key(program, dev)
        if self._optin.get(key, 0) >= nbytes:
            return
        raw, _ = self._compiled[key]
        with cupy.cuda.Device(dev):
            raw.max_dynamic_shared_size_bytes = nbytes
        self._optin[key] = nbytes

    # -- launching -----------------------------------------------------------------------------
    def launch_errors(self) -> tuple[type[BaseException], ...]:
        ok, _ = self._status()
        if not ok:
            return ()
        cupy = self._module()
        return (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError)

    def contiguity_attribute(self) -> str:
        # CuPy keeps C-contiguity in a read-only attribute; ``flags`` builds an object per call
        # (about 0.25 us on an H200 host), which matters at ~5 us per launch.
        ok, _ = self._status()
        if ok and hasattr(self._module().ndarray, "_c_contiguous"):
            return "_c_contiguous"
        return "flags.c_contiguous"

    def prepare(self, program: Program) -> Callable[..., None]:
        """The launch callable: the compiled ``cupy.cuda.Function`` itself when the process
        sees one device (compiled now, at the kernel's first launch), else a per-device
        lookup that compiles on first use on each device."""
        ok, reason = self._status()
        if not ok:
            message = (
                f"[cupy kernel {program.name!r}] cannot launch: {reason}; run CUDA kernels on "
                "the CPU emulator with CUNUMPY_CUDA_ENGINE=emulator"
            )

            def unavailable(
                grid: tuple, block: tuple, args: tuple, shared_mem: int, stream: Any
            ) -> None:
                raise RuntimeError(message)

            return unavailable
        cupy = self._module()
        # A kernel that synchronises the grid needs every block resident: a cooperative launch.
        cooperative = uses_grid_sync(program.source)
        if cupy.cuda.runtime.getDeviceCount() == 1 and not cooperative:
            return self.compile(program, 0)
        get_device = cupy.cuda.runtime.getDevice
        functions: dict[int, Any] = {}
        compile_for = self.compile

        def go(grid: tuple, block: tuple, args: tuple, shared_mem: int, stream: Any) -> None:
            dev = get_device()
            function = functions.get(dev)
            if function is None:
                function = functions[dev] = compile_for(program, dev)
            if cooperative:
                function(grid, block, args, shared_mem, stream, enable_cooperative_groups=True)
            else:
                function(grid, block, args, shared_mem, stream)

        return go

    def launch(
        self,
        program: Program,
        args: tuple,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: Any,
    ) -> None:
        go = self._launches.get(program)
        if go is None:
            go = self._launches[program] = self.prepare(program)
        if shared_mem:
            self.reserve_shared_mem(program, shared_mem)
        go(grid, block, args, shared_mem, stream)

    def synchronize(self, stream: Any) -> None:
        cupy = self._module()
        if stream is None:
            stream = cupy.cuda.get_current_stream()
        stream.synchronize()

    def sync_errors(self) -> tuple[type[BaseException], ...]:
        """Exception types a synchronisation raises when a kernel failed."""
        cupy = self._module()
        return (cupy.cuda.driver.CUDADriverError, cupy.cuda.runtime.CUDARuntimeError)

    def texture_handle(self, texture: Any) -> int:
        """A real CUDA texture object of ``texture`` on the current device
        (:mod:`cunumpy._engines._cupy_texture`); its texels are copied at each launch."""
        from cunumpy._engines._cupy_texture import texture_object

        cupy = self._module()
        return texture_object(cupy, texture, cupy.cuda.runtime.getDevice())

    def nonfinite(self, array: Any) -> tuple[int, int]:
        cupy = self._module()
        bad = ~cupy.isfinite(array.reshape(-1))
        count = int(bad.sum())
        return count, (int(bad.argmax()) if count else -1)
