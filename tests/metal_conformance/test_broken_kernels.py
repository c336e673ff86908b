"""Every check of the Metal emulator, triggered by a realistic kernel with a realistic bug.

Each kernel is a conformance kernel (or a close relative) with one mistake a Metal programmer
makes: a stencil without its bounds guard, a store without its guard on a rounded-up grid, a halo
without its periodic wrap, a threadgroup array one element short, a grid rounded down, a barrier
inside a branch, a SIMD shuffle after an early return, a tile too big for threadgroup memory.
Each test asserts the error class and that the message names the engine and kernel, the buffer
or threadgroup array, the index and the thread (group) that went wrong. These run on the
emulator only: a GPU reports none of this.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from cunumpy.emulation import (
    BarrierDivergenceError,
    CompilerNotFoundError,
    EmulationError,
    InactiveLaneError,
    OutOfBoundsError,
    UnwrittenOutputError,
    find_compiler,
)
from cunumpy.kernels import MetalKernel

from .cases import CASES

try:
    find_compiler()
except CompilerNotFoundError as _exc:  # pragma: no cover - depends on the machine
    pytest.skip(str(_exc), allow_module_level=True)

EMU = "emulator"


@pytest.fixture(autouse=True)
def _other_checks_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # These kernels show the other checks; some of their bugs also make races (a store past a
    # row's end lands in the next row), which race checking would report first.
    monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "0")


def _case(name: str):
    return next(c for c in CASES if c.name == name)


def _source_without(name: str, old: str, new: str) -> str:
    """The source of conformance case ``name`` with one fragment replaced (the bug)."""
    source = _case(name).source
    assert old in source, (name, old)
    return source.replace(old, new, 1)


def _body_line(source: str, fragment: str) -> int:
    """1-based line of ``fragment`` in a body, as the emulator numbers it (``body:N``)."""
    for n, line in enumerate(source.splitlines(), start=1):
        if fragment in line:
            return n
    raise AssertionError(fragment)


# --------------------------------------------------------------------------- out of bounds
def test_stencil_without_upper_guard_reads_past_the_end() -> None:
    stencil = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        if (i > 0) {
            d2u[i] = u[i - 1] - 2.0f * u[i] + u[i + 1];   // missing: i + 1 < n
        } else {
            d2u[i] = 0.0f;
        }
        """,
        inputs=["u"], outputs=["d2u"], name="stencil_no_guard",
    )
    u = np.linspace(0, 1, 1000, dtype=np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        stencil(u, out=np.empty_like(u), engine=EMU)
    assert str(info.value) == (
        "[emu-metal kernel 'stencil_no_guard'] argument 'u' (float32[1000]): index 1000 out of "
        "bounds (size 1000) at thread (231,0,0) threadgroup (3,0,0), body:4"
    )
    assert isinstance(info.value, IndexError)


def test_tiled_matmul_without_store_guard_writes_past_the_end() -> None:
    case = _case("matmul_tiled")
    source = _source_without(
        "matmul_tiled",
        "    if (row < uint(M) && col < uint(N)) {\n        c[row * N + col] = acc;\n    }",
        "    c[row * N + col] = acc;   // missing: the guard of the rounded-up grid",
    )
    kernel = MetalKernel(source, **{**case.kernel_kwargs(), "name": "matmul_no_store_guard"})
    a = np.ones((50, 45), np.float32)
    b = np.ones((45, 37), np.float32)
    c = np.zeros((50, 37), np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        kernel(a, b, out=c, n_threads=(48, 64), template=case.template, engine=EMU)
    msg = str(info.value)
    # Row 50 is the first row past M = 50; its first element is flat index 50 * 37 = 1850. It
    # belongs to threadgroup (0,3) (rows 48-63), thread (0,2) of that group.
    assert msg.startswith(
        "[emu-metal kernel 'matmul_no_store_guard'] output 'c' (float32[50,37]): index 1850 "
        "out of bounds (size 1850) at thread (0,2,0) threadgroup (0,3,0), "
        f"body:{_body_line(source, 'missing: the guard')}; "
    )
    assert re.search(r"; \d+ further failures?", msg)


def test_halo_without_periodic_wrap_reads_a_negative_index() -> None:
    source = _source_without(
        "diffusion_1d_halo",
        "s[0] = u[(i + n - 1) % n];",
        "s[0] = u[int(i) - 1];   // missing: the periodic wrap",
    )
    kernel = MetalKernel(source, inputs=["u", "alpha"], outputs=["u_next"],
                         name="diffusion_no_wrap")
    u = np.ones(1000, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        kernel(u, 0.2, out=np.empty_like(u), engine=EMU)
    assert str(info.value) == (
        "[emu-metal kernel 'diffusion_no_wrap'] argument 'u' (float32[1000]): index -1 out of "
        "bounds (size 1000) at thread (0,0,0) threadgroup (0,0,0), "
        f"body:{_body_line(source, 'missing: the periodic wrap')}"
    )


def test_halo_array_one_element_short() -> None:
    source = _source_without(
        "diffusion_1d_halo",
        "threadgroup float s[256 + 2];",
        "threadgroup float s[256 + 1];   // one halo cell short",
    )
    kernel = MetalKernel(source, inputs=["u", "alpha"], outputs=["u_next"],
                         name="diffusion_short_halo")
    u = np.ones(1000, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        kernel(u, 0.2, out=np.empty_like(u), engine=EMU)
    msg = str(info.value)
    # Thread 255 of each full group writes the right halo s[257]; the partial last group (232
    # threads) writes it at s[233], inside the array. Reads of s[l + 2] by thread 255 fail too.
    assert msg.startswith(
        "[emu-metal kernel 'diffusion_short_halo'] threadgroup array 's' (float[256+1]): "
        "index 257 out of bounds (size 257) at thread (255,0,0) threadgroup (0,0,0), "
        f"body:{_body_line(source, 's[l + 2] = u[(i + 1) % n];')}; "
    )
    assert "5 further failures" in msg


# --------------------------------------------------------------------------- unwritten output
def test_grid_rounded_down_leaves_the_last_partial_sum_unwritten() -> None:
    case = _case("tg_tree_sum")
    kernel = MetalKernel(case.source, **{**case.kernel_kwargs(), "name": "tree_sum_short_grid"})
    x = np.ones(5000, np.float32)
    sums = np.zeros(20, np.float32)
    with pytest.raises(UnwrittenOutputError) as info:
        # 5000 // 256 * 256 threads: the grid is rounded down, group 19 never runs
        kernel(x, 5000, out=sums, n_threads=(5000 // 256) * 256, engine=EMU)
    msg = str(info.value)
    assert msg.startswith(
        "[emu-metal kernel 'tree_sum_short_grid'] output 'sums' (float32[20]): 1 of 20 elements "
        "never written (flat indices 19)"
    )
    assert "init_value" in msg  # says what to do instead


# --------------------------------------------------------------------------- barriers
def test_barrier_inside_a_branch() -> None:
    source = """
    threadgroup float partial[256];
    uint tid = thread_index_in_threadgroup;
    partial[tid] = x[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint stride = 128; stride >= 32; stride >>= 1) {
        if (tid < stride) {
            partial[tid] += partial[tid + stride];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid < 16) {
        partial[tid] += partial[tid + 16];
        threadgroup_barrier(mem_flags::mem_threadgroup);   // only 16 threads get here
        if (tid == 0) {
            float s = 0.0f;
            for (uint k = 0; k < 16; ++k) {
                s += partial[k];
            }
            sums[threadgroup_position_in_grid.x] = s;
        }
    }
    """
    kernel = MetalKernel(source, inputs=["x"], outputs=["sums"], name="reduce_branch_barrier")
    x = np.ones(1024, np.float32)
    with pytest.raises(BarrierDivergenceError) as info:
        kernel(x, out=np.zeros(4, np.float32), n_threads=1024, engine=EMU)
    line = _body_line(source, "only 16 threads get here")
    msg = str(info.value)
    assert msg.startswith(
        "[emu-metal kernel 'reduce_branch_barrier'] barrier divergence in threadgroup (0,0,0):"
    )
    assert f"16 of 256 threads wait at the barrier at body:{line}" in msg
    assert "but 240 threads have returned (first: thread (16,0,0))" in msg


# --------------------------------------------------------------------------- SIMD lanes
def test_simd_shuffle_from_a_lane_that_returned_early() -> None:
    source = """
    uint i = thread_position_in_grid.x;
    if (i >= uint(n[0])) {
        return;
    }
    float v = u[i];
    float right = simd_shuffle_down(v, 1);   // lane of i + 1: returned when i + 1 == n
    if (thread_index_in_simdgroup == 31) {
        right = u[i + 1 < uint(n[0]) ? i + 1 : i];
    }
    du[i] = right - v;
    """
    # init_value: the threads past n write nothing, by design
    kernel = MetalKernel(source, inputs=["u", "n"], outputs=["du"], name="forward_difference",
                         init_value=0.0)
    u = np.arange(1000, dtype=np.float32)
    du = np.empty(1000, np.float32)
    with pytest.raises(InactiveLaneError) as info:
        kernel(u, 1000, out=du, n_threads=1024, engine=EMU)
    line = _body_line(source, "simd_shuffle_down")
    msg = str(info.value)
    # Thread 999 (lane 7 of its SIMD group, thread 231 of group 3) reads lane 8: thread 1000.
    assert msg.startswith(
        f"[emu-metal kernel 'forward_difference'] SIMD-group function at body:{line} read lane "
        "8, which is inactive"
    )
    assert "thread (231,0,0) threadgroup (3,0,0)" in msg


# --------------------------------------------------------------------------- threadgroup memory
def test_row_cache_over_the_threadgroup_memory_limit() -> None:
    source = """
    threadgroup float row_cache[8192 + 32];   // 32896 bytes: over Metal's 32 KiB
    uint row = threadgroup_position_in_grid.x;
    uint lid = thread_index_in_threadgroup;
    for (uint j = lid; j < 8192; j += threads_per_threadgroup.x) {
        row_cache[j] = x[row * 8192 + j];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint j = lid; j < 8192; j += threads_per_threadgroup.x) {
        y[row * 8192 + j] = row_cache[8191 - j];
    }
    """
    kernel = MetalKernel(source, inputs=["x"], outputs=["y"], name="row_cache_too_big")
    x = np.ones((2, 8192), np.float32)
    with pytest.raises(EmulationError) as info:
        kernel(x, out=np.empty_like(x), n_threads=2 * 256, engine=EMU)
    msg = str(info.value)
    assert msg.startswith("[emu-metal kernel 'row_cache_too_big']")
    assert "32896 bytes of shared memory per group, over the limit of 32768 bytes" in msg


# ------------------------------------------------------------- pointers declared in the body
def test_row_pointer_declared_from_a_buffer_keeps_its_bounds() -> None:
    from cunumpy.emulation import EmulatorOptions

    # MLX style: a row pointer, then an off-by-one loop bound (<= instead of <). The last
    # row's thread reads x[rows * L], one past the end. Isolated: the read must not crash pytest.
    kernel = MetalKernel(
        """
        uint r = thread_position_in_grid.x;
        const device float* row = x + r * L;
        float s = 0.0f;
        for (uint j = 0; j <= uint(L); ++j) {
            s += row[j];
        }
        y[r] = s;
        """,
        inputs=["x"], outputs=["y"], name="row_sum_off_by_one",
        emulator_options=EmulatorOptions(isolated=True),
    )
    x = np.ones((8, 16), np.float32)
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[8,16\]\): index 128 "):
        kernel(x, out=np.empty(8, np.float32), template={"L": 16}, engine=EMU)
