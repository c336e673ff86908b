"""Run CUDA C++ kernels on the CPU: the ``emu-cuda`` engine of :class:`~cunumpy.kernels.CudaKernel`.

A launch compiles (once, cached on disk) a C++ translation unit made of the runtime header
``cn_cuda.h``, the kernel's whole source (its ``#include`` files inlined, ``__shared__``
declarations moved into a per-block arena) and a launcher that calls the ``__global__`` function
once per thread, then runs it over the grid: blocks one after another (in order, or shuffled with
``EmulatorOptions(random_order=True)``), the threads of a block one after another, or, when the
source synchronises (``__syncthreads``, a warp function), as cooperative fibers. Warps are 32
consecutive threads of a block (``threadIdx.x`` fastest); warp functions run in lockstep over the
lanes that reach them.

Arguments are NumPy arrays (pointer parameters, C-contiguous, exactly the pointee's dtype) and
numbers (value parameters); the kernel writes the arrays in place.

What is checked (``EmulatorOptions(checks=True)``, the default):

- every index into a pointer parameter of the kernel (also once passed on to a ``__device__``
  function, whose pointer parameters are checked pointers too) and into a ``__shared__`` array
  (static or ``extern`` dynamic, against ``shared_mem``), negative indices included
  (:class:`~cunumpy.emulation.errors.OutOfBoundsError`); the launch goes on (bad reads give 0, bad
  writes go nowhere) and the first failure is reported with the thread, the block, the source
  line of the subscript (``saxpy.cu:12``; not for ``*(x + i)`` forms) and a count;
- ``__syncthreads`` skipped by live threads of a block, or reached at different places
  (:class:`~cunumpy.emulation.errors.BarrierDivergenceError`); threads that left through a
  ``return`` count as arrived, as on the GPU (``EmulatorOptions(strict_barriers=True)`` reports
  them too);
- undefined behaviour of warp functions, named with the rule, the line and the lanes
  (:class:`~cunumpy.emulation.errors.UndefinedBehaviorError`; ``EmulatorOptions(undefined=
  "warn")`` warns and goes on): reading a lane that has exited, waits elsewhere, or does not
  exist (:class:`~cunumpy.emulation.errors.InactiveLaneError`, a subclass), or that the mask
  leaves out, masks naming a lane that waits elsewhere, a calling lane missing from its own
  mask, shuffle widths that are not powers of two. Cooperative-group operations are built on
  the same primitives and get the same checks;
- device ``assert`` and ``__trap()``: the launch stops with the failing thread and expression;
- shared memory over 227 KiB per block;
- a ``None`` pointer argument that the kernel reads or writes (a null pointer dereference,
  reported with the line);
- elements of the pointer parameters declared write-only (``CudaKernel(..., outputs=[...])``)
  that no thread wrote (:class:`~cunumpy.emulation.errors.UnwrittenOutputError`): they are
  poisoned before the launch; one- and two-byte integer outputs are confirmed by a second
  launch, with the other writable arguments restored first.

With ``EmulatorOptions(races=True)`` (``CUNUMPY_EMULATOR_RACES=1``; default in
:func:`cunumpy.testing.assert_kernels_agree`), data races in shared and global memory, within and
between blocks and warps (:class:`~cunumpy.emulation.errors.DataRaceError`; ``docs/races.md``).

Not checked: pointers made by casts (``reinterpret_cast`` included) or by ``&x[i]`` (raw
pointers; a raw pointer passed to a ``__device__`` function stays unchecked; race checking sees
them all), reads of uninitialised shared memory (it is
filled with 0xFF bytes: NaN for floats, -1 for integers), and unwritten elements of pointers
not declared in ``outputs=`` (CUDA pointers are inputs as well as outputs). When checked
pointers make a kernel fail to compile (a ``__device__`` template deducing ``T`` from ``T*``),
the emulator compiles it again with raw pointers for the
``__device__`` functions, then for the kernel too, and says so with an
:class:`~cunumpy.emulation.errors.EmulatorWarning`.

Threads of a warp run one after another between warp functions: legacy warp-synchronous code
that relies on implicit lockstep without ``__syncwarp`` (a data race since Volta) gives
different results here, as it may on a GPU. ``extern "C"`` is compiled with C++ linkage, so a
kernel may be named like a C library function.

Runtime headers stand in for ``<cooperative_groups.h>`` (and its reduce, scan and memcpy_async
headers), CUB's block and warp collectives, ``<cuComplex.h>``, ``<cuda_bf16.h>``, CuPy's
``<cupy/complex.cuh>``, ``<cupy/float16.cuh>`` and ``<cupy/carray.cuh>``, and libcu++'s
``<cuda/std/...>``; a kernel's own global names that the host's headers also declare
(``typedef unsigned long long uint64_t;``, ``__constant__ float gamma;``) keep their meaning.
Texture objects (:class:`~cunumpy.kernels.Texture` arguments), grid-wide synchronisation
(cooperative launches: every block resident, ``runtime/cn_coop.h``) and the inline PTX forms
real kernels use (:mod:`._cuda_ptx`) run. Refused with :class:`NotImplementedError` naming the
engine and the feature: other inline PTX (the instruction is named), surfaces, kernel launches
from kernels, cluster synchronisation, the rest of CUB (device-wide algorithms, radix sort, ...), Thrust algorithms, WMMA, CuPy's
``CArray``, and kernels whose signature the parser cannot read. ``printf`` writes to the process's stdout
(flushed after each launch). Results of transcendental functions follow the host's C library,
not CUDA's ulp bounds; ``--use_fast_math`` and other compiler options except ``-D``/``-U``/``-I``
are ignored.
"""

