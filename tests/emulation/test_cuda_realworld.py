"""Error paths and options of the CUDA emulator for constructs found in public kernels (issue 11):
undefined behaviour, refused features, cooperative-group misuse, user typedefs, includes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cunumpy.emulation
from cunumpy.emulation import (
    EmulationError,
    EmulatorOptions,
    InactiveLaneError,
    OutOfBoundsError,
    UndefinedBehaviorError,
    UndefinedBehaviorWarning,
    emulate_cuda_kernel,
)
from cunumpy.emulation._cuda_names import rename_user_typedefs
from cunumpy.kernels import CudaKernel


def K(source: str, name: str | None = None, **kw) -> CudaKernel:
    return CudaKernel(source, name, engine="emulator", **kw)


# ---------------------------------------------------------------------------------------------
# Undefined behaviour
# ---------------------------------------------------------------------------------------------

# A block reduction whose last step passes a ballot of the lanes that hold data as the mask, and
# lets every lane of warp 0 call the shuffle: lanes read lanes that the mask leaves out.
BALLOT_REDUCTION = r"""
template <class T>
__device__ T warp_sum(unsigned int mask, T v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_down_sync(mask, v, offset);
  return v;
}
extern "C" __global__ void ballot_reduce(const float* x, float* out) {
  __shared__ float s[32];
  unsigned tid = threadIdx.x;
  float v = warp_sum<float>(0xffffffffu, x[blockIdx.x * blockDim.x + tid]);
  if ((tid & 31) == 0) s[tid / 32] = v;
  __syncthreads();
  unsigned holders = blockDim.x / 32;
  unsigned mask = __ballot_sync(0xffffffffu, tid < holders);
  if (tid < 32) {
    v = tid < holders ? s[tid] : 0.0f;
    v = warp_sum<float>(mask, v);
  }
  if (tid == 0) out[blockIdx.x] = v;
}
"""


def test_shuffle_outside_its_mask_is_undefined_behaviour_by_default():
    k = K(BALLOT_REDUCTION)
    x = np.ones(512, np.float32)
    with pytest.raises(UndefinedBehaviorError) as info:
        k(x, np.zeros(2, np.float32), grid=2, block=256)
    text = str(info.value)
    assert not isinstance(info.value, InactiveLaneError)
    assert "undefined behaviour at ballot_reduce.cu:5" in text
    assert "__shfl_down_sync with mask 0x000000ff: lane 0 reads lane 16" in text
    assert "rule: the source lane must be named in the mask" in text
    assert "undefined='warn'" in text and "CUNUMPY_EMULATOR_UNDEFINED=warn" in text


def test_warn_mode_goes_on_with_the_values_a_gpu_gives():
    k = K(BALLOT_REDUCTION)
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 512).astype(np.float32)
    out = np.zeros(2, np.float32)
    with pytest.warns(UndefinedBehaviorWarning, match=r"undefined behaviour at ballot_reduce"):
        emulate_cuda_kernel(k, x, out, grid=2, block=256,
                            options=EmulatorOptions(undefined="warn"))
    np.testing.assert_allclose(out, x.reshape(2, -1).sum(axis=1), rtol=1e-5)


def test_warn_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_UNDEFINED", "warn")
    k = K(BALLOT_REDUCTION)
    with pytest.warns(UndefinedBehaviorWarning):
        k(np.ones(256, np.float32), np.zeros(1, np.float32), grid=1, block=256)
    monkeypatch.setenv("CUNUMPY_EMULATOR_UNDEFINED", "maybe")
    with pytest.raises(ValueError, match="CUNUMPY_EMULATOR_UNDEFINED"):
        k(np.ones(256, np.float32), np.zeros(1, np.float32), grid=1, block=256)


def test_undefined_option_is_validated():
    with pytest.raises(ValueError, match=r"undefined='ignore'"):
        EmulatorOptions(undefined="ignore")


def test_reading_an_exited_lane_is_an_inactive_lane_error_and_undefined_behaviour():
    assert issubclass(InactiveLaneError, UndefinedBehaviorError)
    assert issubclass(UndefinedBehaviorError, EmulationError)
    k = K(r"""
extern "C" __global__ void half_warp(float* y) {
  if (threadIdx.x >= 16) return;
  y[threadIdx.x] = __shfl_down_sync(0xffffu, y[threadIdx.x], 8);
}""")
    with pytest.raises(InactiveLaneError, match=r"half_warp.cu:4: __shfl_down_sync with mask "
                       r"0x0000ffff: lane 8 reads lane 16, which has exited; rule: the source "
                       r"lane must be active"):
        k(np.ones(32, np.float32), grid=1, block=32)


def test_calling_lane_missing_from_its_mask_and_bad_width_are_named():
    k = K(r"""
