"""MSL features the conformance work found missing in the emulator, added with these tests.

- ``simd_shuffle_and_fill_down/up`` and ``quad_shuffle_and_fill_down/up`` (MSL 2.4), with and
  without ``modulo``: checked against the definition (data and filling data concatenated per
  section of ``modulo`` lanes) on every engine;
- ``METAL_FUNC``, the function qualifier of Metal's standard library headers that MLX-style
  helper code uses;
- SIMD-group matrices (``simdgroup_float8x8``, ``simdgroup_half8x8``, ``simdgroup_load`` /
  ``simdgroup_store`` with origin and transpose, ``simdgroup_multiply(_accumulate)``,
  ``make_filled_simdgroup_matrix``, the diagonal constructor).
"""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation import (
    CompilerNotFoundError,
    InactiveLaneError,
    OutOfBoundsError,
    find_compiler,
)
from cunumpy.kernels import MetalKernel


def _fill_reference(data: np.ndarray, fill: np.ndarray, delta: int, modulo: int,
                    down: bool) -> np.ndarray:
    """Per section of ``modulo`` lanes: (data ++ filling data) shifted by ``delta``."""
    out = np.empty_like(data)
    for base in range(0, data.size, modulo):
        d, f = data[base:base + modulo], fill[base:base + modulo]
        if down:
            out[base:base + modulo] = np.concatenate([d, f])[delta:delta + modulo]
        else:
            out[base:base + modulo] = np.concatenate([f, d])[modulo - delta:2 * modulo - delta]
    return out


FILL_CALLS = [
    # (MSL call, delta, modulo the reference uses, down)
    ("simd_shuffle_and_fill_down(d, f, ushort(2))", 2, 32, True),
    ("simd_shuffle_and_fill_up(d, f, ushort(2))", 2, 32, False),
    ("simd_shuffle_and_fill_down(d, f, ushort(1), ushort(4))", 1, 4, True),
    ("simd_shuffle_and_fill_up(d, f, ushort(3), ushort(8))", 3, 8, False),
    ("quad_shuffle_and_fill_down(d, f, ushort(1))", 1, 4, True),
    ("quad_shuffle_and_fill_up(d, f, ushort(2))", 2, 4, False),
]


@pytest.mark.parametrize("call, delta, modulo, down", FILL_CALLS, ids=[c[0] for c in FILL_CALLS])
def test_shuffle_and_fill(metal_engine: str, call: str, delta: int, modulo: int,
                          down: bool) -> None:
    kernel = MetalKernel(
        f"""
        uint i = thread_position_in_grid.x;
        float d = x[i];
        float f = -x[i];
        y[i] = {call};
        """,
        inputs=["x"], outputs=["y"], name="shuffle_fill", threadgroup=64,
    )
    x = np.arange(1, 129, dtype=np.float32)
    y = kernel(x, out=np.empty_like(x))
    np.testing.assert_array_equal(y, _fill_reference(x, -x, delta, modulo, down))


def test_sliding_window_sum_with_shuffle_and_fill(metal_engine: str) -> None:
    """The use the functions are made for: a window over x[i .. i+R] where each SIMD group
    holds 32 consecutive values and the next 32 as filling data."""
    kernel = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        float cur = x[i];
        float next = x[i + 32];
        float s = cur;
        for (ushort k = 1; k <= R; ++k) {
            s += simd_shuffle_and_fill_down(cur, next, k);
        }
        y[i] = s;
        """,
        inputs=["x"], outputs=["y"], name="window_sum", threadgroup=64,
    )
    x = np.random.default_rng(3).random(256 + 32, dtype=np.float32)
    y = kernel(x, out=np.empty(256, np.float32), template={"R": 4})
    expected = sum(x[k:k + 256].astype(np.float64) for k in range(5))
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_shuffle_and_fill_from_a_lane_that_returned() -> None:
    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))

    kernel = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        if (i >= 40) {
            return;
        }
        y[i] = simd_shuffle_and_fill_down(x[i], 0.0f, ushort(4));
        """,
        inputs=["x"], outputs=["y"], name="fill_inactive", init_value=0.0,
    )
    x = np.arange(64, dtype=np.float32)
    # thread 36 is lane 4 of the second SIMD group; it reads lane 8 of that group (thread 40)
    with pytest.raises(InactiveLaneError, match=r"kernel 'fill_inactive'\] SIMD-group function at "
                       r"body:6 read lane 8, which is inactive.* at thread \(36,0,0\) "
                       r"threadgroup \(0,0,0\); 3 further failures"):
        kernel(x, out=np.empty_like(x), n_threads=64, engine="emulator")


