"""Compile a generated C++ translation unit into a shared library, through the disk cache.

One library per kernel variant. Compiler flags favour both compile and run time: ``-O2``
(``-O1`` compiles barely faster here and runs element-wise kernels slower), ``-std=c++17``,
``-fno-strict-aliasing`` (kernels cast buffer pointers freely), ``-fvisibility=hidden``, and no
``-march=native``: on x86-64 the CPU's psABI level (``-march=x86-64-v3``...), with
``-fopenmp-simd -ffp-contract=off`` for the lane loop (:mod:`._lanes`); libraries stay valid on
any machine of the same ISA and level, which the flags put in the key.

The runtime headers are precompiled once per compiler and flag set (a GCC ``.gch`` or a Clang
``.pch``, kept in the same cache under the ``pch`` engine), which halves the compile time of a
kernel. The first kernel of a fresh cache does not wait for it: it compiles from the plain headers
while the precompiled header is built in the background. If it cannot be built, or the compiler
rejects it, kernels compile from the plain headers.

Loaded libraries are kept per process, so a launch of a variant already loaded touches no disk.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import re
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cunumpy._version import __version__
from cunumpy.emulation import _cache, _lanes
from cunumpy.emulation._toolchain import Compiler, find_compiler
from cunumpy.emulation.errors import KernelCompileError

__all__ = [
    "RUNTIME_DIR",
    "Library",
    "build_library",
    "compile_flags",
    "forget_loaded",
    "wait_for_pch",
]

RUNTIME_DIR = Path(__file__).parent / "runtime"

_BASE_FLAGS = (
    "-std=c++17",
    "-O2",
    "-fPIC",
    "-fno-strict-aliasing",
    "-fno-math-errno",
    "-fvisibility=hidden",
    "-Wno-attributes",
    "-g1",
    *_lanes.LANE_FLAGS,
)
"""``-g1`` (line tables only; no effect on the code) lets failure reports name the source line
of a failing access from its code address."""

RACE_FLAGS = ("-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0")
"""Extra flags of a race-checking build (GCC): the compiler calls ``__tsan_read4(addr)`` and the
like before every memory access, and ``cn_race.h`` defines those functions (no sanitizer runtime
is linked: the object is linked in a second step without the flag)."""

_CLANG_RACE_FLAGS = ("-fsanitize=thread", "-mllvm", "-tsan-instrument-func-entry-exit=0")


def race_flags(compiler: Compiler) -> tuple[str, ...]:
    """:data:`RACE_FLAGS` as ``compiler`` spells them."""
    return _CLANG_RACE_FLAGS if compiler.family in ("clang", "zig") else RACE_FLAGS


@dataclass
class Library:
    """A loaded kernel library and its ``cn_launch`` entry point."""

    path: Path
    cdll: ctypes.CDLL
    launch: ctypes._CFuncPtr  # type: ignore[name-defined]
    key: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held during a launch: a library keeps its scheduler state in globals."""


_LOADED: dict[tuple[str, str], Library] = {}
_PCH: dict[tuple[str, str, tuple[str, ...]], tuple[str, ...]] = {}
_PCH_BUILDING: set[tuple[str, str, tuple[str, ...]]] = set()
_PCH_THREADS: list[threading.Thread] = []
_LOCK = threading.Lock()


def forget_loaded() -> None:
    """Forget the libraries and precompiled headers found so far in this process (tests use it
    to force a disk lookup)."""
    with _LOCK:
        _LOADED.clear()
        _PCH.clear()
        _PCH_BUILDING.clear()
        runtime_headers.cache_clear()


@functools.cache
def runtime_headers() -> tuple[tuple[str, str], ...]:
    """(name, text) of every runtime header, sorted by name."""
    return tuple(
        (p.name, p.read_text()) for p in sorted(RUNTIME_DIR.glob("*.h"))
    )


def compile_flags(compiler: Compiler | None = None) -> tuple[str, ...]:
    """Flags every kernel library is compiled with (without ``-shared``/output)."""
    compiler = compiler or find_compiler()
    return (_BASE_FLAGS + half_flags(compiler) + _lanes.isa_flags(compiler)
            + _lanes.switch_flags())


_HALF_PROBE = """#if !defined(__FLT16_MANT_DIG__)
#error no _Float16
#endif
constexpr _Float16 a = 1.0009765625f, c = -1.001953125f;
static_assert(a * a + c == 0, "_Float16 arithmetic keeps excess precision");
"""


