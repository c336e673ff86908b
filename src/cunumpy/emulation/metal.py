"""Run Metal Shading Language kernels on the CPU: the ``emu-metal`` engine of MetalKernel.

A launch compiles (once, cached on disk) a C++ translation unit made of the runtime headers, the
kernel's header, and the body wrapped in a function with the parameters MLX would declare
(:class:`~cunumpy._lang.metal_signature.MetalSignature`), then calls it for every thread of the
grid (Metal ``dispatchThreads`` semantics: exactly ``grid`` threads, edge threadgroups partial).

Threads of a threadgroup run one after another when the kernel never synchronises, and as
cooperative fibers when its text calls ``threadgroup_barrier``, ``simdgroup_barrier``, a ``simd_*``
or ``quad_*`` function, or declares a threadgroup atomic. SIMD groups have 32 lanes (consecutive
``thread_index_in_threadgroup``), quad groups 4.

What is checked (``EmulatorOptions(checks=True)``, the default):

- every index into a buffer argument (inputs, outputs, ``_shape``/``_strides``) and into a
  ``threadgroup`` array, negative indices included (:class:`OutOfBoundsError`); the launch goes on
  (bad reads return 0, bad writes go nowhere) and the first failure is reported with a count;
- output elements never written, when no ``init_value`` is given (:class:`UnwrittenOutputError`);
- barriers skipped by live threads of a threadgroup (:class:`BarrierDivergenceError`; threads
  that left through a ``return`` count as arrived, unless ``strict_barriers``);
- with ``EmulatorOptions(races=True)``, data races in threadgroup and device memory
  (:class:`~cunumpy.emulation.errors.DataRaceError`; ``docs/races.md``);
- SIMD/quad functions reading a lane that is not active (:class:`InactiveLaneError`);
- threadgroup memory over Metal's 32 KiB.

Checks follow pointers (``checks=True``): pointer arithmetic (``x + k``); pointers declared with
their Metal type in the body or a header function, as a statement or a for-init statement
(``const device float* row = x + k;``, ``threadgroup float* p = tile;``, several ``*p = .., *q
= ..`` declarators, a pointer to such a pointer), which are rewritten to checked pointers; and
``device``/``constant``/``threadgroup`` pointer parameters of header functions. A failure names
the buffer argument or threadgroup array the pointer came from, with the index counted from its
start. A one-dimensional threadgroup array named without a subscript (``f(tile)``) is passed as
a checked pointer, so a header template taking ``threadgroup T*`` deduces ``T``. Should a header
function template still fail to deduce its type from a checked pointer or array (called with
``&x[i]``, or with a row of a 2-D threadgroup array), the kernel is rebuilt with raw buffer
pointers, then if need be plain threadgroup arrays, and an :class:`EmulatorWarning` says which
checks are off.

What the emulator runs, beyond the scalar, vector and math library: threadgroup memory,
barriers, atomics, SIMD-group and quad-group functions (``simd_shuffle_and_fill_up/down`` and
the quad forms included), SIMD-group matrices (``simdgroup_float8x8`` and the half/bfloat forms,
``simdgroup_load``/``simdgroup_store``, ``simdgroup_multiply(_accumulate)``), matrix types
(``float2x2`` ... ``float4x4``, half and non-square ones), ``METAL_FUNC``, and the predefined
``__METAL_VERSION__`` (310) and ``__HAVE_BFLOAT__``.

Not checked: pointers made by casts (``reinterpret_cast`` included: it casts a checked pointer
through its raw address) or ``&x[i]`` (raw pointers, also when stored in a declared pointer), pointers in struct members, declarations mixing pointers and values (``device float
*p = y, n = 0;``) (race checking sees all of these), reads of uninitialised threadgroup memory (it is
poisoned with NaN / -1 bytes instead), infinite loops. A kernel that corrupts memory through an
unchecked pointer can crash Python; ``EmulatorOptions(isolated=True)`` turns that into a
:class:`KernelCrashError`.
"""

from __future__ import annotations

