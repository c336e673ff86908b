"""Run kernels of whole Metal libraries on the CPU: the ``emu-metal`` side of MetalLibrary.

A launch compiles (once per kernel, function-constant values and checks; cached on disk) one C++
translation unit: the runtime headers (``cn_metal_library.h``: MLX's preamble names such as
``Limits`` or ``ceildiv`` stay in a namespace of their own, so the library's never clash with
them), then the whole preprocessed library, then a launcher that calls the kernel function for every thread. The launcher
binds each parameter by its C++ type: buffers as checked pointers (``device``/``constant``
pointers) or references into the bound bytes (``constant T&``), ``[[threadgroup(i)]]`` memory
from the group's arena, thread attributes converted to the declared type (``ushort2``, ``uint``).

The library text is edited before the emulator's rewriter sees it (every newline kept, so
``file:line`` stays right): explicit instantiations are removed (the launcher instantiates what it
calls), the chosen kernel's becomes a typedef of its function type, Metal attributes are removed,
``constant`` declarations become ``const`` (a ``constant T&`` parameter stays const), function
constants become constants with the variant's values (``is_function_constant_defined`` becomes
``true`` or ``false``), and a ``return;`` in a kernel body is marked, so that a thread that
leaves early counts as arrived at later barriers.

Everything :mod:`cunumpy.emulation.metal` checks is checked here too: indices into buffers and
threadgroup memory (by buffer or parameter name and source line), barrier divergence, inactive
SIMD lanes, races (``EmulatorOptions(races=True)``), the 32 KiB of threadgroup memory.
"""

from __future__ import annotations

import bisect
import ctypes
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cunumpy import config
from cunumpy._lang.metal_library import LibraryKernel, LibraryText
from cunumpy._lang.tokens import tokenize
from cunumpy.emulation import _build, _launch
from cunumpy.emulation._address_spaces import address_space_edits
from cunumpy.emulation._options import EmulatorOptions, resolve_options
from cunumpy.emulation._range_init import range_init_edits
from cunumpy.emulation._rewrite import SharedDecl, rewrite
from cunumpy.emulation.errors import EmulatorWarning, KernelCompileError
from cunumpy.emulation.metal import _MATH_MODE_LINES, DIALECT

__all__ = ["LibraryBuild", "constant_text", "edit_library", "launch_library", "library_source",
           "split_kernel"]

_JOINED = re.compile(r'"\s*"')
_STANDARD_ATTRIBUTES = frozenset(
    {"maybe_unused", "likely", "unlikely", "fallthrough", "nodiscard", "noreturn", "deprecated"})


@dataclass(frozen=True)
class LibraryBuild:
    """A generated translation unit of one kernel variant."""

    source: str
    shared: tuple[SharedDecl, ...]
    """Static threadgroup declarations of the library, then one per ``[[threadgroup(i)]]``
    parameter (named after it)."""
    fibers: bool
    buffers: tuple[int, ...]
    """The buffer indices the launcher reads, in launch-slot order."""
    threadgroups: tuple[int, ...]
    """The ``[[threadgroup(i)]]`` indices, in the order their sizes travel."""
    files: dict[str, str]


