"""Compile a generated C++ translation unit into a shared library, through the disk cache.

One library per kernel variant. Compiler flags favour both compile and run time: ``-O2``
(``-O1`` compiles barely faster here and runs element-wise kernels slower), ``-std=c++17``,
``-fno-strict-aliasing`` (kernels cast buffer pointers freely), ``-fvisibility=hidden``, and no
``-march=native``: on x86-64 the CPU's psABI level (``-march=x86-64-v3``...), with
``-fopenmp-simd -ffp-contract=off`` for the lane loop (:mod:`._lanes`); libraries stay valid on
any machine of the same ISA and level, which the flags put in the key.

Two things are built once per compiler, dialect header and flag set and kept in the same cache:
the precompiled runtime header (a GCC ``.gch`` or a Clang ``.pch``, engine ``pch``) and the
runtime object (engine ``runtime``): the runtime's out-of-line part (the grid scheduler, fibers,
failure reports, ``cn_fill``/``cn_count``, the race checker's hooks) compiled with
``-DCN_PREBUILT -DCN_RUNTIME_IMPL``. A kernel then compiles with ``-DCN_PREBUILT`` (it sees only
declarations of those functions) and links a copy of the object, through ``gold``/``lld`` where
they are installed: that is what makes a cold variant cheap (``benchmarks/bench_compile.py``).
The first kernels of a fresh cache do not wait for them: they compile from the plain headers,
the runtime included, while both are built in the background. If they cannot be built, or the
compiler rejects the precompiled header, kernels compile from the plain headers.

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
_PCH: dict[tuple[str, str, tuple[str, ...]], Prebuilt] = {}
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


PREBUILT_DEFINE = "-DCN_PREBUILT"
"""Compiles a kernel against the prebuilt runtime object (``cn_core.h``: ``CN_RUNTIME_BODIES``)."""


@dataclass(frozen=True)
class Prebuilt:
    """What a kernel of one dialect header and flag set compiles and links with.

    ``include``: the arguments that find the runtime headers (the precompiled header first when
    there is one). ``runtime``: the prebuilt runtime object (``None``: the kernel compiles the
    runtime's out-of-line part itself, from the plain headers). ``link``: extra link arguments.
    """

    include: tuple[str, ...]
    runtime: Path | None = None
    link: tuple[str, ...] = ()

    def defines(self) -> tuple[str, ...]:
        """The macro arguments that go with :attr:`runtime`."""
        return (PREBUILT_DEFINE,) if self.runtime is not None else ()


_PLAIN = Prebuilt(("-I", str(RUNTIME_DIR)))


@functools.cache
def _fast_linker(compiler: Compiler) -> tuple[str, ...]:
    """``-fuse-ld=gold`` (GCC) or ``-fuse-ld=lld`` (Clang) where that linker links a shared
    library here: it links a kernel in 0.01-0.02 s, the default BFD linker in 0.05-0.06 s."""
    import shutil
    import tempfile

    flag, tool = (("-fuse-ld=lld", "ld.lld") if compiler.family in ("clang", "zig")
                  else ("-fuse-ld=gold", "ld.gold"))
    if not shutil.which(tool):
        return ()
    with tempfile.TemporaryDirectory(prefix="cunumpy-ld-") as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text('extern "C" int cn_probe(int x) { return x + 1; }\n')
        try:
            done = subprocess.run([*compiler.command, "-shared", "-fPIC", flag, "-o",
                                   str(Path(tmp) / "probe.so"), str(src)],
                                  capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ()
    return (flag,) if done.returncode == 0 else ()


def _prebuilt(root: Path, compiler: Compiler, flags: tuple[str, ...], header: str) -> Prebuilt:
    """How a kernel including ``header`` compiles now (:class:`Prebuilt`).

    Two cache entries serve every kernel of one dialect header and flag set: the precompiled
    header (``pch``) and the runtime object (``runtime``: the runtime's out-of-line functions,
    the grid scheduler and the race checker's hooks, compiled once; each kernel library links a
    copy, so its globals stay its own). When they are not built yet, a background thread builds
    them (the first kernels of a fresh cache compile from the plain headers meanwhile, the
    runtime included, instead of waiting) and :data:`_PLAIN` is returned. The thread is not a
    daemon, so the process finishes publishing them before exiting.
    """
    memo = (str(root), header, flags)
    if memo in _PCH:
        return _PCH[memo]
    clang = compiler.family in ("clang", "zig")
    artifact = header + (".pch" if clang else ".gch")
    pflags = (*flags, PREBUILT_DEFINE)
    base = _base_inputs(compiler, pflags)
    pch_inputs = {**base, "engine": "pch", "header": header}
    rt_inputs = {**base, "engine": "runtime", "header": header}
    pch_key, rt_key = _cache.make_key(pch_inputs), _cache.make_key(rt_inputs)

    def build_pch(tmp: Path) -> None:
        for name, text in runtime_headers():  # the compiler finds the .gch beside its header
            (tmp / name).write_text(text)
        cmd = [*compiler.command, *pflags, "-x", "c++-header", "-o", str(tmp / artifact),
               str(tmp / header)]
        done = _run(cmd, tmp)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)

    def build_runtime(tmp: Path) -> None:
        # Only the object is kept: the headers are read where they are (their texts are in the
        # key), not copied as the precompiled header's entry needs them.
        (tmp / "runtime.cpp").write_text(f'#define CN_RUNTIME_IMPL\n#include "{header}"\n')
        done = _run([*compiler.command, *pflags, *_PLAIN.include, "-c", "-o",
                     str(tmp / "runtime.o"), "runtime.cpp"], tmp)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)

    def publish() -> None:
        try:
            path = _cache.get_or_build(root, "pch", pch_key, pch_inputs, artifact, build_pch)
            runtime = _cache.get_or_build(root, "runtime", rt_key, rt_inputs, "runtime.o",
                                          build_runtime)
        except (RuntimeError, OSError, subprocess.SubprocessError):
            _PCH[memo] = _PLAIN
            return
        # The plain runtime directory comes second, in case the cache is removed meanwhile.
        include = (("-include-pch", str(path)) if clang else ()) + (
            "-I", str(path.parent), *_PLAIN.include)
        _PCH[memo] = Prebuilt(include, runtime, _fast_linker(compiler))

    if (_cache.entry_dir(root, "pch", pch_key).is_dir()
            and _cache.entry_dir(root, "runtime", rt_key).is_dir()):
        publish()
        return _PCH[memo]
    if memo not in _PCH_BUILDING:
        _PCH_BUILDING.add(memo)
        thread = threading.Thread(target=publish, name="cunumpy-emulation-pch", daemon=False)
        _PCH_THREADS.append(thread)
        thread.start()
    return _PLAIN


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
            (tmp / "kernel.cpp").write_text(source)

            def commands(pre: Prebuilt) -> list[list[str]]:
                objects = [str(pre.runtime)] if pre.runtime is not None else []
                compile_args = [*compiler.command, *flags, *pre.defines(), *pre.include]
                if races:  # compile with the instrumentation, link without its runtime
                    return [[*compile_args, "-c", "-o", str(tmp / "kernel.o"), "kernel.cpp"],
                            [*compiler.command, "-shared", *pre.link, "-o",
                             str(tmp / "kernel.so"), str(tmp / "kernel.o"), *objects]]
                return [[*compile_args, "-shared", *pre.link, "-o", str(tmp / "kernel.so"),
                         "kernel.cpp", *objects]]

            def run_all(pre: Prebuilt) -> tuple[list[str], subprocess.CompletedProcess[str]]:
                for cmd in commands(pre):
                    done = _run(cmd, tmp)
                    if done.returncode != 0:
                        break
                return cmd, done

            cmd, done = run_all(_prebuilt(cache_root, compiler, flags, header))
            if done.returncode != 0 and _blames_pch(done.stdout + done.stderr):
                # An unusable precompiled header: stop using it and compile from the headers.
                _PCH[(str(cache_root), header, flags)] = _PLAIN
                cmd, done = run_all(_PLAIN)
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

