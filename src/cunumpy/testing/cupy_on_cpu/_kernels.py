"""``cupy.RawKernel`` and ``cupy.RawModule`` of the stand-in: CUDA C++ run on the CPU emulator.

A kernel is parsed at its first launch (CuPy compiles then too) and runs on cunumpy's CUDA
emulator (``emu-cuda``, :func:`cunumpy.emulation.cuda.run_cuda`): bounds of every array argument
are checked, and with ``CUNUMPY_EMULATOR_RACES=1`` (or ``kernel.emulator_options =
EmulatorOptions(races=True)``) data races are looked for. A failure inside the kernel raises at
the launch an :class:`~cunumpy.emulation.errors.EmulationError` naming the kernel, the argument,
the thread and the source line.

Arguments are converted as CuPy converts them (``cupy/cuda/function.pyx``, ``_scalar.pyx``):

- a stand-in :class:`~._array.ndarray` passes its data pointer (whatever the parameter's
  pointee type: the kernel reinterprets the bytes, as on a GPU); ``None`` a null pointer;
- a Python ``bool`` as a one-byte ``bool``, an ``int`` as a 64-bit integer (``unsigned`` when it
  does not fit a signed one), a ``float`` as a ``double``, a ``complex`` as a
  ``complex<double>``; a NumPy scalar (or a NumPy array of size one) as the bytes of its dtype.
  The kernel's parameter then reads the first ``sizeof(parameter)`` of those bytes: an ``int``
  parameter given a Python int reads its low half, a ``float`` parameter given a Python float
  reads half of a double (garbage, as on a GPU);
- a NumPy array of another size raises CuPy's ``TypeError``; a value shorter than the parameter
  (a NumPy ``float32`` for a ``double``) raises ``TypeError`` here, where a GPU would read past
  it.

Grid and block entries below 1 are raised to 1, as CuPy does.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from cunumpy.testing.cupy_on_cpu._array import MemoryPointer, ndarray, unwrap

__all__ = ["RawKernel", "RawModule", "kernel_buffer", "launch_on_emulator"]

ARCH = 900
"""``__CUDA_ARCH__`` the kernels see (the emulator's runtime defines it: an H100/H200)."""

_TAG = "cupy stand-in"


def kernel_buffer(data: np.ndarray, what: str) -> np.ndarray:
    """The C-contiguous NumPy array a kernel's pointer sees for ``data`` (no copy).

    A contiguous array is itself; a strided view becomes the one-dimensional run of memory from
    its first element to its last, which is what its data pointer reaches on a GPU.
    """
    if data.flags.c_contiguous:
        return data
    if data.size == 0:
        return np.empty(0, dtype=data.dtype)
    if any(s < 0 for s, n in zip(data.strides, data.shape, strict=True) if n > 1):
        raise NotImplementedError(
            f"[{_TAG}] {what}: a view with negative strides passed as a raw pointer; the CUDA "
            "emulator (emu-cuda) needs the pointer at the lowest address. Pass a copy "
            "(cupy.ascontiguousarray)"
        )
    span = sum((n - 1) * s for n, s in zip(data.shape, data.strides, strict=True))
    count = span // data.itemsize + 1
    flat = np.lib.stride_tricks.as_strided(
        data, shape=(count,), strides=(data.itemsize,), writeable=data.flags.writeable
    )
    return flat


def _python_scalar(value: Any) -> np.ndarray | None:
    """CuPy's conversion of a Python scalar (``_scalar.pyx``): its dtype and bytes."""
    if isinstance(value, bool):
        return np.array(value, dtype=np.bool_)
    if isinstance(value, int):
        if value >= 2**63:
            return np.array(value, dtype=np.uint64)  # OverflowError past 2**64, as CuPy
        return np.array(value, dtype=np.int64)
    if isinstance(value, float):
        return np.array(value, dtype=np.float64)
    if isinstance(value, complex):
        return np.array(value, dtype=np.complex128)
    return None


def value_bytes(value: Any, what: str) -> np.ndarray:
    """The bytes CuPy passes for a value argument, as a ``uint8`` array."""
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise TypeError(
                f"You are trying to pass a numpy.ndarray of shape {value.shape} as a kernel "
                "parameter. Only numpy.ndarrays of size one can be passed by value. If you "
                "meant to pass a pointer to __global__ memory, you need to pass a cupy.ndarray "
                f"instead. ({what})"
            )
        arr = np.ascontiguousarray(value)
    elif isinstance(value, np.generic):
        arr = np.asarray(value)
    else:
        arr = _python_scalar(value)
        if arr is None:
            raise TypeError(
                f"Unsupported type {type(value)} ({what}): a kernel argument is a cupy.ndarray, "
                "a Python or NumPy scalar, or None"
            )
    return np.frombuffer(arr.tobytes(), dtype=np.uint8)


def _convert_value(param: Any, value: Any, what: str) -> Any:
    raw = value_bytes(value, what)
    if param.dtype is None:  # a struct or vector type: its bytes (the runtime checks the size)
        return raw.copy()
    need = param.dtype.itemsize
    if raw.size < need:
        src = np.asarray(value).dtype if not isinstance(value, (int, float, complex)) else (
            type(value).__name__)
        raise TypeError(
            f"{what} is declared {param.text!r} ({need} bytes) but was given {value!r} "
            f"({src}, {raw.size} bytes): the kernel would read past the value on a GPU. Pass "
            f"numpy.{param.dtype.name}(value)"
        )
    return np.frombuffer(raw[:need].tobytes(), dtype=param.dtype)[0]


def launch_on_emulator(
    kernel: Any, name: str, grid: Any, block: Any, args: Sequence[Any], shared_mem: int,
    options: Any, cooperative: bool = False,
) -> None:
    """Convert ``args`` as CuPy does and run one launch of the ``CudaKernel`` on emu-cuda."""
    from cunumpy.emulation.cuda import program_for, run_cuda

    params = kernel.params
    prefix = f"[emu-cuda kernel {name!r}]"
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"{prefix} args must be a tuple of kernel arguments, got "
                        f"{type(args).__name__}")
    if len(args) != len(params):
        raise TypeError(
            f"{prefix} takes {len(params)} arguments ({', '.join(p.text for p in params)}), "
            f"{len(args)} given (on a GPU this reads garbage or crashes)"
        )
    converted: list[Any] = []
    for k, (p, a) in enumerate(zip(params, args, strict=True)):
        what = f"{prefix} argument {k} ({p.text})"
        if p.pointer:
            if a is None:
                converted.append(None)
            elif isinstance(a, ndarray):
                data = unwrap(a)
                buf = kernel_buffer(data, what)
                if not p.const and not buf.flags.writeable:
                    buf = buf.copy()  # GPU memory is writable; a read-only host view is not
                converted.append(buf)
            elif isinstance(a, MemoryPointer):
                converted.append(kernel_buffer(a._owner, what))
            elif isinstance(a, np.ndarray):
                raise TypeError(
                    f"{what} is a numpy.ndarray; a pointer argument must be a cupy.ndarray "
                    "(device memory). Move it with cupy.asarray(...) first"
                )
            else:
                raise TypeError(
                    f"{what} is a pointer but was given {type(a).__name__} {a!r}; pass a "
                    "cupy.ndarray (raw addresses do not run on the CUDA emulator)"
                )
        else:
            if isinstance(a, ndarray):
                raise TypeError(
                    f"{what} is a value parameter but was given a cupy.ndarray (its pointer "
                    "would be read as the value); pass a scalar"
                )
            converted.append(_convert_value(p, a, what))
    g = _geometry(grid, "grid", prefix)
    b = _geometry(block, "block", prefix)
    if b[0] * b[1] * b[2] > 1024:
        from cunumpy.emulation.errors import EmulationError

        raise EmulationError(
            f"{prefix} block {b} has {b[0] * b[1] * b[2]} threads; a block has at most 1024 "
            "(CUDA_ERROR_INVALID_VALUE on a GPU)"
        )
    run_cuda(program_for(kernel.program), converted, g, b, int(shared_mem), options=options)