def constant_text(ctype: str, value: Any) -> str:
    """A function constant's value as C++ source of type ``ctype``."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return f"{ctype}({int(value)})"
    return f"{ctype}({float(value)!r})"


def _blank(text: str) -> str:
    return "\n" * text.count("\n") or " "


def edit_library(lib: LibraryText, kernel: LibraryKernel | None,
                 constants: Mapping[str, Any], *, mark_returns: bool = True,
                 typedef: str = "cn_kernel_t", constant_decl: str = "static const",
                 address_space_members: bool = True) -> str:
    """The library text as the engines compile it (see the module docstring).

    ``kernel``'s instantiation (if it has one) becomes ``typedef <its function type> typedef;``;
    ``constants`` maps function constant names to values (a name not given is undefined), each
    declared as ``<constant_decl> T name = value;`` (the CUDA engine's ``static constexpr``,
    MLX's ``static constant constexpr const``). ``address_space_members=False`` keeps
    declarations that differ only in address spaces (Metal itself tells them apart; see
    :mod:`cunumpy.emulation._address_spaces`); ``mark_returns``
    marks ``return;`` in kernel bodies for the emulator's barrier accounting.
    """
    edits = _library_edits(lib, kernel, constants, mark_returns=mark_returns, typedef=typedef,
                           constant_decl=constant_decl,
                           address_space_members=address_space_members)
    return _apply(lib.text, edits)[0]


def split_kernel(lib: LibraryText, kernel: LibraryKernel, constants: Mapping[str, Any], *,
                 constant_decl: str, address_space_members: bool = True) -> tuple[str, str]:
    """The library edited as :func:`edit_library` does, in two parts: the library with
    ``kernel``'s body left empty too (every newline kept), and that body (inside its braces),
    edited alike. No instantiation or typedef is kept: the caller puts the body in a kernel of
    its own (the ``mlx`` engine: into MLX's generated kernel)."""
    assert kernel.body is not None, kernel
    edits = _library_edits(lib, kernel, constants, mark_returns=False, typedef=None,
                           constant_decl=constant_decl,
                           address_space_members=address_space_members)
    text, (a, b) = _apply(lib.text, edits, (kernel.body[0] + 1, kernel.body[1] - 1))
    body = text[a:b]
    return text[:a] + "\n" * body.count("\n") + text[b:], body


def _apply(text: str, edits: list[tuple[int, int, str]], track: tuple[int, ...] = ()
           ) -> tuple[str, tuple[int, ...]]:
    """``text`` with ``edits`` applied (an edit overlapping an earlier one is skipped), and
    where the offsets ``track`` (outside every edit) are in the result."""
    out, pos = [], 0
    moved = list(track)
    # at one offset the widest edit wins (a removed declaration covers the edits inside it)
    for start, stop, new in sorted(edits, key=lambda e: (e[0], -e[1])):
        if start < pos:
            continue
        out.append(text[pos:start])
        out.append(new)
        for i, x in enumerate(track):
            if stop <= x:
                moved[i] += len(new) - (stop - start)
        pos = stop
    out.append(text[pos:])
    return "".join(out), tuple(moved)


def _library_edits(lib: LibraryText, kernel: LibraryKernel | None, constants: Mapping[str, Any],
                   *, mark_returns: bool, typedef: str | None, constant_decl: str,
                   address_space_members: bool) -> list[tuple[int, int, str]]:
    text = lib.text
    edits: list[tuple[int, int, str]] = []
    for start, stop in lib.instantiations:
        edits.append((start, stop, _blank(text[start:stop])))
    if kernel is not None and kernel.function_type is not None and typedef is not None:
        where = next(((a, b) for a, b in lib.instantiations
                      if _instantiates(text[a:b], kernel.host_name)), None)
        if where is not None:
            a, b = where
            edits = [e for e in edits if e[0] != a]
            ftype = kernel.function_type
            if ftype.startswith("void("):
                # keep the parameter list (it is edited like the rest of the library)
                paren = _parameter_list(text, a, b)
                edits.append((a, paren, f"typedef void {typedef}"
                              + "\n" * text.count("\n", a, paren)))
            else:
                edits.append((a, b, f"typedef {ftype} {typedef};"
                              + "\n" * text.count("\n", a, b)))
    for fc in lib.constants:
        # `constant T name [[function_constant(i)]];` -> a constant of the variant's value
        # `constant T x [[function_constant(i)]]`, also spelled `static constant constexpr
        # const T` (MLX's STEEL_CONST): the type without its storage words
        ctype = " ".join(w for w in fc.ctype.split()
                         if w not in ("constant", "static", "constexpr", "const"))
        given = fc.name in constants
        value = constant_text(ctype, constants[fc.name]) if given else f"{ctype}()"
        edits.append((fc.start, fc.stop, f"{constant_decl} {ctype} {fc.name} = {value};"
                      + "\n" * text.count("\n", fc.start, fc.stop)))
    if address_space_members:
        edits.extend(address_space_edits(text))
    if kernel is not None:
        # Other kernels' bodies are not needed: they are left empty (fewer threadgroup
        # declarations, less to compile, no errors from code this kernel never runs).
        keep = kernel.function.split("::")[-1]
        for (a, b), name in zip(lib.bodies, lib.body_names):
            if name != keep:
                edits.append((a + 1, b - 1, "\n" * text.count("\n", a + 1, b - 1)))
    tokens = tokenize(text)
    sig = [t for t in tokens if t.kind not in ("ws", "comment", "pp")]
    blocks, inner = _scope_kinds(sig)
    if "..." in text:
        edits.extend(range_init_edits(sig, text, blocks))
    if "template" in text:
        edits.extend(_member_specializations(sig, inner))
    covered: list[list[int]] = []  # the edited ranges, merged, for a bisection per token
    for a, b, _ in sorted(edits):
        if covered and a <= covered[-1][1]:
            covered[-1][1] = max(covered[-1][1], b)
        elif a < b:
            covered.append([a, b])
    starts = [a for a, _ in covered]
    bodies = lib.bodies if mark_returns else ()
    k = 0

    def inside_edit(pos: int) -> bool:
        i = bisect.bisect_right(starts, pos) - 1
        return i >= 0 and pos < covered[i][1]

    while k < len(sig):
        t = sig[k]
        if t.text == "[" and k + 1 < len(sig) and sig[k + 1].text == "[":
            depth, j = 0, k
            while j < len(sig):
                depth += {"[": 1, "]": -1}.get(sig[j].text, 0)
                if depth == 0:
                    break
                j += 1
            word = sig[k + 2].text if k + 2 < len(sig) else ""
            if j < len(sig) and word not in _STANDARD_ATTRIBUTES and not inside_edit(t.start):
                stop = sig[j].start + 1
                edits.append((t.start, stop, _blank(text[t.start:stop])))
            k = j + 1
            continue
        if t.kind == "ident" and not inside_edit(t.start):
            if t.text == "is_function_constant_defined" and k + 3 < len(sig) \
                    and sig[k + 1].text == "(" and sig[k + 3].text == ")":
                name = sig[k + 2].text
                stop = sig[k + 3].start + 1
                edits.append((t.start, stop, "(true)" if name in constants else "(false)"))
                k += 4
                continue
            if t.text == "constant":
                near = {x.text for x in sig[max(0, k - 3): k + 4]}
                if not near & {"const", "constexpr"}:
                    edits.append((t.start, t.start + len(t.text), "const constant"))
            elif t.text == "return" and k + 1 < len(sig) and sig[k + 1].text == ";" and any(
                a <= t.start < b for a, b in bodies
            ):
                edits.append((t.start, t.start + len(t.text), "return ::cn::mark_return()"))
        k += 1
    return edits


def _scope_kinds(sig: list) -> tuple[list[bool], list[str]]:
    """Per significant token: whether it is inside a function body (or a block within one),
    and the kind of the innermost brace around it (``namespace`` at file scope)."""
    from cunumpy._lang.scopes import brace_kind

    blocks: list[bool] = []
    inner: list[str] = []
    braces: list[str] = []
    for i, t in enumerate(sig):
        if t.text == "{":
            braces.append(brace_kind(sig, i))
        elif t.text == "}" and braces:
            braces.pop()
        blocks.append(any(b == "block" for b in braces))
        inner.append(braces[-1] if braces else "namespace")
    return blocks, inner


def _member_specializations(sig: list, inner: list[str]) -> list[tuple[int, int, str]]:
    """``template <>`` before a member function inside a class body (an explicit
    specialisation in class scope, which Clang accepts and C++17 GCC does not) is removed: the
    function becomes a non-template overload, which calls with those argument types choose."""
    edits = []
    for k in range(len(sig) - 3):
        if not (sig[k].text == "template" and sig[k + 1].text == "<" and sig[k + 2].text == ">"
                and inner[k] == "class"):
            continue
        j = k + 3
        while j < len(sig) and sig[j].text not in ("(", "{", ";"):
            if sig[j].text in ("struct", "class", "union"):
                break
            j += 1
        if j < len(sig) and sig[j].text == "(":
            edits.append((sig[k].start, sig[k + 2].start + 1, " "))
    return edits


def _parameter_list(text: str, a: int, b: int) -> int:
    """Offset of the ``(`` that opens the parameter list of the instantiation at [a, b)."""
    sig = [t for t in tokenize(text[a:b]) if t.kind not in ("ws", "comment", "pp")]
    depth = 0
    k = 0
    while k < len(sig):
        t = sig[k].text
        if t == "[" or t == "<":
            depth += 1
        elif t == "]" or t == ">":
            depth -= 1
        elif t == "decltype":
            k += 1
            d = 0
            while k < len(sig):
                d += {"(": 1, ")": -1}.get(sig[k].text, 0)
                if d == 0:
                    break
                k += 1
        elif t == "(" and depth == 0:
            return a + sig[k].start
        k += 1
    return b


def _instantiates(statement: str, host: str) -> bool:
    if host not in statement and not _JOINED.search(statement):
        return False  # neither the name nor adjacent string literals ("a" "b") that may form it
    found = "".join(
        t.text[t.text.index('"') + 1:-1] for t in tokenize(statement) if t.kind == "string"
    )
    return found == host


def _call_target(kernel: LibraryKernel) -> str:
    return kernel.function + (kernel.template_args or "")


def library_source(
    lib: LibraryText,
    kernel: LibraryKernel,
    constants: Mapping[str, Any],
    files: Mapping[str, str],
    *,
    checks: bool,
    checked_buffers: bool | None = None,
    checked_arrays: bool | None = None,
    math_mode: str = "safe",
) -> LibraryBuild:
    """The C++ translation unit that launches ``kernel`` of ``lib`` (see the module docstring)."""
    if checked_buffers is None:
        checked_buffers = checks
    if checked_arrays is None:
        checked_arrays = checks
    edited = edit_library(lib, kernel, constants)
    body = rewrite(edited, checks=checked_arrays, checked_params=checked_buffers,
                   checked_pointers=checked_buffers, conditionals=True)
    shared = list(body.shared)
    if kernel.function_type is not None:
        head = f"  cn_kernel_t* cn_fp = &{_call_target(kernel)};"
    else:
        head = f"  auto cn_fp = &{_call_target(kernel)};"
    buffers = sorted({p.index for p in kernel.params if p.kind == "buffer"})
    slot_of = {b: s for s, b in enumerate(buffers)}
    tgs = sorted({p.index for p in kernel.params if p.kind == "threadgroup"})
    meta = len(buffers)
    args, sizes = [], []
    for p in kernel.params:
        ptype = f"cn::msl::param_t<decltype(cn_fp), {p.position}>"
        if p.kind == "buffer":
            s = slot_of[p.index]
            args.append(f"cn::msl::bind<{ptype}>(d, {s})")
            sizes.append(f"cn::msl::value_size<{ptype}>(), cn::msl::value_kind<{ptype}>()")
        elif p.kind == "threadgroup":
            slot = len(body.shared) + tgs.index(p.index)
            shared.append(SharedDecl(slot, p.name, p.base, ("?",)))
            args.append(f"cn::msl::bind_threadgroup<{ptype}>({slot}, cn_tg[{tgs.index(p.index)}])")
            sizes.append(f"cn::msl::value_size<{ptype}>(), 4")
        elif p.kind == "attribute":
            args.append(f"cn::msl::attr_as<{ptype}>(cn::msl::{p.attribute}(t))")
            sizes.append("0, 0")
        else:
            raise NotImplementedError(
                f"[emu-metal kernel '{kernel.host_name}'] parameter {p.name!r} ({p.declared}) "
                "needs textures, samplers or render state, which the emulator does not have")
    if len(shared) > 256:
        raise ValueError(f"{DIALECT.prefix(kernel.host_name)} the library declares {len(shared)} "
                         "threadgroup variables; the emulator supports 256")
    fibers = body.sync or "thread_elements" in edited or "__metal_simd" in edited
    nbuf = len(buffers) + 1
    parts = [
        '#include "cn_metal_library.h"',
        *_MATH_MODE_LINES[math_mode],
        body.text,
        '#line 1 "launch"',
        "CN_EXPORT void cn_sizes(int64_t* out) {",
        head,
        "  (void)cn_fp;",
        f"  const int64_t v[] = {{{', '.join(sizes) or '0'}}};",
        "  for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); ++i) out[i] = v[i];",
        "}",
        "CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {",
        f"  if (d->abi != CN_ABI_VERSION || d->nbuffers != {nbuf}) return -2;",
        head,
        f"  const int64_t* cn_tg = static_cast<const int64_t*>(d->buffers[{meta}].data);",
        "  (void)cn_tg;",
        "  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {",
        "    (void)t;",
        f"    CN_RACE_TRY cn_fp({', '.join(args)}); CN_RACE_CATCH",
        "  };",
        f"  return cn::run_grid<{'true' if fibers else 'false'}, "
        f"{'true' if checks else 'false'}, {'true' if checks else 'false'}>"
        f"(d, {len(shared)}, cn_fn);",
        "}",
        "",
    ]
    return LibraryBuild("\n".join(parts), tuple(shared), fibers, tuple(buffers), tuple(tgs),
                        dict(files))


_VARIANTS: dict[tuple, tuple[LibraryBuild, _build.Library, tuple[int, ...]]] = {}


def _variant(lib: LibraryText, kernel: LibraryKernel, constants: Mapping[str, Any],
             files: Mapping[str, str], checks: bool, math_mode: str, races: bool
             ) -> tuple[LibraryBuild, _build.Library, tuple[int, ...]]:
    memo = (lib.text, kernel, tuple(sorted(
        (k, type(v).__name__, v) for k, v in constants.items())), checks, math_mode, races,
        config.cache_dir_override())
    hit = _VARIANTS.get(memo)
    if hit is not None:
        return hit
    name = kernel.host_name

    def build(gen: LibraryBuild) -> _build.Library:
        return _build.build_library(
            gen.source, engine=DIALECT.engine, header="cn_metal_library.h", checks=checks,
            prefix=DIALECT.prefix(name), user_text=dict(files), races=races,
        )

    gen = library_source(lib, kernel, constants, files, checks=checks, math_mode=math_mode)
    try:
        built = build(gen)
    except KernelCompileError as exc:
        if not checks:
            raise
        # A library may not compile with checked pointers (a helper template deducing from
        # `const device T*`, a function pointer template argument whose parameters are raw
        # pointers, a trait specialised on `device T*`): it is compiled with raw ones.
        what = "buffer arguments"
        gen = library_source(lib, kernel, constants, files, checks=True, checked_buffers=False,
                             math_mode=math_mode)
        try:
            built = build(gen)
        except KernelCompileError as again:
            if "cn::tarr" not in again.log:
                raise
            what = "buffer arguments and threadgroup arrays"
            gen = library_source(lib, kernel, constants, files, checks=True,
                                 checked_buffers=False, checked_arrays=False,
                                 math_mode=math_mode)
            built = build(gen)
        first = next((ln for ln in exc.log.splitlines() if "error:" in ln), "")
        warnings.warn(
            f"{DIALECT.prefix(name)} bounds checks of {what} are off: with checked pointers the "
            f"kernel does not compile ({first.strip()}). Barriers and SIMD lanes are still "
            "checked", EmulatorWarning, stacklevel=4)
    n = len(kernel.params)
    out = (ctypes.c_int64 * max(2 * n, 1))()
    built.cdll.cn_sizes(out)
    sizes = tuple(out[: 2 * n])
    hit = (gen, built, sizes)
    _VARIANTS[memo] = hit
    return hit


def value_sizes(lib: LibraryText, kernel: LibraryKernel, constants: Mapping[str, Any],
                files: Mapping[str, str], options: EmulatorOptions | None = None,
                math_mode: str = "safe") -> dict[str, tuple[int, int]]:
    """Per parameter name: (bytes of one element or value, kind: 1 pointer, 2 reference,
    3 value, 4 threadgroup, 0 attribute), as the compiled kernel declares it."""
    opts = resolve_options(options)
    _, _, sizes = _variant(lib, kernel, constants, files, opts.checks, math_mode,
                           bool(opts.races))
    return {p.name: (sizes[2 * i], sizes[2 * i + 1]) for i, p in enumerate(kernel.params)}


def launch_library(
    lib: LibraryText,
    kernel: LibraryKernel,
    constants: Mapping[str, Any],
    files: Mapping[str, str],
    buffers: Mapping[int, np.ndarray],
    threadgroup_memory: Mapping[int, int],
    grid: tuple[int, int, int],
    threadgroup: tuple[int, int, int],
    *,
    options: EmulatorOptions | None = None,
    math_mode: str = "safe",
) -> None:
    """Run one launch of ``kernel`` (``dispatchThreads`` geometry: ``grid`` threads).

    ``buffers`` maps every buffer index the kernel reads to a C-contiguous NumPy array (written
    in place where the kernel writes it); ``threadgroup_memory`` maps each ``[[threadgroup(i)]]``
    index to its size in bytes. The front end has checked the arguments and the geometry.
    """
    opts = resolve_options(options)
    if opts.isolated:
        from cunumpy.emulation._isolated import run_isolated

        outputs = [buffers[p.index] for p in kernel.params if p.writable]
        run_isolated(
            "cunumpy.emulation.metal_library:launch_library",
            (lib, kernel, dict(constants), dict(files), dict(buffers), dict(threadgroup_memory),
             grid, threadgroup),
            {"math_mode": math_mode, "options": replace(opts, isolated=False)},
            outputs, DIALECT.prefix(kernel.host_name),
        )
        return
    gen, built, _ = _variant(lib, kernel, constants, files, opts.checks, math_mode,
                             bool(opts.races))
    names = {p.index: p for p in kernel.params if p.kind == "buffer"}
    args = []
    for index in gen.buffers:
        arr = buffers[index]
        p = names[index]
        label = f"argument '{p.name}' ({arr.dtype.name}[{','.join(map(str, arr.shape))}])"
        args.append(_launch.BufferArg(label, arr.ctypes.data, arr.size, arr, nbytes=arr.nbytes,
                                      itemsize=arr.itemsize, track=p.writable))
    tg = np.array([int(threadgroup_memory.get(i, 0)) for i in gen.threadgroups] or [0],
                  dtype=np.int64)
    args.append(_launch.BufferArg("threadgroup sizes", tg.ctypes.data, tg.size, tg))
    shared = list(gen.shared)
    static = len(shared) - len(gen.threadgroups)
    for k, index in enumerate(gen.threadgroups):
        d = shared[static + k]
        shared[static + k] = replace(d, dims=(f"{threadgroup_memory.get(index, 0)} bytes",))
    _launch.launch(
        built, DIALECT, kernel.host_name, args, grid, threadgroup,
        random_order=opts.random_order, seed=opts.seed, shared=tuple(shared),
        races=bool(opts.races), strict_barriers=opts.strict_barriers, sync=gen.fibers,
    )


def forget_variants() -> None:
    """Forget the compiled variants this process holds."""
    _VARIANTS.clear()
