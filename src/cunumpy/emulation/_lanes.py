"""SIMD across GPU threads: the compiler flags of the emulator's lane mode.

In loop mode (kernels without barriers or lane exchanges) the grid walk runs the threads of a
group row by row, and each row is an OpenMP SIMD loop over the threads (``cn_core.h``,
``walk_group``): where GCC or Clang can vectorise the kernel body across the thread index,
consecutive GPU threads run in the lanes of the CPU's vector registers, as CPU OpenCL runtimes do.
``-fopenmp-simd`` honours the ``omp simd`` pragma without the OpenMP runtime library.

Vectorising never changes a floating-point result: each lane computes its own thread's
operations in the same order (no reduction across threads, no reassociation), and
``-ffp-contract=off`` keeps multiplies and adds apart (no fused multiply-add that the scalar
code would not have made; GCC contracts by default in GNU modes once FMA is available).

The vector width is picked from the machine that compiles: on x86-64 the highest of the
psABI's ISA levels (``x86-64-v2``, ``-v3`` with AVX2 and FMA, ``-v4`` with AVX-512) that both
the CPU and the compiler support; the level is in the compile flags, hence in the cache key, so a
cached library is loaded only on a machine of the same level (one library per ISA level). Other
machines (AArch64: NEON is part of the base ISA) use their baseline flags.

CUDA kernels run in lanes through a copy of the kernel (:func:`cuda_lane_kernel`): their
builtins read the thread that the scalar loop keeps in ``cn::g.cur``, which a lane loop cannot
keep up to date, so only a body that cannot read it (no calls but arithmetic ones) gets a copy,
with its leading early return (``if (i >= n) return;``) taken out and checked for the whole row
first. Checked builds get a copy too when every checked subscript indexes a pointer parameter
with one of the leading integer declarations (``x[i]``, ``i`` never assigned again): the row's
guard then also proves each such subscript of each thread in bounds (vectorised compares), the
copy subscripts unchecked, and a row where any thread could fail runs the checked kernel one
thread at a time, which reports the failure as before. Any other check (a computed index, shared
arrays, undefined-behaviour checks) keeps the kernel scalar.
``CUNUMPY_EMULATOR_LANES=0`` switches lanes off (:func:`cunumpy.config.emulator_lanes`).
"""

from __future__ import annotations

import functools
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from cunumpy import config
from cunumpy._lang.cuda_signature import _match_close
from cunumpy.emulation._toolchain import Compiler

__all__ = [
    "LANE_FLAGS", "TIER_THREADS", "LaneKernel", "checked_tier", "cuda_lane_kernel", "enabled",
    "forget_tiers", "isa_flags", "isa_level", "metal_lane_kernel", "switch_flags",
]

def enabled() -> bool:
    """Whether kernels compiled now use lanes (:func:`cunumpy.config.emulator_lanes`)."""
    return config.emulator_lanes()


TIER_THREADS = 1 << 21
"""Threads a checked kernel variant runs one thread at a time, over its launches in a process,
before the emulator compiles its lane build (the kernel with its lane copy and bounds guard,
:func:`cuda_lane_kernel`, :func:`metal_lane_kernel`) and uses that for its later launches.
Tiered as a JIT is: the lane build takes about 1.8x the compile work of the plain one
(callgrind, ``benchmarks/results/cpu_round6/README.md``), which a test suite's many small launches would pay for
nothing, while a kernel that runs millions of threads gains several times that
(``benchmarks/bench_compute.py``). Both builds give the same results bit for bit and the same
reports. Unchecked variants always have their lanes."""

_TIER_COUNTS: dict[object, int] = {}


def checked_tier(variant: object, threads: int) -> bool:
    """Whether this checked launch of ``threads`` threads of ``variant`` (a hashable key of the
    kernel variant) uses the lane build: once earlier launches ran :data:`TIER_THREADS`."""
    if not enabled():
        return False
    before = _TIER_COUNTS.get(variant, 0)
    if before < TIER_THREADS:
        if len(_TIER_COUNTS) > 4096:
            _TIER_COUNTS.clear()
        _TIER_COUNTS[variant] = before + threads
    return before >= TIER_THREADS


