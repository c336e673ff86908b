"""``CudaKernel``: a CUDA C++ ``__global__`` function called like a Python function.

The front end parses the kernel's signature once, checks each call's arguments against it
(never copying an array), works out the launch geometry and hands the launch to an engine
(:mod:`cunumpy._engines._cuda`): CuPy on an NVIDIA GPU, or the CPU emulator.

Speed: the per-call path is a small function generated for each kernel and engine, with one
inline test per parameter (exact array class, exact dtype object, C-contiguity; or exact Python
number type and range). Anything that misses those tests goes to the general checks, which give
the error messages. The generated text is shown by :meth:`CudaKernel.launcher_source`.
"""

from __future__ import annotations

import hashlib
import math
import operator
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from cunumpy import config
from cunumpy._engines._base import Program
from cunumpy._engines._cuda import DEFAULT_LIMITS, CudaEngine, CudaLaunchError, CudaLimits
from cunumpy._engines._cuda_registry import (
    default_cuda_engine,
    get_cuda_engine,
    warn_cuda_auto_fallback,
)
from cunumpy._engines._cuda_registry import env_value as _cuda_engines_env_value
from cunumpy._lang.cuda_preprocess import defines_from_options
from cunumpy._lang.cuda_signature import (
    CudaParam,
    CudaSignature,
    format_template_args,
    parse_signature,
    split_template_name,
)
from cunumpy._lang.includes import find_include, scan_includes
from cunumpy.kernels._cuda_args import check_array, check_scalar, check_unchecked
from cunumpy.kernels._cuda_args import describe as _describe
from cunumpy.kernels._cuda_launcher import MISSING, build_launcher
from cunumpy.kernels._cuda_outputs import declared_outputs

__all__ = ["CudaKernel", "LaunchConfig"]

_NVRTC_INCLUDE = Path(__file__).resolve().parent / "nvrtc_include"
"""Empty stand-ins for <cuda.h>, <cuda_runtime.h> and the like, searched by NVRTC."""



class LaunchConfig(NamedTuple):
    """A launch's geometry: ``grid`` (blocks) and ``block`` (threads), both 3-tuples, and the
    dynamic shared memory in bytes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int



def _dims(value: Any, what: str, tag: str, allow_zero: bool) -> tuple[int, ...]:
    """Validate a 1-3 element size (int or sequence of ints)."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(items) <= 3:
        raise ValueError(f"{tag} {what}={value!r} must have 1 to 3 dimensions")
    out = []
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{tag} {what}={value!r} must be an int or a tuple of 1-3 ints")
        v = int(v)
        if v < 0 or (v == 0 and not allow_zero):
            raise ValueError(
                f"{tag} {what}={value!r}: every extent must be "
                f"{'>= 0' if allow_zero else 'positive'}"
            )
        out.append(v)
    return tuple(out)