def test_metal_func_helpers(metal_engine: str) -> None:
    kernel = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = squared_norm(x, i);",
        inputs=["x"], outputs=["y"], name="metal_func",
        header="""
template <typename T>
METAL_FUNC T square(T v) { return v * v; }

METAL_FUNC float squared_norm(const device float* p, uint i) {
    return square(p[2 * i]) + square(p[2 * i + 1]);
}
""",
    )
    x = np.arange(16, dtype=np.float32)
    y = kernel(x, out=np.empty(8, np.float32))
    np.testing.assert_array_equal(y, (x.reshape(8, 2) ** 2).sum(axis=1))


SIMDGROUP_MATRIX_SRC = """
    threadgroup float tile[16 * 16];
    uint lane = thread_index_in_simdgroup;
    for (uint k = lane; k < 256; k += 32) {
        tile[k] = a[k];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 lower_right;
    simdgroup_float8x8 upper_right_t;
    simdgroup_half8x8 h;
    simdgroup_load(lower_right, tile, 16, ulong2(8, 8));
    simdgroup_load(upper_right_t, tile, 16, ulong2(8, 0), true);
    simdgroup_load(h, b, 8);
    simdgroup_float8x8 hf;
    simdgroup_float8x8 eye = simdgroup_float8x8(2.0f);
    simdgroup_multiply(hf, eye, lower_right);
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
    simdgroup_multiply_accumulate(acc, lower_right, upper_right_t, acc);
    simdgroup_store(acc, c, 16);
    simdgroup_store(hf, c, 16, ulong2(8, 0));
    simdgroup_store(lower_right, c, 16, ulong2(0, 8), true);
    simdgroup_half8x8 h2;
    simdgroup_multiply(h2, h, h);
    simdgroup_store(h2, c_half, 8);
"""


def test_simdgroup_matrix_operations(metal_engine: str) -> None:
    kernel = MetalKernel(SIMDGROUP_MATRIX_SRC, inputs=["a", "b"], outputs=["c", "c_half"],
                         name="sgm_ops", threadgroup=32, init_value=0.0)
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    b = rng.uniform(-1, 1, (8, 8)).astype(np.float16)
    c = np.empty((16, 16), np.float32)
    c_half = np.empty((8, 8), np.float16)
    kernel(a, b, out=(c, c_half), n_threads=32)
    lr = a[8:, 8:].astype(np.float64)
    urt = a[:8, 8:].T.astype(np.float64)
    np.testing.assert_allclose(c[:8, :8], lr @ urt + 1.0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c[:8, 8:], 2.0 * lr, rtol=1e-6)
    np.testing.assert_array_equal(c[8:, :8], a[8:, 8:].T)
    assert (c[8:, 8:] == 0).all()  # never stored: init_value
    h = b.astype(np.float64)
    np.testing.assert_allclose(c_half, h @ h, rtol=2e-3, atol=2e-3)


def test_simdgroup_store_out_of_bounds_is_reported() -> None:
    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))
    kernel = MetalKernel(
        """
        simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
        simdgroup_store(m, y, 8, ulong2(0, 4));   // rows 4..11 of an 8-row output
        """,
        inputs=[], outputs=["y"], name="sgm_oob", threadgroup=32, init_value=0.0,
    )
    with pytest.raises(OutOfBoundsError, match=r"kernel 'sgm_oob'\] output 'y' \(float32\[8,8\]\): "
                       r"index 64 out of bounds \(size 64\) at thread \(0,0,0\)"):
        kernel(out=np.empty((8, 8), np.float32), n_threads=32, engine="emulator")