import numbers
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from cunumpy import config
from cunumpy._lang.metal_signature import ATTRIBUTES, MetalSignature, Param, metal_type_name
from cunumpy.emulation import _build, _lanes, _launch, _poison
from cunumpy.emulation._options import EmulatorOptions, resolve_options
from cunumpy.emulation._rewrite import SharedDecl, rewrite
from cunumpy.emulation.errors import (
    EmulationError,
    EmulatorWarning,
    KernelCompileError,
    UnwrittenOutputError,
)

__all__ = ["DIALECT", "EmulatorOptions", "generate_source", "launch_metal", "run_metal"]

DIALECT = _launch.Dialect(
    engine="emu-metal",
    group="threadgroup",
    shared="threadgroup array",
    lanes="SIMD-group",
    shared_limit=32768,
    simd_width=32,
    barrier="threadgroup_barrier(mem_flags::mem_threadgroup)",
    device_barrier="threadgroup_barrier(mem_flags::mem_device)",
    lane_sync="simdgroup_barrier(mem_flags::mem_threadgroup)",
)

MAX_THREADS_PER_GROUP = 1024


@dataclass(frozen=True)
class Generated:
    """A generated translation unit and what the launch needs to know about it."""

    source: str
    shared: tuple[SharedDecl, ...]
    fibers: bool
    function: str


def _template_parts(template: Sequence[tuple[str, Any]]) -> tuple[list[str], list[str]]:
    params: list[str] = []
    args: list[str] = []
    for name, value in template:
        if isinstance(value, (bool, np.bool_)):
            params.append(f"bool {name}")
            args.append("true" if value else "false")
        elif isinstance(value, numbers.Integral):
            params.append(f"int {name}")
            args.append(str(int(value)))
        else:
            params.append(f"typename {name}")
            args.append(metal_type_name(value))
    return params, args


def _param_decl(p: Param, checks: bool) -> tuple[str, str]:
    """(parameter declaration, launch-side definition of ``b<buffer>``)."""
    if p.kind == "attribute":
        return f"{p.ctype} {p.name}", ""
    elem = f"metal::atomic<{p.ctype}>" if p.atomic else p.ctype
    if p.const:
        elem = f"const {elem}"
    var = f"b{p.buffer}"
    if p.reference:
        return (
            f"{elem}& {p.name}",
            f"  {elem}& {var} = *static_cast<{elem}*>(d->buffers[{p.buffer}].data);",
        )
    if checks:
        return f"cn::ptr<{elem}> {p.name}", f"  auto {var} = cn::make_ptr<{elem}>(d, {p.buffer});"
    # Outputs are fresh arrays, distinct from every input: tell the compiler (it may then keep
    # scalar inputs in registers and vectorise).
    restrict = " __restrict__" if p.kind == "output" else ""
    return (
        f"{elem}*{restrict} {p.name}",
        f"  {elem}*{restrict} {var} = static_cast<{elem}*>(d->buffers[{p.buffer}].data);",
    )


