"""MSL features the conformance work found missing in the emulator, added with these tests.

- ``simd_shuffle_and_fill_down/up`` and ``quad_shuffle_and_fill_down/up`` (MSL 2.4), with and
  without ``modulo``: checked against the definition (data and filling data concatenated per
  section of ``modulo`` lanes) on every engine;
- ``METAL_FUNC``, the function qualifier of Metal's standard library headers that MLX-style
  helper code uses;
- SIMD-group matrices (``simdgroup_float8x8``, ``simdgroup_half8x8``, ``simdgroup_load`` /
  ``simdgroup_store`` with origin and transpose, ``simdgroup_multiply(_accumulate)``,
  ``make_filled_simdgroup_matrix``, the diagonal constructor);
- matrix types (``float2x2`` ... ``float4x4``, ``half3x3``, non-square ``float2x3`` ...):
  constructors, ``m[c]`` columns, matrix-vector and matrix-matrix products, ``transpose``,
  ``determinant``.
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


MATRIX_SRC = """
    uint i = thread_position_in_grid.x;
    const device float* p = m + 16 * i;
    float4x4 A = float4x4(float4(p[0], p[1], p[2], p[3]), float4(p[4], p[5], p[6], p[7]),
                          float4(p[8], p[9], p[10], p[11]), float4(p[12], p[13], p[14], p[15]));
    float3x3 B = float3x3(p[0], p[1], p[2], p[4], p[5], p[6], p[8], p[9], p[10]);
    float2x2 D = float2x2(p[0], p[1], p[4], p[5]);
    float2x3 N = float2x3(B[0], B[1]);           // 2 columns of 3
    float3x2 T = transpose(N);                   // 3 columns of 2
    float4 v = float4(1.0f, -2.0f, 0.5f, 3.0f);
    float4 Av = A * v;
    float4 vA = v * A;
    float3 Bv = B * v.xyz;
    float2x2 TN = T * N;                         // (2x3)^T (2x3) -> 2x2
    float3x3 BB = B * B + float3x3(1.0f);
    BB *= 0.5f;
    half3x3 H = half3x3(B);
    uint o = 32 * i;
    for (int k = 0; k < 4; ++k) { out[o + k] = Av[k]; out[o + 4 + k] = vA[k]; }
    for (int k = 0; k < 3; ++k) { out[o + 8 + k] = Bv[k]; }
    out[o + 11] = determinant(D);
    out[o + 12] = determinant(B);
    out[o + 13] = determinant(A);
    for (int c = 0; c < 2; ++c) { out[o + 14 + 2 * c] = TN[c][0]; out[o + 15 + 2 * c] = TN[c][1]; }
    for (int c = 0; c < 3; ++c) {
        for (int r = 0; r < 3; ++r) { out[o + 18 + 3 * c + r] = BB[c][r]; }
    }
    out[o + 27] = float(H[2][1]);
    out[o + 28] = transpose(A)[1][3];
    out[o + 29] = 0.0f;
    out[o + 30] = 0.0f;
    out[o + 31] = 0.0f;
"""


def test_matrix_types(metal_engine: str) -> None:
    kernel = MetalKernel(MATRIX_SRC, inputs=["m"], outputs=["out"], name="matrix_types",
                         header="#include <metal_matrix>\n", threadgroup=8)
    rng = np.random.default_rng(11)
    m = rng.uniform(-1, 1, (10, 16)).astype(np.float32)
    out = kernel(m, out=np.empty((10, 32), np.float32), n_threads=10)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    for i in range(10):
        cols = m[i].astype(np.float64).reshape(4, 4)  # row k of cols = column k of A
        a = cols.T  # the matrix with those columns
        b = a[:3, :3]
        n = b[:, :2]
        expected = np.concatenate([
            a @ v, v @ a, b @ v[:3], [np.linalg.det(a[:2, :2]), np.linalg.det(b),
                                      np.linalg.det(a)],
            (n.T @ n).T.reshape(-1), ((b @ b + np.eye(3)) * 0.5).T.reshape(-1),
            [b[1, 2], a.T[3, 1], 0, 0, 0],
        ])
        np.testing.assert_allclose(out[i], expected, rtol=2e-3, atol=2e-4, err_msg=f"row {i}")
