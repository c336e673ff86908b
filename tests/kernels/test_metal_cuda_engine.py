"""The ``cuda`` MetalKernel engine on an NVIDIA GPU: arrays, transfers, Metal's launch rules,
errors, dispatch. Skipped without a GPU (``CUNUMPY_REQUIRE_CUDA=1`` makes that a failure).

The Metal conformance suite, the spec examples and ``tests/kernels/test_metal_kernel.py`` also run
on this engine, through the ``cuda`` case of the ``metal_engine`` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.emulation.errors import KernelCompileError
from cunumpy.kernels import Kernel, MetalKernel

pytestmark = pytest.mark.requires_gpu

SCALE = "uint i = thread_position_in_grid.x; if (i < x_shape[0]) y[i] = a[0] * x[i];"


def _cupy():
    import cupy

    return cupy


def test_numpy_in_and_out_are_counted() -> None:
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="scale_np")
    x = np.arange(1000, dtype=np.float32)
    y = np.empty_like(x)
    with xp.profiling.count_transfers() as c:
        k(x, 2.0, out=y, engine="cuda")
    np.testing.assert_array_equal(y, 2 * x)
    assert c.to_device == 2 and c.to_host == 1  # x and a (by value), y


def test_cupy_arrays_in_place_and_resident_outputs() -> None:
    cupy = _cupy()
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="scale_dev")
    x = cupy.arange(5000, dtype=cupy.float32)
    a = cupy.asarray([3.0], dtype=cupy.float32)
    with xp.profiling.count_transfers() as c:
        y = k(x, a, output_shapes=[x.shape], output_dtypes=[np.float32], engine="cuda")
        out = cupy.empty_like(x)
        k(x, a, out=out, engine="cuda")
    assert isinstance(y, cupy.ndarray)
    assert c.to_device == 0 and c.to_host == 0
    cupy.testing.assert_array_equal(y, 3 * x)
    cupy.testing.assert_array_equal(out, 3 * x)


def test_edge_threadgroups_are_smaller_and_simd_groups_follow_metal() -> None:
    """grid (37, 5) in threadgroups of (16, 4): the last column of groups is 5 wide, the last row
    1 high; SIMD lanes count over the group's own width, as on Metal and the emulator."""
    src = """
    uint2 p = thread_position_in_grid.xy;
    uint w = threads_per_grid.x;
    uint k = p.y * w + p.x;
    tpt[k] = threads_per_threadgroup.x * 100 + threads_per_threadgroup.y;
    lane[k] = thread_index_in_simdgroup + 100 * simdgroup_index_in_threadgroup;
    sum[k] = simd_sum(1u);
    """
    k = MetalKernel(src, inputs=[], outputs=["tpt", "lane", "sum"], threadgroup=(16, 4, 1),
                    name="edges")
    outs = [np.zeros(37 * 5, np.uint32) for _ in range(3)]
    k(out=tuple(outs), n_threads=(37, 5), engine="cuda")
    ref = [np.zeros(37 * 5, np.uint32) for _ in range(3)]
    for y in range(5):
        for x in range(37):
            gx, gy = min(16, 37 - 16 * (x // 16)), min(4, 5 - 4 * (y // 4))
            lin = x % 16 + (y % 4) * gx
            ref[0][y * 37 + x] = gx * 100 + gy
            ref[1][y * 37 + x] = lin % 32 + 100 * (lin // 32)
            ref[2][y * 37 + x] = min(32, gx * gy - 32 * (lin // 32))
    for got, want in zip(outs, ref):
        np.testing.assert_array_equal(got, want)


def test_compile_errors_point_at_the_body() -> None:
    k = MetalKernel("uint i = thread_position_in_grid.x;\ny[i] = undefined_name;",
                    inputs=[], outputs=["y"], name="broken")
    with pytest.raises(KernelCompileError, match=r"body:2"):
        k(out=np.zeros(4, np.float32), engine="cuda")


def test_float64_policy_matches_the_other_engines() -> None:
    cupy = _cupy()
    k = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="f64")
    with pytest.raises(TypeError, match="float64"):
        k(cupy.zeros(8), 1.0, output_shapes=[(8,)], output_dtypes=[np.float32], engine="cuda")
    kc = MetalKernel(SCALE, inputs=["x", "a"], outputs=["y"], name="f64c", float64="cast")
    y = np.zeros(8)
    kc(np.arange(8.0), 2.0, out=y, engine="cuda")
    np.testing.assert_allclose(y, 2 * np.arange(8.0))


def test_kernel_without_cuda_port_runs_metal_port_on_cupy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cupy = _cupy()

    def host(x, a, y):
        y[...] = a * x

    metal = MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
                        inputs=["x", "a"], outputs=["y"], name="disp")
    kern = Kernel(host, metal=metal, missing="raise")
    x = cupy.arange(64, dtype=cupy.float32)
    y = cupy.zeros_like(x)
    monkeypatch.setenv("CUNUMPY_METAL_ON_CUDA", "1")
    assert kern.which(x, 2.0, y) == "metal"
    kern(x, np.float32(2.0), y)
    cupy.testing.assert_array_equal(y, 2 * x)


def test_assert_kernels_agree_on_the_cuda_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    from cunumpy.testing import assert_kernels_agree

    def host(x, y):
        y[...] = np.sqrt(x) + 1

    metal = MetalKernel("uint i = thread_position_in_grid.x; y[i] = sqrt(x[i]) + 1.0f;",
                        inputs=["x"], outputs=["y"], name="agree")
    kern = Kernel(host, metal=metal)
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "cuda")

    def make_args(backend, seed):
        rng = np.random.default_rng(seed)
        return rng.random(300, dtype=np.float32), np.zeros(300, np.float32)

    assert assert_kernels_agree(kern, make_args, ports=["metal"]) == {"metal": "metal-cuda"}


def test_repeated_calls_reuse_a_plan_and_follow_every_change() -> None:
    """The cached launch plan of repeated CuPy calls: new values, templates, shapes and an
    output that overlaps an input all give the full path's results."""
    cupy = _cupy()
    k = MetalKernel("uint i = thread_position_in_grid.x; y[i] = x[i] * a + T(N);",
                    inputs=["x", "a"], outputs=["y"], name="plan")
    x = cupy.arange(100, dtype=cupy.float32)
    y = cupy.empty_like(x)
    for a, n in ((2.0, 1), (3.0, 1), (-0.0, 2), (0.0, 2)):
        k(x, a, out=y, template={"T": np.float32, "N": n}, engine="cuda")
        cupy.testing.assert_array_equal(y, x * np.float32(a) + n)
    x2 = cupy.arange(37, dtype=cupy.float32)
    y2 = k(x2, 1.0, output_shapes=[(37,)], output_dtypes=[np.float32],
           template={"T": np.float32, "N": 0}, engine="cuda")
    cupy.testing.assert_array_equal(y2, x2)
    k(x2, 2.0, out=x2, template={"T": np.float32, "N": 0}, engine="cuda")  # out is an input
    cupy.testing.assert_array_equal(x2, 2 * cupy.arange(37, dtype=cupy.float32))


def test_mlx_style_api_on_the_cuda_engine() -> None:
    """``cunumpy.kernels.metal_kernel`` (MLX's call convention) runs on this engine too."""
    from cunumpy.kernels import metal_kernel

    k = metal_kernel("mlx_style", ["x"], ["y"],
                     "uint i = thread_position_in_grid.x; y[i] = x[i] + 1.0f;")
    k.engine = "cuda"
    (y,) = k(inputs=[np.arange(16, dtype=np.float32)], output_shapes=[(16,)],
             output_dtypes=[np.float32], grid=(16, 1, 1), threadgroup=(16, 1, 1))
    np.testing.assert_array_equal(y, np.arange(16, dtype=np.float32) + 1)


BF16 = """
uint i = thread_position_in_grid.x;
float v = float(x[i]) * s[0] + 0.25f;
y[i] = bfloat16_t(v);
z[i] = as_type<ushort>(y[i]);
"""


def test_bfloat16_arrays_give_the_emulator_bits() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = ml_dtypes.bfloat16
    k = MetalKernel(BF16, inputs=["x", "s"], outputs=["y", "z"], name="bf16_bits")
    x = np.linspace(-3, 3, 1000).astype(bf)
    got = (np.empty(1000, bf), np.empty(1000, np.uint16))
    want = (np.empty(1000, bf), np.empty(1000, np.uint16))
    k(x, 1.5, out=got, engine="cuda")  # NumPy bfloat16 in and out: uint16 on the device
    k(x, 1.5, out=want, engine="emulator")
    np.testing.assert_array_equal(got[0].view(np.uint16), want[0].view(np.uint16))
    np.testing.assert_array_equal(got[1], want[1])
    dev = k(x, 1.5, output_shapes=[x.shape, x.shape], output_dtypes=[bf, np.uint16],
            engine="cuda")
    assert dev[0].dtype == np.uint16  # a resident bfloat16 output is its uint16 bits
    np.testing.assert_array_equal(_cupy().asnumpy(dev[0]), want[0].view(np.uint16))