def generate_source(
    signature: MetalSignature,
    *,
    checks: bool,
    checked_buffers: bool | None = None,
    checked_arrays: bool | None = None,
    math_mode: str = "safe",
    lanes: bool = True,
    shuffle: bool = True,
) -> Generated:
    """The C++ translation unit of one kernel variant.

    ``checked_buffers`` (default: ``checks``) declares buffer parameters, header helpers'
    pointer parameters and local pointer declarations as bounds-checked ``cn::ptr`` rather than
    raw pointers. ``checked_arrays`` (default: ``checks``) declares threadgroup arrays as
    bounds-checked ``cn::tarr`` rather than plain arrays. ``math_mode`` is MLX's
    ``compile_options["math_mode"]``: ``fast`` compiles the kernel with fast math and defines
    ``__FAST_MATH__`` (as Metal's fast math mode does), ``relaxed`` allows reassociation only.
    ``lanes`` (checked builds): give the kernel its lane copy where it has one (the lane build
    of :data:`cunumpy.emulation._lanes.TIER_THREADS`; unchecked kernels run in lanes as they are).
    ``shuffle``: the library can run the random-order option (``run_grid``'s ``Shuffle``).
    """
    if checked_buffers is None:
        checked_buffers = checks
    if checked_arrays is None:
        checked_arrays = checks
    header = rewrite(
        _strip_metal_attributes(_merge_address_space_specialisations(signature.header or "")),
        checks=checked_arrays,
        checked_params=checked_buffers,
        checked_pointers=checked_buffers,
        conditionals=True,
    )
    body = rewrite(
        signature.source, checks=checked_arrays, first_slot=len(header.shared),
        checked_pointers=checked_buffers, in_function=True, mark_returns=True,
        conditionals=True,
    )
    shared = header.shared + body.shared
    if len(shared) > 256:
        raise EmulationError(
            f"{DIALECT.prefix(signature.name)} declares {len(shared)} threadgroup variables; the "
            "emulator supports 256"
        )
    # thread_elements() gathers the lanes' fragments through lane exchanges (cn_metal.h).
    fibers = header.sync or body.sync or "thread_elements" in signature.source + (
        signature.header or ""
    )
    fname = re.sub(r"\W", "_", signature.kernel_name or f"custom_kernel_{signature.name}")
    tparams, targs = _template_parts(signature.template)
    decls, defs, args = [], [], []
    for p in signature.params:
        decl, definition = _param_decl(p, checked_buffers)
        decls.append(decl)
        if p.kind == "attribute":
            args.append(f"cn::msl::{p.name}(t)")
        else:
            defs.append(definition)
            args.append(f"b{p.buffer}")
    nbuffers = sum(1 for p in signature.params if p.kind != "attribute")
    call = fname + (f"<{', '.join(targs)}>" if tparams else "")
    # A checked kernel's lane copy (emulation/_lanes.py): unchecked kernels run in lanes as
    # they are; a checked one only through a copy whose subscripts the row's guard proves.
    lane = None
    if lanes and checks and checked_buffers and not fibers and _lanes.enabled():
        lane = _lanes.metal_lane_kernel(
            fname, decls, body.text, f"template <{', '.join(tparams)}>" if tparams else "",
            f"<{', '.join(targs)}>" if tparams else "",
            frozenset(p.name for p in signature.params
                      if p.kind == "output" or (p.const and not p.atomic)))
    parts = ['#include "cn_metal.h"', *_MATH_MODE_LINES[math_mode],
        '#line 1 "header"',
        _with_newline(header.text),
        '#line 1 "wrapper"',
    ]
    if tparams:
        parts.append(f"template <{', '.join(tparams)}>")
    parts += [
        f"static inline void {fname}(",
        ",\n".join(f"    {d}" for d in decls) + ") {",
        '#line 1 "body"',
        _with_newline(body.text) + "}",
        *(['#line 1 "cn-lanes"', lane.text] if lane else []),
        '#line 1 "launch"',
        "CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {",
        f"  if (d->abi != CN_ABI_VERSION || d->nbuffers != {nbuffers}) return -2;",
        *defs,
        # CN_NOTSAN: in race-checking builds only the kernel's own code is instrumented.
        "  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {",
        f"    CN_RACE_TRY {call}({', '.join(args)}); CN_RACE_CATCH",
        "  };",
        "  (void)cn_fn;",
        *(lane.functors("t", ", ".join(args), unsigned=True) if lane else []),
        f"  return cn::run_grid<{'true' if fibers else 'false'}, "
        f"{'true' if checks else 'false'}, {'true' if checks else 'false'}"
        f"{'' if shuffle else ', false'}>"
        f"(d, {len(shared)}, cn_fn{lane.run_grid_args() if lane else ''});",
        "}",
        "",
    ]
    return Generated("\n".join(parts), shared, fibers, fname)


_MATH_MODE_LINES = {
    "safe": (),
    "relaxed": ('#pragma GCC optimize("-fno-math-errno", "-fassociative-math", '
                '"-fno-signed-zeros", "-fno-trapping-math")',),
    "fast": ('#pragma GCC optimize("-ffast-math")', "#define __FAST_MATH__ 1"),
}
"""Lines after the runtime include for each MLX math mode (the runtime itself stays exact)."""


