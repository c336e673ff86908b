"""The PyTorch drop-in on kernels written the way PyTorch's own MPS kernels are (our own code):
c10/metal headers (random.h's Philox, reduction_utils.h's simd_sum, error.h's reports),
templates registered per dtype with ``host_name``, half and bfloat tensors, views at a storage
offset, lists of floats, and ``[[max_total_threads_per_threadgroup]]`` setting the default
group size, as PyTorch's tests of ``torch.mps.compile_shader`` exercise them."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch's CPU wheel (torch==2.13.0+cpu)")

SOURCE = r"""
#include <c10/metal/error.h>
#include <c10/metal/random.h>
#include <c10/metal/reduction_utils.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;

kernel void philox(device uint4* out, constant long& seed, uint i [[thread_position_in_grid]]) {
    out[i] = c10::metal::philox4::rand(seed, i);
}

template <typename T>
kernel void clamp_scale(device T* out, constant T* x, constant float& lo, constant float& hi,
                        constant float* scale, uint i [[thread_position_in_grid]]) {
    out[i] = static_cast<T>(clamp(float(x[i]) * scale[i % 2], lo, hi));
}
#define REGISTER_CLAMP(T)                                                          \
  template [[host_name("clamp_scale_" #T)]] kernel void clamp_scale<T>(            \
      device T*, constant T*, constant float&, constant float&, constant float*, uint);
REGISTER_CLAMP(float)
REGISTER_CLAMP(half)
REGISTER_CLAMP(bfloat)

[[max_total_threads_per_threadgroup(128)]]
kernel void row_sum(device float* out, constant float* x, constant uint& n,
                    uint row [[threadgroup_position_in_grid]],
                    uint t [[thread_position_in_threadgroup]],
                    uint tg [[threads_per_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float partial[32];
    float acc = 0;
    for (uint k = t; k < n; k += tg) acc += x[row * n + k];
    acc = c10::metal::simd_sum(acc);
    if (lane == 0) partial[sg] = acc;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0) {
        float s = 0;
        for (uint j = 0; j < (tg + 31) / 32; ++j) s += partial[j];
        out[row] = s + float(tg) * 1000;
    }
}

kernel void scatter_checked(device float* out, constant long* idx, constant long& n,
                            device c10::metal::ErrorMessages* errors,
                            uint i [[thread_position_in_grid]]) {
    const long j = idx[i];
    if (j < 0 || j >= n) {
        TORCH_REPORT_ERROR(errors, "index ", j, " is out of bounds for size ", n);
        return;
    }
    out[j] = float(i);
}
"""

SA, SB = 0xD2511F53, 0xCD9E8D57
KEY_STEP = (0x9E3779B9, 0xBB67AE85)
M32 = 0xFFFFFFFF


def philox_reference(seed: int, index: int) -> tuple[int, int, int, int]:
    """Philox-4x32 with PyTorch's conventions: counter (0, 0, hi(index), lo(index)), key
    (hi(seed), lo(seed)), nine rounds (``multiple_rounds(..., 10)`` runs ``rounds - 1``)."""
    x, y, z, w = 0, 0, (index >> 32) & M32, index & M32
    k0, k1 = (seed >> 32) & M32, seed & M32
    for _ in range(9):
        p0, p1 = SA * x, SB * z
        x, y, z, w = ((p1 >> 32) ^ y ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ w ^ k1) & M32, p0 & M32
        k0, k1 = (k0 + KEY_STEP[0]) & M32, (k1 + KEY_STEP[1]) & M32
    return x, y, z, w


@pytest.fixture(scope="module")
def lib():
    from cunumpy.testing import torch_mps_on_cpu

    with torch_mps_on_cpu():
        yield torch.mps.compile_shader(SOURCE)


def test_philox_of_c10_random_h(lib):
    if not torch.__version__.startswith("2.13."):
        # The reference follows torch 2.13's c10/metal/random.h (its nine rounds); the kernel
        # runs the header of the torch installed, which another release may change.
        pytest.skip(f"philox_reference is written from torch 2.13's header, not {torch.__version__}")
    out = torch.zeros(16, 4, dtype=torch.int32)
    seed = 0x1234_5678_9ABC
    lib.philox(out, seed, threads=16)
    got = out.numpy().view(np.uint32).tolist()
    assert got == [list(philox_reference(seed, i)) for i in range(16)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_dtype_registered_templates_and_views(lib, dtype):
    name = {torch.float32: "float", torch.float16: "half", torch.bfloat16: "bfloat"}[dtype]
    base = torch.linspace(-3, 3, 13, dtype=dtype)
    x = base[1:]                       # a view: binds its storage at offset 1
    out = torch.zeros(12, dtype=dtype)
    getattr(lib, f"clamp_scale_{name}")(out, x, -1.0, 2.0, [0.5, 2.0])
    scale = torch.tensor([0.5, 2.0] * 6)
    want = torch.clamp(x.float() * scale, -1.0, 2.0).to(dtype)
    assert torch.equal(out, want)
    assert torch.equal(base[1:], x)    # the input is left as it was


def test_max_total_threads_sets_the_default_group(lib):
    k = lib.row_sum
    assert k.max_threads_per_threadgroup == 128
    rows, n = 3, 300
    x = torch.arange(rows * n, dtype=torch.float32).reshape(rows, n) / 64
    out = torch.zeros(rows)
    k(out, x, n, threads=rows * 128)   # default group_size: min(threads, 128): one row each
    want = x.double().sum(dim=1) + 128 * 1000
    assert torch.allclose(out.double(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="exceeds 128"):
        k(out, x, n, threads=rows * 256, group_size=256)


def test_errors_reported_through_c10_error_h(lib):
    out = torch.zeros(4)
    lib.scatter_checked(out, [3, 1, 0, 2], 4, error_buf_idx=3)  # PyTorch binds the buffer
    assert out.tolist() == [2, 1, 3, 0]
    with pytest.raises(RuntimeError, match="scatter_checked: index 7 is out of bounds for size 4"):
        lib.scatter_checked(out, [3, 7, 0, 2], 4, error_buf_idx=3)
