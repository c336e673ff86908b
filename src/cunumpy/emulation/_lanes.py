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
first. Checked builds stay scalar: a failing bounds check is a call that reports the thread.
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
    "LANE_FLAGS", "LaneKernel", "cuda_lane_kernel", "enabled", "isa_flags", "isa_level",
    "switch_flags",
]

def enabled() -> bool:
    """Whether kernels compiled now use lanes (:func:`cunumpy.config.emulator_lanes`)."""
    return config.emulator_lanes()


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
    r"(?:int|long\s+long|long|unsigned|size_t|ptrdiff_t|u?int(?:32|64)_t|auto)\s+"
    r"([A-Za-z_]\w*)\s*=\s*([^;{}\[\]=]*(?:[<>!=]=[^;{}\[\]=]*)*);"
)
_GUARD = re.compile(r"\s*if\s*\(")
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


def cuda_lane_kernel(text: str, name: str, call: str) -> LaneKernel | None:
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
    if "//" in body or "/*" in body or "#" in body or any(u in body for u in _UNSAFE):
        return None
    if any(c.group(1) not in _PURE_CALLS for c in _CALL.finditer(body)):
        return None
    # A leading early return: integer declarations, then `if (cond) return;`.
    pos, decls = 0, []
    while (d := _DECL.match(body, pos)) is not None:
        decls.append(body[pos : d.end()])
        pos = d.end()
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
            guard = cond
            body = body[:pos] + after[r.end() :]
    template = f"{head}\n" if head else ""
    targs = call[len(name):].strip()
    lanes = f"{name}__cn_lanes"
    out = [f"{template}static inline __attribute__((always_inline)) void {lanes}{params} {{"
           f"{body}}}"]
    guard_call = None
    if guard is not None:
        gname = f"{name}__cn_guard"
        out.append(f"{template}static inline __attribute__((always_inline)) bool "
                   f"{gname}{params} {{{''.join(decls)}\n  return ({guard});\n}}")
        guard_call = gname + targs
    return LaneKernel("\n".join(out) + "\n", lanes + targs, guard_call)
