"""Run CUDA C and Metal Shading Language kernels on the CPU, compiled as C++, with checks.

See the module documentation of :mod:`cunumpy.emulation` submodules for what is checked.
"""

from __future__ import annotations

from cunumpy.emulation._toolchain import (
    Compiler,
    CompilerNotFoundError,
    find_compiler,
    toolchain_info,
)

__all__ = ["Compiler", "CompilerNotFoundError", "find_compiler", "toolchain_info"]