extern "C" __global__ void selfless(float* y) {
  y[threadIdx.x] = __shfl_sync(0xfffffffeu, y[threadIdx.x], 1);
}""")
    with pytest.raises(UndefinedBehaviorError, match=r"lane 0 calls it but the mask leaves the "
                       r"lane itself out; rule: every calling lane must be named in its mask"):
        k(np.ones(32, np.float32), grid=1, block=32)
    k = K(r"""
extern "C" __global__ void width3(float* y) {
  y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, y[threadIdx.x], 1, 3);
}""")
    with pytest.raises(UndefinedBehaviorError, match=r"width 3; rule: the width must be a power"):
        k(np.ones(32, np.float32), grid=1, block=32)


def test_tile_shuffle_gets_the_same_checks_as_the_intrinsic():
    k = K(r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void tile_exit(int n, float* y) {
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  if (threadIdx.x >= n) return;
  y[threadIdx.x] = tile.shfl_down(y[threadIdx.x], 4);
}""")
    with pytest.raises(InactiveLaneError, match=r"tile_exit.cu:7: __shfl_down_sync .* lane 6 "
                       r"reads lane 10, which has exited"):
        k(10, np.ones(32, np.float32), grid=1, block=32)


# ---------------------------------------------------------------------------------------------
# Cooperative groups: grid-wide sync, refused and misused
# ---------------------------------------------------------------------------------------------

CG = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"


@pytest.mark.parametrize("body", [
    "cg::this_grid().sync();",
    "auto grid = cg::this_grid(); grid.sync();",
    "cg::grid_group g = cg::this_grid(); cg::sync(g);",
])
def test_grid_wide_sync_orders_every_block(body):
    # Block b writes y[b], waits for the grid, then reads its neighbour's value: only a
    # cooperative launch (every block resident) sees every neighbour's write.
    k = K(CG + 'extern "C" __global__ void gsync(float* y, float* z) { '
          "if (threadIdx.x == 0) y[blockIdx.x] = blockIdx.x + 1; " + body +
          " if (threadIdx.x == 0) z[blockIdx.x] = y[(blockIdx.x + 1) % gridDim.x]; }")
    y, z = np.zeros(6, np.float32), np.zeros(6, np.float32)
    k(y, z, grid=6, block=32)
    np.testing.assert_array_equal(z, np.roll(np.arange(1, 7, dtype=np.float32), -1))


def test_grid_sync_skipped_by_a_block_is_reported():
    from cunumpy.emulation import BarrierDivergenceError

    k = K(CG + r"""
extern "C" __global__ void early(float* y) {
  if (blockIdx.x == 2) return;
  cg::this_grid().sync();
  y[blockIdx.x] = 1;
}""")
    with pytest.raises(BarrierDivergenceError, match=r"block 2 of the launch order finished "
                       r"without reaching it"):
        k(np.zeros(4, np.float32), grid=4, block=32)


def test_cooperative_launch_larger_than_the_device_is_refused():
    k = K(CG + 'extern "C" __global__ void big(float* y) { cg::this_grid().sync(); }')
    with pytest.raises(EmulationError, match=r"does not fit on the device at once: at most 2 "
                       r"such blocks per SM x 132 SMs = 264"):
        k(np.zeros(4, np.float32), grid=265, block=1024)


