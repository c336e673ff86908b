"""Find the C++ compiler the emulators build kernels with.

Search order: ``CUNUMPY_CXX`` (a command, may include arguments), then ``clang++``, ``g++``,
``c++`` on ``PATH``, then the ``ziglang`` wheel (``python -m ziglang c++``). The first that answers
``--version`` wins. The result is cached for the process; :func:`find_compiler.cache_clear`
forgets it.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from cunumpy import config

__all__ = ["Compiler", "CompilerNotFoundError", "find_compiler", "toolchain_info"]


class CompilerNotFoundError(RuntimeError):
    """No usable C++ compiler: the emulators cannot build kernels."""


@dataclass(frozen=True)
class Compiler:
    """A C++ compiler command and what it says of itself."""

    command: tuple[str, ...]
    """The argv prefix that runs the compiler."""
    version: str
    """First line of ``--version``."""
    how_found: str
    """Why this compiler was chosen."""
    family: str = "gcc"
    """``"clang"``, ``"gcc"`` or ``"zig"`` (zig is clang)."""
    tried: tuple[str, ...] = field(default=(), compare=False)
    """What was tried before it, with why each failed."""


def _probe(command: list[str]) -> str | None:
    try:
        done = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    first = (done.stdout or done.stderr).strip().splitlines()
    return first[0] if first else "unknown version"


def _family(version: str) -> str:
    text = version.lower()
    if "clang" in text:
        return "clang"
    return "gcc"


def _candidates() -> list[tuple[list[str], str]]:
    found: list[tuple[list[str], str]] = []
    env = config.cxx_command()
    if env:
        found.append((shlex.split(env), "CUNUMPY_CXX"))
    for name in ("clang++", "g++", "c++"):
        path = shutil.which(name)
        if path:
            found.append(([path], f"{name} on PATH"))
    try:
        import importlib.util

        if importlib.util.find_spec("ziglang") is not None:
            found.append(([sys.executable, "-m", "ziglang", "c++"], "the ziglang wheel"))
    except (ImportError, ValueError):
        pass
    return found


@functools.cache
def find_compiler() -> Compiler:
    """The C++ compiler to use. Raises :class:`CompilerNotFoundError` saying what was tried."""
    tried = []
    env_set = config.cxx_command() is not None
    for command, how in _candidates():
        version = _probe(command)
        if version is None:
            tried.append(f"{' '.join(command)} ({how}): did not answer --version")
            if how == "CUNUMPY_CXX":
                raise CompilerNotFoundError(
                    f"CUNUMPY_CXX={config.cxx_command()!r} does not run; fix or unset it"
                )
            continue
        family = "zig" if how == "the ziglang wheel" else _family(version)
        return Compiler(tuple(command), version, how, family, tuple(tried))
    detail = "; ".join(tried) if tried else "no clang++, g++ or c++ on PATH and no ziglang wheel"
    raise CompilerNotFoundError(
        "no C++ compiler found for the CPU emulators"
        + (" (CUNUMPY_CXX is set but unusable)" if env_set else "")
        + f": {detail}. Install one (apt-get install g++, or pip install ziglang) or set "
        "CUNUMPY_CXX"
    )


def toolchain_info() -> dict[str, object]:
    """JSON-able description of the emulation compiler, or why there is none."""
    try:
        compiler = find_compiler()
    except CompilerNotFoundError as exc:
        return {"available": False, "compiler": None, "version": None, "reason": str(exc)}
    return {
        "available": True,
        "compiler": " ".join(compiler.command),
        "version": compiler.version,
        "family": compiler.family,
        "reason": f"found as {compiler.how_found}",
    }