from __future__ import annotations

import ctypes
import random
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from cunumpy import config
from cunumpy._cuda_common import DEFAULT_LIMITS, CudaCompileError
from cunumpy._lang.cuda_macros import expand_kernel_macros
from cunumpy._lang.cuda_preprocess import active_text, defines_from_options
from cunumpy._lang.cuda_signature import C_TYPES, CudaParam
from cunumpy.emulation import _build, _lanes, _launch
from cunumpy.emulation._cuda_names import rename_user_typedefs
from cunumpy.emulation._cuda_outputs import poison_and_check
from cunumpy.emulation._cuda_ptx import rewrite_asm
from cunumpy.emulation._cuda_rewrite import (
    CudaRewritten,
    inline_includes,
    noinline_qualifiers,
    rewrite_cuda,
    unsupported_features,
    uses_grid_sync,
)
from cunumpy.emulation._cuda_undefined import UbReport, check_report, meta_words
from cunumpy.emulation._lanes import cuda_lane_kernel
from cunumpy.emulation._options import EmulatorOptions, resolve_options
from cunumpy.emulation._rewrite import SharedDecl
from cunumpy.emulation.errors import EmulationError, EmulatorWarning, KernelCompileError

__all__ = [
    "DIALECT",
    "CudaProgram",
    "EmuCudaCompileError",
    "emulate_cuda_kernel",
    "forget_variants",
    "generate_source",
    "program_for",
    "run_cuda",
]

DIALECT = _launch.Dialect(
    engine="emu-cuda",
    group="block",
    shared="shared array",
    lanes="warp",
    shared_limit=DEFAULT_LIMITS.max_shared_mem_optin,
    simd_width=32,
)


class EmuCudaCompileError(KernelCompileError, CudaCompileError):
    """A CUDA kernel does not compile for the CPU emulator.

    Both a :class:`~cunumpy.emulation.errors.KernelCompileError` and a
    :class:`~cunumpy.kernels.CudaCompileError`, so code catching either works on every engine.
    The message quotes the failing lines with the user's file names and line numbers.
    """

    def __init__(self, message: str, *, log: str = "", source: str = "",
                 command: tuple[str, ...] = ()) -> None:
        KernelCompileError.__init__(self, message, log=log, source=source, command=command)
        self.options = command

    def __reduce__(self):  # keep the class across processes (isolated mode)
        return (_rebuild_compile_error, (str(self), self.log, self.source, self.command))


def _rebuild_compile_error(message, log, source, command):
    return EmuCudaCompileError(message, log=log, source=source, command=command)


