"""The seam for kernels of whole Metal libraries (:class:`cunumpy.kernels.MetalLibrary`).

The front end parses the library once, checks a call (arguments against the declared parameter
types, geometry against the engine's limits) and gives the engine plain, frozen data:

- a :class:`~cunumpy._engines._base.Program` of dialect ``metal`` made by
  :func:`library_program`: ``source`` is the preprocessed library, ``signature`` the kernel's
  :class:`~cunumpy._lang.metal_library.LibraryKernel`, ``template`` the function-constant values
  as sorted ``(name, value)`` pairs, and settings ``library`` (True), ``files`` (the texts read,
  for messages), ``original`` (the source as given), ``emulator_options`` and ``math_mode``;
- a :class:`LibraryLaunch` per call: ``dispatchThreads`` geometry, the buffers by Metal buffer
  index (arrays in the engine's memory: NumPy arrays on ``emu-metal``, CuPy arrays or host bytes
  on ``metal-cuda``), and the size of each ``[[threadgroup(i)]]`` allocation.

``engine.prepare_library(program)`` returns the launch callable; it writes the buffers the
kernel writes in place.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from cunumpy._engines._base import Program
from cunumpy._lang.metal_library import LibraryKernel, LibraryText, parse_library

__all__ = ["LibraryLaunch", "library_program", "parsed"]


class LibraryLaunch(NamedTuple):
    """One launch of a library kernel, checked by the front end."""

    grid: tuple[int, int, int]
    """Threads per dimension (``dispatchThreadgroups`` is passed as groups x threadgroup)."""
    threadgroup: tuple[int, int, int]
    buffers: tuple[tuple[int, Any], ...]
    """(buffer index, array) for every buffer the kernel declares, by index."""
    threadgroup_memory: tuple[tuple[int, int], ...] = ()
    """(threadgroup index, bytes)."""
    stream: Any = None


@functools.lru_cache(maxsize=64)
def parsed(text: str) -> LibraryText:
    """The parse of a preprocessed library text (cached: engines get only the text)."""
    return parse_library(text)


def library_program(
    text: str,
    kernel: LibraryKernel,
    constants: Mapping[str, Any],
    *,
    files: Mapping[str, str],
    original: str,
    emulator_options: Any = None,
    math_mode: str = "safe",
) -> Program:
    """The :class:`Program` of one kernel of a library with one set of function constants."""
    return Program(
        dialect="metal",
        name=kernel.host_name,
        source=text,
        signature=kernel,
        template=tuple(sorted((k, v) for k, v in constants.items())),
        extra=(
            ("emulator_options", emulator_options),
            ("files", tuple(sorted(files.items()))),
            ("kernel", kernel),
            ("library", True),
            ("math_mode", math_mode),
            ("original", original),
        ),
    )
