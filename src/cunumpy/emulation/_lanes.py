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
"""

from __future__ import annotations

import functools
import platform
import sys
from pathlib import Path

from cunumpy.emulation._toolchain import Compiler

__all__ = ["LANE_FLAGS", "isa_level", "isa_flags"]

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