_SPACES = r"(?:thread|device|constant|threadgroup|threadgroup_imageblock|ray_data|object_data)"
_SPECIALISATION = re.compile(
    r"template\s*<[^<>{};]*>\s*struct\s+(\w+)\s*<([^{};]*)>\s*(?::[^{};]*)?\{"
)


_METAL_ATTRIBUTE = re.compile(
    r"\[\[\s*(?:buffer|threadgroup|texture|sampler|function_constant|"
    + "|".join(name for name, _ in ATTRIBUTES)
    + r")\s*(?:\(\s*\w*\s*\))?\s*\]\]"
)


def _strip_metal_attributes(text: str) -> str:
    """Remove Metal's argument attributes (``[[threadgroup(0)]]``, ``[[buffer(1)]]``,
    ``[[thread_position_in_grid]]``) from header functions: they mean nothing to the emulator,
    and with the address-space words defined away they would not parse."""
    return _METAL_ATTRIBUTE.sub("", text) if "[[" in text else text


def _merge_address_space_specialisations(text: str) -> str:
    """Drop a class template specialisation that differs from an earlier one only in Metal
    address spaces (``pointer_element<thread T*>`` and ``pointer_element<device T*>``).

    Address spaces are not types in the emulator's C++, so such specialisations would be
    redefinitions. The dropped text keeps its newlines, so ``header:LINE`` stays right.
    """
    if not re.search(rf"<\s*{_SPACES}\b", text):
        return text
    seen: set[tuple[str, str]] = set()
    out, pos = [], 0
    for m in _SPECIALISATION.finditer(text):
        if m.start() < pos or not re.search(rf"\b{_SPACES}\b", m.group(2)):
            continue
        key = (m.group(1), " ".join(re.sub(rf"\b{_SPACES}\b", " ", m.group(2)).split()))
        depth, end = 0, m.end() - 1
        while end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
            if depth == 0:
                break
        if end < len(text) and text[end] == ";":
            end += 1
        if key in seen:
            out.append(text[pos:m.start()])
            out.append("\n" * text.count("\n", m.start(), end))
            pos = end
        else:
            seen.add(key)
    out.append(text[pos:])
    return "".join(out)


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------


def _label(kind: str, name: str, arr: np.ndarray) -> str:
    shape = ",".join(str(n) for n in arr.shape)
    return f"{kind} '{name}' ({arr.dtype.name}[{shape}])"


def _prepare_input(a: Any) -> tuple[np.ndarray, int, tuple[int, ...]]:
    """(array to pass, strided extent in elements, element strides)."""
    arr = np.asarray(a)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if arr.ndim == 0:
        return np.ascontiguousarray(arr), 1, ()
    item = arr.itemsize
    usable = all(
        n <= 1 or (s > 0 and s % item == 0) for s, n in zip(arr.strides, arr.shape)
    )
    if not usable:
        arr = np.ascontiguousarray(arr)
    strides = tuple(
        s // item if s % item == 0 else 0 for s in arr.strides
    )
    if arr.size == 0:
        return arr, 0, strides
    extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides) if n > 1)
    return arr, extent, strides


def _buffers(
    signature: MetalSignature, inputs: Sequence[Any], outputs: Sequence[np.ndarray]
) -> list[_launch.BufferArg]:
    prepared = [_prepare_input(a) for a in inputs]
    slots: dict[int, _launch.BufferArg] = {}
    for p in signature.params:
        if p.kind == "attribute":
            continue
        assert p.buffer is not None and p.arg is not None
        if p.kind == "output":
            out = outputs[p.arg]
            slots[p.buffer] = _launch.BufferArg(
                partial(_label, "output", p.name, out), out.ctypes.data, out.size, out,
                nbytes=out.nbytes, itemsize=out.itemsize, track=True,
            )
            continue
        arr, extent, strides = prepared[p.arg]
        if p.kind == "input":
            slots[p.buffer] = _launch.BufferArg(
                partial(_label, "argument", p.name, arr), arr.ctypes.data, extent, arr,
                "size" if extent == arr.size else "strided extent",
            )
            continue
        if p.kind == "shape":
            meta = np.array(arr.shape, dtype=np.int32)
        elif p.kind == "strides":
            meta = np.array(strides, dtype=np.int64)
        else:
            meta = np.array(arr.ndim, dtype=np.int32)
        slots[p.buffer] = _launch.BufferArg(
            partial(_label, "argument", p.name, meta), meta.ctypes.data, max(meta.size, 1), meta
        )
    return [slots[k] for k in sorted(slots)]


