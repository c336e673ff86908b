"""MetalKernel: a Metal Shading Language kernel body launched through MLX, or on the CPU emulator."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cunumpy import profiling
from cunumpy._engines._base import Program
from cunumpy._engines._metal import MetalLaunch, check_threadgroup, metal_program
from cunumpy._engines._metal_registry import MetalEngine, get_metal_engine, warn_auto_fallback
from cunumpy._lang.metal_dtypes import is_bfloat16, msl_dtype, supported_dtypes
from cunumpy._lang.metal_signature import ArgSpec, MetalSignature, build_signature
from cunumpy.kernels._metal_checks import borrowable, fills_in_place

__all__ = ["MetalKernel", "metal_asarray"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Words a parameter name may not be: Metal/C++ keywords and names the generated code uses.
_RESERVED = frozenset(
    """alignas alignof and asm auto bool break case catch char class const constexpr
    const_cast continue decltype default delete do double dynamic_cast else enum explicit
    export extern false float for friend goto if inline int long mutable namespace new
    noexcept not nullptr operator or private protected public register reinterpret_cast
    return short signed sizeof static static_assert static_cast struct switch template this
    throw true try typedef typeid typename union unsigned using virtual void volatile while
    device constant thread threadgroup kernel half uint metal""".split()
)
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_ATOMIC_OK = frozenset(np.dtype(t) for t in (np.int32, np.uint32, np.float32))
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_U16 = np.dtype(np.uint16)
_SUPPORTED_TEXT = (
    "bool, int8/16/32/64, uint8/16/32/64, float16, float32, complex64 and bfloat16 "
    "(ml_dtypes.bfloat16)"
)
_MATH_MODES = ("safe", "relaxed", "fast")
_cuda_fast: list[Any] = [None]
"""The metal-cuda engine's fast-path module, imported at its first use."""


def _check_names(role: str, names: Any) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ValueError(f"MetalKernel {role} must be a list of names, got {names!r}")
    for n in names:
        if not isinstance(n, str) or not _IDENTIFIER.match(n) or n in _RESERVED:
            raise ValueError(
                f"MetalKernel {role} name {n!r} is not a usable Metal identifier (letters, "
                "digits and underscores, not a keyword)"
            )
    return tuple(names)