@functools.cache
def half_flags(compiler: Compiler) -> tuple[str, ...]:
    """How Metal's ``half`` is compiled (``cn_metal_types.h``): the compiler's ``_Float16`` with
    every operation rounded to 16 bits, as on the GPU (GCC: ``-fexcess-precision=16``, Clang:
    ``-ffloat16-excess-precision=none``), where the compiler has one; else ``-DCN_HALF_CLASS``
    (a 16-bit class that computes in float and rounds back). Probed once per compiler with a
    syntax-only compile whose ``static_assert`` fails where ``_Float16`` keeps float precision
    between operations."""
    import tempfile

    candidates: list[tuple[str, ...]] = (
        [("-ffloat16-excess-precision=none",), ("-fexcess-precision=16",)]
        if compiler.family in ("clang", "zig") else
        [("-fexcess-precision=16",), ("-ffloat16-excess-precision=none",)]
    )
    with tempfile.TemporaryDirectory(prefix="cunumpy-half-") as tmp:
        probe = Path(tmp) / "half.cpp"
        probe.write_text(_HALF_PROBE)
        for flags in (*candidates, ()):
            try:
                done = subprocess.run([*compiler.command, "-std=c++17", "-fsyntax-only", *flags,
                                       str(probe)], capture_output=True, text=True, timeout=60,
                                      check=False)
            except (OSError, subprocess.TimeoutExpired):
                break
            if done.returncode == 0:
                return flags
    return ("-DCN_HALF_CLASS",)


def _base_inputs(compiler: Compiler, flags: tuple[str, ...]) -> dict[str, object]:
    import hashlib

    return {
        "format": _cache.CACHE_FORMAT,
        "cunumpy": __version__,
        "compiler": list(compiler.command),
        "compiler_version": compiler.version,
        "flags": list(flags),
        "isa": platform.machine(),
        "platform": sys.platform,
        "headers": {n: hashlib.sha256(t.encode()).hexdigest() for n, t in runtime_headers()},
    }


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def _pch_args(root: Path, compiler: Compiler, flags: tuple[str, ...], header: str) -> tuple[str, ...]:
    """Compiler arguments that use the precompiled ``header``.

    When it is not built yet, a background thread builds it (the first kernel of a fresh cache
    compiles from the plain headers meanwhile, instead of waiting) and plain include arguments are
    returned. The thread is not a daemon, so the process finishes publishing it before exiting.
    """
    plain = ("-I", str(RUNTIME_DIR))
    memo = (str(root), header, flags)
    if memo in _PCH:
        return _PCH[memo]
    clang = compiler.family in ("clang", "zig")
    artifact = header + (".pch" if clang else ".gch")
    inputs = {**_base_inputs(compiler, flags), "engine": "pch", "header": header}
    key = _cache.make_key(inputs)

    def build(tmp: Path) -> None:
        for name, text in runtime_headers():
            (tmp / name).write_text(text)
        cmd = [*compiler.command, *flags, "-x", "c++-header", "-o", str(tmp / artifact),
               str(tmp / header)]
        done = _run(cmd, tmp)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)

    def publish() -> None:
        try:
            path = _cache.get_or_build(root, "pch", key, inputs, artifact, build)
        except (RuntimeError, OSError, subprocess.SubprocessError):
            _PCH[memo] = plain
            return
        # The plain runtime directory comes second, in case the cache is removed meanwhile.
        if clang:
            _PCH[memo] = ("-include-pch", str(path), "-I", str(path.parent), *plain)
        else:
            _PCH[memo] = ("-I", str(path.parent), *plain)

    if _cache.entry_dir(root, "pch", key).is_dir():
        publish()
        return _PCH[memo]
    if memo not in _PCH_BUILDING:
        _PCH_BUILDING.add(memo)
        thread = threading.Thread(target=publish, name="cunumpy-emulation-pch", daemon=False)
        _PCH_THREADS.append(thread)
        thread.start()
    return plain


def wait_for_pch(timeout: float | None = None) -> None:
    """Wait until precompiled headers being built in the background are published."""
    for thread in list(_PCH_THREADS):
        thread.join(timeout)


def _blames_pch(log: str) -> bool:
    low = log.lower()
    return "precompiled" in low or ".pch" in low or ".gch" in low


_DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+)(?::(?P<col>\d+))?:\s*"
    r"(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$"
)