def _check_geometry(name: str, grid: Sequence[int], threadgroup: Sequence[int]) -> tuple:
    prefix = DIALECT.prefix(name)
    g = tuple(int(v) for v in grid)
    t = tuple(int(v) for v in threadgroup)
    if len(g) != 3 or len(t) != 3:
        raise ValueError(f"{prefix} grid and threadgroup need 3 values each, got {g} and {t}")
    if any(v < 0 or v >= 2**32 for v in g):
        raise ValueError(f"{prefix} grid {g} must hold non-negative 32-bit thread counts")
    if any(v < 1 for v in t):
        raise ValueError(f"{prefix} threadgroup {t} must be at least 1 in every dimension")
    if t[0] * t[1] * t[2] > MAX_THREADS_PER_GROUP:
        raise ValueError(
            f"{prefix} threadgroup {t} has {t[0] * t[1] * t[2]} threads, over Metal's limit of "
            f"{MAX_THREADS_PER_GROUP}; use a smaller threadgroup"
        )
    return g, t


def _check_outputs(name: str, signature: MetalSignature, outputs: Sequence[np.ndarray]) -> None:
    names = {p.arg: p.name for p in signature.params if p.kind == "output"}
    for i, out in enumerate(outputs):
        if not (
            isinstance(out, np.ndarray)
            and out.flags.c_contiguous
            and out.flags.writeable
            and out.dtype.isnative
        ):
            raise ValueError(
                f"{DIALECT.prefix(name)} output '{names.get(i, i)}' must be a C-contiguous, "
                "writeable, native-byte-order numpy array"
            )


# ---------------------------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------------------------

_VARIANTS: dict[tuple[Any, ...], tuple[Generated, _build.Library]] = {}


def _memo_key(
    signature: MetalSignature, checks: bool, math_mode: str = "safe", races: bool = False,
    lanes: bool = False, shuffle: bool = False,
) -> tuple[Any, ...]:
    """The in-process key of a compiled variant (``lanes``: a checked variant's lane build;
    unchecked variants always have their lanes).

    Signatures compare template values with ``==``, and ``True == 1``: the value types are part of
    the key so a ``bool N`` variant is never served for an ``int N`` one.
    """
    types = tuple(type(v) for _, v in signature.template)
    return (signature, types, checks, math_mode, races, lanes or not checks, shuffle,
            config.cache_dir_override())


def _variant(
    signature: MetalSignature, checks: bool, math_mode: str = "safe", races: bool = False,
    lanes: bool = True, shuffle: bool = False,
) -> tuple[Generated, _build.Library]:
    lanes = lanes or not checks
    memo = _memo_key(signature, checks, math_mode, races, lanes, shuffle)
    hit = _VARIANTS.get(memo)
    if hit is not None:
        return hit
    gen = generate_source(signature, checks=checks, math_mode=math_mode, lanes=lanes,
                          shuffle=shuffle)

    def build(g: Generated) -> _build.Library:
        return _build.build_library(
            g.source,
            engine=DIALECT.engine,
            header="cn_metal.h",
            checks=checks,
            prefix=DIALECT.prefix(signature.name),
            user_text={"body": signature.source, "header": signature.header or ""},
            races=races,
        )

    try:
        lib = build(gen)
    except KernelCompileError as exc:
        if not (checks and ("cn::ptr" in exc.log or "cn::tarr" in exc.log)):
            raise
        gen, lib, what = _fallback(signature, build, math_mode)
        first = next((ln for ln in exc.log.splitlines() if "error" in ln), "")
        warnings.warn(
            f"{DIALECT.prefix(signature.name)} bounds checks of {what} are off: with checked "
            f"pointers the kernel does not compile ({first.strip()}). "
            + ("Threadgroup arrays, unwritten" if what == "buffer arguments" else "Unwritten")
            + " outputs, barriers and SIMD lanes are still checked",
            EmulatorWarning,
            stacklevel=3,
        )
    _VARIANTS[memo] = (gen, lib)
    return gen, lib