# ---------------------------------------------------------------------------------------------
# The program: everything that decides the generated source
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CudaProgram:
    """One kernel variant as the emulator compiles it (hashable, picklable).

    Attributes
    ----------
    name : str
        The kernel's name (for messages).
    call : str
        What the launcher calls: the name, or an instantiation ``scale<double, 3>``.
    source : str
        The CUDA source as given.
    params : tuple of CudaParam
        The parsed parameters of the ``__global__`` function.
    defines : tuple of (str, str or None)
        ``-D`` (value) and ``-U`` (None) options, in order.
    include_dirs : tuple of str
        Directories searched for ``#include`` files.
    folder : str or None
        The source file's folder (searched first for quoted includes).
    label : str
        File name used in messages and line directives (``saxpy.cu``).
    header_digest : str
        Digest of the included files' contents when the program was made.
    """

    name: str
    call: str
    source: str
    params: tuple[CudaParam, ...]
    defines: tuple[tuple[str, str | None], ...] = ()
    include_dirs: tuple[str, ...] = ()
    folder: str | None = None
    label: str = "kernel.cu"
    header_digest: str = field(default="", compare=True)
    outputs: tuple[int, ...] = ()
    """Indices of the pointer parameters declared write-only (``CudaKernel(outputs=...)``)."""

    @property
    def prefix(self) -> str:
        """``[emu-cuda kernel 'name']``."""
        return DIALECT.prefix(self.name)


def _defines(options: Sequence[str]) -> tuple[tuple[str, str | None], ...]:
    """``-D`` (value) and ``-U`` (None) options, in order."""
    return defines_from_options(options)


def program_for(kernel: Any) -> CudaProgram:
    """The :class:`CudaProgram` of a kernel's frozen ``Program`` (its template instantiation,
    compiler options and include directories included); a
    :class:`~cunumpy.kernels.CudaKernel` stands for its :attr:`~cunumpy.kernels.CudaKernel.program`.

    The program is read by its attributes (``name``, ``signature``, ``source``,
    ``name_expression``, ``include_dirs``, ``folder``, ``header_digest``, ``setting(...)``): the
    emulator imports nothing from the engine layer that defines the record.

    Raises
    ------
    NotImplementedError
        The kernel's signature was not parsed (``check_signature=False`` with an unreadable
        parameter list): the emulator must know the parameters to call the kernel.
    """
    program = getattr(kernel, "program", kernel)
    prefix = DIALECT.prefix(program.name)
    if program.signature is None:
        raise NotImplementedError(
            f"{prefix} the CUDA emulator (emu-cuda) needs the kernel's parameter list, which "
            "the signature parser could not read; write the parameters without macros"
        )
    options = tuple(program.setting("user_options", ()))
    include_dirs = tuple(program.include_dirs) + tuple(
        o[2:] for o in options if o.startswith("-I") and len(o) > 2
    )
    return CudaProgram(
        name=program.name,
        call=program.name_expression or program.name,
        source=program.setting("given_source", program.source),
        params=tuple(program.signature.params),
        defines=_defines(options),
        include_dirs=include_dirs,
        folder=program.folder,
        label=program.setting("label", f"{program.name}.cu"),
        header_digest=program.header_digest,
        outputs=tuple(program.setting("outputs", ())),
    )


# ---------------------------------------------------------------------------------------------
# Source generation
# ---------------------------------------------------------------------------------------------


_PLAIN_SCALARS = frozenset(name for name, dtype in C_TYPES.items() if dtype.kind in "biuf")
"""Value parameter types the launcher reads itself (the language's scalar types, spelled as the
front end normalises them); others (structs, vectors, typedefs, template types) convert per thread through
``cn::cuda::ValArg``."""


@dataclass(frozen=True)
class Generated:
    """A generated translation unit and what a launch needs to know about it."""

    source: str
    shared: tuple[SharedDecl, ...]
    dynamic: tuple[SharedDecl, ...]
    fibers: bool
    texts: dict[str, str] = field(compare=False, hash=False)
    """The user's files by ``#line`` name (for compile messages)."""
    prints: bool = False
    """The kernel calls ``printf``: its launches run serially (output in the serial order)."""
    cooperative: bool = False
    """The kernel synchronises the grid (``this_grid().sync()``): its launches are cooperative,
    every block resident at once (``runtime/cn_coop.h``)."""