def forget_tiers() -> None:
    """Forget the threads every variant ran (:func:`checked_tier` starts again)."""
    _TIER_COUNTS.clear()


def switch_flags() -> tuple[str, ...]:
    """``-DCN_LANES=0`` when lanes are switched off (part of the flags, hence of the key)."""
    return () if enabled() else ("-DCN_LANES=0",)

LANE_FLAGS = ("-fopenmp-simd", "-ffp-contract=off")
"""Flags of every kernel library (the ISA level's flags come from :func:`isa_flags`)."""

_LEVELS = (
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
    ("x86-64-v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")),
    ("x86-64-v2", ("cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3")),
)
"""The psABI's x86-64 levels, highest first, with the CPU flags (``/proc/cpuinfo`` names) each
adds; a level requires its own and every lower level's flags."""


def _cpu_flags(cpuinfo: str) -> set[str]:
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def isa_level(cpuinfo: str | None = None, machine: str | None = None) -> str | None:
    """The highest x86-64 ISA level this CPU supports (``"x86-64-v3"``...), or None.

    Parameters
    ----------
    cpuinfo
        The text of ``/proc/cpuinfo`` (default: read it; None where it cannot be read).
    machine
        ``platform.machine()`` (default: this machine's).
    """
    machine = machine or platform.machine()
    if machine not in ("x86_64", "AMD64") or not sys.platform.startswith("linux"):
        return None
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    flags = _cpu_flags(cpuinfo)
    if "lahf_lm" not in flags and "lahf" in flags:
        flags.add("lahf_lm")
    if "lzcnt" not in flags and "abm" in flags:  # /proc/cpuinfo names LZCNT "abm"
        flags.add("lzcnt")
    if "bmi1" not in flags and "bmi" in flags:
        flags.add("bmi1")
    for k, (level, _) in enumerate(_LEVELS):
        if all(f in flags for _, need in _LEVELS[k:] for f in need):
            return level
    return None


