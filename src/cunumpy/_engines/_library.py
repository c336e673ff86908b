"""The seam for kernels of whole Metal libraries (:class:`cunumpy.kernels.MetalLibrary`).

The front end parses the library once, checks a call (arguments against the declared parameter
types, geometry against the engine's limits) and gives the engine plain, frozen data:

- a :class:`~cunumpy._engines._base.Program` of dialect ``metal`` made by
  :func:`library_program`: ``source`` is the preprocessed library, ``signature`` the kernel's
  :class:`~cunumpy._lang.metal_library.LibraryKernel`, ``template`` the function-constant values
  as sorted ``(name, value)`` pairs, and settings ``library`` (True), ``files`` (the texts read,
  for messages), ``original`` (the source as given), ``system`` (the Metal system headers it
  includes, which the text leaves out), ``emulator_options`` and ``math_mode``;
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

__all__ = ["LibraryLaunch", "check_buffer_sizes", "library_program", "memory_groups", "parsed"]


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
    system: tuple[str, ...] = (),
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
            ("system", tuple(system)),
        ),
    )


def check_buffer_sizes(tag: str, kernel: LibraryKernel, sizes: Mapping[str, tuple[int, int]],
                       nbytes: Mapping[int, int]) -> None:
    """Check each buffer's size against what the compiled kernel declares.

    ``sizes`` maps parameter names to (bytes of one element or of the value, kind: 1 pointer,
    2 reference, 3 value), as the engine's compiler computed them (``sizeof``, not a parse of
    the source); ``nbytes`` maps buffer indices to the bound buffers' sizes. A pointer's buffer
    must hold whole elements, a reference's or value's at least one value. ``tag`` starts the
    message (``[metal-cuda kernel 'k']``).
    """
    for p in kernel.params:
        if p.kind != "buffer":
            continue
        size, kind = sizes[p.name]
        n = nbytes[p.index]
        if kind == 1 and size > 1 and n % size:
            raise ValueError(
                f"{tag} argument {p.name!r} ({p.declared}) points at {size}-byte values; the "
                f"buffer has {n} bytes, not a whole number of them")
        if kind in (2, 3) and n < size:
            raise ValueError(
                f"{tag} argument {p.name!r} ({p.declared}) reads {size} bytes; the buffer has {n}")


def memory_groups(arrays: Mapping[int, Any]) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """Host arrays grouped by the memory they share, for engines that copy buffers.

    ``arrays`` maps buffer indices to C-contiguous NumPy arrays. Returns one group per run of
    overlapping arrays: ``(lo, hi, [(index, offset from lo), ...])`` with ``lo``/``hi`` the
    first and past-the-end addresses of their union; an engine copies each group once, so
    that buffers which alias (the same array bound twice, overlapping views) alias on the
    device too, as they do in Metal.
    """
    spans = sorted(((a.__array_interface__["data"][0], a.nbytes, i) for i, a in arrays.items()),
                   key=lambda s: (s[0], -s[1]))
    groups: list[tuple[int, int, list[tuple[int, int]]]] = []
    for start, nbytes, index in spans:
        if groups and start < groups[-1][1]:
            lo, hi, members = groups[-1]
            members.append((index, start - lo))
            groups[-1] = (lo, max(hi, start + nbytes), members)
        else:
            groups.append((start, start + nbytes, [(index, 0)]))
    return groups