class MetalKernel:
    """A Metal kernel body, launched on an Apple GPU through MLX or on the CPU emulator.

    Parameters
    ----------
    source : str
        The body of the kernel function (MLX writes the signature). Each input and output name
        is a pointer to the flat, row-major data of that array; thread attributes such as
        ``thread_position_in_grid`` are declared when the body mentions them.
    inputs, outputs : list of str
        Names of the input and output arrays, in call order. At least one output.
    name : str, optional
        Kernel name, used in MLX's kernel name and in error messages. Default: ``kernel_`` and
        a hash of the source.
    header : str, default ""
        Text placed before the kernel: ``#include``, ``#define``, helper functions. A final
        newline is added when missing.
    threadgroup : int or tuple of 1-3 ints, default 256
        Threads per threadgroup (product at most 1024). Clamped to the grid per dimension.
    float64 : {"error", "cast"}, default "error"
        Apple GPUs have no float64. ``"error"``: a float64 input or output raises TypeError.
        ``"cast"``: float64 inputs are computed in float32 and float64 outputs are filled from
        float32 results.
    atomic_outputs : bool, default False
        Declare outputs as ``device atomic<T>*`` (int32, uint32 or float32 outputs).
    init_value : float, optional
        Fill every output with this value before the kernel runs. Without it outputs start
        uninitialised (the emulator poisons them and reports elements left unwritten).
    ensure_row_contiguous : bool, default True
        Make inputs row-contiguous before the launch. With ``False`` the body must index through
        ``<name>_shape``, ``<name>_strides`` and ``<name>_ndim`` (for example with
        ``elem_to_loc``).
    emulator_options : cunumpy.emulation options, optional
        Checks, thread order and isolation for the CPU emulator; default from the environment.

    Notes
    -----
    The kernel compiles at its first call for each distinct set of argument dtypes, small-input
    layout and template values; MLX caches the compiled pipeline, and the emulator caches the
    compiled library on disk (``CUNUMPY_CACHE_DIR``, default the user cache directory).
    ``CUNUMPY_METAL_ENGINE`` (``auto``, the default: MLX where a Metal GPU works, else the
    emulator with a one-time warning; ``mlx``; ``emulator``; ``cuda``, an NVIDIA GPU) picks the
    engine at each call; so does the ``engine`` keyword of a call. Engines get the call's
    frozen :meth:`program` and launch data, never the kernel itself.

    MLX names a templated variant after its values written as text, so ``{"N": True}`` and
    ``{"N": 1}`` get the same kernel name there (``_1``). cunumpy keeps the two apart (different
    signatures, different emulator builds), but on the mlx engine give each template name one kind
    of value.

    Examples
    --------
    >>> import numpy as np
    >>> import cunumpy as xp
    >>> scale = xp.kernels.MetalKernel(
    ...     "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
    ...     inputs=["x", "a"], outputs=["y"], name="scale")
    >>> x = np.arange(8, dtype=np.float32)
    >>> y = scale(x, 2.0, out=np.empty_like(x), engine="emulator")
    >>> y.tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
    """

    def __init__(
        self,
        source: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        *,
        name: str | None = None,
        header: str = "",
        threadgroup: int | Sequence[int] = 256,
        float64: str = "error",
        atomic_outputs: bool = False,
        init_value: float | None = None,
        ensure_row_contiguous: bool = True,
        emulator_options: Any = None,
    ) -> None:
        if not isinstance(source, str) or not source.strip():
            raise ValueError("MetalKernel source must be the (non-empty) text of a kernel body")
        if not isinstance(header, str):
            raise ValueError(f"MetalKernel header must be a string, got {type(header).__name__}")
        self.input_names = _check_names("inputs", inputs)
        self.output_names = _check_names("outputs", outputs)
        if not self.output_names:
            raise ValueError("MetalKernel needs at least one output name")
        every = self.input_names + self.output_names
        repeated = sorted({n for n in every if every.count(n) > 1})
        if repeated:
            raise ValueError(f"MetalKernel names must be distinct; repeated: {repeated}")
        if name is None:
            digest = hashlib.sha1((header + "\0" + source).encode()).hexdigest()[:10]
            name = f"kernel_{digest}"
        elif not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"MetalKernel name {name!r} must be a C identifier")
        if float64 not in ("error", "cast"):
            raise ValueError(
                f"MetalKernel {name!r}: float64 must be 'error' or 'cast', got {float64!r}"
            )
        if init_value is not None and (
            isinstance(init_value, bool) or not isinstance(init_value, (int, float, np.number))
        ):
            raise TypeError(
                f"MetalKernel {name!r}: init_value must be a number or None, got {init_value!r}"
            )
        if header and not header.endswith("\n"):
            # MLX glues the next line onto a header without a final newline, which turns
            # `#define SCALE 3.0f` followed by the template line into invalid code.
            header += "\n"
        self.name = name
        self.source = source
        self.header = header
        self.threadgroup = check_threadgroup(threadgroup)
        self.float64 = float64
        self.atomic_outputs = bool(atomic_outputs)
        self.init_value = init_value
        self.ensure_row_contiguous = bool(ensure_row_contiguous)
        self._emulator_options = emulator_options
        self._signatures: dict[Any, MetalSignature] = {}
        self._programs: dict[tuple[int, str], tuple[MetalSignature, Program]] = {}
        self._launchers: dict[tuple[int, str, Any], tuple[MetalSignature, Any, tuple]] = {}
        # Per input: does the body subscript it (``a[``)? A number passed for such an input is a
        # one-element array, otherwise a 0-d value as MLX makes it.
        self._subscripted = tuple(
            re.search(rf"(?<![\w.]){re.escape(n)}\s*\[", source) is not None
            for n in self.input_names
        )
        self._templates: dict[Any, tuple[tuple[str, Any], ...]] = {}

    @property
    def emulator_options(self) -> Any:
        """The CPU emulator's options (None: from the environment at each launch). Setting
        them makes new programs, so the next launch of every variant prepares afresh."""
        return self._emulator_options

    @emulator_options.setter
    def emulator_options(self, value: Any) -> None:
        self._emulator_options = value
        self._programs = {}
        self._launchers = {}

    def _program(self, sig: MetalSignature, math_mode: str) -> tuple[MetalSignature, Program]:
        # Keyed by the signature object, which the variant cache keeps alive (so its id is
        # stable); the entry keeps it too and is checked, so a reused id never matches.
        key = (id(sig), math_mode)
        hit = self._programs.get(key)
        if hit is None or hit[0] is not sig:
            program = metal_program(
                sig, input_names=self.input_names, output_names=self.output_names,
                atomic_outputs=self.atomic_outputs,
                ensure_row_contiguous=self.ensure_row_contiguous, math_mode=math_mode,
                emulator_options=self._emulator_options,
            )
            hit = self._programs[key] = (sig, program)
        return hit

    def _launcher(self, sig: MetalSignature, math_mode: str,
                  eng: MetalEngine) -> tuple[Any, tuple[int, int, int]]:
        """The engine's launch callable for a variant (``eng.prepare(program)``, made once) and
        the engine's most threadgroups per dimension."""
        key = (id(sig), math_mode, eng)
        hit = self._launchers.get(key)
        if hit is None or hit[0] is not sig:
            program = self._program(sig, math_mode)[1]
            hit = (sig, eng.prepare(program), tuple(eng.limits().max_threadgroups))
            self._launchers[key] = hit
        return hit[1], hit[2]

    def __repr__(self) -> str:
        return (
            f"MetalKernel(name={self.name!r}, inputs={list(self.input_names)}, "
            f"outputs={list(self.output_names)}, threadgroup={self.threadgroup})"
        )

    # ----------------------------------------------------------------------------- checks
    def _where(self, role: str, index: int) -> str:
        names = self.input_names if role == "input" else self.output_names
        return f"MetalKernel {self.name!r} {role} {names[index]!r}"

    def _device_dtype(self, dtype: np.dtype, role: str, index: int) -> np.dtype:
        """The dtype the array has on the device; raises for what Metal cannot take."""
        if dtype in supported_dtypes():
            return dtype
        if dtype == _F64:
            if self.float64 == "cast":
                return _F32
            raise TypeError(
                f"{self._where(role, index)} is float64, which Apple GPUs cannot compute; pass "
                "float32, or create the kernel with float64='cast' to compute in float32 "
                "(check the accuracy against the host kernel)"
            )
        if dtype == np.dtype(np.complex128):
            raise TypeError(
                f"{self._where(role, index)} is complex128, which Metal cannot take; pass "
                "complex64 (astype(np.complex64)) if that precision suffices"
            )
        raise TypeError(
            f"{self._where(role, index)} has dtype {dtype}, which Metal kernels cannot take; "
            f"supported: {_SUPPORTED_TEXT}"
        )

    def _scalar(self, value: Any, index: int) -> np.ndarray:
        """A number as an input: a one-element array where the body subscripts the name
        (``a[0]``, the spec's convention), else a 0-d array (MLX's: the body reads ``a``)."""
        one = self._scalar_1d(value, index)
        return one if self._subscripted[index] else one.reshape(())

    def _scalar_1d(self, value: Any, index: int) -> np.ndarray:
        if isinstance(value, bool):
            return np.array([value], dtype=np.bool_)
        if isinstance(value, int):
            if not _I32_MIN <= value <= _I32_MAX:
                raise OverflowError(
                    f"{self._where('input', index)} = {value} does not fit in int32 (Python "
                    "ints become one-element int32 arrays); pass a NumPy array of int64 instead"
                )
            return np.array([value], dtype=np.int32)
        if isinstance(value, float):
            if math.isfinite(value) and abs(value) > _FLOAT32_MAX:
                raise OverflowError(
                    f"{self._where('input', index)} = {value} overflows float32 (Python floats "
                    "become one-element float32 arrays)"
                )
            return np.array([value], dtype=np.float32)
        if isinstance(value, complex):
            return np.array([value], dtype=np.complex64)
        # a NumPy scalar: a one-element array of its own dtype
        return np.array([value])

    def _bind_inputs(self, args: tuple, engine: MetalEngine) -> list[tuple[Any, np.dtype, bool]]:
        """Per input: (host array or device array, device dtype, is_device)."""
        if len(args) != len(self.input_names):
            raise TypeError(
                f"MetalKernel {self.name!r} takes {len(self.input_names)} inputs "
                f"({', '.join(self.input_names) or 'none'}), got {len(args)}"
            )
        bound = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                bound.append((a, self._device_dtype(a.dtype, "input", i), False))
            elif isinstance(a, (int, float, complex, np.generic)):
                host = self._scalar(a, i)
                bound.append((host, self._device_dtype(host.dtype, "input", i), False))
            elif engine.is_device_array(a):
                dtype, _ = engine.describe(a)
                if dtype == _F64:
                    raise TypeError(f"{self._where('input', i)} is a float64 device array")
                bound.append((a, self._device_dtype(dtype, "input", i), True))
            elif isinstance(a, (list, tuple)):
                raise TypeError(
                    f"{self._where('input', i)} is a Python {type(a).__name__}; pass a NumPy "
                    f"array of the dtype the kernel expects, e.g. np.asarray(x, dtype=np.float32)"
                )
            else:
                raise TypeError(
                    f"{self._where('input', i)} is a {type(a).__module__}.{type(a).__name__}; "
                    f"the {engine.name} engine takes NumPy arrays, Python numbers or its own "
                    "device arrays (convert CuPy arrays with cunumpy.to_numpy first)"
                )
        return bound

    def _bind_outputs(
        self,
        out: Any,
        output_shapes: Any,
        output_dtypes: Any,
        engine: MetalEngine | None = None,
    ) -> tuple[list[np.ndarray] | None, list[tuple[int, ...]], list[np.dtype]]:
        n = len(self.output_names)
        if out is None:
            if output_shapes is None or output_dtypes is None:
                raise TypeError(
                    f"MetalKernel {self.name!r} needs out= (one NumPy array per output: "
                    f"{', '.join(self.output_names)}), or output_shapes= and output_dtypes= for "
                    "outputs that stay on the device"
                )
            shapes = [output_shapes] if n == 1 and _is_shape(output_shapes) else output_shapes
            dtypes = (
                [output_dtypes] if n == 1 and not isinstance(output_dtypes, (list, tuple))
                else output_dtypes
            )
            if len(shapes) != n or len(dtypes) != n:
                raise TypeError(
                    f"MetalKernel {self.name!r} has {n} outputs; give {n} output_shapes and "
                    f"{n} output_dtypes"
                )
            shapes = [tuple(int(d) for d in s) for s in shapes]
            dtypes = [self._device_dtype(np.dtype(d), "output", i) for i, d in enumerate(dtypes)]
            return None, shapes, dtypes
        if output_shapes is not None or output_dtypes is not None:
            raise TypeError(
                f"MetalKernel {self.name!r}: give either out= or output_shapes=/output_dtypes=, "
                "not both"
            )
        # The metal-cuda engine also fills CuPy arrays in place (a copy on the device).
        on_device = engine is not None and engine.device_out
        if on_device and engine.is_device_array(out) and not isinstance(out, (list, tuple)):
            out = [out]
        outs = [out] if isinstance(out, np.ndarray) else out
        if not isinstance(outs, (list, tuple)) or len(outs) != n:
            raise TypeError(
                f"MetalKernel {self.name!r} has {n} output(s) ({', '.join(self.output_names)}); "
                f"out must be {'a NumPy array' if n == 1 else f'a tuple of {n} NumPy arrays'}"
            )
        dtypes = []
        for i, o in enumerate(outs):
            if on_device and hasattr(o, "__cuda_array_interface__"):
                dtypes.append(self._device_dtype(np.dtype(o.dtype), "output", i))
                continue
            if not isinstance(o, np.ndarray):
                raise TypeError(
                    f"{self._where('output', i)} must be a NumPy array, got "
                    f"{type(o).__module__}.{type(o).__name__}; the results are copied into it"
                )
            if not o.flags.writeable:
                raise TypeError(
                    f"{self._where('output', i)} is a read-only array; pass a writeable one"
                )
            dtype = self._device_dtype(o.dtype, "output", i)
            if self.atomic_outputs and dtype not in _ATOMIC_OK:
                raise TypeError(
                    f"{self._where('output', i)} is {dtype}; atomic_outputs needs int32, "
                    "uint32 or float32 outputs"
                )
            dtypes.append(dtype)
        for i in range(n):
            for j in range(i + 1, n):
                if not (isinstance(outs[i], np.ndarray) and isinstance(outs[j], np.ndarray)):
                    continue
                if np.shares_memory(outs[i], outs[j]):
                    raise ValueError(
                        f"MetalKernel {self.name!r} outputs {self.output_names[i]!r} and "
                        f"{self.output_names[j]!r} share memory; pass separate arrays"
                    )
        return list(outs), [o.shape for o in outs], dtypes

    def _grid(self, n_threads: Any, shapes: list[tuple[int, ...]]) -> tuple[int, int, int]:
        if n_threads is None:
            first = shapes[0]
            return (first[0] if first else 1, 1, 1)
        dims = (n_threads,) if isinstance(n_threads, (int, np.integer)) else n_threads
        if (
            isinstance(dims, (str, bytes))
            or not isinstance(dims, Sequence)
            or not 1 <= len(dims) <= 3
            or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                       and 0 <= d < 2**32 for d in dims)
        ):
            raise ValueError(
                f"MetalKernel {self.name!r}: n_threads must be 1 to 3 ints between 0 and 2**32-1 "
                f"(the total number of threads per dimension), got {n_threads!r}"
            )
        return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]

    def _too_many_groups(self, eng: MetalEngine, grid: tuple[int, int, int],
                         threadgroup: tuple[int, int, int], most: tuple[int, int, int]) -> None:
        """Raise: the grid makes more threadgroups than the engine's limits allow."""
        groups = tuple(-(-g // t) for g, t in zip(grid, threadgroup))
        raise ValueError(
            f"MetalKernel {self.name!r}: grid {grid} with threadgroup {threadgroup} makes "
            f"{groups} threadgroups; the {eng.name} engine allows at most {most} (put the long "
            "axis first)"
        )

    def _template(self, template: Any) -> tuple[tuple[str, Any], ...]:
        if template is None:
            return ()
        try:  # the same constants at every call of a time loop: check them once
            items = template.items() if isinstance(template, Mapping) else template
            key = tuple((k, type(v), v) for k, v in items)
            return self._templates[key]
        except KeyError:
            checked = self._check_template(template)
            self._templates[key] = checked
            return checked
        except (AttributeError, TypeError, ValueError):  # not pairs, or unhashable values
            return self._check_template(template)

    def _check_template(self, template: Any) -> tuple[tuple[str, Any], ...]:
        pairs = _template_pairs(template)
        if pairs is None:
            raise TypeError(
                f"MetalKernel {self.name!r}: template must be a dict of name -> int, bool or "
                f"dtype (or a list of (name, value) pairs), got {type(template).__name__}"
            )
        items = []
        for key, value in pairs:
            if not isinstance(key, str) or not _IDENTIFIER.match(key) or key in _RESERVED:
                raise ValueError(
                    f"MetalKernel {self.name!r}: template name {key!r} is not a usable identifier"
                )
            if key in self.input_names or key in self.output_names:
                raise ValueError(
                    f"MetalKernel {self.name!r}: template name {key!r} is also an argument name"
                )
            if isinstance(value, (bool, np.bool_)):
                items.append((key, bool(value)))
            elif isinstance(value, (int, np.integer)):
                if not _I32_MIN <= int(value) <= _I32_MAX:
                    raise OverflowError(
                        f"MetalKernel {self.name!r}: template {key}={value} does not fit in int"
                    )
                items.append((key, int(value)))
            else:
                dtype = self._template_dtype(key, value)
                if dtype not in supported_dtypes() and dtype != _F64:
                    raise TypeError(
                        f"MetalKernel {self.name!r}: template {key}={dtype} is not a Metal type; "
                        f"supported: {_SUPPORTED_TEXT}"
                    )
                if dtype == _F64:
                    raise TypeError(
                        f"MetalKernel {self.name!r}: template {key}=float64 is not available on "
                        "Apple GPUs; use float32"
                    )
                items.append((key, dtype))
        return tuple(items)

    def _template_dtype(self, key: str, value: Any) -> np.dtype:
        """A template type given as a NumPy or MLX dtype, or as an MSL type name."""
        where = f"MetalKernel {self.name!r}: template {key}={value!r}"
        if isinstance(value, str):
            try:
                dtype = msl_dtype(value)
            except ImportError as exc:
                raise TypeError(f"{where}: {exc}") from None
            if dtype is None:
                raise TypeError(
                    f"{where} is not a Metal type name; use an MSL name (float, half, bfloat, "
                    "int, uint, short, ushort, char, uchar, long, ulong, bool) or a dtype such "
                    "as np.float32"
                )
            return dtype
        if type(value).__module__.startswith("mlx"):
            from cunumpy._engines.mlx import numpy_dtype

            return numpy_dtype(value)
        try:
            return np.dtype(value)
        except TypeError:
            raise TypeError(
                f"{where} must be an int, a bool, a dtype or an MSL type name"
            ) from None

    def _signature(self, in_specs: tuple, out_dtypes: list[np.dtype],
                   out_shapes: list[tuple[int, ...]], template: tuple) -> MetalSignature:
        # The signature depends on dtypes, 0-d-ness and "fewer than 8 elements" only.
        layout = []
        for d, s in in_specs:
            layout.append((d, not s, _size(s) < 8))
        # True == 1 in Python, but `bool N` and `int N` are different kernels: key on the type too.
        key = (tuple(layout), tuple(out_dtypes), tuple((k, type(v), v) for k, v in template))
        sig = self._signatures.get(key)
        if sig is None:
            sig = build_signature(
                self.name,
                self.source,
                self.header,
                [ArgSpec(n, d, s) for n, (d, s) in zip(self.input_names, in_specs)],
                [ArgSpec(n, d, s) for n, d, s in zip(self.output_names, out_dtypes, out_shapes)],
                template,
                self.atomic_outputs,
            )
            self._signatures[key] = sig
        return sig

    def _prepare(self, args, out, n_threads, template, output_shapes, output_dtypes, engine):
        bound = self._bind_inputs(args, engine)
        outs, shapes, out_dtypes = self._bind_outputs(out, output_shapes, output_dtypes, engine)
        grid = self._grid(n_threads, shapes)
        tmpl = self._template(template)
        in_specs = tuple(
            (dtype, engine.describe(a)[1] if is_dev else a.shape) for a, dtype, is_dev in bound
        )
        sig = self._signature(in_specs, out_dtypes, shapes, tmpl)
        return bound, outs, shapes, out_dtypes, grid, tmpl, sig

    # ----------------------------------------------------------------------------- calls
    def __call__(
        self,
        *inputs: Any,
        out: Any = None,
        n_threads: int | Sequence[int] | None = None,
        template: Mapping[str, Any] | None = None,
        output_shapes: Any = None,
        output_dtypes: Any = None,
        engine: str | None = None,
        threadgroup: int | Sequence[int] | None = None,
    ) -> Any:
        """Launch the kernel.

        Parameters
        ----------
        *inputs
            One per name in ``inputs``: NumPy arrays (any layout; never modified), Python
            numbers (a float is float32, an int int32: a one-element array where the body
            subscripts the name, ``a[0]``, else a single value read as ``a``, as MLX declares
            it), or device arrays of the engine (used without a copy).
        out : ndarray or tuple of ndarray
            One writeable NumPy array per output; their shapes and dtypes define the outputs and
            they are filled in place (any layout).
        n_threads : int or tuple of 1-3 ints, optional
            Total number of threads per dimension (not threadgroups). Default: the first axis
            of the first output. A zero-size launch (an extent of 0, or no ``n_threads`` and an
            empty first output) checks the arguments, then runs and copies nothing: ``out`` is
            returned unchanged, fresh outputs (``output_shapes=``) hold ``init_value`` or 0.
        template : dict or list of (name, value), optional
            Compile-time constants: int, bool or a type (NumPy or MLX dtype, or an MSL type
            name such as ``"float"`` or ``"half"``). Each distinct set compiles another variant.
        output_shapes, output_dtypes : optional
            Instead of ``out``: the outputs stay on the device and are returned as device arrays
            (``mlx.core.array``, ``cupy.ndarray`` on the metal-cuda engine, or
            :class:`EmulatedDeviceArray` on the emulator) that the next
            call takes without a copy. Bring them back with :func:`cunumpy.to_numpy`.
        engine : {"auto", "mlx", "emulator", "cuda", "emu-metal", "metal-cuda"}, optional
            Overrides ``CUNUMPY_METAL_ENGINE`` for this call (``emulator`` is the engine
            ``emu-metal``, ``cuda`` the engine ``metal-cuda``).
        threadgroup : int or tuple of 1-3 ints, optional
            Threads per threadgroup for this call (as MLX takes it at each call); default the
            kernel's ``threadgroup``.

        Returns
        -------
        ndarray, tuple of ndarray, device array or tuple of device arrays
            ``out`` itself (one output) or the tuple of outputs; device arrays in resident mode.
        """
        eng = get_metal_engine(engine)
        if eng.device_out:  # metal-cuda: repeated calls on CuPy arrays take a launch plan
            for _, run in self.__dict__.get("_cuda_runs", ()):  # generated per plan
                done = run(inputs, out, n_threads, template, threadgroup, output_shapes,
                           output_dtypes)
                if done is not None:
                    return done
            fast = _cuda_fast[0]
            if fast is None:
                from cunumpy._engines.metal_cuda import _fast as fast

                _cuda_fast[0] = fast
            done = fast.fast_call(self, eng, inputs, out, n_threads, template, threadgroup,
                                  output_shapes, output_dtypes)
            if done is not fast._MISS:
                return done
        return self._run(inputs, out, n_threads, template, output_shapes, output_dtypes,
                         eng, threadgroup, requested=engine)

    def _run(self, inputs: tuple, out: Any, n_threads: Any, template: Any, output_shapes: Any,
             output_dtypes: Any, eng: MetalEngine, threadgroup: Any = None, *,
             init_value: Any = None, math_mode: str = "safe", verbose: bool = False,
             requested: str | None = None) -> Any:
        """One launch (``__call__`` and :func:`cunumpy.kernels.metal_kernel` call it)."""
        bound, outs, shapes, out_dtypes, grid, _tmpl, sig = self._prepare(
            inputs, out, n_threads, template, output_shapes, output_dtypes, eng
        )
        tg = self.threadgroup if threadgroup is None else check_threadgroup(threadgroup)
        if init_value is None:
            init_value = self.init_value
        if verbose:
            print(f"Generated source code for `{self.name}`:\n```\n{sig.text()}\n```", flush=True)
        if 0 in grid or (n_threads is None and _size(shapes[0]) == 0):
            return _no_launch(eng, outs, shapes, out_dtypes, init_value)
        eng.check_available()
        if eng.name == "emu-metal":
            warn_auto_fallback(requested)
        threadgroup = (min(tg[0], grid[0]), min(tg[1], grid[1]), min(tg[2], grid[2]))
        go, most = self._launcher(sig, math_mode, eng)
        if (grid[0] > threadgroup[0] * most[0] or grid[1] > threadgroup[1] * most[1]
                or grid[2] > threadgroup[2] * most[2]):
            self._too_many_groups(eng, grid, threadgroup, most)
        device_inputs = []
        contiguous = self.ensure_row_contiguous
        recording = profiling._active
        # The emulator's device memory is the host's: arrays already in the layout and dtype the
        # kernel reads (and aligned) are used in place (the transfer is still recorded).
        resident = getattr(eng, "host_resident", False)
        for i, (a, dtype, is_dev) in enumerate(bound):
            if is_dev:
                device_inputs.append(eng.contiguous(a) if contiguous else a)
                continue
            if resident and borrowable(a, dtype):
                dev = eng.borrow(a)
            else:
                dev = eng.to_device(a, dtype, contiguous)
            if recording:
                profiling._record(
                    "to_device", dev.nbytes,
                    f"{eng.name} kernel {self.name!r} input {self.input_names[i]!r} "
                    f"{dtype.name}{list(a.shape)}",
                )
            device_inputs.append(dev)
        into = None
        if outs is not None and not all(isinstance(o, np.ndarray) for o in outs):
            into = tuple(outs)  # device arrays given as out= (metal-cuda): written in place
        elif outs is not None and resident and fills_in_place(outs, shapes, out_dtypes,
                                                              device_inputs):
            into = tuple(outs)  # the emulator writes the NumPy outputs themselves
        results = go(MetalLaunch(grid, threadgroup, tuple(device_inputs), tuple(shapes),
                                 tuple(out_dtypes), init_value, into))
        if outs is None:
            return results[0] if len(results) == 1 else tuple(results)
        for i, (o, r) in enumerate(zip(outs, results)):
            if not isinstance(o, np.ndarray):  # a device array (metal-cuda): copy on the device
                if r is not o:
                    o[...] = r.reshape(o.shape)
                continue
            view = eng.host_view(r)
            if view is o:  # written in place (emulator): no copy, the transfer is recorded
                if recording:
                    profiling._record(
                        "to_host", o.nbytes,
                        f"{eng.name} kernel {self.name!r} output {self.output_names[i]!r} "
                        f"{o.dtype.name}{list(o.shape)}",
                    )
                continue
            if view.dtype == _U16 and is_bfloat16(o.dtype):  # metal-cuda: bfloat16 as uint16
                view = view.view(o.dtype)
            if view.shape != o.shape:
                view = view.reshape(o.shape)
            np.copyto(o, view, casting="no" if o.dtype is view.dtype else "unsafe")
            if recording:
                profiling._record(
                    "to_host", view.nbytes,
                    f"{eng.name} kernel {self.name!r} output {self.output_names[i]!r} "
                    f"{o.dtype.name}{list(o.shape)}",
                )
        return outs[0] if len(outs) == 1 else tuple(outs)

    def program(
        self,
        *inputs: Any,
        out: Any = None,
        n_threads: int | Sequence[int] | None = None,
        template: Mapping[str, Any] | None = None,
        output_shapes: Any = None,
        output_dtypes: Any = None,
        math_mode: str = "safe",
    ) -> Program:
        """The frozen :class:`~cunumpy._engines._base.Program` an engine gets for this call.

        Takes the same arguments as a call, validates them the same way, and copies nothing.
        One program per kernel variant (argument dtypes and address spaces, template values)
        and math mode, made once; changing :attr:`emulator_options` makes new ones.
        """
        sig = self._probe_signature(inputs, out, n_threads, template, output_shapes,
                                    output_dtypes)
        return self._program(sig, math_mode)[1]

    def metal_source(
        self,
        *inputs: Any,
        out: Any = None,
        n_threads: int | Sequence[int] | None = None,
        template: Mapping[str, Any] | None = None,
        output_shapes: Any = None,
        output_dtypes: Any = None,
    ) -> str:
        """The exact text MLX compiles for this call, after MLX's own preamble.

        Takes the same arguments as a call, validates them the same way, and copies nothing.
        The text holds the header, the template line, the signature MLX writes, the body and
        the explicit instantiation of a templated kernel.
        """
        return self._probe_signature(inputs, out, n_threads, template, output_shapes,
                                     output_dtypes).text()

    def _probe_signature(self, inputs: tuple, out: Any, n_threads: Any, template: Any,
                         output_shapes: Any, output_dtypes: Any) -> MetalSignature:
        """The signature of a call, checked as a call checks it; launches nothing."""
        eng = get_metal_engine("emu-metal")  # only used to describe arguments
        mlx = get_metal_engine("mlx")
        probe = eng
        if any(mlx.is_device_array(a) for a in inputs):
            probe = mlx
        elif any(hasattr(a, "__cuda_array_interface__") for a in inputs):
            probe = get_metal_engine("metal-cuda")
        *_, sig = self._prepare(inputs, out, n_threads, template, output_shapes, output_dtypes,
                                probe)
        return sig


def _no_launch(eng: MetalEngine, outs: list[np.ndarray] | None, shapes: list[tuple[int, ...]],
               dtypes: list[np.dtype], init_value: Any) -> Any:
    """The result of a zero-size launch (arguments already checked): nothing runs."""
    if outs is None:  # fresh device outputs: allocated on the engine, as a launch would
        eng.check_available()
        fill = 0 if init_value is None else init_value
        outs = [eng.to_device(np.full(s, fill, dtype=d), d, True) for s, d in zip(shapes, dtypes)]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _template_pairs(template: Any) -> list[tuple[Any, Any]] | None:
    """``(name, value)`` pairs of a dict or of a list of pairs (MLX's form); None otherwise."""
    if isinstance(template, Mapping):
        return list(template.items())
    if isinstance(template, (list, tuple)) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in template
    ):
        return [tuple(p) for p in template]  # type: ignore[misc]
    return None


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _is_shape(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(
        isinstance(d, (int, np.integer)) for d in value
    )


def metal_asarray(a: Any, engine: str | None = None) -> Any:
    """Copy a host array to the device of a Metal engine once (recorded as ``to_device``).

    The result can be passed to any MetalKernel call on that engine without a copy.
    """
    eng = get_metal_engine(engine)
    if eng.is_device_array(a):
        return a
    host = np.asarray(a)
    if host.dtype == _F64:
        raise TypeError(
            "metal_asarray got a float64 array, which Apple GPUs cannot compute; convert it "
            "with astype(np.float32) first"
        )
    dev = eng.to_device(host, host.dtype, True)
    if profiling._active:
        profiling._record("to_device", dev.nbytes,
                          f"metal_asarray {host.dtype.name}{list(host.shape)}")
    return dev
