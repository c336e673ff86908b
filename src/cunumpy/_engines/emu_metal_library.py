"""The ``emu-metal`` engine's launch of whole-library kernels (:mod:`cunumpy.emulation.metal_library`).

Buffers are NumPy arrays (the emulator's device memory is the host's), written in place. Before
the first launch of a program the sizes the compiled kernel declares (``sizeof`` of each
pointee, referenced or by-value type, as the compiler lays it out) are read from the library,
and every buffer is checked against them: a pointer's buffer must hold whole values, a
reference's at least one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cunumpy._engines._base import Program
from cunumpy._engines._library import LibraryLaunch, parsed

__all__ = ["prepare_library"]


def prepare_library(program: Program) -> Callable[[LibraryLaunch], None]:
    """The launch callable of one library kernel on the CPU emulator."""
    from cunumpy.emulation.metal_library import launch_library, value_sizes

    lib = parsed(program.source)
    kernel = program.signature
    constants = dict(program.template)
    files = dict(program.setting("files"))
    options = program.setting("emulator_options")
    math_mode = program.setting("math_mode")
    tag = f"[emu-metal kernel '{kernel.host_name}']"
    checked: list[Any] = []

    def go(launch: LibraryLaunch) -> None:
        buffers = dict(launch.buffers)
        if not checked:
            checked.append(value_sizes(lib, kernel, constants, files, options, math_mode))
        sizes = checked[0]
        for p in kernel.params:
            if p.kind != "buffer":
                continue
            size, kind = sizes[p.name]
            nbytes = buffers[p.index].nbytes
            if kind == 1 and size > 1 and nbytes % size:
                raise ValueError(
                    f"{tag} argument {p.name!r} ({p.declared}) points at {size}-byte values; the "
                    f"buffer has {nbytes} bytes, not a whole number of them")
            if kind in (2, 3) and nbytes < size:
                raise ValueError(
                    f"{tag} argument {p.name!r} ({p.declared}) reads {size} bytes; the buffer "
                    f"has {nbytes}")
        launch_library(lib, kernel, constants, files, buffers, dict(launch.threadgroup_memory),
                       launch.grid, launch.threadgroup, options=options, math_mode=math_mode)

    return go
