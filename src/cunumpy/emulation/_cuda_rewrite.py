"""Source rewrites that turn CUDA C++ text into C++ the emulator compiles (``cn_cuda.h``).

Three steps, each keeping compiler line numbers pointing at the user's text:

1. :func:`inline_includes`: ``#include`` lines that name a file found beside the source or in
   ``include_dirs`` are replaced by that file's text between ``#line`` directives (each file once,
   as ``#pragma once`` or include guards would have it); includes of CUDA toolkit headers that
   ``cn_cuda.h`` stands in for are blanked; those a runtime header of its own stands in for
   (cooperative groups, ``cuComplex.h``, ``cuda_bf16.h``, CuPy's headers, ``cuda/std/...``)
   become an include of that header; includes of libraries the emulator cannot run (CUB,
   Thrust algorithms, WMMA) raise :class:`NotImplementedError`.
2. :func:`rewrite_cuda`: ``__shared__`` declarations become references into the per-block arena
   of ``cn_core.h`` (bounds-checked arrays with checks on), ``extern __shared__ T a[];`` a pointer
   into the dynamic region of ``shared_mem`` bytes; declarations at namespace scope are removed
   and their later uses replaced by the arena expression. With checks on, the pointer parameters
   of the launched ``__global__`` function and of ``__device__`` functions become
   ``cn::ptr<T>`` (bounds-checked). ``extern "C"``
   becomes ``extern "C++"``, so kernel names cannot clash with the C library's;
   ``reinterpret_cast`` becomes ``cn::cuda::cast``, which also takes checked pointers and shared
   arrays (its result is a raw, unchecked pointer). With checks on, a subscript ``x[i]`` of a
   checked name becomes ``cn::cuda::at_site(x, __LINE__, __FILE__)[i]``, so an out-of-bounds
   failure is reported with its line.
3. Feature detection: whether the text synchronises (fibers needed; cooperative groups count)
   and which unsupported features (inline PTX, textures, kernel launches from kernels, grid and
   cluster synchronisation, CuPy's CArray) it uses.

Rewrites never add or remove a newline inside the user's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cunumpy._lang.cuda_signature import _match_close, strip_comments
from cunumpy._lang.includes import find_include, scan_includes
from cunumpy._lang.scopes import declared_name, enclosing_braces
from cunumpy._lang.tokens import EXPRESSION_WORDS
from cunumpy.emulation._cuda_device_vars import device_var_edits
from cunumpy.emulation._cuda_thread_param import KernelHead, thread_param_edits
from cunumpy.emulation._rewrite import (
    SharedDecl,
    Token,
    _join,
    _shared_type,
    _split_declarator,
    tokenize,
)

__all__ = [
    "CUDA_SYNC_FUNCTIONS",
    "CudaRewritten",
    "checked_param",
    "inline_includes",
    "noinline_qualifiers",
    "rewrite_cuda",
    "unsupported_features",
]

CUDA_SYNC_FUNCTIONS = frozenset(
    {
        "__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
        "__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
        "__ballot_sync", "__any_sync", "__all_sync", "__activemask", "__match_any_sync",
        "__match_all_sync", "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
        "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
    }
)
"""Names whose use makes the emulator run the threads of a block as fibers."""

_SYNC_WORD = re.compile(
    r"\b(?:" + "|".join(sorted(CUDA_SYNC_FUNCTIONS)) + r"|cooperative_groups)\b"
    r"|cn_cuda_cg\.h|cn_cub\.h"
)
"""Cooperative groups and CUB collectives synchronise through the same primitives: fibers too."""

# Toolkit headers whose content cn_cuda.h provides (or that the C++ library covers).
_PROVIDED = frozenset(
    {
        "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h",
        "device_functions.h", "device_atomic_functions.h", "sm_20_atomic_functions.h",
        "sm_32_intrinsics.h", "sm_30_intrinsics.h", "sm_60_atomic_functions.h",
        "math_functions.h", "vector_types.h", "vector_functions.h", "cuda_fp16.h",
        "crt/math_functions.h", "assert.h", "cassert", "math_constants.h",
        "cupy/math_constants.h", "cuda_fp16.hpp", "sm_61_intrinsics.h",
        "device_types.h", "driver_types.h", "cuda_device_runtime_api.h",
        # host-side library APIs that kernel files include for their host code
        "cublas_v2.h", "cublas.h", "cublasLt.h", "cufft.h", "cusparse.h", "curand.h",
        "cusolverDn.h", "nvrtc.h", "cuda_profiler_api.h", "cuda_occupancy.h",
    }
)

# Toolkit and CuPy headers the emulator stands in for with a runtime header of its own.
_MAPPED = {
    "cooperative_groups.h": "cn_cuda_cg.h",
    "cooperative_groups/reduce.h": "cn_cuda_cg.h",
    "cooperative_groups/scan.h": "cn_cuda_cg.h",
    "cooperative_groups/memcpy_async.h": "cn_cuda_cg.h",
    "cuComplex.h": "cn_cuda_complex.h",
    "cupy/complex.cuh": "cn_cupy_complex.h",
    "thrust/complex.h": "cn_cupy_complex.h",
    "cupy/float16.cuh": "cn_cupy_float16.h",
    "cupy/carray.cuh": "cn_cupy_carray.h",
    "cupy/cuda_workaround.h": "cn_cuda_std.h",
    "cuda_bf16.h": "cn_cuda_bf16.h",
    "cuda_bf16.hpp": "cn_cuda_bf16.h",
    "cub/cub.cuh": "cn_cub.h",
    "cub/block/block_reduce.cuh": "cn_cub.h",
    "cub/block/block_scan.cuh": "cn_cub.h",
    "cub/warp/warp_reduce.cuh": "cn_cub.h",
    "cub/warp/warp_scan.cuh": "cn_cub.h",
    # cuRAND's device API: XORWOW, Philox4_32_10 and MRG32k3a (cn_curand.h)
    **{h: "cn_curand.h" for h in (
        "curand_kernel.h", "curand_philox4x32_x.h", "curand_uniform.h", "curand_normal.h",
        "curand_lognormal.h", "curand_poisson.h", "curand_mrg32k3a.h", "curand_globals.h",
        "curand_precalc.h", "curand_normal_static.h",
    )},
}
_MAPPED_PREFIXES = {"cuda/std/": "cn_cuda_std.h"}

# Libraries the emulator does not provide, with what they are.
_REFUSED = {
    "cooperative_groups/details": "cooperative groups internals",
    "cub/": "CUB algorithms other than BlockReduce, BlockScan, WarpReduce and WarpScan",
    "thrust/": "Thrust",
    "mma.h": "warp matrix functions (WMMA)",
    "cuda/barrier": "libcu++ barriers",
    "cuda/pipeline": "libcu++ pipelines",
    "cuda_fp8.h": "fp8 types",
    "curand_mtgp32": "cuRAND's MTGP32 generator",
    "curand_discrete": "cuRAND's discrete distributions (curandDiscreteDistribution_t)",
    "cuda/": "libcu++ extensions (cuda::)",
}

_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b[^\n]*$", re.MULTILINE)


def _refused(path: str) -> str | None:
    for key, what in _REFUSED.items():
        if path == key or path.startswith(key) or path.startswith(key + "."):
            return what
    return None


def inline_includes(
    text: str,
    label: str,
    here: Path | None,
    include_dirs: tuple[str, ...],
    prefix: str,
    defines: tuple[tuple[str, str | None], ...] = (),
) -> tuple[str, dict[str, str]]:
    """``text`` with found includes inlined; also ``{label: text}`` of every file inlined.

    Raises NotImplementedError (naming ``prefix``) for libraries the emulator does not provide.
    Include lines in preprocessor branches that ``defines`` rule out are left as they are.
    """
    from cunumpy._lang.cuda_preprocess import inactive_spans

    seen: set[Path] = set()
    texts: dict[str, str] = {label: text}

    def expand(src: str, name: str, folder: Path | None) -> str:
        out: list[str] = []
        pos = 0
        skipped = inactive_spans(src, defines)
        for m in scan_includes(src):
            quote, rel = m.group(1), m.group(2).strip()
            if any(a <= m.start() < b for a, b in skipped):
                continue  # the compiler skips it too
            out.append(src[pos : m.start()])
            pos = m.end()
            mapped = _MAPPED.get(rel) or next(
                (h for p, h in _MAPPED_PREFIXES.items() if rel.startswith(p)), None
            )
            if mapped is not None:
                out.append(f'#include "{mapped}"')
                continue
            what = _refused(rel)
            if what:
                raise NotImplementedError(
                    f"{prefix} includes <{rel}>: {what} are not supported by the CUDA "
                    "emulator (emu-cuda); run this kernel on a GPU (engine='cupy')"
                )
            found = find_include(rel, quote, folder, include_dirs)
            if found is None:
                if rel in _PROVIDED or rel.startswith("crt/"):
                    out.append("")  # cn_cuda.h provides it
                else:
                    out.append(m.group(0))  # a C++ library header: the compiler finds it
                continue
            if found in seen:
                out.append("")
                continue
            seen.add(found)
            body = found.read_text(errors="replace")
            sub = found.name
            while sub in texts and texts[sub] != body:
                sub = "_" + sub
            texts[sub] = body
            body = _PRAGMA_ONCE.sub("", body)
            line_after = src.count("\n", 0, m.end()) + 2
            inner = expand(body, sub, found.parent)
            if not inner.endswith("\n"):
                inner += "\n"
            out.append(f'#line 1 "{sub}"\n{inner}#line {line_after} "{name}"')
        out.append(src[pos:])
        return "".join(out)

    return expand(text, label, here), texts


# ---------------------------------------------------------------------------------------------
# __shared__ declarations and the kernel's parameters
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CudaRewritten:
    """Result of :func:`rewrite_cuda`."""

    text: str
    shared: tuple[SharedDecl, ...]
    """Static declarations (slots ``0..n-1``) then dynamic ones (labels ``n``, ``n+1``...)."""
    nstatic: int
    """Number of static declarations: the dynamic region is arena slot ``nstatic``."""
    dynamic: tuple[SharedDecl, ...]
    sync: bool
    thread_param: bool = False
    """The launched kernel takes the running thread as a hidden first argument
    (:mod:`._cuda_thread_param`)."""


_DECL_PREFIX = frozenset({"extern", "static", "volatile", "const", "inline"})
_ALIGN = frozenset({"__align__", "alignas", "__attribute__"})


def _parse_shared(sig: list[Token], i: int) -> tuple[int, int, bool, list[tuple[list[Token], str, list[str]]]] | None:
    """For ``sig[i]`` == ``__shared__``: (first token index, ``;`` index, extern, declarators)."""
    first = i
    extern = False
    while first > 0 and sig[first - 1].text in _DECL_PREFIX:
        first -= 1
        if sig[first].text == "extern":
            extern = True
    leading = [t for t in sig[first:i] if t.text in ("volatile", "const")]
    body: list[Token] = list(leading)
    j = i + 1
    depth_sq = depth_angle = 0
    parts: list[list[Token]] = [body]
    while j < len(sig):
        t = sig[j]
        if t.text in _ALIGN and j + 1 < len(sig) and sig[j + 1].text == "(":
            d = 0
            while j < len(sig):
                if sig[j].text == "(":
                    d += 1
                elif sig[j].text == ")":
                    d -= 1
                    if d == 0:
                        break
                j += 1
            j += 1
            continue
        if t.text in ("(", ")", "{", "}", "="):
            return None
        if t.text == "[":
            depth_sq += 1
        elif t.text == "]":
            depth_sq -= 1
        elif depth_sq == 0 and t.text == "<":
            depth_angle += 1
        elif depth_sq == 0 and t.text == ">":
            depth_angle -= 1
        elif depth_sq == 0 and t.text == ">>":
            depth_angle -= 2
        elif depth_sq == 0 and depth_angle == 0 and t.text == ";":
            break
        elif depth_sq == 0 and depth_angle == 0 and t.text == ",":
            parts.append([])
            j += 1
            continue
        parts[-1].append(t)
        j += 1
    else:
        return None
    first_decl = _split_declarator(parts[0])
    if first_decl is None or not first_decl[0]:
        return None
    decls = [first_decl]
    for p in parts[1:]:
        d = _split_declarator(p)
        if d is None:
            return None
        decls.append((first_decl[0] + d[0], d[1], d[2]))
    return first, j, extern, decls


def _brace_kinds(sig: list[Token]) -> list[bool]:
    """For each token: True when it sits inside a function or class body (not only inside
    namespaces and ``extern "C" {`` blocks)."""
    return [any(k not in _OPEN_SCOPES for k in kinds) for kinds in enclosing_braces(sig)]


_OPEN_SCOPES = frozenset({"namespace", "linkage"})


def checked_param(text: str) -> str | None:
    """``cn::ptr<...>`` declaration for one pointer parameter, or None to leave it as it is
    (values, ``void*``, pointers to pointers)."""
    t = " ".join(text.split())
    if "=" in t or "&" in t or "(" in t:
        return None
    array = re.search(r"\[\s*\]\s*$", t)
    if array:
        t = t[: array.start()].rstrip() + " *"
        # ``T name[]`` -> ``T * name``: move the star before the name.
        m = re.match(r"^(.*?)(\b[A-Za-z_]\w*)\s*\*$", t)
        if not m:
            return None
        t = f"{m.group(1)} * {m.group(2)}"
    if t.count("*") != 1:
        return None
    before, after = t.split("*")
    quals = {"__restrict__", "__restrict", "restrict"}
    pointee = [w for w in re.findall(r"[A-Za-z_][\w:]*(?:\s*<[^>]*>)?|::", before) if w not in quals]
    if not pointee or [w for w in pointee if w not in ("const", "volatile")] == ["void"]:
        return None
    after_words = after.split()
    const_ptr = "const" in after_words
    names = [w for w in after_words if w not in quals and w not in ("const", "volatile")]
    if len(names) > 1:
        return None
    name = names[0] if names else ""
    return f"{'const ' if const_ptr else ''}cn::ptr<{' '.join(pointee)}> {name}".rstrip()


def _declared_name(decl: str) -> str | None:
    """The parameter name at the end of a ``cn::ptr<...> name`` declaration."""
    toks = [t for t in tokenize(decl) if t.kind not in ("ws", "comment")]
    close = max((k for k, t in enumerate(toks) if t.text == ">"), default=None)
    k = None if close is None else declared_name(toks, close)
    return toks[k].text if k is not None and k == len(toks) - 1 else None


def _site_edits(sig: list[Token], names: set[str]) -> list[tuple[int, int, str]]:
    """Edits spelling ``x[i]`` as ``::cn::cuda::at_site(x, __LINE__, __FILE__)[i]`` for the
    checked names, so an out-of-bounds failure is reported with its line. Subscripts that may
    be declarators (after a type name) are left alone."""
    edits = []
    for k, t in enumerate(sig[:-1]):
        if t.kind != "ident" or t.text not in names or sig[k + 1].text != "[":
            continue
        prev = sig[k - 1] if k else None
        if prev is not None and (
            prev.text in (".", "->", "::")
            or (prev.kind == "ident" and prev.text not in EXPRESSION_WORDS)
        ):
            continue
        edits.append(
            (t.start, t.start + len(t.text), f"::cn::cuda::at_site({t.text}, __LINE__, __FILE__)")
        )
    return edits


def _split_params(clean: str, start: int, stop: int) -> list[tuple[int, int]]:
    """Spans of the top-level comma-separated parts of ``clean[start:stop]``."""
    spans, depth, s = [], 0, start
    for k in range(start, stop):
        c = clean[k]
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        elif c == "," and depth == 0:
            spans.append((s, k))
            s = k + 1
    spans.append((s, stop))
    return spans


def _param_edits(text: str, kernel_name: str) -> list[tuple[int, int, str]]:
    """Edits turning the pointer parameters of every ``__global__ kernel_name(...)`` into
    ``cn::ptr`` declarations."""
    from cunumpy._lang.cuda_signature import strip_comments

    clean = strip_comments(text)
    edits = []
    for m in re.finditer(r"\b__global__\b", clean):
        head = re.compile(r"\b" + re.escape(kernel_name) + r"\s*\(")
        stop_at = len(clean)
        for c in ";{":
            k = clean.find(c, m.end())
            if k >= 0:
                stop_at = min(stop_at, k)
        h = head.search(clean, m.end(), stop_at)
        if not h:
            continue
        open_paren = h.end() - 1
        depth, close = 0, -1
        for k in range(open_paren, len(clean)):
            if clean[k] == "(":
                depth += 1
            elif clean[k] == ")":
                depth -= 1
                if depth == 0:
                    close = k
                    break
        if close < 0:
            continue
        for s, e in _split_params(clean, open_paren + 1, close):
            new = checked_param(clean[s:e])
            if new is None:
                continue
            newlines = clean.count("\n", s, e)
            edits.append((s, e, " " + new + "\n" * newlines))
    return edits


def _kernel_heads(clean: str, kernel_name: str) -> list[KernelHead]:
    """Every ``__global__ kernel_name(...)`` of ``clean`` (comments blanked): a declaration, or
    a definition with its body."""
    short = kernel_name.rsplit("::", 1)[-1].split("<", 1)[0].strip()
    head = re.compile(r"\b" + re.escape(short) + r"\s*(?:<[^;{}()]*>\s*)?\(")
    heads = []
    for m in re.finditer(r"\b__global__\b", clean):
        h = head.search(clean, m.end())
        if not h or any(clean.find(c, m.end(), h.start()) >= 0 for c in ";{"):
            continue  # another function's name lies between
        close = _matching(clean, h.end() - 1)
        if close < 0:
            continue
        k = close + 1
        while k < len(clean) and clean[k] not in "{;":
            k += 1
        body = None
        if k < len(clean) and clean[k] == "{":
            end = _match_close(clean, k, "{", "}")
            body = (k, end - 1) if end >= 0 else None
        heads.append(KernelHead(h.end() - 1, close, body))
    return heads


_DECORATIONS = frozenset(
    {"__launch_bounds__", "__align__", "alignas", "__attribute__", "decltype", "__declspec",
     "__maxnreg__", "noexcept"}
)


def _matching(clean: str, open_paren: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_paren``; -1 if unbalanced."""
    end = _match_close(clean, open_paren, "(", ")")
    return end - 1 if end >= 0 else -1


def _device_param_edits(text: str) -> list[tuple[int, int, str]]:
    """Edits turning the pointer parameters of ``__device__`` functions into ``cn::ptr``
    declarations, so arrays passed on to helpers stay checked (a raw pointer passed to such a
    parameter becomes an unchecked ``cn::ptr``)."""
    from cunumpy._lang.cuda_signature import strip_comments

    clean = strip_comments(text)
    edits = []
    ident_before = re.compile(r"([A-Za-z_]\w*)\s*$")
    for m in re.finditer(r"\b__device__\b", clean):
        k = m.end()
        open_paren = -1
        while k < len(clean):
            c = clean[k]
            if c in ";={}#":
                break
            if c == "(":
                word = ident_before.search(clean, 0, k)
                if word and word.group(1) in _DECORATIONS:
                    k = _matching(clean, k)
                    if k < 0:
                        break
                    k += 1
                    continue
                open_paren = k
                break
            k += 1
        if open_paren < 0:
            continue
        close = _matching(clean, open_paren)
        if close < 0:
            continue
        for s, e in _split_params(clean, open_paren + 1, close):
            new = checked_param(clean[s:e])
            if new is None:
                continue
            edits.append((s, e, " " + new + "\n" * clean.count("\n", s, e)))
    return edits


_CUDA_LINKAGE_NEXT = frozenset(
    {"{", "__global__", "__device__", "__host__", "__forceinline__", "__noinline__", "static",
     "inline", "template"}
)
"""Tokens after ``extern "C"`` that make it CUDA code (kept C for C library declarations)."""


def rewrite_cuda(
    text: str, *, checks: bool, kernel_name: str, checked_pointers: str | None = None
) -> CudaRewritten:
    """Rewrite CUDA source (includes already inlined) for the C++ emulator.

    Parameters
    ----------
    text
        The source.
    checks
        Declare shared arrays bounds-checked (``cn::tarr``) and dynamic shared memory as a
        checked pointer.
    kernel_name
        The launched ``__global__`` function, whose pointer parameters become ``cn::ptr``.
    checked_pointers
        Which pointer parameters become ``cn::ptr``: ``"all"`` (the kernel's and those of
        ``__device__`` functions), ``"kernel"`` or ``"none"``. Default: ``"all"`` with checks,
        else ``"none"``.
    """
    if checked_pointers is None:
        checked_pointers = "all" if checks else "none"
    tokens = tokenize(text)
    sig = [t for t in tokens if t.kind not in ("ws", "comment", "pp")]
    inside = _brace_kinds(sig)
    edits: list[tuple[int, int, str]] = []
    static: list[tuple[int, str, str, tuple[str, ...]]] = []
    dynamic: list[tuple[str, str]] = []
    globals_: dict[str, str] = {}  # namespace-scope name -> expression
    sync = False
    found: list[tuple[int, int, bool, list, bool]] = []
    i = 0
    while i < len(sig):
        t = sig[i]
        if t.kind == "ident" and t.text in CUDA_SYNC_FUNCTIONS:
            sync = True
        elif t.kind == "ident" and t.text == "reinterpret_cast":
            # Works on checked pointers and shared arrays too (the result is unchecked).
            edits.append((t.start, t.start + len(t.text), "::cn::cuda::cast"))
        elif (
            t.kind == "string" and t.text == '"C"' and i and sig[i - 1].text == "extern"
            and i + 1 < len(sig) and sig[i + 1].text in _CUDA_LINKAGE_NEXT
        ):
            # C++ linkage for everything: a kernel may then share its name with a C library
            # function (div, index, ...) as it may in CUDA, where no C library is in scope.
            edits.append((t.start, t.start + len(t.text), '"C++"'))
        elif t.kind == "ident" and t.text == "__shared__":
            parsed = _parse_shared(sig, i)
            if parsed is None:
                edits.append((t.start, t.start + len(t.text), " " * len(t.text)))
                i += 1
                continue
            first, end, extern, decls = parsed
            found.append((first, end, extern, decls, inside[i]))
            i = end + 1
            continue
        i += 1
    nstatic = sum(len(d[3]) for d in found if not d[2])
    slot = 0
    for first, end, extern, decls, in_body in found:
        start, stop = sig[first].start, sig[end].start + 1
        pieces = []
        for type_tokens, name, dims in decls:
            ctype = _join([tk for tk in type_tokens if tk.text not in ("static", "extern")])
            if extern:
                label = nstatic + len(dynamic)
                dynamic.append((name, ctype))
                expr = (
                    f"::cn::cuda::dynamic_shared<{ctype}, {nstatic}, {label}, "
                    f"{'true' if checks else 'false'}>()"
                )
                if in_body:
                    pieces.append(f"auto {name} = {expr};")
                else:
                    globals_[name] = f"({expr})"
            else:
                static.append((slot, name, ctype, tuple(dims)))
                expr = f"::cn::tg_alloc<{_shared_type(ctype, dims, slot, checks)}>({slot})"
                if in_body:
                    pieces.append(f"auto& {name} = {expr};")
                else:
                    globals_[name] = f"({expr})"
                slot += 1
        newlines = text.count("\n", start, stop)
        edits.append((start, stop, " ".join(pieces) + "\n" * newlines))
    if globals_:
        last_decl = {}
        for _first, end, _, decls, in_body in found:
            if not in_body:
                for _, name, _ in decls:
                    last_decl[name] = sig[end].start
        for k, t in enumerate(sig):
            if t.kind != "ident" or t.text not in globals_ or t.start <= last_decl[t.text]:
                continue
            prev = sig[k - 1].text if k else ""
            if prev in (".", "->", "::"):
                continue
            expr = globals_[t.text]
            if checks and k + 1 < len(sig) and sig[k + 1].text == "[":
                expr = f"::cn::cuda::at_site({expr}, __LINE__, __FILE__)"
            edits.append((t.start, t.start + len(t.text), expr))
    if not sync and _SYNC_WORD.search(text):
        sync = True  # named in a macro (or a comment): fibers, to be safe
    clean = strip_comments(text)
    heads = _kernel_heads(clean, kernel_name)
    if sync:
        # `return;` in the kernel's body: the thread left early and counts as arrived at later
        # barriers (all returns of the text when the body is not found).
        bodies = [h.body for h in heads if h.body] or [(0, len(text))]
        for k, t in enumerate(sig[:-1]):
            if t.text == "return" and sig[k + 1].text == ";" and any(
                s <= t.start < e for s, e in bodies
            ):
                edits.append((t.start, t.start + 6, "return ::cn::mark_return()"))
    checked_names = {d[1] for d in static} | {d[0] for d in dynamic} if checks else set()
    param_edits = []
    if checked_pointers in ("all", "kernel"):
        param_edits += _param_edits(text, kernel_name)
    if checked_pointers == "all":
        param_edits += _device_param_edits(text)
    edits.extend(param_edits)
    thread_edits = thread_param_edits(clean, heads)
    edits.extend(thread_edits)
    edits.extend(device_var_edits(sig, inside))
    if checks:
        checked_names |= {n for _, _, new in param_edits if (n := _declared_name(new))}
        edits.extend(_site_edits(sig, checked_names))
    edits.sort(key=lambda e: e[0])
    out = []
    pos = 0
    for start, stop, new in edits:
        if start < pos:
            continue
        out.append(text[pos:start])
        out.append(new)
        pos = stop
    out.append(text[pos:])
    shared = tuple(SharedDecl(s, n, c, d) for s, n, c, d in static)
    dyn = tuple(SharedDecl(nstatic + k, n, c, ("",)) for k, (n, c) in enumerate(dynamic))
    return CudaRewritten("".join(out), shared, nstatic, dyn, sync, bool(thread_edits))


_UNSUPPORTED_WORDS = {
    "asm": "inline PTX assembly (asm)",
    "__asm__": "inline PTX assembly (asm)",
    "tex1Dfetch": "texture fetches",
    "tex1D": "texture fetches",
    "tex2D": "texture fetches",
    "tex3D": "texture fetches",
    "surf2Dwrite": "surface writes",
    "surf2Dread": "surface reads",
    "cudaTextureObject_t": "texture objects",
    "cudaSurfaceObject_t": "surface objects",
}


_GRID_SYNC = "grid-wide synchronisation (cooperative groups grid_group::sync)"
_CUPY_VIEWS = "CuPy's CArray/CIndexer (the array views of ElementwiseKernel code)"
_CUB_PROVIDED = frozenset({
    "BlockReduce", "BlockScan", "WarpReduce", "WarpScan", "Sum", "Max", "Min",
    "BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY", "BLOCK_REDUCE_RAKING", "BLOCK_REDUCE_WARP_REDUCTIONS",
    "BLOCK_SCAN_RAKING", "BLOCK_SCAN_RAKING_MEMOIZE", "BLOCK_SCAN_WARP_SCANS",
    "BlockReduceAlgorithm", "BlockScanAlgorithm",
})
_GROUP_WORDS = {
    "this_multi_grid": "multi-device cooperative groups (multi_grid_group)",
    "multi_grid_group": "multi-device cooperative groups (multi_grid_group)",
    "this_cluster": "thread block clusters (cluster_group)",
    "cluster_group": "thread block clusters (cluster_group)",
}


def _grid_syncs(sig: list[Token]) -> bool:
    """Whether the text calls ``sync`` on a grid group (``this_grid().sync()``, ``g.sync()`` or
    ``cg::sync(g)`` for ``g`` made by ``this_grid()`` or declared ``grid_group``)."""
    texts = [t.text for t in sig]
    grids: set[str] = set()
    for k, t in enumerate(texts):
        if t == "this_grid" and k + 4 < len(texts) and texts[k + 1:k + 5] == ["(", ")", ".", "sync"]:
            return True
        if t == "grid_group" and k + 1 < len(sig) and sig[k + 1].kind == "ident":
            grids.add(texts[k + 1])
        if t == "this_grid":
            j = k - 1  # step back over a qualification (cg::, ::cooperative_groups::)
            while j >= 1 and texts[j] == "::" and sig[j - 1].kind == "ident":
                j -= 2
            if j >= 0 and texts[j] == "::":
                j -= 1
            if j >= 1 and texts[j] == "=" and sig[j - 1].kind == "ident":
                grids.add(texts[j - 1])
    for k, t in enumerate(texts):
        if t in grids and k + 2 < len(texts) and texts[k + 1] == "." and texts[k + 2] == "sync":
            return True
        if (t == "sync" and k + 2 < len(texts) and texts[k + 1] == "(" and texts[k + 2] in grids
                and (k + 3 >= len(texts) or texts[k + 3] == ")")):
            return True
    return False


def unsupported_features(text: str) -> list[str]:
    """CUDA features in ``text`` the emulator refuses (inline PTX, textures, device launches,
    grid-wide and cluster synchronisation)."""
    sig = [t for t in tokenize(text) if t.kind not in ("ws", "comment", "pp")]
    found: list[str] = []
    if ("this_grid" in text or "grid_group" in text) and _grid_syncs(sig):
        found.append(_GRID_SYNC)
    for k, t in enumerate(sig):
        what = None
        if t.kind == "ident" and t.text in _UNSUPPORTED_WORDS:
            what = _UNSUPPORTED_WORDS[t.text]
        elif t.kind == "ident" and t.text in _GROUP_WORDS:
            what = _GROUP_WORDS[t.text]
        elif (t.kind == "ident" and t.text in ("CArray", "CIndexer") and k + 1 < len(sig)
              and sig[k + 1].text == "<"):
            what = _CUPY_VIEWS
        elif (t.text == "cub" and k + 2 < len(sig) and sig[k + 1].text == "::"
              and sig[k + 2].kind == "ident" and sig[k + 2].text not in _CUB_PROVIDED):
            what = f"CUB's {sig[k + 2].text} (cub::{sig[k + 2].text})"
        elif t.text == "<" and k + 2 < len(sig) and sig[k + 1].text == "<" and sig[k + 2].text == "<":
            what = "kernel launches from a kernel (dynamic parallelism, <<<...>>>)"
        elif t.text == "<<" and k + 1 < len(sig) and sig[k + 1].text == "<":
            what = "kernel launches from a kernel (dynamic parallelism, <<<...>>>)"
        if what and what not in found:
            found.append(what)
    return found


_NOINLINE = re.compile(r"\b__noinline__\b")


def noinline_qualifiers(text: str) -> str:
    """CUDA's ``__noinline__`` qualifier as GCC's attribute, in the kernel's own text only.

    It cannot be a macro in the runtime: libstdc++ 13 writes ``__attribute__((__noinline__))``
    in its headers, which the macro would break. A ``__noinline__`` right after ``(`` or ``,``
    is already GCC's own attribute spelling and stays as it is.
    """
    if "__noinline__" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        before = text[: match.start()].rstrip()
        return match.group(0) if before.endswith(("(", ",")) else "__attribute__((noinline))"

    return _NOINLINE.sub(replace, text)
