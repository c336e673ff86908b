"""An MLX project's custom Metal kernel, tested on a machine without a Metal GPU.

The function ``rms_scale`` below is written for MLX alone, as a project would write it: it builds
its kernel with ``mx.fast.metal_kernel`` and calls it with MLX arrays. On Linux, MLX
(``pip install 'mlx[cpu]'``) cannot run it ("No Metal back-end"); inside
``cunumpy.testing.mlx_metal_on_cpu()`` the same, unmodified code runs on cunumpy's CPU emulator,
so the test at the bottom runs in ordinary CI.

Run: ``python examples/mlx_custom_kernel.py`` (exit status 0 when the kernel agrees with MLX's
own array operations).
"""

from __future__ import annotations

import sys

try:
    import mlx.core as mx
except ImportError:  # pragma: no cover - depends on the machine
    print("this example needs MLX: pip install 'mlx[cpu]' (Linux) or mlx (macOS)")
    sys.exit(0)

from cunumpy.testing import mlx_metal_on_cpu

# ----------------------------------------------------------------------------- project code
# One threadgroup per row: each thread sums the squares of a strided part of the row, a SIMD-group
# reduction and a threadgroup array combine the parts, then every thread scales its elements.
RMS_SCALE_SOURCE = """
    uint row = threadgroup_position_in_grid.x;
    uint tid = thread_position_in_threadgroup.x;
    uint nthreads = threads_per_threadgroup.x;
    threadgroup float partial[32];

    float acc = 0.0f;
    for (int j = tid; j < n_cols; j += nthreads) {
        float v = float(x[row * n_cols + j]);
        acc += v * v;
    }
    acc = simd_sum(acc);
    if (thread_index_in_simdgroup == 0) {
        partial[simdgroup_index_in_threadgroup] = acc;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (simdgroup_index_in_threadgroup == 0) {
        uint groups = (nthreads + 31) / 32;
        float total = thread_index_in_simdgroup < groups ? partial[thread_index_in_simdgroup] : 0;
        partial[0] = simd_sum(total);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float inv = metal::rsqrt(partial[0] / n_cols + eps);
    for (int j = tid; j < n_cols; j += nthreads) {
        out[row * n_cols + j] = T(float(x[row * n_cols + j]) * inv * float(w[j]));
    }
"""


def rms_scale(x: mx.array, w: mx.array, eps: float = 1e-5) -> mx.array:
    """RMS normalisation of each row of ``x``, scaled by ``w`` (an MLX custom kernel)."""
    kernel = mx.fast.metal_kernel(
        name="rms_scale",
        input_names=["x", "w", "n_cols", "eps"],
        output_names=["out"],
        source=RMS_SCALE_SOURCE,
    )
    rows, cols = x.shape
    threads = 64
    (out,) = kernel(
        inputs=[x, w, cols, eps],          # Python numbers: read as `n_cols` and `eps`
        template=[("T", x.dtype)],
        grid=(rows * threads, 1, 1),       # grid counts threads: one threadgroup per row
        threadgroup=(threads, 1, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
    )
    return out


# ----------------------------------------------------------------------------- the test
def test_rms_scale_matches_mlx_ops() -> None:
    key = mx.random.key(0)
    x = mx.random.normal((6, 200), key=key)
    w = mx.random.uniform(shape=(200,), key=mx.random.split(key)[0])
    with mlx_metal_on_cpu():
        got = rms_scale(x, w)
    expected = x * mx.rsqrt(mx.mean(x * x, axis=1, keepdims=True) + 1e-5) * w
    assert isinstance(got, mx.array) and got.dtype == x.dtype
    assert mx.allclose(got, expected, atol=1e-5).item(), "kernel and MLX ops disagree"


def main() -> int:
    test_rms_scale_matches_mlx_ops()
    print("rms_scale: the MLX kernel ran on the CPU emulator and agrees with MLX's own ops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
