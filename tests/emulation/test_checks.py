"""Every emulator check, shown by a deliberately broken kernel."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cunumpy.emulation._options import EmulatorOptions
from cunumpy.emulation.errors import (
    BarrierDivergenceError,
    EmulationError,
    InactiveLaneError,
    OutOfBoundsError,
    UnwrittenOutputError,
)
from cunumpy.emulation.metal import run_metal


def _saxpy(metal_sig, body):
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros(1024, dtype=np.float32)
    return metal_sig("saxpy", body, [("x", x)], [("y", y)]), x, y


def test_out_of_bounds_read(metal_sig):
    sig, x, y = _saxpy(metal_sig, "uint i = thread_position_in_grid.x; y[i] = x[i + 6];")
    with pytest.raises(OutOfBoundsError) as info:
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))
    msg = str(info.value)
    assert msg.startswith("[emu-metal kernel 'saxpy'] argument 'x' (float32[1024]): index 1024 ")
    assert "(size 1024) at thread (250,0,0) threadgroup (3,0,0)" in msg
    assert "5 further failures" in msg  # first failure + a count; the launch went on
    assert isinstance(info.value, IndexError)


def test_out_of_bounds_write_is_contained(metal_sig):
    sig, x, y = _saxpy(metal_sig,
                       "uint i = thread_position_in_grid.x; y[i] = x[i]; if (i == 7) y[i + 2000] = 1;")
    with pytest.raises(OutOfBoundsError, match=r"output 'y' \(float32\[1024\]\): index 2007 out "
                       r"of bounds \(size 1024\) at thread \(7,0,0\) threadgroup \(0,0,0\), "
                       r"body:1$"):
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))
    np.testing.assert_array_equal(y, x)  # the bad write went to a scratch slot


def test_negative_index(metal_sig):
    sig, x, y = _saxpy(metal_sig, "int i = int(thread_position_in_grid.x); y[i] = x[i - 3];")
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' .*index -3 out of bounds.*"
                       r"thread \(0,0,0\) threadgroup \(0,0,0\), body:1; 2 further failures"):
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))


def test_out_of_bounds_through_pointer_arithmetic(metal_sig):
    sig, x, y = _saxpy(metal_sig, "uint i = thread_position_in_grid.x; auto p = x + 1000; "
                                  "y[i] = p[i];")
    with pytest.raises(OutOfBoundsError, match="index 1024 out of bounds"):
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))


def test_strided_view_bounds_are_its_extent(metal_sig):
    base = np.arange(40, dtype=np.float32)
    view = base[::4]  # 10 elements, extent 37 elements of base
    y = np.zeros(10, dtype=np.float32)
    sig = metal_sig("sv", "uint i = thread_position_in_grid.x; y[i] = x[i * 4 + 4];",
                    [("x", view)], [("y", y)])
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[10\]\): index 40 out of bounds \(strided extent 37\)"):
        run_metal(sig, [view], [y], (10, 1, 1), (10, 1, 1))


def test_out_of_bounds_threadgroup_array(metal_sig):
    src = """
    threadgroup float tile[4][8];
    uint t = thread_index_in_threadgroup;
    tile[t / 8][t % 8] = x[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[t] = tile[t % 4][(t + 1) % 9];
    """
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, dtype=np.float32)
    sig = metal_sig("tile", src, [("x", x)], [("y", y)])
    with pytest.raises(OutOfBoundsError,
                       match=r"threadgroup array 'tile' \(float\[4\]\[8\]\): index 8 out of "
                             r"bounds \(size 8\) at thread \(7,0,0\)"):
        run_metal(sig, [x], [y], (32, 1, 1), (32, 1, 1))


def test_unwritten_output(metal_sig):
    sig, x, y = _saxpy(metal_sig, "uint i = thread_position_in_grid.x; if (i % 100 != 3) y[i] = x[i];")
    with pytest.raises(UnwrittenOutputError) as info:
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))
    msg = str(info.value)
    assert msg.startswith("[emu-metal kernel 'saxpy'] output 'y' (float32[1024]): 11 of 1024 "
                          "elements never written (flat indices 3, 103, 203, 303, 403, ...)")
    assert "init_value" in msg
    # with init_value the caller filled the outputs: nothing is poisoned or checked
    y[:] = 0
    run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1), init_value=0.0)
    # with checks off nothing is poisoned either
    run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1), options=EmulatorOptions(checks=False))


def test_unwritten_small_integer_output_is_confirmed(metal_sig):
    # 0xA5 is a legitimate uint8 value: written elements holding it are not reported
    y = np.zeros(64, dtype=np.uint8)
    sig = metal_sig("bytes", "uint i = thread_position_in_grid.x; if (i != 9) y[i] = 0xA5;",
                    [], [("y", y)])
    with pytest.raises(UnwrittenOutputError, match=r"1 of 64 elements never written \(flat "
                       r"indices 9\)"):
        run_metal(sig, [], [y], (64, 1, 1), (64, 1, 1))


def test_barrier_after_early_return(metal_sig):
    src = """
    uint i = thread_position_in_grid.x;
    if (i >= 40) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[i] = 1;
    """
    y = np.zeros(64, dtype=np.float32)
    sig = metal_sig("early", src, [], [("y", y)])
    with pytest.raises(BarrierDivergenceError) as info:
        run_metal(sig, [], [y], (64, 1, 1), (32, 1, 1), init_value=0.0,
                  options=EmulatorOptions(strict_barriers=True))
    msg = str(info.value)
    assert msg.startswith("[emu-metal kernel 'early'] barrier divergence in threadgroup (1,0,0):")
    assert "8 of 32 threads wait at the barrier at body:4 but 24 threads have returned" in msg


def test_threads_that_returned_count_as_arrived(metal_sig):
    # As on the GPU: the 24 threads of the second group that returned do not hold the barrier.
    src = """
    uint i = thread_position_in_grid.x;
    if (i >= 40) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[i] = 1;
    """
    y = np.zeros(64, dtype=np.float32)
    sig = metal_sig("early", src, [], [("y", y)])
    run_metal(sig, [], [y], (64, 1, 1), (32, 1, 1), init_value=0.0)
    np.testing.assert_array_equal(y, (np.arange(64) < 40).astype(np.float32))


def test_threads_at_different_barriers(metal_sig):
    src = """
    uint i = thread_position_in_grid.x;
    if (i % 2 == 0) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    } else {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    y[i] = 1;
    """
    y = np.zeros(8, dtype=np.float32)
    sig = metal_sig("twobar", src, [], [("y", y)])
    with pytest.raises(BarrierDivergenceError, match=r"threads wait at different barriers: "
                       r"thread \(0,0,0\) at body:4, thread \(1,0,0\) at body:6"):
        run_metal(sig, [], [y], (8, 1, 1), (8, 1, 1), init_value=0.0)


def test_inactive_lane_shuffle(metal_sig):
    src = """
    uint i = thread_position_in_grid.x;
    if (i >= 20) return;
    y[i] = simd_shuffle(x[i], 25);
    """
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, dtype=np.float32)
    sig = metal_sig("lane", src, [("x", x)], [("y", y)])
    with pytest.raises(InactiveLaneError, match=re.escape(
            "[emu-metal kernel 'lane'] SIMD-group function at body:4 read lane 25, which is "
            "inactive") + r".*thread \(0,0,0\) threadgroup \(0,0,0\); 19 further failures"):
        run_metal(sig, [x], [y], (32, 1, 1), (32, 1, 1), init_value=0.0)


def test_shuffle_beyond_a_partial_simd_group(metal_sig):
    x = np.arange(40, dtype=np.float32)
    y = np.zeros(40, dtype=np.float32)
    sig = metal_sig("lane2", "uint i = thread_position_in_grid.x; y[i] = simd_shuffle_xor(x[i], 8);",
                    [("x", x)], [("y", y)])
    with pytest.raises(InactiveLaneError, match=r"read lane 8, .*thread \(32,0,0\).*7 further"):
        run_metal(sig, [x], [y], (40, 1, 1), (40, 1, 1))


def test_threadgroup_memory_limit(metal_sig):
    src = "threadgroup float big[9000]; big[thread_index_in_threadgroup] = 1; y[0] = big[0];"
    y = np.zeros(1, dtype=np.float32)
    sig = metal_sig("big", src, [], [("y", y)])
    with pytest.raises(EmulationError, match="36000 bytes of shared memory per group, over the "
                       "limit of 32768 bytes"):
        run_metal(sig, [], [y], (1, 1, 1), (1, 1, 1))


def test_uninitialised_threadgroup_memory_is_poisoned(metal_sig):
    src = "threadgroup float t[4]; threadgroup int k[1]; y[0] = t[2]; z[0] = k[0];"
    y = np.zeros(1, dtype=np.float32)
    z = np.zeros(1, dtype=np.int32)
    sig = metal_sig("poison", src, [], [("y", y), ("z", z)])
    run_metal(sig, [], [y, z], (1, 1, 1), (1, 1, 1))
    assert np.isnan(y[0]) and z[0] == -1


def test_checks_off_reports_nothing(metal_sig):
    sig, x, y = _saxpy(metal_sig, "uint i = thread_position_in_grid.x; y[i] = x[i] + 1;")
    run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1), options=EmulatorOptions(checks=False))
    np.testing.assert_array_equal(y, x + 1)


def test_checks_off_from_environment(metal_sig, monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_CHECKS", "0")
    sig, x, y = _saxpy(metal_sig, "uint i = thread_position_in_grid.x; if (i) y[i] = x[i];")
    run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))  # unwritten y[0] goes unnoticed
    monkeypatch.delenv("CUNUMPY_EMULATOR_CHECKS")
    with pytest.raises(UnwrittenOutputError):
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))


def test_out_of_bounds_names_the_line_of_the_subscript(metal_sig):
    # The failing subscript's own line: in the body, or in a header helper the body calls.
    body = "uint i = thread_position_in_grid.x;\nfloat v = x[i];\ny[i] = v + x[i + 1];"
    sig, x, y = _saxpy(metal_sig, body)
    with pytest.raises(OutOfBoundsError, match=r"index 1024 out of bounds .*, body:3$"):
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))
    header = "inline float pick(const device float* p, uint i) {\n    return p[i + 2];\n}\n"
    sig = metal_sig("picked", "uint i = thread_position_in_grid.x; y[i] = pick(x, i);",
                    [("x", x)], [("y", y)], header=header)
    with pytest.raises(OutOfBoundsError, match=r"index 10(24|25) out of bounds .*, header:2(;|$)"):
        run_metal(sig, [x], [y], (1024, 1, 1), (256, 1, 1))