def diagnostics(title: str, log: str, user_text: Mapping[str, str]) -> list[str]:
    """The compiler's errors in the user's files, each followed by the offending line.

    ``user_text`` maps the file names the generated source gives the user's text (through
    ``#line``) to that text. Diagnostics in other files (the runtime headers) are left out unless
    nothing else was reported.
    """
    lines = [title]
    shown = 0
    for raw in log.splitlines():
        m = _DIAG.match(raw)
        if not m or m.group("sev") == "warning":
            continue
        file = m.group("file")
        if file not in user_text or (m.group("sev") == "note" and shown == 0):
            continue
        lines.append(raw)
        src = user_text[file].splitlines()
        n = int(m.group("line"))
        if 1 <= n <= len(src):
            lines.append(f"  {n:4d} | {src[n - 1]}")
        shown += 1
        if shown >= 12:
            lines.append("  ... (more in the .log attribute)")
            break
    if shown == 0:
        errors = [ln for ln in log.splitlines() if "error" in ln]
        lines.extend((errors or log.splitlines())[:20])
    return lines


def _compile_message(
    prefix: str, compiler: Compiler, log: str, user_text: Mapping[str, str]
) -> str:
    return "\n".join(
        diagnostics(f"{prefix} does not compile ({compiler.version}):", log, user_text)
    )


def build_library(
    source: str,
    *,
    engine: str,
    header: str,
    checks: bool,
    prefix: str,
    user_text: Mapping[str, str],
    root: str | os.PathLike[str] | None = None,
    races: bool = False,
) -> Library:
    """Compile (or find in the cache) and load the library of one generated translation unit.

    Parameters
    ----------
    source
        The full C++ translation unit.
    engine
        Cache engine name (``emu-metal``, ``emu-cuda``).
    header
        The dialect header the source includes first (precompiled).
    checks
        Whether the source was generated with checks (part of the key).
    prefix
        ``[emu-metal kernel 'name']`` for error messages.
    user_text
        The user's texts by ``#line`` file name (``body``, ``header``), to quote failing lines.
    root
        Cache root (default: ``CUNUMPY_CACHE_DIR`` or the user cache directory).
    races
        Build with race-checking instrumentation (:data:`RACE_FLAGS`).
    """
    compiler = find_compiler()
    flags = compile_flags(compiler) + (race_flags(compiler) if races else ())
    cache_root = _cache.cache_root(root)
    inputs = {
        **_base_inputs(compiler, flags),
        "engine": engine,
        "checks": bool(checks),
        "source": source,
    }
    key = _cache.make_key(inputs)
    memo = (str(cache_root), key)
    lib = _LOADED.get(memo)
    if lib is not None:
        return lib
    with _LOCK:
        lib = _LOADED.get(memo)
        if lib is not None:
            return lib

        def build(tmp: Path) -> None:
            pch = _pch_args(cache_root, compiler, flags, header)
            (tmp / "kernel.cpp").write_text(source)

            def command(include: tuple[str, ...]) -> list[str]:
                if races:  # compile with the instrumentation, link without its runtime
                    return [*compiler.command, *flags, "-c", *include, "-o",
                            str(tmp / "kernel.o"), "kernel.cpp"]
                return [*compiler.command, *flags, "-shared", *include, "-o",
                        str(tmp / "kernel.so"), "kernel.cpp"]

            cmd = command(pch)
            done = _run(cmd, tmp)
            if done.returncode != 0 and _blames_pch(done.stdout + done.stderr):
                # An unusable precompiled header: stop using it and compile from the headers.
                _PCH[(str(cache_root), header, flags)] = ("-I", str(RUNTIME_DIR))
                cmd = command(_PCH[(str(cache_root), header, flags)])
                done = _run(cmd, tmp)
            if done.returncode == 0 and races:
                cmd = [*compiler.command, "-shared", "-o", str(tmp / "kernel.so"),
                       str(tmp / "kernel.o")]
                done = _run(cmd, tmp)
            if done.returncode != 0:
                log = done.stdout + done.stderr
                raise KernelCompileError(
                    _compile_message(prefix, compiler, log, user_text),
                    log=log, source=source, command=tuple(cmd),
                )

        path = _cache.get_or_build(cache_root, engine, key, inputs, "kernel.so", build)
        _cache.check_private(path.parent, cache_root)
        cdll = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        launch = cdll.cn_launch
        launch.argtypes = [ctypes.c_void_p]
        launch.restype = ctypes.c_int
        lib = Library(path, cdll, launch, key)
        _LOADED[memo] = lib
        return lib


def which_compiler() -> str:
    """Human-readable compiler description (for benchmarks and reports)."""
    c = find_compiler()
    return f"{' '.join(c.command)} ({c.version})"