def generate_source(
    program: CudaProgram, *, checks: bool, checked_pointers: str | None = None,
    lanes: bool = True, shuffle: bool = True,
) -> Generated:
    """The C++ translation unit of one kernel variant.

    ``checked_pointers`` says which pointer parameters are declared bounds-checked
    (``cn::ptr``) rather than raw: ``"all"`` (the kernel's and ``__device__`` functions'; the
    default with checks), ``"kernel"`` or ``"none"`` (the default without checks). ``lanes``
    (checked builds): give the kernel its lane copy where it has one (the lane build of
    :data:`cunumpy.emulation._lanes.TIER_THREADS`). ``shuffle``: the library can run the
    random-order option (``run_grid``'s ``Shuffle``; a second copy of a loop-mode kernel).
    """
    prefix = program.prefix
    folder = Path(program.folder) if program.folder else None
    text, texts = inline_includes(
        program.source, program.label, folder, program.include_dirs, prefix,
        defines=program.defines,
    )
    # Kernels stamped out by macros are rewritten as the compiler will see them.
    text = expand_kernel_macros(text, active_text(text, program.defines))
    text = rename_user_typedefs(text, keep=program.name.rsplit("::", 1)[-1])
    # Inline PTX of the forms real kernels use becomes C++ (other PTX is refused by name).
    text = rewrite_asm(text, prefix)
    # Scan only what the preprocessor keeps: an inactive `typedef __nv_bfloat16 T;` is no use.
    refused = unsupported_features(active_text(text, program.defines))
    if refused:
        raise NotImplementedError(
            f"{prefix} uses {', '.join(refused)}, which the CUDA emulator (emu-cuda) does not "
            "support; run this kernel on a GPU (engine='cupy')"
        )
    coop = uses_grid_sync(active_text(text, program.defines))
    rw: CudaRewritten = rewrite_cuda(
        text, checks=checks, kernel_name=program.name.rsplit("::", 1)[-1],
        checked_pointers=checked_pointers
    )
    nslots = rw.nstatic + (1 if rw.dynamic else 0)
    if nslots > 256:
        raise EmulationError(
            f"{prefix} declares {rw.nstatic} __shared__ variables; the emulator supports 255"
        )
    n = len(program.params)
    lines = ['#include "cn_cuda.h"']
    for name, value in program.defines:
        lines.append(f"#undef {name}" if value is None else f"#define {name} {value}")
    lines.append(f'#line 1 "{program.label}"')
    body = noinline_qualifiers(rw.text)
    lines.append(body if body.endswith("\n") else body + "\n")
    # The kernel's lane copy (SIMD across threads, emulation/_lanes.py): loop-mode builds of
    # kernels whose body has nothing that reads the thread from the runtime (in checked builds,
    # nothing checked but subscripts that the row's guard proves in bounds).
    lane = None
    if _lanes.enabled() and (lanes or not checks) and not (rw.sync or coop) and rw.thread_param:
        lane = cuda_lane_kernel(body, program.name.rsplit("::", 1)[-1], program.call,
                                checked=checks)
    if lane is not None:
        lines.append('#line 1 "cn-lanes"')
        lines.append(lane.text)
    lines.append('#line 1 "cn-launch"')
    lines.append("CN_EXPORT int cn_launch(const cn::LaunchDesc* cn_d) {")
    lines.append(f"  if (cn_d->abi != CN_ABI_VERSION || cn_d->nbuffers != {n + 1}) return -2;")
    lines += [
        f"  const long long* cn_meta = static_cast<const long long*>(cn_d->buffers[{n}].data);",
        "  ::cn::cuda::dynamic_shared_bytes = cn_meta[0];",
        f"  ::cn::cuda::ub_mode = cn_d->buffers[{n}].extent >= 24 ? cn_meta[1] : 0;",
        f"  ::cn::cuda::ub_report = cn_d->buffers[{n}].extent >= 24 ? "
        "reinterpret_cast<::cn::cuda::UbReport*>(cn_meta[2]) : nullptr;",
    ]
    names = []
    for i, p in enumerate(program.params):
        if p.pointer:
            lines.append(
                f"  const ::cn::cuda::PtrArg cn_a{i}{{cn_d->buffers[{i}].data, cn_d->buffers[{i}].extent, "
                f"{i}}};"
            )
        elif p.kind == "scalar" and p.ctype in _PLAIN_SCALARS:
            # Read once per launch into a local of the parameter's own type: the per-thread
            # loop then has nothing to convert or check (the front end gave exactly its bytes).
            lines += [
                f"  if (cn_d->buffers[{i}].extent != sizeof({p.ctype})) return -2;",
                f"  {p.ctype} cn_a{i};",
                f"  std::memcpy(&cn_a{i}, cn_d->buffers[{i}].data, sizeof cn_a{i});",
            ]
        else:
            lines.append(
                f"  const ::cn::cuda::ValArg cn_a{i}{{cn_d->buffers[{i}].data, cn_d->buffers[{i}].extent, "
                f'"{p.name}"}};'
            )
        names.append(f"cn_a{i}")
    lines += [
        # CN_NOTSAN: in race-checking builds only the kernel's own code is instrumented.
        # the thread is `cn_t`: a kernel may be called `t`
        "  auto cn_fn = [=](const cn::ThreadInfo& cn_t) CN_THREAD_FN {",
        f"    CN_RACE_TRY {program.call}({', '.join((['cn_t'] if rw.thread_param else []) + names)});"
        " CN_RACE_CATCH",
        "  };",
        *(lane.functors("cn_t", ", ".join(["cn_t", *names])) if lane else []),
        f"  int cn_rc = cn::run_grid<{'true' if rw.sync or coop else 'false'}, "
        f"{'true' if checks else 'false'}{'' if shuffle else ', true, false'}>(cn_d, {nslots}, cn_fn"
        + (lane.run_grid_args() if lane else "") + ");",
        "  std::fflush(stdout);",
        "  return cn_rc;",
        "}",
        "",
    ]
    prints = re.search(r"\bprintf\s*\(", rw.text) is not None
    return Generated("\n".join(lines), rw.shared, rw.dynamic, rw.sync or coop, texts, prints,
                     coop)