def _geometry(value: Any, what: str, prefix: str) -> tuple[int, int, int]:
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(items) <= 3 or not all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in items
    ):
        raise TypeError(f"{prefix} {what}={value!r} must be a tuple of 1 to 3 ints")
    full = [max(1, int(v)) for v in items] + [1] * (3 - len(items))
    return (full[0], full[1], full[2])


class RawKernel:
    """A CUDA kernel from source, as ``cupy.RawKernel``; launches run on the CPU emulator.

    Parameters
    ----------
    code : str
        CUDA C++ source holding the ``__global__`` function.
    name : str
        The kernel's name (``extern "C"``, or a name expression ``"f<float>"``).
    options : tuple of str, default ()
        Compiler options: ``-D``/``-U``/``-I`` are honoured, the others ignored (the emulator
        compiles with the host compiler).
    backend : {'nvrtc', 'nvcc'}, default 'nvrtc'
        Accepted for compatibility; both run on the emulator.
    translate_cucomplex : bool, default False
        Accepted (the emulator provides ``<cuComplex.h>`` either way).
    enable_cooperative_groups : bool, default False
        Accepted; a kernel that synchronises the grid is launched cooperatively by the emulator.
    jitify : bool, default False
        ``True`` raises ``NotImplementedError`` (Jitify is not emulated).

    Notes
    -----
    ``kernel(grid, block, args, shared_mem=0, stream=None)`` launches it; see the module
    documentation for the argument conversion. Device attributes that only a compiled GPU
    binary has (``num_regs``, ``ptx_version``...) raise ``NotImplementedError``;
    ``max_threads_per_block`` is 1024 and ``max_dynamic_shared_size_bytes`` is settable.
    """

    def __init__(self, code: str, name: str, options: tuple = (), backend: str = "nvrtc",
                 *, translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 jitify: bool = False) -> None:
        if not isinstance(code, str):
            raise TypeError(f"RawKernel code must be a str, got {type(code).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"RawKernel name must be a str, got {type(name).__name__}")
        if backend not in ("nvrtc", "nvcc"):
            raise ValueError(f"RawKernel backend must be 'nvrtc' or 'nvcc', got {backend!r}")
        if jitify:
            raise NotImplementedError(
                f"[{_TAG}] RawKernel {name!r}: jitify=True is not emulated by the CUDA emulator "
                "(emu-cuda); leave it False"
            )
        self.code = code
        self.name = name
        self.options = tuple(options)
        self.backend = backend
        self.translate_cucomplex = bool(translate_cucomplex)
        self.enable_cooperative_groups = bool(enable_cooperative_groups)
        self.file_path = None
        self.emulator_options: Any = None
        """:class:`~cunumpy.emulation.EmulatorOptions` for the launches (None: from the
        environment, the emulator settings of :mod:`cunumpy.config`)."""
        self._kernel: Any = None
        self._max_dynamic_shared = 0

    @property
    def kernel(self) -> Any:
        """The :class:`~cunumpy.kernels.CudaKernel` that runs the launches (made on first
        use)."""
        if self._kernel is None:
            from cunumpy.kernels.cuda import CudaKernel

            self._kernel = CudaKernel(self.code, self.name, options=self.options,
                                      check_signature=False, engine="emu-cuda")
        return self._kernel

    def compile(self, log_stream: Any = None) -> None:
        """Parse the kernel now (the emulator compiles it at the first launch)."""
        _ = self.kernel

    def __call__(self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0,
                 stream: Any = None, enable_cooperative_groups: bool | None = None) -> None:
        launch_on_emulator(self.kernel, self.name, grid, block, args, shared_mem,
                           self.emulator_options)

    # -- attributes ----------------------------------------------------------------------------
    @property
    def max_threads_per_block(self) -> int:
        """1024, every current GPU's limit (the emulator's too)."""
        return 1024

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """The dynamic shared memory allowed beyond 48 KiB (set it as on CuPy)."""
        return self._max_dynamic_shared

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        self._max_dynamic_shared = int(value)

    def _binary_only(self, what: str) -> Any:
        raise NotImplementedError(
            f"[{_TAG}] RawKernel {self.name!r}.{what} is an attribute of a GPU binary; the CUDA "
            "emulator (emu-cuda) does not make one"
        )

    num_regs = property(lambda self: self._binary_only("num_regs"))
    ptx_version = property(lambda self: self._binary_only("ptx_version"))
    binary_version = property(lambda self: self._binary_only("binary_version"))
    local_size_bytes = property(lambda self: self._binary_only("local_size_bytes"))
    const_size_bytes = property(lambda self: self._binary_only("const_size_bytes"))
    shared_size_bytes = property(lambda self: self._binary_only("shared_size_bytes"))

    @property
    def attributes(self) -> dict[str, Any]:
        """CuPy's attribute dictionary: raises as the binary-only attributes do."""
        return self._binary_only("attributes")

    def __repr__(self) -> str:
        return f"<RawKernel {self.name!r} (cupy stand-in, emu-cuda)>"


class RawModule:
    """CUDA C++ source holding several kernels, as ``cupy.RawModule``.

    Parameters
    ----------
    code : str, optional
        The source (``path=`` reads it from a file instead; ``.cubin``/``.ptx`` files cannot
        run on the emulator).
    path : str, optional
        A ``.cu`` file to read the source from.
    options : tuple of str, default ()
        Compiler options (``-D``/``-U``/``-I`` honoured).
    name_expressions : sequence of str, optional
        Template instantiations and C++ names to look up (``"f<float>"``), as CuPy needs them.
    backend, translate_cucomplex, enable_cooperative_groups, jitify
        As for :class:`RawKernel`.
    """

    def __init__(self, *, code: str | None = None, path: str | None = None,
                 options: tuple = (), backend: str = "nvrtc", translate_cucomplex: bool = False,
                 enable_cooperative_groups: bool = False,
                 name_expressions: Sequence[str] | None = None, jitify: bool = False) -> None:
        if (code is None) == (path is None):
            raise TypeError("One of `code` and `path` should be provided.")
        if path is not None:
            if not str(path).endswith(".cu"):
                raise NotImplementedError(
                    f"[{_TAG}] RawModule(path={path!r}): only CUDA source (.cu) runs on the CUDA "
                    "emulator (emu-cuda); a compiled cubin/ptx/fatbin cannot"
                )
            with open(path, encoding="utf-8") as f:
                code = f.read()
        if jitify:
            raise NotImplementedError(
                f"[{_TAG}] RawModule: jitify=True is not emulated by the CUDA emulator (emu-cuda)"
            )
        if name_expressions is not None and (
            isinstance(name_expressions, str)
            or not all(isinstance(n, str) for n in name_expressions)
        ):
            raise TypeError("name_expressions must be a sequence of str")
        assert code is not None
        self.code = code
        self.file_path = path
        self.options = tuple(options)
        self.backend = backend
        self.enable_cooperative_groups = bool(enable_cooperative_groups)
        self.name_expressions = None if name_expressions is None else tuple(name_expressions)
        self.emulator_options: Any = None
        self._functions: dict[str, RawKernel] = {}

    def compile(self, log_stream: Any = None) -> None:
        """Accepted for compatibility (kernels are parsed when first got)."""

    def get_function(self, name: str) -> RawKernel:
        """The kernel ``name`` (a name expression given at construction, or an ``extern "C"``
        name) as a :class:`RawKernel`."""
        if self.name_expressions is not None and "<" in name and name not in self.name_expressions:
            raise ValueError(
                f"The given name expression {name!r} was not passed in name_expressions "
                f"({list(self.name_expressions)}); CuPy compiles only those instantiations"
            )
        k = self._functions.get(name)
        if k is None:
            k = RawKernel(self.code, name, self.options, self.backend,
                          enable_cooperative_groups=self.enable_cooperative_groups)
            k.emulator_options = self.emulator_options
            _ = k.kernel  # a missing name raises here, as cuModuleGetFunction does
            self._functions[name] = k
        return k

    def get_global(self, name: str) -> Any:
        """Refused: ``__device__``/``__constant__`` variables are not reachable from the host on
        the emulator."""
        raise NotImplementedError(
            f"[{_TAG}] RawModule.get_global({name!r}): module globals are not reachable from the "
            "host on the CUDA emulator (emu-cuda); pass the values as kernel arguments"
        )

    def get_texref(self, name: str) -> Any:
        raise NotImplementedError(
            f"[{_TAG}] RawModule.get_texref({name!r}): texture references are not emulated"
        )

    def __repr__(self) -> str:
        return "<RawModule (cupy stand-in, emu-cuda)>"
