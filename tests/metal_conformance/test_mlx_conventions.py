"""Conformance of the constructs MLX projects' kernels use (issue 12), one class per test.

Each test takes the ``metal_engine`` fixture: it runs on the CPU emulator everywhere and, with
the same code, on MLX where there is a Metal GPU (the mlx case skips cleanly elsewhere). The
references are NumPy computations, never hard-coded results.
"""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.kernels import MetalKernel, metal_kernel

RNG_SEED = 1212


def _rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


def _lane_layout(lane: int) -> tuple[int, int]:
    """Row and first column of a lane's two elements of an 8x8 SIMD-group matrix (Apple's)."""
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


# --------------------------------------------------------------------------- 0-d scalars
def test_python_scalars_are_0d_values_read_by_name(metal_engine):
    """MLX's convention: a Python int/float/bool input is read as ``n``, not ``n[0]``."""
    k = metal_kernel(
        name="affine0d", input_names=["x", "n", "d", "flip"], output_names=["y"],
        source="""
            uint i = thread_position_in_grid.x;
            float v = x[i] * n + d;
            y[i] = flip ? -v : v;
        """,
    )
    x = _rng().standard_normal(37).astype(np.float32)
    (y,) = k(inputs=[x, 3, 0.25, True], output_shapes=[x.shape], output_dtypes=[np.float32],
             grid=(37, 1, 1), threadgroup=(16, 1, 1))
    np.testing.assert_allclose(y, -(x * 3 + np.float32(0.25)), rtol=1e-6)
    text = k.kernel.metal_source(x, 3, 0.25, True, output_shapes=[x.shape],
                                 output_dtypes=[np.float32])
    assert "const constant int32_t& n" in text and "const constant float& d" in text


def test_scalar_conventions_mix_in_one_kernel(metal_engine):
    """One input read as ``a[0]`` (the spec's one-element array), another read by name."""
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] * a[0] + b;",
                    inputs=["x", "a", "b"], outputs=["y"], name="mixed_scalars")
    x = _rng().standard_normal(20).astype(np.float32)
    y = k(x, 2.0, 5, out=np.empty_like(x))
    np.testing.assert_allclose(y, x * 2 + 5, rtol=1e-6)


def test_zero_d_and_one_element_arrays_as_inputs(metal_engine):
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] + s + t[0];",
                    inputs=["x", "s", "t"], outputs=["y"], name="arr_scalars")
    x = _rng().standard_normal(9).astype(np.float32)
    s = np.array(1.5, dtype=np.float32)
    t = np.array([4.0], dtype=np.float32)
    np.testing.assert_allclose(k(x, s, t, out=np.empty_like(x)), x + 5.5, rtol=1e-6)


