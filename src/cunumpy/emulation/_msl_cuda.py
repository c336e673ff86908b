"""Translate a Metal kernel, as MLX builds it, into one CUDA C++ translation unit.

The ``cuda`` engine of :class:`~cunumpy.kernels.MetalKernel` compiles the result with NVRTC (through
CuPy). Input: the call's :class:`~cunumpy._lang.metal_signature.MetalSignature` (the header,
the body, the template values and the parameters MLX declares). Output: a :class:`CudaUnit` with
the source text and the order of the ``__global__`` function's arguments.

The text is::

    #include "cn_metal_cuda.h"      // Metal's types and math (shared with the CPU emulator)
    namespace cn_user {             // where Metal's float4, min, ... win over CUDA's
    #line 1 "header"  <header>
    template <...>  __device__ void custom_kernel_...(<MLX's parameters>) {
    #line 1 "body"    <body>
    }
    extern "C" __global__ void cn_metal_kernel(cn::launch_t, <buffers>) { ... }
    }

Rewrites (token based, newlines kept so ``body:LINE`` / ``header:LINE`` stay right): a
``threadgroup`` variable declaration becomes ``__shared__``, every other ``threadgroup`` word
(pointers, casts) is dropped, ``1.5h`` becomes ``half(1.5f)``, ``#include <metal_stdlib>`` is
dropped; ``device``, ``constant``, ``thread`` and ``kernel`` are empty macros of the runtime.
Constructs with no CUDA counterpart (textures, samplers, imageblocks, ray tracing, function
tables) raise ``NotImplementedError`` naming the engine and the construct.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cunumpy._lang.edits import apply_edits
from cunumpy._lang.metal_signature import MetalSignature, Param
from cunumpy._lang.metal_swizzle import swizzle_chain_edits
from cunumpy.emulation._rewrite import (
    _METAL_INCLUDE,
    _declaration,
    _half_literal,
    tokenize,
)

__all__ = ["ENGINE", "KERNEL_NAME", "MAX_DIMS", "CudaUnit", "translate"]

ENGINE = "metal-cuda"
KERNEL_NAME = "cn_metal_kernel"
MAX_DIMS = 12
"""Most dimensions an input may have when the body reads its ``_shape``/``_strides``."""

_UNSUPPORTED = {
    **{w: "textures" for w in (
        "texture1d", "texture1d_array", "texture2d", "texture2d_array", "texture2d_ms",
        "texture2d_ms_array", "texture3d", "texturecube", "texturecube_array", "texture_buffer",
        "depth2d", "depth2d_array", "depth2d_ms", "depth2d_ms_array", "depthcube",
        "depthcube_array")},
    "sampler": "samplers",
    "imageblock": "imageblocks",
    "threadgroup_imageblock": "imageblocks",
    "acceleration_structure": "ray tracing",
    "intersector": "ray tracing",
    "intersection_function_table": "function tables",
    "visible_function_table": "function tables",
    "indirect_command_buffer": "indirect command buffers",
    "render_target": "render targets",
    "mesh_grid_properties": "mesh shaders",
}
"""Metal words with no CUDA translation, and the construct they belong to."""


@dataclass(frozen=True)
class Arg:
    """One argument of the ``__global__`` function, in order."""

    kind: str
    """``input`` (device pointer), ``small`` (a buffer of fewer than 8 elements passed by value
    as ``cn::small_t``), ``meta`` (``cn::meta_t``: shape, strides and ndim of input ``arg``) or
    ``output``."""
    arg: int
    ctype: str


@dataclass(frozen=True)
class CudaUnit:
    """A translated kernel: the CUDA text, its kernel name and its arguments after the launch."""

    source: str
    name: str
    args: tuple[Arg, ...]
    user_text: dict[str, str]


def _refuse(kernel: str, text: str, where: str) -> None:
    for t in tokenize(text):
        if t.kind == "ident" and t.text in _UNSUPPORTED:
            line = text.count("\n", 0, t.start) + 1
            raise NotImplementedError(
                f"[{ENGINE} kernel {kernel!r}] {where}:{line} uses {t.text!r} "
                f"({_UNSUPPORTED[t.text]}), which the {ENGINE} engine cannot translate to CUDA; "
                "run this kernel on the mlx engine (an Apple GPU) instead"
            )


def rewrite_cuda(text: str) -> str:
    """Rewrite one piece of Metal source (a header or a body) for NVRTC, keeping every newline."""
    tokens = tokenize(text)
    sig = [t for t in tokens if t.kind not in ("ws", "comment", "pp")]
    edits: list[tuple[int, int, str]] = swizzle_chain_edits(sig, text)  # v.xyz.zy -> v.zy
    for t in tokens:
        if t.kind == "pp" and _METAL_INCLUDE.match(t.text):
            edits.append((t.start, t.start + len(t.text), ""))
    depth = 0
    closers: dict[int, int] = {}  # brace depth -> index of the `{` of a reopened namespace metal
    for i, t in enumerate(sig):
        if t.text == "{":
            depth += 1
        elif t.text == "}":
            depth -= 1
            if closers.get(depth + 1) is not None:
                closers.pop(depth + 1)
                edits.append((t.start, t.start + 1, "} namespace cn_user {"))
        if (t.text == "namespace" and i + 2 < len(sig) and sig[i + 1].text == "metal"
                and sig[i + 2].text == "{" and depth == 0):
            # The user's code lives in namespace cn_user; an extension of namespace metal (MLX's
            # headers add type traits there) must reopen the real one.
            edits.append((t.start, t.start + len(t.text), "} namespace"))
            closers[1] = i + 2
        if t.kind == "number":
            lit = _half_literal(t.text)
            if lit:
                edits.append((t.start, t.start + len(t.text), lit))
        elif t.kind == "ident" and t.text == "threadgroup":
            # A variable declaration (`threadgroup float tile[256];`) is shared memory; in a
            # pointer, reference or cast the address space is simply dropped.
            shared = _declaration(sig, i) is not None
            edits.append((t.start, t.start + len(t.text), "__shared__" if shared else " "))
    return apply_edits(text, edits)


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


def _body_param(p: Param, by_value: bool) -> tuple[str, str, Arg | None]:
    """(declaration in the body function, expression passed from the kernel, kernel Arg)."""
    assert p.arg is not None
    const = "const " if p.const else ""
    if p.kind == "output":
        elem = f"metal::atomic<{p.ctype}>" if p.atomic else p.ctype
        return f"{elem}* {p.name}", f"cn_b{p.buffer}", Arg("output", p.arg, elem)
    if p.kind == "input":
        ref = "&" if p.reference else "*"
        decl = f"{const}{p.ctype}{ref} {p.name}"
        if by_value:
            expr = f"cn_b{p.buffer}.v[0]" if p.reference else f"cn_b{p.buffer}.v"
            return decl, expr, Arg("small", p.arg, p.ctype)
        expr = f"*cn_b{p.buffer}" if p.reference else f"cn_b{p.buffer}"
        return decl, expr, Arg("input", p.arg, p.ctype)
    field = {"shape": "shape", "strides": "strides", "ndim": "ndim"}[p.kind]
    ref = "&" if p.kind == "ndim" else "*"
    return f"const {p.ctype}{ref} {p.name}", f"cn_m{p.arg}.{field}", None


def translate(
    signature: MetalSignature,
    *,
    small_by_value: tuple[bool, ...] = (),
    threads_per_group: int = 1024,
) -> CudaUnit:
    """The CUDA translation unit of one kernel variant.

    Parameters
    ----------
    signature : MetalSignature
        The kernel as MLX declares it for this call.
    small_by_value : tuple of bool, optional
        Per input: passed by value (``cn::small_t``, at most 8 elements: MLX's ``constant``
        buffers given as host arrays) rather than as a device pointer. Default: none.
    threads_per_group : int, optional
        Threads per threadgroup of the launches (``__launch_bounds__``).

    Raises
    ------
    NotImplementedError
        The kernel uses a construct the engine cannot translate (textures, samplers, ...).
    """
    from cunumpy.emulation.metal import (
        _merge_address_space_specialisations,
        _strip_metal_attributes,
        _template_parts,
    )

    header_in = signature.header or ""
    _refuse(signature.name, header_in, "header")
    _refuse(signature.name, signature.source, "body")
    header = rewrite_cuda(_strip_metal_attributes(_merge_address_space_specialisations(header_in)))
    body = rewrite_cuda(signature.source)
    fname = re.sub(r"\W", "_", signature.kernel_name or f"custom_kernel_{signature.name}")
    tparams, targs = _template_parts(signature.template)

    decls: list[str] = []
    call_args: list[str] = []
    kernel_args: list[Arg] = []
    kernel_decls: list[str] = []
    metas: set[int] = set()
    for p in signature.params:
        if p.kind == "attribute":
            decls.append(f"{p.ctype} {p.name}")
            call_args.append(f"cn::msl::{p.name}(cn_t)")
            continue
        assert p.arg is not None
        by_value = p.kind == "input" and p.arg < len(small_by_value) and small_by_value[p.arg]
        decl, expr, arg = _body_param(p, by_value)
        decls.append(decl)
        call_args.append(expr)
        if arg is not None:
            kernel_args.append(arg)
            if arg.kind == "small":
                kernel_decls.append(f"const cn::small_t<{p.ctype}> cn_b{p.buffer}")
            elif arg.kind == "input":
                kernel_decls.append(f"const {p.ctype}* __restrict__ cn_b{p.buffer}")
            else:
                kernel_decls.append(f"{arg.ctype}* cn_b{p.buffer}")
        elif p.arg not in metas:
            metas.add(p.arg)
            kernel_args.append(Arg("meta", p.arg, "meta"))
            kernel_decls.append(f"const cn::meta_t cn_m{p.arg}")
    call = fname + (f"<{', '.join(targs)}>" if tparams else "")
    bounds = max(1, min(int(threads_per_group), 1024))
    parts = [
        f"#define CN_MAX_DIMS {MAX_DIMS}",
        '#include "cn_metal_cuda.h"',
        "namespace cn_user {",
        '#line 1 "header"',
        _with_newline(header),
        '#line 1 "wrapper"',
    ]
    if tparams:
        parts.append(f"template <{', '.join(tparams)}>")
    parts += [
        f"__device__ __forceinline__ void {fname}(",
        ",\n".join(f"    {d}" for d in decls) + ") {",
        '#line 1 "body"',
        _with_newline(body) + "}",
        '#line 1 "launch"',
        f'extern "C" __global__ void __launch_bounds__({bounds}) {KERNEL_NAME}(',
        ",\n".join(f"    {d}" for d in ["const cn::launch_t cn_L", *kernel_decls]) + ") {",
        "  cn::thread_t cn_t;",
        "  if (!cn::thread_of(cn_L, cn_t)) return;  // beyond the grid: Metal never runs it",
        f"  {call}({', '.join(call_args)});",
        "}",
        "}  // namespace cn_user",
        "",
    ]
    return CudaUnit(
        "\n".join(parts), KERNEL_NAME, tuple(kernel_args),
        {"body": signature.source, "header": header_in},
    )


_NVRTC_DIAG = re.compile(r"^(?P<file>[^\s()]+)\((?P<line>\d+)\): (?P<rest>.*)$")


def nvrtc_log_as_gcc(log: str) -> str:
    """NVRTC's ``body(3): error: ...`` lines spelt ``body:3: error: ...`` (the emulator's form)."""
    out = []
    for raw in log.splitlines():
        m = _NVRTC_DIAG.match(raw)
        if m:
            rest = m.group("rest")
            rest = re.sub(r"^catastrophic error", "fatal error", rest)
            out.append(f"{m.group('file')}:{m.group('line')}: {rest}")
        else:
            out.append(raw)
    return "\n".join(out)
