"""Translate one kernel of a whole Metal library into a CUDA C++ translation unit (``metal-cuda``).

The ``metal-cuda`` engine of :class:`~cunumpy.kernels.MetalLibrary` compiles the result with NVRTC
(through CuPy, which adds ``--device-as-default-execution-space``: every function of the library
is a device function). Input: the preprocessed library (:mod:`cunumpy._lang.preprocess`), the
kernel (:class:`~cunumpy._lang.metal_library.LibraryKernel`) and its function-constant values.
Output: a :class:`LibraryUnit`, the text and the order of the ``__global__`` function's
arguments. The text is::

    #define CN_METAL_LIBRARY 1         // MLX's preamble names stay out of the library's way
    #include "cn_metal_cuda.h"         // Metal's types and math, shared with the CPU emulator
    namespace cn_user {                // where Metal's float4, min, ... win over CUDA's
    <the library, edited>              // #line markers: NVRTC's messages name the user's file
    #line 1 "launch"
    typedef decltype(&kernel<targs>) cn_fp_t;     // the kernel function's type
    extern "C" { __device__ long long cn_sizes[] = {...}; }  // sizeof of each parameter's value
    extern "C" __global__ void cn_metal_kernel(const cn::launch_t cn_L, <arguments>) {
      cn::thread_t cn_t;
      if (!cn::thread_of(cn_L, cn_t)) return;     // beyond the grid: Metal never runs it
      cn_fp(<each parameter bound by its declared type>);
    }
    }

The library is edited as for the CPU emulator (:func:`cunumpy.emulation.metal_library.edit_library`:
instantiations removed, the chosen one a typedef of its function type; function constants as
``static constexpr`` values, ``is_function_constant_defined`` true or false; Metal attributes
removed; ``constant`` declarations const; other kernels' bodies left empty), then as MetalKernel
bodies are (:func:`cunumpy.emulation._msl_cuda.rewrite_cuda`: ``threadgroup`` variables become
``__shared__``, half literals, swizzle chains), program-scope ``constant`` arrays and class-type
values become ``__constant__`` memory, and conditionals that mix ``half`` with other arithmetic
types are typed as Metal types them (:mod:`cunumpy.emulation._conditional`).

Arguments (:class:`LibraryArg`): after the launch record (grid and threadgroup size, for Metal's
``dispatchThreads`` geometry: edge threadgroups smaller), one per buffer index, in index order:
a device pointer (``void*``) for pointers and writable ``device`` references, or the value
itself for ``constant T&``, by-value and ``device const T&`` parameters (its bytes travel in the
launch's arguments, as Metal's ``setBytes``); then one offset into the dynamic shared memory per
``[[threadgroup(i)]]`` parameter, sized at each launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cunumpy._lang.edits import apply_edits
from cunumpy._lang.metal_library import KernelParam, LibraryKernel, LibraryText
from cunumpy._lang.scopes import enclosing_braces
from cunumpy._lang.tokens import tokenize
from cunumpy.emulation._conditional import rewrite_conditionals
from cunumpy.emulation._msl_cuda import ENGINE, KERNEL_NAME, rewrite_cuda
from cunumpy.emulation.metal_library import edit_library

__all__ = ["LibraryArg", "LibraryUnit", "by_value", "constant_storage", "translate_library"]

_SCALAR_WORDS = frozenset(
    """bool char uchar short ushort int uint long ulong float double size_t ptrdiff_t signed
    unsigned int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t metal""".split())
"""Type words of program-scope constants CUDA device code may read as they are (builtin
scalars); any other ``constant`` variable is placed in ``__constant__`` memory."""
_QUALIFIERS = frozenset({"constant", "const", "constexpr", "static", "inline", "::"})


@dataclass(frozen=True)
class LibraryArg:
    """One argument of the ``__global__`` function after the launch record."""

    kind: str
    """``buffer`` (a device pointer), ``value`` (the bytes of the parameter's value, passed in
    the launch's arguments) or ``offset`` (where ``[[threadgroup(index)]]`` starts in the
    dynamic shared memory, in bytes)."""
    index: int
    """The Metal buffer index (``buffer``, ``value``) or threadgroup index (``offset``)."""


@dataclass(frozen=True)
class LibraryUnit:
    """A translated library kernel: the CUDA text, the entry point and its arguments."""

    source: str
    name: str
    args: tuple[LibraryArg, ...]
    params: int
    """Parameters of the kernel function (``cn_sizes`` holds two values per parameter: the
    bytes of one element or of the value, and the kind: 1 pointer, 2 reference, 3 value,
    4 threadgroup, 0 attribute)."""
    user_text: dict[str, str]


def by_value(p: KernelParam) -> bool:
    """True when buffer parameter ``p`` takes its value's bytes in the launch's arguments
    (``constant T&``, by-value and ``device const T&`` parameters), False for a device pointer
    (pointers and writable ``device`` references)."""
    return p.kind == "buffer" and not p.pointer and not p.writable


def constant_storage(text: str) -> str:
    """Program-scope ``constant`` variables of array or class type in ``__constant__`` memory.

    Device code can read namespace-scope constants of builtin scalar type directly; arrays
    (``constant float table[4] = {...}``) and vector or struct values need device storage,
    which Metal's constant address space is: ``__constant__`` (``constexpr`` dropped, which
    CUDA does not take on such variables). Newlines are kept.
    """
    if "constant" not in text:
        return text
    sig = [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]
    scopes = enclosing_braces(sig)
    edits: list[tuple[int, int, str]] = []
    k = 0
    paren = 0
    while k < len(sig):
        t = sig[k].text
        if t in ("(", "["):
            paren += 1
        elif t in (")", "]"):
            paren -= 1
        if t != "constant" or paren or any(s not in ("namespace", "linkage") for s in scopes[k]):
            k += 1
            continue
        a = k
        while a > 0 and sig[a - 1].text not in (";", "{", "}"):
            a -= 1
        b, depth = k, 0
        while b < len(sig) and not (depth == 0 and sig[b].text == ";"):
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(sig[b].text, 0)
            b += 1
        words = [x.text for x in sig[a:b]]
        head = words[: words.index("=")] if "=" in words else words
        if "(" in head or {"template", "typedef", "using", "extern"} & set(head):
            k = b
            continue
        array = "[" in head
        if array:
            head = head[: head.index("[")]
        types = [w for w in head[:-1] if w not in _QUALIFIERS]
        if array or not all(w in _SCALAR_WORDS for w in types):
            edits.append((sig[a].start, sig[a].start, "__constant__ "))
            for x in sig[a:b]:
                if x.text == "constexpr":
                    edits.append((x.start, x.start + len(x.text), "const"))
        k = b
    return apply_edits(text, edits)


def _call_target(kernel: LibraryKernel) -> str:
    return kernel.function + (kernel.template_args or "")


def translate_library(
    lib: LibraryText,
    kernel: LibraryKernel,
    constants: Mapping[str, Any],
    files: Mapping[str, str],
    *,
    threads_per_group: int = 1024,
) -> LibraryUnit:
    """The CUDA translation unit of ``kernel`` of ``lib`` with function constants ``constants``.

    ``threads_per_group`` (threads of each launch's threadgroups) becomes the kernel's
    ``__launch_bounds__``.

    Raises
    ------
    NotImplementedError
        The kernel takes textures, samplers or render state.
    """
    if kernel.unsupported:
        raise NotImplementedError(
            f"[{ENGINE} kernel {kernel.host_name!r}] {kernel.unsupported}, which the {ENGINE} "
            "engine cannot translate to CUDA")
    edited = edit_library(lib, kernel, constants, mark_returns=False,
                          constant_decl="static constexpr")
    text = rewrite_conditionals(rewrite_cuda(constant_storage(edited)), in_function=False)
    target = _call_target(kernel)
    if kernel.function_type is not None:
        fp_type = "typedef cn_kernel_t* cn_fp_t;"
    else:
        fp_type = f"typedef decltype(&{target}) cn_fp_t;"
    decls = ["const cn::launch_t cn_L"]
    args: list[LibraryArg] = []
    buffers = sorted((p for p in kernel.params if p.kind == "buffer"), key=lambda p: p.index)
    for p in buffers:
        if by_value(p):
            decls.append(f"const cn::msl::bare_t<cn::msl::param_t<cn_fp_t, {p.position}>> "
                         f"cn_v{p.index}")
            args.append(LibraryArg("value", p.index))
        else:
            decls.append(f"void* cn_b{p.index}")
            args.append(LibraryArg("buffer", p.index))
    groups = sorted({p.index for p in kernel.params if p.kind == "threadgroup"})
    for index in groups:
        decls.append(f"const unsigned cn_o{index}")
        args.append(LibraryArg("offset", index))
    call, sizes = [], []
    for p in kernel.params:
        ptype = f"cn::msl::param_t<cn_fp_t, {p.position}>"
        if p.kind == "buffer":
            call.append(f"cn_v{p.index}" if by_value(p)
                        else f"cn::msl::bind_ptr<{ptype}>(cn_b{p.index})")
            sizes.append(f"cn::msl::value_info<{ptype}>::size, cn::msl::value_info<{ptype}>::kind")
        elif p.kind == "threadgroup":
            call.append(f"cn::msl::bind_ptr<{ptype}>(cn_smem + cn_o{p.index})")
            sizes.append(f"cn::msl::value_info<{ptype}>::size, 4")
        elif p.kind == "attribute":
            call.append(f"cn::msl::attr_as<{ptype}>(cn::msl::{p.attribute}(cn_t))")
            sizes.append("0, 0")
        else:
            raise NotImplementedError(
                f"[{ENGINE} kernel {kernel.host_name!r}] parameter {p.name!r} ({p.declared}) "
                f"needs textures, samplers or render state, which the {ENGINE} engine cannot "
                "translate to CUDA")
    bounds = max(1, min(int(threads_per_group), 1024))
    parts = [
        "#define CN_METAL_LIBRARY 1",
        '#include "cn_metal_cuda.h"',
        "namespace cn_user {",
        text if text.endswith("\n") else text + "\n",
        '#line 1 "launch"',
        fp_type,
        f'extern "C" {{ __device__ long long cn_sizes[] = {{{", ".join(sizes) or "0"}}}; }}',
        f'extern "C" __global__ void __launch_bounds__({bounds}) {KERNEL_NAME}(',
        ",\n".join(f"    {d}" for d in decls) + ") {",
        *(["  CN_DYNAMIC_SHARED(cn_smem);"] if groups else []),
        "  cn::thread_t cn_t;",
        "  if (!cn::thread_of(cn_L, cn_t)) return;  // beyond the grid: Metal never runs it",
        f"  cn_fp_t cn_fp = &{target};",
        f"  cn_fp({', '.join(call)});",
        "}",
        "}  // namespace cn_user",
        "",
    ]
    return LibraryUnit("\n".join(parts), KERNEL_NAME, tuple(args), len(kernel.params),
                       dict(files))