def _fallback(
    signature: MetalSignature, build: Any, math_mode: str = "safe"
) -> tuple[Generated, _build.Library, str]:
    """Rebuild a kernel that does not compile with checked pointers: first with raw buffer
    pointers, then also with plain threadgroup arrays. Checked pointers and arrays are class
    objects, and a header function template taking ``device T*`` or ``threadgroup T*`` cannot
    deduce T from them when it is called with a raw pointer (``&x[i]``, a cast) or a
    multi-dimensional array."""
    gen = generate_source(signature, checks=True, checked_buffers=False, math_mode=math_mode)
    try:
        return gen, build(gen), "buffer arguments"
    except KernelCompileError as again:
        if "cn::tarr" not in again.log:
            raise
    gen = generate_source(signature, checks=True, checked_buffers=False, checked_arrays=False,
                          math_mode=math_mode)
    return gen, build(gen), "buffer arguments and threadgroup arrays"


def forget_variants() -> None:
    """Forget compiled variants held by this process, and the threads they ran (tests use it
    to force disk lookups)."""
    _VARIANTS.clear()
    _lanes.forget_tiers()
    _build.forget_loaded()


def run_metal(
    signature: MetalSignature,
    inputs: Sequence[Any],
    outputs: Sequence[np.ndarray],
    grid: Sequence[int],
    threadgroup: Sequence[int],
    *,
    init_value: Any = None,
    options: EmulatorOptions | None = None,
    math_mode: str = "safe",
) -> None:
    """Run one Metal kernel launch on the CPU, writing ``outputs`` in place.

    For callers outside the MetalKernel front end: the geometry, the outputs and ``math_mode``
    are checked here (ValueError), then :func:`launch_metal` runs the launch.

    Parameters
    ----------
    signature : MetalSignature
        The kernel as MLX declares it (parameters, template values, body, header).
    inputs : sequence of array_like
        Input arrays in input order (0-d arrays for scalar inputs). Views with positive strides
        are passed as they are; others are copied to contiguous memory.
    outputs : sequence of numpy.ndarray
        C-contiguous arrays the kernel fills.
    grid : 3 ints
        Threads per dimension (Metal ``dispatchThreads``).
    threadgroup : 3 ints
        Threads per threadgroup, already clamped to the grid; at most 1024 in total.
    init_value : scalar, optional
        Given when the caller already filled the outputs; the outputs are then not poisoned and
        not checked for unwritten elements.
    options : EmulatorOptions, optional
        Checks, random order, isolation; default from the environment
        (``CUNUMPY_EMULATOR_CHECKS``, ``CUNUMPY_EMULATOR_ORDER``, ``CUNUMPY_EMULATOR_ISOLATED``).
    math_mode : {"safe", "relaxed", "fast"}, optional
        MLX's ``compile_options["math_mode"]`` (see :func:`generate_source`).

    Raises
    ------
    KernelCompileError
        The kernel does not compile (message with ``body:LINE`` / ``header:LINE``).
    OutOfBoundsError, UnwrittenOutputError, BarrierDivergenceError, InactiveLaneError
        A check failed.
    KernelCrashError
        Isolated mode only: the kernel crashed its process.
    """
    name = signature.name
    if math_mode not in _MATH_MODE_LINES:
        raise ValueError(
            f"{DIALECT.prefix(name)} math_mode {math_mode!r} is not one of safe, relaxed, fast"
        )
    g, t = _check_geometry(name, grid, threadgroup)
    _check_outputs(name, signature, outputs)
    launch_metal(signature, inputs, outputs, g, t, init_value=init_value, options=options,
                 math_mode=math_mode)


