"""Compile errors point at the user's text: body:LINE / header:LINE and the offending line."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation.errors import KernelCompileError
from cunumpy.emulation.metal import run_metal


def _launch(metal_sig, body, header=""):
    x = np.arange(8, dtype=np.float32)
    y = np.empty_like(x)
    sig = metal_sig("broken", body, [("x", x)], [("y", y)], header=header)
    run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1))


def test_error_in_body_maps_to_body_line(metal_sig):
    body = "uint i = thread_position_in_grid.x;\nfloat v = x[i];\ny[i] = undefined_function(v);\n"
    with pytest.raises(KernelCompileError) as info:
        _launch(metal_sig, body)
    msg = str(info.value)
    assert msg.startswith("[emu-metal kernel 'broken'] does not compile")
    assert "body:3:" in msg and "undefined_function" in msg
    assert "     3 | y[i] = undefined_function(v);" in msg
    err = info.value
    assert "body:3" in err.log and '#line 1 "body"' in err.source and err.command


def test_error_in_header_maps_to_header_line(metal_sig):
    header = "// helpers\ninline float f(float a) {\n  return a +* 2;\n}\n"
    with pytest.raises(KernelCompileError) as info:
        _launch(metal_sig, "uint i = thread_position_in_grid.x; y[i] = f(x[i]);", header)
    msg = str(info.value)
    assert "header:3:" in msg
    assert "     3 |   return a +* 2;" in msg


def test_line_numbers_survive_threadgroup_rewrites(metal_sig):
    body = ("threadgroup float buf[\n  8];\nuint i = thread_position_in_grid.x;\n"
            "buf[i] = x[i];\nthreadgroup_barrier(mem_flags::mem_threadgroup);\ny[i] = buf[i] +;\n")
    with pytest.raises(KernelCompileError, match=r"body:6:"):
        _launch(metal_sig, body)


def test_failed_compile_leaves_no_cache_entry(metal_sig, private_cache):
    with pytest.raises(KernelCompileError):
        _launch(metal_sig, "this is not C++;")
    assert not list(private_cache.glob("emu-*/emu-metal/*/*/kernel.so"))
    assert not list(private_cache.glob("emu-*/emu-metal/*/.build-*"))