def _compile_message(program: CudaProgram, gen: Generated, log: str) -> str:
    lines = _build.diagnostics(
        f"{program.prefix} does not compile for the CPU emulator (emu-cuda):", log, gen.texts
    )
    if "__shared__" in log:
        lines.append(
            "note: the emulator rewrites __shared__ declarations written out in the source "
            "(`__shared__ T name[N];`, `extern __shared__ T name[];`); declarations made by a "
            "macro or with an initialiser are not supported"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Compiled variants
# ---------------------------------------------------------------------------------------------

_VARIANTS: dict[tuple[Any, ...], tuple[Generated, _build.Library]] = {}


def _build_variant(
    program: CudaProgram, gen: Generated, checks: bool, races: bool = False
) -> _build.Library:
    try:
        return _build.build_library(
            gen.source,
            engine=DIALECT.engine,
            header="cn_cuda.h",
            checks=checks,
            prefix=program.prefix,
            user_text={},
            races=races,
        )
    except EmuCudaCompileError:
        raise
    except KernelCompileError as exc:
        raise EmuCudaCompileError(
            _compile_message(program, gen, exc.log),
            log=exc.log, source=exc.source, command=exc.command,
        ) from exc


_RECENT: dict[tuple[int, bool, bool, bool, bool, str | None],
              tuple[CudaProgram, Generated, _build.Library]] = {}
"""The same lookups by program identity (hashing a program costs more than a small launch)."""


def _variant(
    program: CudaProgram, checks: bool, races: bool = False, lanes: bool = True,
    shuffle: bool = False,
) -> tuple[Generated, _build.Library]:
    root = config.cache_dir_override()
    lanes = lanes or not checks
    fast = _RECENT.get((id(program), checks, races, lanes, shuffle, root))
    if fast is not None and fast[0] is program:
        return fast[1], fast[2]
    memo = (program, checks, races, lanes, shuffle, root)
    hit = _VARIANTS.get(memo)
    if hit is not None:
        if len(_RECENT) > 1024:
            _RECENT.clear()
        _RECENT[(id(program), checks, races, lanes, shuffle, root)] = (program, *hit)
        return hit
    levels = ("all", "kernel", "none") if checks else ("none",)
    first_error: EmuCudaCompileError | None = None
    for level in levels:
        gen = generate_source(program, checks=checks, checked_pointers=level, lanes=lanes,
                              shuffle=shuffle)
        try:
            lib = _build_variant(program, gen, checks, races)
        except EmuCudaCompileError as exc:
            # Checked pointers are class objects: a template taking `T*` cannot deduce T from
            # them. Retry with fewer of them; an error that remains is the kernel's own.
            if level == levels[-1] or "cn::ptr" not in exc.log:
                raise
            first_error = first_error or exc
            continue
        break
    if first_error is not None:
        which = ("pointer parameters of __device__ functions are" if level == "kernel"
                 else "pointer arguments and parameters are")
        first = next((ln for ln in first_error.log.splitlines() if "error" in ln), "")
        warnings.warn(
            f"{program.prefix} bounds checks of {which} off: with checked pointers the kernel "
            f"does not compile ({first.strip()}). Shared arrays, barriers and warp lanes are "
            "still checked",
            EmulatorWarning,
            stacklevel=4,
        )
    _VARIANTS[memo] = (gen, lib)
    _RECENT[(id(program), checks, races, root)] = (program, gen, lib)
    return gen, lib


def forget_variants() -> None:
    """Forget compiled variants held by this process, and the threads they ran (tests use it
    to force disk lookups)."""
    _VARIANTS.clear()
    _lanes.forget_tiers()
    _RECENT.clear()
    _build.forget_loaded()


# ---------------------------------------------------------------------------------------------
# Launching
# ---------------------------------------------------------------------------------------------


_LABELS: dict[tuple[str, np.dtype, tuple[int, ...]], str] = {}


def _label(name: str, arr: np.ndarray) -> str:
    key = (name, arr.dtype, arr.shape)
    text = _LABELS.get(key)
    if text is None:
        shape = ",".join(str(n) for n in arr.shape)
        text = f"argument '{name}' ({arr.dtype.name}[{shape}])"
        if len(_LABELS) < 4096:
            _LABELS[key] = text
    return text


def _value_bytes(p: CudaParam, value: Any) -> np.ndarray:
    """The bytes of a value argument (its kind checked by the front end)."""
    if p.dtype is not None and p.kind in ("vector", "struct") and isinstance(
        value, (np.ndarray, np.generic)
    ):
        # Its bytes: checked by the front end, or (check_signature=False) by the runtime's size
        # test against the C type.
        return np.ascontiguousarray(value).reshape(-1).view(np.uint8)
    if p.dtype is not None:
        return np.asarray(value, dtype=p.dtype).reshape(())
    return np.ascontiguousarray(value)


def _buffers(
    program: CudaProgram, args: Sequence[Any], shared_mem: int,
    undefined: tuple[str, UbReport] | None = None,
) -> list[_launch.BufferArg]:
    """The launch's buffers. The front end (``CudaKernel``) has checked the arguments: one per
    parameter, pointers as C-contiguous NumPy arrays (writeable unless const) or None; this
    only asserts what it relies on."""
    assert len(args) == len(program.params), "the front end checks the argument count"
    out: list[_launch.BufferArg] = []
    for p, value in zip(program.params, args, strict=True):
        if p.pointer and value is None:
            out.append(_launch.BufferArg(
                f"argument '{p.name}' (a null pointer: None was passed)", 0, 0, None
            ))
            continue
        if p.pointer:
            assert isinstance(value, np.ndarray) and value.flags.c_contiguous and (
                p.const or value.flags.writeable
            ), "the front end checks pointer arguments (kernels/_cuda_args.py)"
            out.append(_launch.BufferArg(
                _label(p.name, value), value.__array_interface__["data"][0], value.nbytes, value,
                nbytes=value.nbytes, itemsize=value.itemsize, track=not p.const,
            ))
        else:
            arr = _value_bytes(p, value)
            out.append(_launch.BufferArg(
                p.name, arr.__array_interface__["data"][0], arr.nbytes, arr
            ))
    mode, report = undefined if undefined is not None else ("error", UbReport())
    meta = meta_words(shared_mem, mode, report)
    out.append(_launch.BufferArg("launch", meta.__array_interface__["data"][0], 24,
                                 (meta, report)))
    return out


def _dynamic_decls(gen: Generated, shared_mem: int) -> tuple[SharedDecl, ...]:
    decls = []
    for d in gen.dynamic:
        dtype = C_TYPES.get(" ".join(d.ctype.replace("const", "").replace("volatile", "").split()))
        dims = (str(shared_mem // dtype.itemsize),) if dtype is not None else (
            f"{shared_mem} bytes",
        )
        decls.append(replace(d, dims=dims))
    return tuple(decls)


def _threads(prefix: str, grid: Sequence[int], block: Sequence[int]) -> tuple[tuple, tuple]:
    """Threads per dimension and the block. The front end (``CudaKernel.launch_config``) has
    checked the geometry against the engine's limits; what is left is this engine's own limit."""
    g0, g1, g2 = (int(v) for v in grid)
    b0, b1, b2 = (int(v) for v in block)
    g, b = (g0, g1, g2), (b0, b1, b2)
    assert min(b) >= 1 and min(g) >= 0, "the front end checks the geometry"
    assert b0 * b1 * b2 <= DEFAULT_LIMITS.max_threads_per_block, "the front end checks the block"
    threads = (g0 * b0, g1 * b1, g2 * b2)
    if max(threads) >= 2**32:
        raise NotImplementedError(
            f"{prefix} grid {g} x block {b} has {threads} threads per dimension; the CUDA "
            "emulator (emu-cuda) handles fewer than 2**32 threads per dimension"
        )
    return threads, b


COOPERATIVE_SMS = 132
"""Multiprocessors of the emulated device (an H200), for the co-residency limit of cooperative
launches."""


def _check_cooperative(prefix: str, threads: tuple, block: tuple, shared_mem: int) -> None:
    """A cooperative launch must fit on the device at once, as cudaLaunchCooperativeKernel
    demands: at most 32 blocks and 2048 threads per SM, and the SM's 228 KiB of shared memory."""
    per_block = block[0] * block[1] * block[2]
    blocks = 1
    for t, b in zip(threads, block, strict=True):
        blocks *= -(-t // b)
    per_sm = min(32, 2048 // per_block, (228 * 1024) // shared_mem if shared_mem else 32)
    if blocks > per_sm * COOPERATIVE_SMS:
        raise EmulationError(
            f"{prefix} a cooperative launch (the kernel calls grid.sync()) of {blocks} blocks of "
            f"{per_block} threads does not fit on the device at once: at most {per_sm} such "
            f"blocks per SM x {COOPERATIVE_SMS} SMs = {per_sm * COOPERATIVE_SMS} (the GPU "
            "refuses it with cudaErrorCooperativeLaunchTooLarge); launch fewer blocks and loop "
            "over the data"
        )


def run_cuda(
    program: CudaProgram | Any,
    args: Sequence[Any],
    grid: Sequence[int],
    block: Sequence[int],
    shared_mem: int = 0,
    *,
    options: EmulatorOptions | None = None,
) -> None:
    """Run one CUDA kernel launch on the CPU, writing the array arguments in place.

    Parameters
    ----------
    program : CudaProgram or CudaKernel
        The kernel (:func:`program_for` makes the program of a CudaKernel). Arguments and
        geometry are not checked here (only asserted): the front end checks them, and
        :func:`emulate_cuda_kernel` checks them through it.
    args : sequence
        One entry per kernel parameter: C-contiguous NumPy arrays for pointers (writeable unless
        the pointee is const), numbers for values.
    grid, block : 3 ints
        Blocks per grid and threads per block, as in CUDA.
    shared_mem : int, default 0
        Bytes of dynamic shared memory (``extern __shared__`` arrays).
    options : EmulatorOptions, optional
        Checks, random order, isolation; default from the environment.

    Raises
    ------
    EmuCudaCompileError
        The kernel does not compile (message with ``file.cu:LINE`` and the failing lines).
    OutOfBoundsError, BarrierDivergenceError, InactiveLaneError, EmulationError
        A check failed, or a device ``assert``.
    NotImplementedError
        The kernel uses a feature the emulator does not support.
    KernelCrashError
        Isolated mode only: the kernel crashed its process.
    """
    if not isinstance(program, CudaProgram):
        program = program_for(program)
    opts = resolve_options(options)
    threads, b = _threads(program.prefix, grid, block)
    if 0 in threads:
        return
    if opts.isolated:
        from cunumpy.emulation._isolated import run_isolated

        outputs = [
            a for a, p in zip(args, program.params, strict=False)
            if p.pointer and not p.const and isinstance(a, np.ndarray)
        ]
        run_isolated(
            "cunumpy.emulation.cuda:_run_child",
            (program, list(args), outputs, tuple(grid), tuple(block), int(shared_mem)),
            {"options": replace(opts, isolated=False)},
            outputs,
            program.prefix,
        )
        return
    if opts.races and uses_grid_sync(active_text(program.source, program.defines)):
        warnings.warn(
            f"{program.prefix} race checking is off for this launch: the kernel synchronises the "
            "grid (grid.sync()), and the emulator checks races of one block at a time",
            EmulatorWarning, stacklevel=3,
        )
        opts = replace(opts, races=False)
    lanes = opts.checks and not opts.races and _lanes.checked_tier(
        (program, config.cache_dir_override()), threads[0] * threads[1] * threads[2])
    gen, lib = _variant(program, opts.checks, bool(opts.races), lanes, opts.random_order)
    if gen.cooperative:
        _check_cooperative(program.prefix, threads, b, int(shared_mem))
    report = UbReport()
    buffers = _buffers(program, args, int(shared_mem), (opts.undefined, report))
    seed = opts.seed
    if opts.random_order and seed is None:
        seed = random.getrandbits(64)
    order = f" (random order, seed {seed})" if opts.random_order else ""

    def once() -> None:
        ctypes.memset(ctypes.addressof(report), 0, ctypes.sizeof(report))
        try:
            _launch.launch(
                lib, DIALECT, program.name, buffers, threads, b,
                random_order=opts.random_order, seed=seed,
                races=bool(opts.races), strict_barriers=opts.strict_barriers,
                shared=gen.shared + _dynamic_decls(gen, int(shared_mem)) if gen.dynamic
                else gen.shared,
                sync=gen.fibers, serial=gen.prints, cooperative=gen.cooperative,
            )
        except EmulationError:
            if opts.undefined == "warn":  # say what happened before the failure propagates
                check_report(report, program.prefix, opts.undefined, order)
            raise
        check_report(report, program.prefix, opts.undefined, order)

    if opts.checks and program.outputs:
        poison_and_check(program.prefix, program.params, args, program.outputs, once, _label,
                         lib)
    else:
        once()


def _run_child(program, args, outputs, grid, block, shared_mem, options=None) -> None:
    """Isolated mode: the child's side (``outputs`` are the same objects as in ``args``)."""
    run_cuda(program, args, grid, block, shared_mem, options=options)


def emulate_cuda_kernel(
    kernel: Any,
    *args: Any,
    n_threads: Any = None,
    grid: Any = None,
    block: Any = None,
    shared_mem: int = 0,
    options: EmulatorOptions | None = None,
) -> None:
    """Run one launch of ``kernel`` on the CPU emulator, whatever engine the kernel is set to.

    The arguments and the geometry are checked exactly as a call ``kernel(*args, ...)`` on the
    ``emulator`` engine checks them (NumPy arrays of exactly the parameter's dtype, C-contiguous;
    numbers range-checked), then the kernel runs with ``options``.

    Parameters
    ----------
    kernel : CudaKernel
        The kernel.
    *args
        One argument per kernel parameter.
    n_threads, grid, block, shared_mem
        As for a :class:`~cunumpy.kernels.CudaKernel` call.
    options : EmulatorOptions, optional
        Checks, random block order, seed, isolation. Default: from the environment.

    Raises
    ------
    OutOfBoundsError, BarrierDivergenceError, InactiveLaneError, EmulationError
        A check failed (see :mod:`cunumpy.emulation.cuda` for what is checked).
    NotImplementedError
        The kernel uses a feature the emulator does not support.

    Examples
    --------
    >>> import numpy as np
    >>> from cunumpy.kernels import CudaKernel
    >>> from cunumpy.emulation import EmulatorOptions, emulate_cuda_kernel
    >>> k = CudaKernel('''
    ... extern "C" __global__ void twice(int n, float* y) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) y[i] *= 2.0f;
    ... }''')
    >>> y = np.arange(4, dtype=np.float32)
    >>> emulate_cuda_kernel(k, 4, y, options=EmulatorOptions(random_order=True))
    >>> y
    array([0., 2., 4., 6.], dtype=float32)
    """
    # The front end's own checks, as a call on the emu-cuda engine makes them (the kernel is
    # used through its public methods; this module does not import the front end).
    if not all(hasattr(kernel, a) for a in ("check_args", "launch_config", "program")):
        raise TypeError(
            f"emulate_cuda_kernel takes a CudaKernel, not {type(kernel).__name__}; build one "
            "with cunumpy.kernels.CudaKernel(source, name)"
        )
    checked = kernel.check_args(*args, engine="emu-cuda")
    cfg = kernel.launch_config(
        *checked, n_threads=n_threads, grid=grid, block=block, shared_mem=shared_mem,
        engine="emu-cuda",
    )
    if cfg is None:
        return
    run_cuda(program_for(kernel.program), checked, cfg.grid, cfg.block, cfg.shared_mem,
             options=options)