def launch_metal(
    signature: MetalSignature,
    inputs: Sequence[Any],
    outputs: Sequence[np.ndarray],
    grid: tuple[int, int, int],
    threadgroup: tuple[int, int, int],
    *,
    init_value: Any = None,
    options: EmulatorOptions | None = None,
    math_mode: str = "safe",
) -> None:
    """The ``emu-metal`` engine's entry: :func:`run_metal` without its checks.

    The MetalKernel front end has checked the call: ``grid`` and ``threadgroup`` are 3-tuples
    of ints (the threadgroup clamped to the grid, at most 1024 threads), ``outputs`` fresh
    C-contiguous, writeable, native-byte-order arrays, ``math_mode`` one of MLX's. Only
    assertions stand for those checks here.
    """
    assert math_mode in _MATH_MODE_LINES, math_mode
    assert len(grid) == 3 and len(threadgroup) == 3, (grid, threadgroup)
    assert threadgroup[0] * threadgroup[1] * threadgroup[2] <= MAX_THREADS_PER_GROUP, threadgroup
    assert all(o.flags.c_contiguous and o.flags.writeable for o in outputs)
    opts = resolve_options(options)
    name = signature.name
    g, t = grid, threadgroup
    if opts.isolated:
        from cunumpy.emulation._isolated import run_isolated

        run_isolated(
            "cunumpy.emulation.metal:launch_metal",
            (signature, list(inputs), list(outputs), g, t),
            {"init_value": init_value, "math_mode": math_mode,
             "options": replace(opts, isolated=False)},
            outputs,
            DIALECT.prefix(name),
        )
        return
    lanes = opts.checks and not opts.races and _lanes.checked_tier(
        _memo_key(signature, True, math_mode, False), g[0] * g[1] * g[2])
    gen, lib = _variant(signature, opts.checks, math_mode, bool(opts.races), lanes,
                        opts.random_order)
    buffers = _buffers(signature, inputs, outputs)
    poisoned = opts.checks and init_value is None

    def once(variant: int) -> None:
        if poisoned:
            for out in outputs:
                _poison.poison(out, variant, lib)
        _launch.launch(
            lib, DIALECT, name, buffers, g, t,
            random_order=opts.random_order, seed=opts.seed, shared=gen.shared,
            races=bool(opts.races), strict_barriers=opts.strict_barriers, sync=gen.fibers,
        )

    once(0)
    if not poisoned:
        return
    suspects = [_poison.unwritten(out, 0, lib) for out in outputs]
    if not any(s.size for s in suspects):
        return
    if any(s.size and _poison.needs_confirmation(o.dtype) for s, o in zip(suspects, outputs)):
        once(1)
        suspects = [
            np.intersect1d(s, _poison.unwritten(o, 1, lib)) if _poison.needs_confirmation(o.dtype)
            else _poison.unwritten(o, 1, lib)
            for s, o in zip(suspects, outputs)
        ]
    _raise_unwritten(signature, outputs, suspects)


def _raise_unwritten(
    signature: MetalSignature, outputs: Sequence[np.ndarray], suspects: list[np.ndarray]
) -> None:
    names = {p.arg: p.name for p in signature.params if p.kind == "output"}
    problems = []
    for i, (out, idx) in enumerate(zip(outputs, suspects)):
        if not idx.size:
            continue
        first = ", ".join(str(int(k)) for k in idx[:5])
        more = ", ..." if idx.size > 5 else ""
        problems.append(
            f"{_label('output', names.get(i, str(i)), out)}: {idx.size} of {out.size} elements "
            f"never written (flat indices {first}{more})"
        )
    if problems:
        raise UnwrittenOutputError(
            f"{DIALECT.prefix(signature.name)} " + "; ".join(problems)
            + ". Write every element, or pass init_value= to start the outputs from a value"
        )