def default_block(ndim: int, block_size: int) -> tuple[int, int, int]:
    """Split ``block_size`` threads over ``ndim`` dimensions, x first.

    1-D: ``(block_size, 1, 1)``. 2-D: x takes ``gcd(block_size, 32)`` threads (a warp's width
    when block_size is a multiple of 32), y the rest: ``128 -> (32, 4, 1)``. 3-D: x as in 2-D,
    the rest split between y (the smaller factor) and z: ``128 -> (32, 2, 2)``.
    """
    if ndim == 1:
        return (block_size, 1, 1)
    x = math.gcd(block_size, 32) if block_size >= 32 else block_size
    rest = block_size // x
    if ndim == 2:
        return (x, rest, 1)
    y = max(d for d in range(1, math.isqrt(rest) + 1) if rest % d == 0)
    return (x, y, rest // y)



class CudaKernel:
    """A CUDA C++ kernel, compiled on first use and called like a function.

    Parameters
    ----------
    source : str
        CUDA C++ source containing the ``__global__`` function (and anything it needs).
    name : str or None
        The kernel's name. ``None`` picks the only ``__global__`` function in ``source``. A
        kernel in a namespace is named with it (``"ns::k"``; plain ``"k"`` works when only one
        kernel has that name). Template arguments may be written in the name
        (``"scale<double, 3>"``) instead of in ``template_args``.
    block_size : int, default 128
        Threads per block for launches given as ``n_threads=`` (or inferred). Split over the
        dimensions by :func:`default_block`.
    options : sequence of str, default ()
        Compiler options (NVRTC's, such as ``"--use_fast_math"``, ``"-DN=4"``). ``-D``/``-U``
        also decide which ``#if`` branches the signature parser and the feature scans read.
    include_dirs : sequence of path, default ()
        Directories searched for ``#include`` files (passed as ``-I``). The contents of every
        header found there (or beside a file given to :meth:`from_file`) are part of the
        compilation's cache key: change a header and the next new kernel object recompiles.
    template_args : sequence or mapping, optional
        For a ``template <...>`` kernel: one instantiation, as values in the template's order or
        by template parameter name. Dtypes (``numpy.float64``) become C types, ints decimal,
        bools ``true``/``false``; other strings pass through verbatim (CuPy name expressions).
    check_signature : bool, default True
        Check every call's arguments against the parsed signature. ``False`` passes arguments
        through unchecked (scalars must then be NumPy scalars of the right type); use it only for
        what the parser cannot read (parameter lists built by macros, unions, structs with
        bit-fields or base classes, template types with no dtype).
    engine : str or CudaEngine, optional
        What runs the launches: ``"cupy"``, ``"emulator"`` or an engine object. Default: the
        engine named by ``CUNUMPY_CUDA_ENGINE`` at each call; when unset (``auto``), ``cupy``
        where a CUDA device computes, else the CPU emulator (``emu-cuda``; the first launch
        warns once).
    debug : bool, optional
        Synchronise after every launch and re-raise errors from the kernel's execution as
        :class:`~cunumpy.kernels.CudaLaunchError` naming the kernel, grid and block. Default:
        ``CUNUMPY_CUDA_DEBUG=1`` at construction. The attribute can be changed later.
    outputs : sequence of str, optional
        Non-const pointer parameters the kernel only writes. The CPU emulator poisons them
        before each launch and raises :class:`~cunumpy.emulation.UnwrittenOutputError` for the
        elements left unwritten; :func:`~cunumpy.testing.assert_kernels_agree` poisons them
        before running the CUDA port. Without it, no pointer is treated as write-only.

    Notes
    -----
    **Calling.** ``kernel(*args, n_threads=None, grid=None, block=None, shared_mem=0,
    stream=None, check_finite=False)`` passes one argument per kernel parameter, in order:

    - A pointer parameter (``const float* x``, ``double y[]``) takes a C-contiguous array of
      exactly the pointee's dtype, on the engine's side: a device array (CuPy, or anything with
      ``__cuda_array_interface__``) for ``cupy``, a NumPy array for the emulator. Arrays are
      never copied or converted: a NumPy array passed to the ``cupy`` engine raises TypeError
      saying how to move it once (:func:`cunumpy.to_cupy`). ``void*`` takes any dtype.
      ``None`` passes a null pointer.
    - A scalar parameter takes a Python or NumPy number, range-checked and converted to the C
      type: out of range raises OverflowError, a float for an integer parameter TypeError.
    - Vector (``float4``, ``int2``...), complex (``cuDoubleComplex``, ``thrust::complex``),
      half (``__half``), typedef'd and struct types are checked too: see
      :mod:`cunumpy.kernels._cuda_args` and :func:`~cunumpy.kernels.cuda_dtype`.

    **Geometry.** ``n_threads`` (an int or a tuple of 1-3 ints) asks for at least that many
    threads per dimension: ``grid = ceil(n_threads / block)``; ``block`` defaults to
    ``block_size`` threads. ``grid=`` and ``block=`` have CUDA's meaning (blocks per grid,
    threads per block). With neither ``n_threads`` nor ``grid``, ``n_threads`` is the ``size``
    of the first array argument. The kernel must guard its own index: the last block can hold
    threads past ``n_threads``. Sizes are checked against the device's limits; a launch with a
    zero extent checks its arguments and returns without running.

    **Compilation** happens at the first launch on each device and is cached for the process,
    per device and per variant (source, options, template instantiation, header contents); the
    CuPy engine also keeps binaries in CuPy's disk cache.

    **Debug aids.** ``check_finite=True`` synchronises after the launch and raises
    FloatingPointError naming the first non-const floating-point array argument that holds NaN
    or inf, with the count and first index. ``debug`` mode (above) synchronises after every
    launch.

    Examples
    --------
    >>> import cunumpy as xp
    >>> saxpy = xp.kernels.CudaKernel(r'''
    ... extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) y[i] = a * x[i] + y[i];
    ... }''', "saxpy")
    >>> saxpy.signature.params[2].text
    'const float* x'
    >>> # x = xp.ones(1000, dtype=xp.float32); y = xp.zeros_like(x)   (on the cupy backend)
    >>> # saxpy(x.size, 2.0, x, y)       # grid (8, 1, 1), block (128, 1, 1): inferred from x
    """

    def __init__(
        self,
        source: str,
        name: str | None = None,
        *,
        block_size: int = 128,
        options: Sequence[str] = (),
        include_dirs: Sequence[str | os.PathLike] = (),
        template_args: Sequence[Any] | Mapping[str, Any] | None = None,
        check_signature: bool = True,
        engine: str | CudaEngine | None = None,
        debug: bool | None = None,
        outputs: Sequence[str] | None = None,
        _source_path: str | None = None,
    ) -> None:
        if not isinstance(source, str):
            raise TypeError(f"CudaKernel source must be a str, got {type(source).__name__}")
        tag = f"[cuda kernel {name!r}]" if name else "[cuda kernel]"
        if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
            raise TypeError(f"{tag} block_size must be an int, got {block_size!r}")
        if not 1 <= int(block_size) <= DEFAULT_LIMITS.max_threads_per_block:
            raise ValueError(
                f"{tag} block_size={block_size} must be between 1 and "
                f"{DEFAULT_LIMITS.max_threads_per_block}"
            )
        if isinstance(options, str):
            raise TypeError(f"{tag} options must be a sequence of str, not one str")
        self._source = source
        self._source_path = _source_path
        self.block_size = int(block_size)
        self.options: tuple[str, ...] = tuple(str(o) for o in options)
        dirs = [str(Path(d).resolve()) for d in include_dirs]
        if _source_path is not None:
            here = str(Path(_source_path).resolve().parent)
            if here not in dirs:
                dirs.insert(0, here)
        self.include_dirs: tuple[str, ...] = tuple(dirs)
        self.check_signature = bool(check_signature)
        self.debug = config.cuda_debug() if debug is None else bool(debug)
        self._engine = None if engine is None else get_cuda_engine(engine)

        given_name, in_name = name, None
        if name is not None:
            base, in_name = split_template_name(str(name))
            if in_name is not None:
                if template_args is not None:
                    raise TypeError(
                        f"{tag} gives template arguments twice: in name= ({name!r}) and in "
                        "template_args=; give them in one place"
                    )
                template_args = tuple(in_name)
            name = base
        defines = defines_from_options(self.options)
        self._signature_inputs = (source, defines)
        # Parse once without template dtypes to learn the template head, then with them.
        try:
            signature = parse_signature(source, name, defines=defines, headers=self._header_texts())
        except (ValueError, NotImplementedError) as exc:
            if check_signature:
                raise type(exc)(f"{tag} {exc}") from exc
            if name is None:
                raise ValueError(
                    f"{tag} name= is required when the signature is not parsed"
                ) from exc
            signature = None
        self.name: str = signature.name if signature is not None else str(name)
        tag = f"[cuda kernel {self.name!r}]"
        self._name_expression: str | None = None
        self.template_args = template_args
        if signature is not None and signature.is_template:
            names = {t.name for t in signature.template}
            if template_args is None and all(
                t.default and not names & set(re.findall(r"[A-Za-z_]\w*", t.default))
                for t in signature.template
            ):  # every parameter has a default that names no other: that instantiation
                template_args = tuple(t.default for t in signature.template)
            if template_args is None:
                raise TypeError(
                    f"{tag} is a template ({signature}); give template_args= with one "
                    f"instantiation, e.g. template_args=({', '.join(t.name for t in signature.template)})"
                    f", or write it in the name: {self.name}<...>"
                )
            expr, dtypes = format_template_args(self.name, signature.template, template_args)
            self._name_expression = expr
            # Type arguments cunumpy has no dtype for (float4, a struct) go as C type text.
            values = (list(template_args) if not isinstance(template_args, Mapping)
                      else [template_args[t.name] for t in signature.template])
            typed: dict[str, Any] = dict(dtypes)
            for t, v in zip(signature.template, values, strict=False):
                if t.kind == "type" and typed.get(t.name) is None and isinstance(v, str):
                    typed[t.name] = v
            signature = parse_signature(
                source, self.name, typed, defines=defines, headers=self._header_texts()
            )
        elif template_args is not None:
            if signature is None:
                expr, _ = format_template_args(self.name, (), template_args)
                self._name_expression = expr
            elif in_name is not None:
                raise ValueError(
                    f"{tag} name {given_name!r} has template arguments, but the kernel is not a "
                    "template; name it without them"
                )
            else:
                raise ValueError(f"{tag} is not a template; template_args must be None")
        elif signature is not None and not signature.extern_c:
            self._name_expression = self.name  # C++ linkage: NVRTC looks the mangled name up
        self.signature: CudaSignature | None = signature
        if self.check_signature and signature is not None:
            for p in signature.params:
                if p.dtype is None and not (p.pointer and p.ctype == "void"):
                    why = f": {p.reason}" if p.reason else ""
                    raise NotImplementedError(
                        f"{tag} parameter {p.name!r} ({p.text}) has type {p.ctype!r}, which "
                        f"cunumpy cannot check{why}. Pass check_signature=False to send "
                        "arguments unchecked (NumPy scalars of the right type, arrays of the "
                        "right layout)"
                    )
        self.outputs: tuple[str, ...]
        self.outputs, self._write_only = declared_outputs(tag, signature, outputs)
        self._params: tuple[CudaParam, ...] = signature.params if signature is not None else ()
        self._nparams = len(self._params) if signature is not None else -1
        self._first_array = next((i for i, p in enumerate(self._params) if p.pointer), None)
        self._outputs = tuple(
            i
            for i, p in enumerate(self._params)
            if p.pointer and not p.const and p.dtype is not None and p.dtype.kind in "fc"
        )
        self._launchers: dict[CudaEngine, Any] = {}
        self._prepared: dict[CudaEngine, Any] = {}
        self._sources: dict[CudaEngine, str] = {}
        self._env_cells: dict[CudaEngine, list[Any]] = {}
        self._call: Any = self._first_call
        self._program: Program | None = None
        self._compile_cache: tuple[str, tuple[str, ...], str | None] | None = None

    # -- construction helpers ------------------------------------------------------------------
    @classmethod
    def from_file(
        cls, path: str | os.PathLike, name: str | None = None, **kwargs: Any
    ) -> CudaKernel:
        """Read the kernel from a ``.cu`` file; its directory is searched for includes.

        ``name=None`` picks the only ``__global__`` function in the file. Other keyword arguments
        are those of :class:`CudaKernel`.
        """
        path = Path(path)
        source = path.read_text()
        return cls(source, name, _source_path=str(path), **kwargs)

    @property
    def source(self) -> str:
        """The source text as given."""
        return self._source

    @property
    def params(self) -> tuple[CudaParam, ...]:
        """The parsed parameters (empty when the signature was not parsed)."""
        return self._params

    @property
    def name_expression(self) -> str | None:
        """What NVRTC looks up: ``"scale<double, 3>"`` for a template instantiation, the name
        for a C++-linkage kernel, None for an ``extern "C"`` one."""
        return self._name_expression

    @property
    def engine(self) -> CudaEngine | None:
        """The engine fixed at construction, or None (the default engine at each call)."""
        return self._engine

    def __repr__(self) -> str:
        sig = str(self.signature) if self.signature is not None else self.name
        return f"<CudaKernel {sig}>"

    # -- headers and compilation inputs --------------------------------------------------------
    def _header_texts(self) -> list[str]:
        """Texts of the included headers found on disk (for typedefs and structs)."""
        texts = []
        for path in self.headers():
            try:
                texts.append(path.read_text(errors="replace"))
            except OSError:
                continue
        return texts

    def headers(self) -> list[Path]:
        """The included files found on disk (recursively), in the order first met.

        Quoted includes are searched beside the including file (or the source file), then in
        ``include_dirs``; angle-bracket includes in ``include_dirs`` only. Headers not found
        (the CUDA toolkit's own) are left to the compiler.
        """
        found: list[Path] = []
        seen: set[Path] = set()

        def visit(text: str, here: Path | None) -> None:
            for m in scan_includes(text):
                c = find_include(m.group(2).strip(), m.group(1), here, self.include_dirs)
                if c is not None and c not in seen:
                    seen.add(c)
                    found.append(c)
                    visit(c.read_text(errors="replace"), c.parent)

        start = Path(self._source_path).resolve().parent if self._source_path else None
        visit(self._source, start)
        return found

    def header_digest(self) -> str:
        """SHA-256 over the paths and contents of :meth:`headers` ("" when there are none)."""
        files = self.headers()
        if not files:
            return ""
        h = hashlib.sha256()
        for f in files:
            h.update(str(f).encode())
            h.update(b"\0")
            h.update(f.read_bytes())
            h.update(b"\0")
        return h.hexdigest()

    def _compile_inputs(self) -> tuple[str, tuple[str, ...], str | None]:
        """``(code, options, name_expression)`` handed to the compiler; computed once per
        kernel object (headers are read then)."""
        if self._compile_cache is None:
            digest = self.header_digest()
            code = self._source
            if digest:
                code = f"{code}\n// cunumpy: included headers sha256 {digest}\n"
            # The stand-ins for host-API headers (cuda.h, cuda_runtime.h) come after the
            # user's folders and before the toolkit's, which CuPy appends.
            # cunumpy_nvrtc.h, before the kernel: the host overloads nvcc's device code sees.
            options = self.options + tuple(f"-I{d}" for d in self.include_dirs) + (
                f"-I{_NVRTC_INCLUDE}", "--pre-include=cunumpy_nvrtc.h",
            )
            self._compile_cache = (code, options, self._name_expression)
        return self._compile_cache

    @property
    def program(self) -> Program:
        """The frozen :class:`~cunumpy._engines._base.Program` engines get for this kernel.

        Made once (headers are read then) and made again after :meth:`recompile`. An engine
        sees only this, never the kernel object.
        """
        program = self._program
        if program is None:
            code, options, expression = self._compile_inputs()
            path = self._source_path
            program = self._program = Program(
                dialect="cuda",
                name=self.name,
                source=code,
                signature=self.signature,
                options=options,
                name_expression=expression,
                include_dirs=tuple(str(d) for d in self.include_dirs),
                folder=str(Path(path).resolve().parent) if path else None,
                header_digest=self.header_digest(),
                extra=(
                    ("given_source", self._source),
                    ("label", Path(path).name if path else f"{self.name}.cu"),
                    ("outputs", tuple(self._write_only)),
                    ("user_options", tuple(self.options)),
                ),
            )
        return program

    def compiled_source(self) -> str:
        """The exact text given to the compiler (the source plus a header-digest comment)."""
        return self._compile_inputs()[0]

    def recompile(self) -> None:
        """Forget compiled functions and generated launchers; headers are read again and the
        kernel compiled again (or found in the engine's cache) at the next launch."""
        self._compile_cache = None
        self._program = None  # a new Program: engines prepare it afresh
        self._launchers.clear()
        self._prepared.clear()
        self._sources.clear()
        self._call = self._first_call

    # -- messages ------------------------------------------------------------------------------
    def _tag(self, engine: CudaEngine | str) -> str:
        name = engine if isinstance(engine, str) else engine.name
        return f"[{name} kernel {self.name!r}]"

    def _launch_message(
        self,
        engine: str,
        what: str,
        grid: tuple,
        block: tuple,
        shared_mem: int,
        exc: BaseException | None = None,
    ) -> str:
        text = (
            f"{self._tag(engine)} {what} with grid {tuple(grid)}, block {tuple(block)}, "
            f"shared_mem {shared_mem}"
        )
        if exc is not None:
            text += f": {type(exc).__name__}: {exc}"
        return text

    def _param_label(self, index: int) -> str:
        if index < len(self._params):
            p = self._params[index]
            return f"argument {p.name!r} (parameter {index}, {p.text})"
        return f"argument {index}"

    # -- argument checks (slow path: also the error messages) ---------------------------------
    def _check_array(self, engine: CudaEngine, index: int, value: Any) -> Any:
        return check_array(self, engine, index, value)

    def _check_scalar(self, engine: CudaEngine, index: int, value: Any) -> Any:
        return check_scalar(self, engine, index, value)

    def check_args(self, *args: Any, engine: str | CudaEngine | None = None) -> tuple:
        """Check ``args`` as a launch would and return what the engine would receive.

        Useful to test argument handling without launching; raises the same errors.
        """
        eng = self._resolve_engine(engine)
        return self._checked(eng, args)

    def _resolve_engine(self, engine: str | CudaEngine | None) -> CudaEngine:
        if engine is not None:
            return get_cuda_engine(engine)
        return self._engine if self._engine is not None else default_cuda_engine()

    def _checked(self, engine: CudaEngine, args: tuple) -> tuple:
        self._check_arity(engine, args)
        if self.signature is None:
            return tuple(args)
        if not self.check_signature:
            return check_unchecked(self, engine, tuple(args))
        out = []
        for i, (p, v) in enumerate(zip(self._params, args, strict=True)):
            out.append(
                self._check_array(engine, i, v) if p.pointer else self._check_scalar(engine, i, v)
            )
        return tuple(out)

    def _check_arity(self, engine: CudaEngine, args: tuple) -> None:
        if self._nparams >= 0 and len(args) != self._nparams:
            names = ", ".join(p.name for p in self._params)
            raise TypeError(
                f"{self._tag(engine)} takes {self._nparams} arguments ({names}); got {len(args)}"
            )

    # -- geometry ------------------------------------------------------------------------------
    def launch_config(
        self,
        *args: Any,
        n_threads: Any = None,
        grid: Any = None,
        block: Any = None,
        shared_mem: int = 0,
        limits: CudaLimits | None = None,
        engine: str | CudaEngine | None = "",
    ) -> LaunchConfig | None:
        """The geometry a call with these arguments would launch, or None for a zero-size launch.

        ``limits`` defaults to the engine's (:data:`DEFAULT_LIMITS` when none is given).
        Raises the same errors as a call.
        """
        eng_name = "cuda"
        if limits is None:
            if engine == "":
                limits = DEFAULT_LIMITS
            else:
                eng = self._resolve_engine(engine)
                limits, eng_name = eng.limits(), eng.name
        return self._geometry(eng_name, limits, args, n_threads, grid, block, shared_mem)

    def _geometry(
        self,
        engine_name: str,
        limits: CudaLimits,
        args: tuple,
        n_threads: Any,
        grid: Any,
        block: Any,
        shared_mem: Any,
    ) -> LaunchConfig | None:
        tag = self._tag(engine_name)
        if n_threads is not None and grid is not None:
            raise TypeError(f"{tag} give n_threads= or grid=, not both")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, np.integer)):
            raise TypeError(f"{tag} shared_mem must be an int number of bytes, got {shared_mem!r}")
        shared_mem = int(shared_mem)
        if shared_mem < 0:
            raise ValueError(f"{tag} shared_mem={shared_mem} must be >= 0")
        if shared_mem > limits.max_shared_mem_optin:
            raise ValueError(
                f"{tag} shared_mem={shared_mem} bytes exceeds this device's limit of "
                f"{limits.max_shared_mem_optin} bytes of dynamic shared memory per block"
            )
        b = _dims(block, "block", tag, allow_zero=False) if block is not None else None
        if grid is not None:
            g = _dims(grid, "grid", tag, allow_zero=True)
            if b is None:
                b = default_block(len(g), self.block_size)
            g3 = (*g, 1, 1)[:3]
        else:
            if n_threads is None:
                first = self._first_array_arg(args)
                if first is None:
                    raise TypeError(
                        f"{tag} has no array argument to infer the launch size from; "
                        "give n_threads= (total threads) or grid= and block="
                    )
                n_threads = int(math.prod(first.shape))
            n = _dims(n_threads, "n_threads", tag, allow_zero=True)
            if b is None:
                b = default_block(len(n), self.block_size)
            n3 = (*n, 1, 1)[:3]
            b3 = (*b, 1, 1)[:3]
            g3 = tuple(-(-ni // bi) for ni, bi in zip(n3, b3, strict=True))
        b3 = (*b, 1, 1)[:3]
        threads = b3[0] * b3[1] * b3[2]
        if threads > limits.max_threads_per_block:
            raise ValueError(
                f"{tag} block {b3} has {threads} threads; this device allows at most "
                f"{limits.max_threads_per_block} threads per block"
            )
        for axis, (bi, mi) in enumerate(zip(b3, limits.max_block, strict=True)):
            if bi > mi:
                raise ValueError(
                    f"{tag} block {b3}: extent {bi} in dimension {'xyz'[axis]} exceeds the "
                    f"device limit {mi}"
                )
        if 0 in g3:
            return None
        for axis, (gi, mi) in enumerate(zip(g3, limits.max_grid, strict=True)):
            if gi > mi:
                raise ValueError(
                    f"{tag} grid {g3}: {gi} blocks in dimension {'xyz'[axis]} exceeds the "
                    f"device limit {mi}; use fewer blocks (a grid-stride loop) or larger blocks"
                )
        return LaunchConfig(g3, b3, shared_mem)  # type: ignore[arg-type]

    def _first_array_arg(self, args: tuple) -> Any:
        if self.signature is not None and self.check_signature:
            return None if self._first_array is None else args[self._first_array]
        for a in args:
            if hasattr(a, "shape") and not isinstance(a, np.generic):
                return a
        return None

    # -- calling -------------------------------------------------------------------------------
    # ``kernel(...)`` calls ``kernel._call`` directly: ``__call__`` is a property returning that
    # attribute, which spares a Python-level forwarding frame (about 0.1-0.3 us) per launch.
    # ``_call`` starts as :meth:`_first_call`, which builds the generated launcher for the engine
    # and installs it.
    __call__ = property(operator.attrgetter("_call"))

    def _first_call(self, *args: Any, **kwargs: Any) -> None:
        if self._engine is None:
            engine = default_cuda_engine()
            warn_cuda_auto_fallback(engine, stacklevel=3)
        else:
            engine = self._engine
        launcher = self._launcher_for(engine)
        self._call = launcher
        return launcher(*args, **kwargs)

    def _redispatch(self, args: tuple, kwargs: dict[str, Any]) -> None:
        """``CUNUMPY_CUDA_ENGINE`` changed since the installed launcher was built."""
        engine = default_cuda_engine()
        warn_cuda_auto_fallback(engine, stacklevel=4)
        launcher = self._launcher_for(engine)
        self._env_cells[engine][0] = _cuda_engines_env_value()
        self._call = launcher
        return launcher(*args, **kwargs)

    def _launcher_for(self, engine: CudaEngine) -> Any:
        launcher = self._launchers.get(engine)
        if launcher is None:
            self._prepared[engine] = engine.prepare(self.program)
            launcher = build_launcher(self, engine)
            self._launchers[engine] = launcher
        return launcher

    def launcher_source(self, engine: str | CudaEngine | None = None) -> str:
        """The Python text of the per-call function generated for ``engine``."""
        eng = self._resolve_engine(engine)
        self._launcher_for(eng)
        return self._sources[eng]

    def _wrong_arity(self, engine: CudaEngine, given: tuple) -> None:
        count = sum(1 for a in given if a is not MISSING)
        names = ", ".join(p.name for p in self._params)
        raise TypeError(
            f"{self._tag(engine)} takes {self._nparams} arguments ({names}); got {count}"
        )

    def _launch_failed(
        self,
        engine: CudaEngine,
        exc: BaseException,
        grid: tuple,
        block: tuple,
        shared_mem: int,
    ) -> None:
        raise CudaLaunchError(
            self._launch_message(engine.name, "launch failed", grid, block, shared_mem, exc)
        ) from exc

    def _slow(
        self,
        engine: CudaEngine,
        args: tuple,
        n_threads: Any,
        grid: Any,
        block: Any,
        shared_mem: Any,
        stream: Any,
        check_finite: bool,
    ) -> None:
        """Everything the generated fast path does not: geometry checks, debug, check_finite."""
        if not self.check_signature or self.signature is None:
            args = self._checked(engine, args)
        cfg = self._geometry(engine.name, engine.limits(), args, n_threads, grid, block, shared_mem)
        if cfg is None:
            return
        if cfg.shared_mem:
            engine.reserve_shared_mem(self.program, cfg.shared_mem)
        go = self._prepared[engine]
        try:
            go(cfg.grid, cfg.block, args, cfg.shared_mem, stream)
        except engine.launch_errors() as exc:
            self._launch_failed(engine, exc, cfg.grid, cfg.block, cfg.shared_mem)
        if self.debug or check_finite:
            try:
                engine.synchronize(stream)
            except engine.sync_errors() as exc:
                raise CudaLaunchError(
                    self._launch_message(
                        engine.name,
                        "failed while running",
                        cfg.grid,
                        cfg.block,
                        cfg.shared_mem,
                        exc,
                    )
                ) from exc
        if check_finite:
            if not self.check_signature or self.signature is None:
                raise ValueError(
                    f"{self._tag(engine)} check_finite needs the parsed signature (to know "
                    "which arguments are outputs); it is off with check_signature=False"
                )
            for i in self._outputs:
                if args[i] is None:
                    continue
                count, first = engine.nonfinite(args[i])
                if count:
                    p = self._params[i]
                    raise FloatingPointError(
                        f"{self._tag(engine)} argument {p.name!r} ({_describe(args[i])}) holds "
                        f"{count} non-finite value(s) (NaN or inf) after the launch, first at "
                        f"flat index {first}; grid {cfg.grid}, block {cfg.block}"
                    )
