"""Capture the Metal text MLX generates for a custom kernel, on machines without a Metal GPU.

How it works. On Linux, ``pip install 'mlx[cpu]'`` builds custom kernels but cannot run them: a
plain call raises "No Metal back-end" before any text is written. Inside
``mx.export_function(path, fn, *arrays)`` the call is only traced, and MLX still generates the
kernel; with ``verbose=True`` it writes, to the C++ standard output (file descriptor 1, not
Python's ``sys.stdout``)::

    Generated source code for `<name>`:
    ```
    <text>
    ```

``<text>`` is the string MLX compiles after its own preamble (MLX's ``metal::utils()``: includes,
``using namespace metal``, ``float16_t``, ``bfloat16_t``, ``complex64_t``, ...), which MLX adds
only when it compiles on a real GPU; so the printed text starts at the user's header (or the
``template`` line, or ``[[kernel]]``) and needs no stripping. The block ends with ``\\n```\\n``.

:func:`capture_fd1` points descriptor 1 at a temporary file around the call (``os.dup2``), flushes
Python's and C's stdio buffers, and restores it; this works inside pytest, whose own fd capture is
saved and put back. As a second, independent route, the exported ``.mlxfn`` file stores each
custom kernel's host name and text as length-prefixed strings after the tag ``CustomKernel``;
:func:`parse_mlxfn` reads them, and the tests check that both routes agree.
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_BLOCK = re.compile(
    r"Generated source code for `(?P<name>[^`]*)`:\n```\n(?P<text>.*?)\n```\n"
    r"(?=Generated source code for `|\Z)",
    re.DOTALL,
)
_TAG = struct.pack("<Q", len(b"CustomKernel")) + b"CustomKernel"


def _flush_c_stdio() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no libc symbol table: std::endl has flushed anyway
        pass


def capture_fd1(fn: Callable[[], Any]) -> tuple[Any, str]:
    """Call ``fn()`` with file descriptor 1 redirected; return its result and what was written."""
    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            result = fn()
        finally:
            _flush_c_stdio()
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        written = tmp.read().decode("utf-8")
    return result, written


def parse_verbose(stdout: str) -> list[tuple[str, str]]:
    """``(name, text)`` for each "Generated source code" block MLX printed, in order."""
    return [(m["name"], m["text"]) for m in _BLOCK.finditer(stdout)]


def parse_mlxfn(data: bytes) -> list[tuple[str, str]]:
    """``(host_name, text)`` for each custom kernel stored in an exported ``.mlxfn`` file.

    Relies on MLX 0.32's serialisation (a u64 little-endian length before each string). Returns
    an empty list when the layout is not recognised.
    """
    found = []
    start = data.find(_TAG)
    while start >= 0:
        pos = start + len(_TAG)
        strings = []
        for _ in range(2):
            if pos + 8 > len(data):
                return found
            (n,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            if n > len(data) - pos:
                return found
            strings.append(data[pos : pos + n].decode("utf-8"))
            pos += n
        if strings[0].startswith("custom_kernel_"):
            found.append((strings[0], strings[1]))
        start = data.find(_TAG, pos)
    return found


@dataclass(frozen=True)
class Captured:
    """What MLX generated during one traced call."""

    printed: list[tuple[str, str]]
    """``(name, text)`` from the verbose blocks on descriptor 1."""
    stored: list[tuple[str, str]]
    """``(host_name, text)`` from the exported file (empty if its layout was not recognised)."""
    stdout: str

    @property
    def text(self) -> str:
        """The one kernel text printed (the capture must have seen exactly one kernel)."""
        assert len(self.printed) == 1, f"expected one generated kernel, got:\n{self.stdout}"
        return self.printed[0][1]


def capture_mlx(fn: Callable[..., Any], arrays: Sequence[Any]) -> Captured:
    """Trace ``fn(*arrays)`` with ``mx.export_function`` and capture the kernels it generated.

    ``fn`` must call ``mx.fast.metal_kernel`` kernels with ``verbose=True`` and return arrays.
    """
    import mlx.core as mx

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.mlxfn")
        _, stdout = capture_fd1(lambda: mx.export_function(path, fn, *arrays))
        with open(path, "rb") as f:
            data = f.read()
    return Captured(parse_verbose(stdout), parse_mlxfn(data), stdout)