@functools.cache
def isa_flags(compiler: Compiler) -> tuple[str, ...]:
    """``-march=<level> -mtune=generic`` for this CPU's ISA level where ``compiler`` accepts
    it (probed once per compiler with a syntax-only compile), else ``()``."""
    import subprocess
    import tempfile

    level = isa_level()
    if not level:
        return ()
    flags = (f"-march={level}", "-mtune=generic")
    with tempfile.TemporaryDirectory(prefix="cunumpy-isa-") as tmp:
        probe = Path(tmp) / "isa.cpp"
        probe.write_text("int cn_isa_probe;\n")
        try:
            done = subprocess.run([*compiler.command, "-std=c++17", "-fsyntax-only", *flags,
                                   str(probe)], capture_output=True, text=True, timeout=60,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ()
    return flags if done.returncode == 0 else ()


# ---------------------------------------------------------------------------------------------
# The lane copy of a CUDA kernel
# ---------------------------------------------------------------------------------------------

_PURE_CALLS = frozenset(
    """
    sqrtf sqrt rsqrtf rsqrt fabsf fabs fminf fmin fmaxf fmax fmaf fma floorf floor ceilf ceil
    truncf trunc roundf round rintf rint copysignf copysign min max abs
    int float double unsigned char short long bool size_t int32_t uint32_t int64_t uint64_t
    if for while switch return sizeof static_cast reinterpret_cast const_cast
    """.split()
)
"""Names a lane copy may call or apply: the control keywords, casts, and math functions that
compile to instructions (no libm call, no errno with -fno-math-errno, no report). A call to
anything else leaves the kernel to the scalar loop: it could read the thread of ``g.cur``,
which a lane loop does not keep up to date, or block vectorisation anyway."""

_CALL = re.compile(r"([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?\(")
_DECL = re.compile(
    r"\s*(?:const\s+)?(?:(?:unsigned|signed)\s+)?"
    r"(?:int|long\s+long|long|unsigned|size_t|ptrdiff_t|u?int(?:32|64)_t|auto|uint|ulong)\s+"
    r"([A-Za-z_]\w*)\s*=\s*([^;{}\[\]=]*(?:[<>!=]=[^;{}\[\]=]*)*);"
)
_GUARD = re.compile(r"\s*if\s*\(")
_SITE = re.compile(
    r"::cn::cuda::at_site\(\s*([A-Za-z_]\w*)\s*,\s*__LINE__\s*,\s*__FILE__\s*\)"
    r"\[\s*([A-Za-z_]\w*|\d+)\s*\]"
)
"""A checked subscript as the CUDA rewriter spells it, with an identifier or a literal index."""


def _assigned(name: str, body: str) -> bool:
    """Whether ``body`` may change or redeclare ``name`` (or take its address)."""
    n = re.escape(name)
    return re.search(
        rf"(?:(?<!\.)(?<!->)\b{n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
        rf"|(?<!\.)(?<!->)\b{n}\s*(?:\+\+|--)|(?:\+\+|--|&)\s*{n}\b"
        rf"|\b(?:int|long|unsigned|signed|short|char|bool|float|double|auto|size_t|ptrdiff_t"
        rf"|u?int\d+_t|uint|ulong)\s*[*&]*\s+{n}\s*[=;,\[)])",
        body) is not None


def _leading_ints(body: str) -> tuple[int, set[str]]:
    """Where the body's leading integer declarations end, and the names they declare."""
    pos, ints = 0, set()
    while (d := _DECL.match(body, pos)) is not None:
        ints.add(d.group(1))
        pos = d.end()
    return pos, ints


def _proved_sites(body: str, site: re.Pattern[str],
                  pointers: set[str]) -> tuple[str, list[str]] | None:
    """``body`` with the subscripts ``site`` finds (groups: pointer, index) made plain, and the
    bounds conditions that make them safe (``cn::lane_in_bounds(x, i)``); None when one is not
    of a parameter in ``pointers`` by a literal or an integer of the leading declarations, or
    either may change after them."""
    pos, ints = _leading_ints(body)
    rest = body[pos:]
    conds: list[str] = []
    bad = False

    def plain(m: re.Match[str]) -> str:
        nonlocal bad
        ptr, idx = m.group(1), m.group(2)
        literal = idx.isdigit()
        if (ptr not in pointers or _assigned(ptr, rest)
                or (not literal and (idx not in ints or _assigned(idx, rest)))):
            bad = True
        cond = f"::cn::lane_in_bounds({ptr}, {idx})"
        if cond not in conds:
            conds.append(cond)
        return f"{ptr}.p[{idx}]"

    out = body[:pos] + site.sub(plain, rest)
    return None if bad else (out, conds)


def _other_uses(copy: str, pointers: set[str]) -> bool:
    """Whether ``copy`` uses a checked pointer otherwise than subscripted plainly (``x.p[``):
    pointer arithmetic, a dereference, a call argument, which would check and report without
    the thread the lane loop does not keep."""
    if not pointers:
        return False
    names = "|".join(re.escape(p) for p in sorted(pointers))
    return re.search(rf"(?<!\.)(?<!->)\b(?:{names})\b(?!\.p\[)", copy) is not None


def _checked_pointers(params: str) -> set[str]:
    """Names of the parameters declared as checked pointers (``cn::ptr<T> name``)."""
    return set(re.findall(r"cn::ptr<[^<>]*>\s+([A-Za-z_]\w*)\s*(?=[,)]|$)", params))


_UNSAFE = ("printf", "assert", "atomic", "__sync", "__shfl", "asm", "goto", "__trap", "throw",
           "malloc", "free", "new ", "delete", "cn_", "::cn")


@dataclass(frozen=True)
class LaneKernel:
    """The lane copy of a kernel and its guard, to compile beside the kernel."""

    text: str
    """Definitions of ``<name>__cn_lanes`` and, with a guard, ``<name>__cn_guard``."""
    lanes_call: str
    """The lane copy as the launcher calls it (template arguments included)."""
    guard_call: str | None
    """The guard as the launcher calls it: true for a thread that takes the early return."""

    def functors(self, thread: str, args: str, unsigned: bool = False) -> list[str]:
        """The launcher's lambdas ``cn_lanes`` and ``cn_guard`` over its thread ``thread``,
        calling the copy and the guard with ``args``; ``unsigned``: the copy indexes with an
        unsigned position (``cn::unsigned_index``, Metal)."""
        head = f"[=](const cn::ThreadInfo& {thread}) CN_THREAD_FN {{"
        out = [f"  auto cn_lanes = cn::unsigned_index({head}" if unsigned
               else f"  auto cn_lanes = {head}",
               f"    {self.lanes_call}({args});", "  });" if unsigned else "  };"]
        if self.guard_call:
            out += [f"  auto cn_guard = {head}", f"    return {self.guard_call}({args});",
                    "  };"]
        return out

    def run_grid_args(self) -> str:
        """What the launcher passes to ``cn::run_grid`` after the kernel."""
        return ", &cn_lanes" + (", &cn_guard" if self.guard_call else "")


def _template_head(before: str) -> str | None:
    """The ``template <...>`` right before a definition (``""`` without), None if unsure."""
    stripped = before.rstrip()
    for linkage in ('extern "C++"', 'extern "C"'):
        if stripped.endswith(linkage):
            stripped = stripped[: -len(linkage)].rstrip()
    if not stripped.endswith(">"):
        return ""
    k = stripped.rfind("template")
    if k < 0:
        return None
    head = stripped[k:]
    if not re.fullmatch(r"template\s*<[^;{}]*>", head):
        return None
    return head


def cuda_lane_kernel(text: str, name: str, call: str,
                     checked: bool = False) -> LaneKernel | None:
    """The lane copy of the rewritten kernel ``name`` in ``text``, or None when it has none.

    A kernel has a lane copy when its definition is found once, its body calls nothing but
    :data:`_PURE_CALLS` and uses no atomics, prints or assertions; the copy is the kernel with
    a leading early return (``int i = ...; if (cond) return;``, declarations of integers from
    builtins and parameters only) taken out, and the guard returns that condition. The launcher
    runs a row of threads through the lane copy when the guard is false for all of them.

    Parameters
    ----------
    text
        The kernel source as the CUDA rewriter left it (thread parameter added).
    name
        The kernel's name (no namespace).
    call
        How the launcher calls the kernel (``name`` or ``name<args>``).
    checked
        The text is a checked build's: its checked subscripts may be made plain, each under a
        bounds condition that joins the guard (see the module).
    """
    if "::" in call or not re.fullmatch(rf"{re.escape(name)}\s*(?:<[^;{{}}()]*>)?", call):
        return None
    defs = list(re.finditer(rf"\b__global__\s+void\s+{re.escape(name)}\s*\(", text))
    if len(defs) != 1:
        return None
    m = defs[0]
    head = _template_head(text[: m.start()])
    if head is None:
        return None
    p_end = _match_close(text, m.end() - 1, "(", ")")
    if p_end < 0:
        return None
    params = text[m.end() - 1 : p_end]
    if "cn_this_thread" not in params:
        return None
    rest = text[p_end:]
    brace = len(rest) - len(rest.lstrip())
    if not rest[brace:].startswith("{"):
        return None
    b_end = _match_close(rest, brace, "{", "}")
    if b_end < 0:
        return None
    body = rest[brace + 1 : b_end - 1]
    conds: list[str] = []
    if checked:
        pointers = _checked_pointers(params)
        sited = _proved_sites(body, _SITE, pointers)
        if sited is None or _other_uses(sited[0], pointers):
            return None
        body, conds = sited
    if "//" in body or "/*" in body or "#" in body or any(u in body for u in _UNSAFE):
        return None
    if any(c.group(1) not in _PURE_CALLS for c in _CALL.finditer(body)):
        return None
    # A leading early return: integer declarations, then `if (cond) return;`.
    pos = _leading_ints(body)[0]
    decls = body[:pos]
    guard = None
    g = _GUARD.match(body, pos)
    if g is not None:
        c_end = _match_close(body, g.end() - 1, "(", ")")
        after = body[c_end:] if c_end > 0 else ""
        r = re.match(r"\s*return\s*;", after)
        if r is not None:
            cond = body[g.end() : c_end - 1]
            if "=" in cond.replace("==", "").replace("<=", "").replace(">=", "").replace(
                    "!=", "") or "++" in cond or "--" in cond:
                return None
            guard = f"({cond})"
            body = body[:pos] + after[r.end() :]
    if conds:
        proof = " && ".join(conds)
        guard = f"{guard} || !({proof})" if guard else f"!({proof})"
    template = f"{head}\n" if head else ""
    targs = call[len(name):].strip()
    lanes = f"{name}__cn_lanes"
    out = [f"{template}static inline __attribute__((always_inline)) void {lanes}{params} {{"
           f"{body}}}"]
    guard_call = None
    if guard is not None:
        gname = f"{name}__cn_guard"
        out.append(f"{template}static inline __attribute__((always_inline)) bool "
                   f"{gname}{params} {{{decls}\n  return {guard};\n}}")
        guard_call = gname + targs
    return LaneKernel("\n".join(out) + "\n", lanes + targs, guard_call)


_METAL_UNSAFE = re.compile(
    r"cn::|\b(?:device|constant|threadgroup|thread|atomic\w*|simd_\w+|simdgroup\w*|quad_\w+|"
    r"thread_elements|threadgroup_barrier|os_log|printf|assert)\b|//|/\*|#"
)
"""What keeps a checked Metal body out of lanes: runtime calls (``cn::``, returns are marked
through it), local pointers (every MSL pointer names its address space), atomics, SIMD-group
functions and matrices (they read the runtime's current thread), quad functions, barriers,
logging, comments and preprocessor lines."""


def metal_lane_kernel(name: str, params: list[str], body: str, template: str = "",
                      targs: str = "", distinct: frozenset[str] = frozenset()) -> LaneKernel | None:
    """The lane copy of a checked Metal kernel function and its bounds guard, or None.

    A checked body gets a copy when each use of a buffer parameter is a subscript by a literal or
    by an integer of its leading declarations (``uint i = thread_position_in_grid.x;``) that is
    never assigned again, and it has nothing of :data:`_METAL_UNSAFE`; the copy subscripts
    unchecked and the guard is true for a thread any of whose subscripts would leave its buffer
    (the launcher then runs that row with the checked kernel, thread by thread).

    Parameters
    ----------
    name
        The kernel function's name in the translation unit.
    params
        Its parameter declarations, as the launcher declares them.
    body
        Its body as the Metal rewriter left it.
    template, targs
        ``template <...>`` before the definition and ``<args>`` of the launcher's call, or "".
    distinct
        Buffers that no other buffer the kernel writes can overlap (outputs, fresh arrays
        distinct from every input, and read-only inputs): subscripted in the copy through
        ``__restrict__`` pointers, so that loads of inputs inside a thread's loops stay in
        registers and the row vectorises.
    """
    if _METAL_UNSAFE.search(body):
        return None
    pointers = _checked_pointers(",".join(params) + ")")
    if not pointers:
        return None
    names = "|".join(re.escape(p) for p in sorted(pointers))
    site = re.compile(rf"\b({names})\s*\[\s*([A-Za-z_]\w*|\d+)\s*\]")
    proved = _proved_sites(body, site, pointers)
    if proved is None:
        return None
    copy, conds = proved
    if not conds or _other_uses(copy, pointers):
        return None  # a buffer used otherwise than subscripted stays checked
    decls_end = _leading_ints(body)[0]
    restricted = sorted(o for o in distinct & pointers if f"{o}.p[" in copy)
    for o in restricted:
        copy = copy.replace(f"{o}.p[", f"{o}__cn_r[")
    copy = "".join(f"\n  auto* __restrict__ {o}__cn_r = {o}.p;" for o in restricted) + copy
    head = f"{template}\n" if template else ""
    plist = ",\n    ".join(params)
    lanes, gname = f"{name}__cn_lanes", f"{name}__cn_guard"
    text = (f"{head}static inline __attribute__((always_inline)) void {lanes}(\n    {plist}) {{"
            f"\n{copy}\n}}\n"
            f"{head}static inline __attribute__((always_inline)) bool {gname}(\n    {plist}) {{"
            f"\n{body[:decls_end]}\n  return !({' && '.join(conds)});\n}}\n")
    return LaneKernel(text, lanes + targs, gname + targs)