# --------------------------------------------------------------------------- thread_elements
FRAGMENT_MATMUL = """
    uint lane = thread_index_in_simdgroup;
    uint q = lane / 4;
    uint r = (q & 4) + (lane / 2) % 4;
    uint c = (q & 2) * 2 + (lane % 2) * 2;
    simdgroup_matrix<T, 8, 8> A, B;
    simdgroup_matrix<float, 8, 8> C = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    A.thread_elements()[0] = a[r * 8 + c];
    A.thread_elements()[1] = a[r * 8 + c + 1];
    thread auto& fb = B.thread_elements();
    fb = vec<T, 2>(b[r * 8 + c], b[r * 8 + c + 1]);
    simdgroup_multiply_accumulate(C, A, B, C);
    auto v = C.thread_elements();
    y[r * 8 + c] = v[0];
    y[r * 8 + c + 1] = v[1];
    simdgroup_store(A, a_back, 8);
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_thread_elements_interoperate_with_multiply_and_store(metal_engine, dtype):
    """Fragments written per lane, then multiplied and stored as whole matrices."""
    k = MetalKernel(FRAGMENT_MATMUL, inputs=["a", "b"], outputs=["y", "a_back"],
                    name="frag_mma", threadgroup=32)
    rng = _rng()
    a = rng.standard_normal(64).astype(dtype)
    b = rng.standard_normal(64).astype(dtype)
    y, back = k(a, b, out=(np.empty(64, np.float32), np.empty(64, dtype)), n_threads=32,
                template={"T": dtype})
    expected = a.reshape(8, 8).astype(np.float32) @ b.reshape(8, 8).astype(np.float32)
    np.testing.assert_allclose(y.reshape(8, 8), expected, rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(back, a)


def test_thread_elements_after_load_follow_the_lane_layout(metal_engine):
    k = MetalKernel(
        """
        uint lane = thread_index_in_simdgroup;
        simdgroup_float8x8 m;
        simdgroup_load(m, x, 8);
        float2 e = m.thread_elements();
        y[2 * lane] = e.x;
        y[2 * lane + 1] = e.y;
        """,
        inputs=["x"], outputs=["y"], name="frag_layout", threadgroup=32,
    )
    x = np.arange(64, dtype=np.float32)
    y = k(x, out=np.empty(64, np.float32), n_threads=32)
    expected = []
    for lane in range(32):
        r, c = _lane_layout(lane)
        expected += [x[r * 8 + c], x[r * 8 + c + 1]]
    np.testing.assert_array_equal(y, np.array(expected, np.float32))


def test_thread_elements_in_a_tiled_gemm_with_four_simdgroups(metal_engine):
    """16x16 = (16x8) (8x16): four SIMD groups, each one 8x8 tile of the result."""
    k = MetalKernel(
        """
        uint sg = simdgroup_index_in_threadgroup;
        uint lane = thread_index_in_simdgroup;
        uint tr = (sg / 2) * 8, tc = (sg % 2) * 8;
        uint q = lane / 4;
        uint r = (q & 4) + (lane / 2) % 4;
        uint c = (q & 2) * 2 + (lane % 2) * 2;
        simdgroup_float8x8 A, B, C(0.0f);
        simdgroup_load(A, a, 8, ulong2(0, tr));
        B.thread_elements() = float2(b[r * 16 + tc + c], b[r * 16 + tc + c + 1]);
        simdgroup_multiply(C, A, B);
        simdgroup_store(C, y, 16, ulong2(tc, tr));
        """,
        inputs=["a", "b"], outputs=["y"], name="frag_gemm", threadgroup=128,
    )
    rng = _rng()
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    y = k(a, b, out=np.empty((16, 16), np.float32), n_threads=128)
    np.testing.assert_allclose(y, a @ b, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- threadgroup per call
def test_threadgroup_is_taken_per_call(metal_engine):
    k = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        y[i] = threads_per_threadgroup.x * 1000 + threadgroup_position_in_grid.x;
        """,
        inputs=[], outputs=["y"], name="tg_per_call", threadgroup=4,
    )
    for tg in (4, 8, 16):
        y = k(out=np.empty(32, np.uint32), threadgroup=tg)
        np.testing.assert_array_equal(y, tg * 1000 + np.arange(32) // tg)


# --------------------------------------------------------------------------- the MLX API
def test_mlx_api_template_init_value_and_two_outputs(metal_engine):
    k = metal_kernel(
        name="scaled_sum", input_names=["x"], output_names=["y", "total"],
        source="""
            uint i = thread_position_in_grid.x;
            atomic_store_explicit(&y[i], T(x[i]) * SCALE * (NEG ? -1 : 1), memory_order_relaxed);
            atomic_fetch_add_explicit(&total[0], int(x[i]), memory_order_relaxed);
        """,
        atomic_outputs=True,
    )
    x = _rng().integers(0, 9, 50).astype(np.int32)
    y, total = k(inputs=[x], output_shapes=[x.shape, (1,)],
                 output_dtypes=[np.float32, np.int32], grid=(50, 1, 1),
                 threadgroup=(32, 1, 1), template=[("T", np.float32), ("SCALE", 3),
                                                   ("NEG", True)], init_value=7)
    np.testing.assert_array_equal(y, -3.0 * x)
    assert total.tolist() == [7 + int(x.sum())]


def test_mlx_api_strided_input_without_row_contiguous(metal_engine):
    k = metal_kernel(
        name="strided_copy", input_names=["inp"], output_names=["out"],
        source="""
            uint elem = thread_position_in_grid.x;
            out[elem] = inp[elem_to_loc(elem, inp_shape, inp_strides, inp_ndim)];
        """,
        ensure_row_contiguous=False,
    )
    base = _rng().standard_normal((6, 10)).astype(np.float32)
    view = base[::2, 1::3]
    (out,) = k(inputs=[view], output_shapes=[view.shape], output_dtypes=[np.float32],
               grid=(view.size, 1, 1), threadgroup=(8, 1, 1))
    np.testing.assert_array_equal(out, view)


def test_mlx_api_bfloat16_round_trip(metal_engine):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    k = metal_kernel(
        name="bf16_axpy", input_names=["x", "a"], output_names=["y"],
        source="uint i = thread_position_in_grid.x; y[i] = bfloat16_t(float(x[i]) * a + 1.0f);",
    )
    x = _rng().standard_normal(24).astype(bf16)
    (y,) = k(inputs=[x, 2.0], output_shapes=[x.shape], output_dtypes=[bf16],
             grid=(24, 1, 1), threadgroup=(8, 1, 1))
    assert y.dtype == bf16
    expected = (x.astype(np.float32) * 2 + 1).astype(bf16)
    np.testing.assert_array_equal(y.astype(np.float32), expected.astype(np.float32))


# --------------------------------------------------------------------------- MLX-style headers
def test_header_specialisations_per_address_space(metal_engine):
    """A trait specialised once per address space (as MLX's own headers do) compiles."""
    header = """
    template <typename P> struct elem_of;
    template <typename T> struct elem_of<device T*> { using type = T; };
    template <typename T> struct elem_of<const device T*> { using type = T; };
    template <typename T> struct elem_of<threadgroup T*> { using type = T; };
    template <typename T> struct elem_of<thread T*> { using type = T; };
    template <typename P>
    using elem_t = typename elem_of<metal::remove_addrspace_t<P>>::type;
    """
    k = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        threadgroup float tile[4];
        tile[i % 4] = x[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        using T = elem_t<const device float*>;
        using U = elem_t<threadgroup half*>;
        static_assert(sizeof(U) == 2, "threadgroup half* holds halves");
        y[i] = T(x[i]) + tile[0] * metal::bool_constant<true>::value;
        """,
        inputs=["x"], outputs=["y"], name="addr_traits", header=header, threadgroup=4,
    )
    x = _rng().standard_normal(8).astype(np.float32)
    y = k(x, out=np.empty_like(x))
    np.testing.assert_allclose(y, x + np.repeat(x[[0, 4]], 4), rtol=1e-6)


def test_header_functions_with_metal_argument_attributes(metal_engine):
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = helper(x, i);",
        inputs=["x"], outputs=["y"], name="attr_header",
        header="""
        struct Ops {
          static METAL_FUNC float run(const device float* src [[buffer(0)]],
                                      uint i [[thread_position_in_grid]]) {
            return src[i] * 3.0f;
          }
        };
        METAL_FUNC float helper(const device float* src, uint i) { return Ops::run(src, i); }
        """,
    )
    x = _rng().standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(k(x, out=np.empty_like(x)), 3 * x, rtol=1e-6)


def _steel_header() -> str:
    """MLX's steel GEMM header from the installed MLX package, includes inlined."""
    mx = pytest.importorskip("mlx.core")
    from pathlib import Path

    root = Path(mx.__file__).parent / "include"
    top = root / "mlx/backend/metal/kernels/steel/gemm/gemm.h"
    if not top.exists():
        pytest.skip("this MLX installation ships no Metal headers")
    seen: set[Path] = set()

    def inline(path: Path) -> str:
        if path in seen:
            return ""
        seen.add(path)
        lines = []
        for line in path.read_text().splitlines():
            s = line.strip()
            if s.startswith('#include "mlx/'):
                lines.append(inline(root / s.split('"')[1]))
            elif s != "#pragma once":
                lines.append(line)
        return "\n".join(lines)

    return inline(top) + "\nusing namespace mlx::steel;\n"


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_mlx_steel_gemm_header_runs(metal_engine, dtype):
    """MLX's own tiled GEMM (steel: loaders, BlockMMA on simdgroup matrices) as a header."""
    k = MetalKernel(
        """
        using gemm = GEMMKernel<T, T, 32, 32, 16, 2, 2, false, false, true, true, float>;
        threadgroup T a_tile[gemm::tgp_mem_size_a];
        threadgroup T b_tile[gemm::tgp_mem_size_b];
        const int row0 = int(threadgroup_position_in_grid.y) * 32;
        const int col0 = int(threadgroup_position_in_grid.x) * 32;
        thread typename gemm::loader_a_t load_a(a + row0 * K, K, a_tile,
            simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
        thread typename gemm::loader_b_t load_b(b + col0, N, b_tile,
            simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
        thread typename gemm::mma_t mma(simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
        for (int step = 0; step < K / 16; ++step) {
            threadgroup_barrier(mem_flags::mem_threadgroup);
            load_a.load_unsafe();
            load_b.load_unsafe();
            threadgroup_barrier(mem_flags::mem_threadgroup);
            mma.mma(a_tile, b_tile);
            load_a.next();
            load_b.next();
        }
        threadgroup_barrier(mem_flags::mem_none);
        mma.store_result(c + row0 * N + col0, N);
        """,
        inputs=["a", "b"], outputs=["c"], name="steel_gemm", header=_steel_header(),
        threadgroup=128,
    )
    rng = _rng()
    M, N, K = 64, 32, 32
    a = (rng.standard_normal((M, K)) * 0.5).astype(dtype)
    b = (rng.standard_normal((K, N)) * 0.5).astype(dtype)
    c = k(a, b, out=np.empty((M, N), dtype), n_threads=(128 * (N // 32), M // 32),
          template={"T": dtype, "K": K, "N": N})
    ref = a.astype(np.float32) @ b.astype(np.float32)
    tol = 1e-4 if dtype == np.float32 else 2e-2
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=tol, atol=tol)


def test_merged_specialisations_keep_header_line_numbers():
    from cunumpy.emulation.metal import _merge_address_space_specialisations

    text = (
        "template <typename T> struct pe;\n"
        "template <typename T>\nstruct pe<thread T*> {\n  using type = T;\n};\n"
        "template <typename T>\nstruct pe<device T*> {\n  using type = T;\n};\n"
        "template <typename T>\nstruct pe<device T**> { using type = T*; };\n"
        "int after_line_12;\n"
    )
    merged = _merge_address_space_specialisations(text)
    assert merged.count("\n") == text.count("\n")
    assert "struct pe<thread T*>" in merged and "struct pe<device T*>" not in merged
    assert "struct pe<device T**>" in merged  # another pointer depth is another type
    assert merged.splitlines()[11] == "int after_line_12;"