def test_grid_ranks_without_sync_run():
    k = K(CG + r"""
extern "C" __global__ void granks(unsigned long long* y) {
  cg::grid_group g = cg::this_grid();
  y[g.thread_rank()] = g.thread_rank() + 1000 * g.num_threads() + 1000000 * g.block_rank();
}""")
    y = np.zeros(64, np.uint64)
    k(y, grid=2, block=32)
    r = np.arange(64)
    np.testing.assert_array_equal(y, r + 64000 + 1000000 * (r // 32))


def test_cluster_groups_are_refused():
    k = K(CG + 'extern "C" __global__ void cl(float* y) { auto c = cg::this_cluster(); c.sync(); }')
    with pytest.raises(NotImplementedError, match=r"thread block clusters"):
        k(np.zeros(4, np.float32))


def test_dynamic_tile_of_a_bad_size_stops_the_launch():
    k = K(CG + r"""
extern "C" __global__ void tile6(int* y) {
  cg::thread_group t = cg::tiled_partition(cg::this_thread_block(), 6);
  y[threadIdx.x] = t.thread_rank();
}""")
    with pytest.raises(EmulationError, match=r"tiled_partition with 6 threads: the "
                       r"CUDA emulator \(emu-cuda\) supports tiles of 1, 2, 4, 8, 16 or 32.* at tile6.cu:5"):
        k(np.zeros(32, np.int32), grid=1, block=32)


def test_static_tile_of_a_bad_size_does_not_compile():
    k = K(CG + r"""
extern "C" __global__ void tile64(int* y) {
  auto t = cg::tiled_partition<48>(cg::this_thread_block());
  y[threadIdx.x] = t.thread_rank();
}""")
    with pytest.raises(EmulationError, match=r"thread_block_tile<N> with N a power of two up to 1024"):
        k(np.zeros(64, np.int32), grid=1, block=64)


@pytest.mark.parametrize(("body", "what"), [
    ('asm volatile("cp.async.wait_all;");', "inline PTX 'cp.async.wait_all'"),
    ("surf2Dwrite(1.0f, t, 0, 0);", "surface writes"),
    ("child<<<1, 1>>>(y);", "dynamic parallelism"),
])
def test_what_cannot_run_is_refused_by_name(body, what):
    src = ("__global__ void child(float* y) {}\n"
           'extern "C" __global__ void k(float* y, unsigned long long t) { ' + body + " }")
    with pytest.raises(NotImplementedError, match=rf"\[emu-cuda kernel 'k'\] uses .*{what}.*"
                       r"\(emu-cuda\)"):
        K(src, "k")(np.zeros(4, np.float32), 0)


def test_cub_device_algorithms_are_refused_by_name():
    src = '#include <cub/device/device_reduce.cuh>\nextern "C" __global__ void k(float* y) {}'
    with pytest.raises(NotImplementedError, match=r"<cub/device/device_reduce.cuh>: CUB algorithms "
                       r"other than .*emu-cuda"):
        K(src, "k")(np.zeros(4, np.float32))


# ---------------------------------------------------------------------------------------------
# Includes, typedefs, casts, loads
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("checks", [True, False])
def test_toolkit_and_c_headers_at_the_top_do_not_stop_the_emulator(checks):
    k = K(r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_runtime_api.h>
#include <device_launch_parameters.h>
#include <math_constants.h>
#include <stdint.h>
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuComplex.h>
#include <cupy/complex.cuh>
#include <cooperative_groups.h>
typedef unsigned long long uint64_t;
extern "C" __global__ void inc(uint64_t* y) { y[threadIdx.x] += (uint64_t)CUDART_PI; }
""")
    y = np.arange(8, dtype=np.uint64)
    emulate_cuda_kernel(k, y, grid=1, block=8, options=EmulatorOptions(checks=checks))
    np.testing.assert_array_equal(y, np.arange(8) + 3)


def test_user_typedefs_keep_their_own_type():
    k = K(r"""
typedef unsigned long long uint64_t;
typedef long long int64_t;
using size_t = unsigned long long;
template <class A, class B> struct same { static const int value = 0; };
template <class A> struct same<A, A> { static const int value = 1; };
namespace inner { typedef unsigned int uint64_t; }
extern "C" __global__ void kinds(int* y) {
  y[0] = same<uint64_t, unsigned long long>::value;
  y[1] = same<int64_t, long long>::value;
  y[2] = same<size_t, unsigned long long>::value;
  y[3] = same<inner::uint64_t, unsigned int>::value;
  y[4] = same<::uint64_t, unsigned long long>::value;
}""")
    y = np.zeros(5, np.int32)
    k(y, grid=1, block=1)
    np.testing.assert_array_equal(y, 1)


def test_rename_user_typedefs_leaves_members_and_other_namespaces():
    text = (
        "#include <stdint.h>\n#define U64 uint64_t\ntypedef unsigned long long uint64_t;\n"
        "namespace n { typedef int int32_t; }\n"
        "struct S { uint64_t v; };\nuint64_t f(S s) { return s.v + (uint64_t)std::uint64_t(1) + ::uint64_t(2); }\n"
    )
    out = rename_user_typedefs(text)
    assert out.count("\n") == text.count("\n")
    assert "#include <stdint.h>" in out
    assert "#define U64 cn_user_uint64_t" in out
    assert "typedef unsigned long long cn_user_uint64_t;" in out
    assert "typedef int int32_t;" in out  # declared only inside a namespace: untouched
    assert "std::uint64_t" in out and "::cn_user_uint64_t(2)" in out
    assert "s.v" in out and "struct S { cn_user_uint64_t v; };" in out
    assert rename_user_typedefs("uint64_t x;") == "uint64_t x;"  # nothing declared


def test_cache_hint_loads_through_checked_pointers_are_bounds_checked():
    k = K(r"""
extern "C" __global__ void over(const float* x, float* y) {
  y[threadIdx.x] = __ldcs(x + threadIdx.x + 1);
}""")
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[8\]\): index 8"):
        k(np.ones(8, np.float32), np.zeros(8, np.float32), grid=1, block=8)


@pytest.mark.parametrize("checks", [True, False])
def test_casts_of_shared_arrays_with_and_without_checks(checks):
    k = K(r"""
extern "C" __global__ void words(unsigned int* y) {
  __shared__ unsigned char buf[32 * 4];
  __shared__ float tile[4][8];
  ((unsigned int*)buf)[threadIdx.x] = 0x01020304u * threadIdx.x;
  ((float*)tile)[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  y[threadIdx.x] = buf[4 * threadIdx.x] + (unsigned int)tile[threadIdx.x / 8][threadIdx.x % 8];
}""")
    y = np.zeros(32, np.uint32)
    emulate_cuda_kernel(k, y, grid=1, block=32, options=EmulatorOptions(checks=checks))
    t = np.arange(32, dtype=np.uint32)
    np.testing.assert_array_equal(y, ((0x01020304 * t) & 0xFF) + t)


def test_cupy_array_views_are_refused_by_name():
    src = ('#include <cupy/carray.cuh>\n'
           'extern "C" __global__ void k(float* y) { CArray<float, 1, true, true> a; }')
    with pytest.raises(NotImplementedError, match=r"CuPy's CArray/CIndexer .*\(emu-cuda\)"):
        K(src, "k")(np.zeros(4, np.float32))


def test_libcu_std_headers_are_the_host_library():
    k = K(r"""
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cupy/cuda_workaround.h>
extern "C" __global__ void lim(float* y, int* z) {
  y[0] = cuda::std::numeric_limits<float>::max();
  z[0] = cuda::std::is_same<int, cuda::std::remove_cv<const int>::type>::value
         + 2 * std::is_floating_point<float>::value;
}""")
    y, z = np.zeros(1, np.float32), np.zeros(1, np.int32)
    k(y, z, grid=1, block=1)
    assert y[0] == np.finfo(np.float32).max and z[0] == 3


def test_cupy_float16_class_semantics():
    k = K(r"""
#include <cupy/float16.cuh>
extern "C" __global__ void f16(const float* x, float* y, int* bits) {
  int i = threadIdx.x;
  float16 a = x[i], b = 1.5f;
  float16 c = a + b;           // computed in float, rounded once
  c += 0.25f;
  y[i] = (float)max(c, -c) + (float)nextafter(float16(1.0f), float16(2.0f)) - 1.0f;
  bits[i] = c.to_bits() * 4 + c.signbit() * 2 + (isnan(float16(x[i] / 0.0f * 0.0f)) ? 1 : 0);
}""")
    x = np.array([0.1, -3.0, 2.0, 100.0], np.float32)
    y, bits = np.zeros(4, np.float32), np.zeros(4, np.int32)
    k(x, y, bits, grid=1, block=4)
    c = ((x.astype(np.float16).astype(np.float32) + 1.5).astype(np.float16).astype(np.float32)
         + 0.25).astype(np.float16)
    step = np.float32(np.nextafter(np.float16(1), np.float16(2))) - 1
    np.testing.assert_array_equal(y, np.abs(c).astype(np.float32) + step)
    expect = c.view(np.uint16).astype(np.int32) * 4 + np.signbit(c) * 2 + 1
    np.testing.assert_array_equal(bits, expect)


def test_global_names_that_the_c_library_also_declares():
    k = K(r"""
__constant__ float gamma = 1.5f;
__device__ int index;
__device__ double time(double t) { return t * 2.0; }
enum Mode { read = 3, write = 4 };
struct Particle {
  float time;
  int index;
  __device__ float age() const { return time + index; }
};
__device__ float random(unsigned s) { return (s % 7) * 0.5f; }
extern "C" __global__ void eos(float* y, int* modes) {
  int i = threadIdx.x;
  Particle p{1.0f, 2};
  index = 5;
  y[i] = gamma * (float)time(0.5) + p.age() + p.time + random(i) + index;
  modes[i] = read + write;
}""")
    y, modes = np.zeros(8, np.float32), np.zeros(8, np.int32)
    k(y, modes, grid=1, block=8)
    np.testing.assert_allclose(y, 1.5 + 3.0 + 1.0 + (np.arange(8) % 7) * 0.5 + 5)
    np.testing.assert_array_equal(modes, 7)


def test_kernel_named_like_a_c_function_is_not_renamed():
    k = K('extern "C" __global__ void index(int* y) { y[threadIdx.x] = threadIdx.x; }', "index")
    y = np.zeros(4, np.int32)
    k(y, grid=1, block=4)
    np.testing.assert_array_equal(y, np.arange(4))


def test_diverged_branches_with_their_own_masks_then_a_full_syncwarp():
    # Even lanes reach the final __syncwarp first; the odd lanes' shuffle (mask: odd lanes only)
    # must still resolve before it, as on a GPU with independent thread scheduling.
    k = K(r"""
extern "C" __global__ void branches(int* y) {
  int lane = threadIdx.x & 31;
  int v = lane;
  if (lane & 1) {
    v = __shfl_sync(0xaaaaaaaau, v, (lane + 2) & 31);
  } else {
    v = __shfl_sync(0x55555555u, v, (lane + 2) & 31) + 100;
  }
  __syncwarp();
  y[threadIdx.x] = v;
}""")
    y = np.zeros(32, np.int32)
    k(y, grid=1, block=32)
    lane = np.arange(32)
    np.testing.assert_array_equal(y, (lane + 2) % 32 + np.where(lane % 2, 0, 100))


@pytest.mark.parametrize(("use", "what"), [
    ("cub::DeviceReduce::Sum(nullptr, bytes, y, y, 4);", "CUB's DeviceReduce"),
    ("typedef cub::BlockRadixSort<int, 128, 4> Sort;", "CUB's BlockRadixSort"),
])
def test_cub_beyond_block_and_warp_collectives_is_refused_by_name(use, what):
    src = ('#include <cub/cub.cuh>\n'
           'extern "C" __global__ void k(float* y) { size_t bytes = 0; ' + use + ' }')
    with pytest.raises(NotImplementedError, match=rf"{what} .*\(emu-cuda\)"):
        K(src, "k")(np.zeros(4, np.float32))


def test_isolated_launch_forwards_undefined_behaviour_warnings():
    k = K(r"""
extern "C" __global__ void half_warp(float* y) {
  if (threadIdx.x >= 16) return;
  y[threadIdx.x] = __shfl_down_sync(0xffffu, y[threadIdx.x], 8);
}""")
    y = np.ones(32, np.float32)
    with pytest.warns(UndefinedBehaviorWarning, match="lane 8 reads lane 16"):
        emulate_cuda_kernel(k, y, grid=1, block=32,
                            options=EmulatorOptions(isolated=True, undefined="warn"))
    np.testing.assert_array_equal(y[:16], np.r_[np.ones(8), np.zeros(8)])
    with pytest.raises(InactiveLaneError):
        emulate_cuda_kernel(k, y, grid=1, block=32, options=EmulatorOptions(isolated=True))


def test_noinline_is_the_kernels_qualifier_not_a_macro_over_standard_headers():
    """``__noinline__`` becomes GCC's attribute in the kernel's text only: libstdc++ 13 writes
    ``__attribute__((__noinline__))`` in <memory>, which a runtime macro would break."""
    from cunumpy.emulation._cuda_rewrite import noinline_qualifiers as _noinline_qualifiers

    text = (
        "__noinline__ __device__ int g();\nstatic __noinline__ void h();\n"
        "int k() __attribute__((__noinline__));\nint m() __attribute__((used, __noinline__));"
    )
    assert _noinline_qualifiers(text) == (
        "__attribute__((noinline)) __device__ int g();\n"
        "static __attribute__((noinline)) void h();\n"
        "int k() __attribute__((__noinline__));\nint m() __attribute__((used, __noinline__));"
    )
    runtime = Path(cunumpy.emulation.__file__).parent / "runtime" / "cn_cuda.h"
    assert "#define __noinline__" not in runtime.read_text()
    src = r"""
#include <memory>
__noinline__ __device__ float twice(float v) { return 2.0f * v; }
extern "C" __global__ void k(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = twice((float)i);
}
"""
    y = np.zeros(40, np.float32)
    CudaKernel(src, "k", engine="emulator")(y, np.int32(40))
    np.testing.assert_array_equal(y, 2 * np.arange(40, dtype=np.float32))
