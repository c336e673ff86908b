"""SIMD across GPU threads (emulation/_lanes.py, cn_core.h's lane loop): the same results bit for
bit with lanes on and off, failures naming the right thread, what keeps a kernel scalar, and the
compiler actually vectorising the demo's push."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from cunumpy.emulation import EmulatorOptions, _build, _lanes, find_compiler
from cunumpy.emulation import cuda as emu_cuda
from cunumpy.emulation import metal as emu_metal
from cunumpy.emulation.errors import OutOfBoundsError
from cunumpy.kernels import CudaKernel, MetalKernel

PUSH = r"""
extern "C" __global__ void push(const float* pos, const float* vel, float dt, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = pos[i];
    const float v = vel[i];
    for (int k = 0; k < 50; ++k) { x += v * dt; }
    out[i] = x;
}
"""

DIVERGENT = r"""
extern "C" __global__ void branchy(const float* a, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    if (x > 0.5f) { x = sqrtf(x) * 3.0f + x / 7.0f; } else { x = x * x - 1.25f; }
    for (int k = 0; k < (i & 7); ++k) x = x * 1.0001f + 0.5f;
    out[i] = x;
}
"""

ATOMIC = r"""
extern "C" __global__ void count(const float* a, int* hist, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&hist[int(a[i] * 8.0f)], 1);
}
"""

BARRIER = r"""
extern "C" __global__ void rev(const float* a, float* out)
{
    __shared__ float buf[64];
    unsigned t = threadIdx.x;
    buf[t] = a[blockIdx.x * 64 + t] * 2.0f;
    __syncthreads();
    out[blockIdx.x * 64 + t] = buf[63 - t];
}
"""

METAL_DIVERGENT = """
uint i = thread_position_in_grid.x;
float x = a[i];
if (x > 0.5f) { x = sqrt(x) * 3.0f + x / 7.0f; } else { x = x * x - 1.25f; }
out[i] = x;
"""


@pytest.fixture(autouse=True)
def _lane_builds_at_once(monkeypatch):
    """Checked launches use their lane build from the first launch (not after TIER_THREADS)."""
    monkeypatch.setattr(_lanes, "TIER_THREADS", 0)


def _both(monkeypatch, run):
    """``run()`` with lanes on, then off (fresh variants each time); the two results."""
    results = []
    for value in ("1", "0"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_LANES", value)
        emu_cuda.forget_variants()
        emu_metal.forget_variants()
        _build.forget_loaded()
        results.append(run())
    emu_cuda.forget_variants()
    emu_metal.forget_variants()
    return results


def _bits_equal(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("checks", [False, True])
@pytest.mark.parametrize("source, name", [(PUSH, "push"), (DIVERGENT, "branchy")])
def test_cuda_lanes_on_and_off_agree_bit_for_bit(private_cache, monkeypatch, checks, source,
                                                 name):
    monkeypatch.setenv("CUNUMPY_EMULATOR_CHECKS", "1" if checks else "0")
    rng = np.random.default_rng(3)
    n = 1000  # not a multiple of the block: the last block's threads take the early return
    a = rng.random(n, dtype=np.float32)
    b = (rng.random(n, dtype=np.float32) - 0.5).astype(np.float32)

    def run():
        k = CudaKernel(source, name, engine="emulator")
        out = np.full(n + 24, np.float32(-7.0))  # the early return leaves the tail alone
        if name == "push":
            k(a, b, np.float32(1e-3), out, np.int32(n), grid=8, block=128)
        else:
            k(a, out, np.int32(n), grid=8, block=128)
        return out

    on, off = _both(monkeypatch, run)
    _bits_equal(on, off)
    assert np.all(on[n:] == np.float32(-7.0))
    if name == "push":
        x = a.copy()
        for _ in range(50):
            x = x + b * np.float32(1e-3)
        _bits_equal(on[:n], x)


@pytest.mark.parametrize("checks", [False, True])
def test_metal_lanes_on_and_off_agree_bit_for_bit(private_cache, monkeypatch, checks):
    a = np.random.default_rng(4).random(777, dtype=np.float32)

    def run():
        k = MetalKernel(METAL_DIVERGENT, ["a"], ["out"],
                        emulator_options=EmulatorOptions(checks=checks))
        out = np.empty_like(a)
        k(a, out=out, engine="emulator")
        return out

    on, off = _both(monkeypatch, run)
    _bits_equal(on, off)


def test_out_of_bounds_names_the_thread_with_lanes_on(private_cache, monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_LANES", "1")
    monkeypatch.setenv("CUNUMPY_EMULATOR_CHECKS", "1")
    src = PUSH.replace("out[i] = x;", "out[i + (i == 300 ? 5000 : 0)] = x;")
    k = CudaKernel(src, "push", engine="emulator")
    a = np.ones(1000, np.float32)
    out = np.zeros(1000, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"index 5300 .*thread \(44,0,0\) block \(2,0,0\)"):
        k(a, a, np.float32(1), out, np.int32(1000), grid=8, block=128)


def test_a_short_buffer_names_the_thread_with_checked_lanes(private_cache, monkeypatch):
    """The row's bounds proof fails where `out[i]` leaves the buffer: that row runs the checked
    kernel thread by thread, which reports the first failing thread."""
    monkeypatch.setenv("CUNUMPY_EMULATOR_LANES", "1")
    monkeypatch.setenv("CUNUMPY_EMULATOR_CHECKS", "1")
    k = CudaKernel(PUSH, "push", engine="emulator")
    a = np.ones(1000, np.float32)
    out = np.zeros(900, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"index 900 .*thread \(4,0,0\) block \(7,0,0\)"):
        k(a, a, np.float32(1), out, np.int32(1000), grid=8, block=128)
    np.testing.assert_array_equal(out, np.full(900, 51, np.float32))


CHECKED_PUSH = (
    PUSH.replace("(const float* pos, const float* vel, float dt, float* out, int n)",
                 "(const ::cn::ThreadInfo& cn_this_thread, cn::ptr<const float> pos, "
                 "cn::ptr<const float> vel, float dt, cn::ptr<float> out, int n)")
    .replace("pos[i]", "::cn::cuda::at_site(pos, __LINE__, __FILE__)[i]")
    .replace("vel[i]", "::cn::cuda::at_site(vel, __LINE__, __FILE__)[i]")
    .replace("out[i]", "::cn::cuda::at_site(out, __LINE__, __FILE__)[i]")
)


def test_checked_lane_copy_proves_its_subscripts_in_the_guard():
    lane = _lanes.cuda_lane_kernel(CHECKED_PUSH, "push", "push", checked=True)
    assert lane is not None
    copy, guard = lane.text.split("push__cn_guard")
    assert "pos.p[i]" in copy and "out.p[i] = x;" in copy and "at_site" not in copy
    assert ("return (i >= n) || !(::cn::lane_in_bounds(pos, i) && ::cn::lane_in_bounds(vel, i) "
            "&& ::cn::lane_in_bounds(out, i));") in guard
    # Unchecked text with the same option: nothing to prove, the guard is the early return.
    plain = PUSH.replace("(const float*", "(const ::cn::ThreadInfo& cn_this_thread, const float*")
    assert "lane_in_bounds" not in _lanes.cuda_lane_kernel(plain, "push", "push", True).text


@pytest.mark.parametrize("change, why", [
    (("out, __LINE__, __FILE__)[i]", "out, __LINE__, __FILE__)[i + 1]"), "a computed index"),
    (("const float v =", "i += 1; const float v ="), "the index assigned after the guard"),
    (("for (int k", "for (int i = 0; i < 2; ++i) x += 1.0f; for (int k"), "the index redeclared"),
    (("out, __LINE__, __FILE__)[i]", "out, __LINE__, __FILE__)[k0]"), "no such int"),
    (("float x = ::cn::cuda::at_site(pos, __LINE__, __FILE__)[i];", "float x = *(pos + i);"),
     "pointer arithmetic, which checks without the thread"),
])
def test_no_checked_lane_copy_without_a_proof(change, why):
    old, new = change
    assert _lanes.cuda_lane_kernel(CHECKED_PUSH.replace(old, new), "push", "push",
                                   checked=True) is None, why


METAL_PARAMS = ["cn::ptr<const float> a", "cn::ptr<const float> dt", "cn::ptr<float> out",
                "uint3 thread_position_in_grid"]
METAL_BODY = """
uint i = thread_position_in_grid.x;
float x = a[i];
if (x > 0.5f) { x = sqrt(x) * dt[0]; }
out[i] = x;
"""


def test_metal_lane_copy_proves_its_subscripts_and_restricts_distinct_buffers():
    lane = _lanes.metal_lane_kernel("k", METAL_PARAMS, METAL_BODY, distinct=frozenset({"out"}))
    assert lane is not None and lane.lanes_call == "k__cn_lanes" and lane.guard_call == "k__cn_guard"
    copy, guard = lane.text.split("k__cn_guard")
    assert "auto* __restrict__ out__cn_r = out.p;" in copy and "out__cn_r[i] = x;" in copy
    assert "a.p[i]" in copy and "dt.p[0]" in copy
    assert ("return !(::cn::lane_in_bounds(a, i) && ::cn::lane_in_bounds(dt, 0) && "
            "::cn::lane_in_bounds(out, i));") in guard
    tmpl = _lanes.metal_lane_kernel("k", METAL_PARAMS, METAL_BODY, "template <int N>", "<3>")
    assert tmpl is not None and tmpl.text.count("template <int N>") == 2
    assert tmpl.lanes_call == "k__cn_lanes<3>"


@pytest.mark.parametrize("change, why", [
    (("out[i] = x;", "out[i + 1] = x;"), "a computed index"),
    (("float x = a[i];", "float x = *(a + i);"), "pointer arithmetic"),
    (("out[i] = x;", "device float* o = out; o[i] = x;"), "a local pointer"),
    (("out[i] = x;", "out[i] = simd_sum(x);"), "a SIMD-group function"),
    (("float x = a[i];", "i += 1; float x = a[i];"), "the index assigned"),
])
def test_no_metal_lane_copy_without_a_proof(change, why):
    body = METAL_BODY.replace(*change)
    assert _lanes.metal_lane_kernel("k", METAL_PARAMS, body) is None, why


@pytest.mark.parametrize("checks", [False, True])
def test_metal_short_output_names_the_thread_with_checked_lanes(private_cache, monkeypatch,
                                                                checks):
    """A row whose bounds proof fails runs the checked kernel: the failure names the thread
    as without lanes; unchecked kernels keep their lanes."""
    monkeypatch.setenv("CUNUMPY_EMULATOR_LANES", "1")
    body = "uint i = thread_position_in_grid.x; out[i] = a[i + 0] * 2.0f + b[i];"
    k = MetalKernel(body.replace("a[i + 0]", "a[i]"), ["a", "b"], ["out"],
                    emulator_options=EmulatorOptions(checks=checks))
    a = np.arange(1000, dtype=np.float32)
    out = np.empty_like(a)
    if checks:
        with pytest.raises(OutOfBoundsError, match=r"'b'.*index 900 .*thread \(132,0,0\)"):
            k(a, a[:900].copy(), out=out, n_threads=1000, threadgroup=256, engine="emulator")
    k(a, a.copy(), out=out, n_threads=1000, threadgroup=256, engine="emulator")
    _bits_equal(out, a * np.float32(2) + a)


@pytest.mark.parametrize("dialect", ["cuda", "metal"])
def test_a_checked_variant_gets_its_lane_build_after_tier_threads(private_cache, monkeypatch,
                                                                  dialect):
    """Small checked launches compile no lane copy; once a variant has run TIER_THREADS threads
    its lane build is compiled (a second cache entry) and gives the same results."""
    monkeypatch.setenv("CUNUMPY_EMULATOR_LANES", "1")
    monkeypatch.setenv("CUNUMPY_EMULATOR_CHECKS", "1")
    monkeypatch.setattr(_lanes, "TIER_THREADS", 2500)
    emu_cuda.forget_variants()
    emu_metal.forget_variants()
    a = np.random.default_rng(5).random(1000, dtype=np.float32)
    if dialect == "cuda":
        k = CudaKernel(PUSH.replace("50", "7"), "push", engine="emulator")
    else:
        k = MetalKernel(METAL_DIVERGENT.replace("7.0f", "9.0f"), ["a"], ["out"],
                        emulator_options=EmulatorOptions(checks=True))
    engine = "emu-cuda" if dialect == "cuda" else "emu-metal"
    results, entries = [], []
    for _ in range(4):
        out = np.zeros(1000, np.float32)
        if dialect == "cuda":
            k(a, a, np.float32(1e-3), out, np.int32(1000), grid=8, block=128)
        else:
            k(a, out=out, engine="emulator")
        results.append(out)
        entries.append(len(list(private_cache.glob(f"emu-*/{engine}/*/*/kernel.so"))))
    assert entries == [1, 1, 1, 2]  # three launches of 1000-1024 threads before the fourth
    for r in results[1:]:
        _bits_equal(r, results[0])
    sources = [p.read_text() for p in private_cache.glob(f"emu-*/{engine}/*/*/kernel.cpp")]
    assert sorted("cn-lanes" in t for t in sources) == [False, True]


@pytest.mark.parametrize("source, name, why", [
    (ATOMIC, "count", "atomicAdd"),
    (PUSH.replace("out[i] = x;", 'out[i] = x; printf("%f", x);'), "push", "printf"),
    (PUSH.replace("float x = pos[i];", "float x = expf(pos[i]);"), "push", "a libm call"),
])
def test_no_lane_copy_for_bodies_that_call(source, name, why):
    text = source.replace("(const float*", "(const ::cn::ThreadInfo& cn_this_thread, const float*")
    assert _lanes.cuda_lane_kernel(text, name, name) is None, why


def test_lane_copy_and_guard_of_an_early_return():
    text = PUSH.replace("(const float*", "(const ::cn::ThreadInfo& cn_this_thread, const float*")
    lane = _lanes.cuda_lane_kernel(text, "push", "push")
    assert lane is not None
    assert lane.lanes_call == "push__cn_lanes" and lane.guard_call == "push__cn_guard"
    copy = lane.text.split("push__cn_guard")[0]
    assert "return" not in copy and "out[i] = x;" in copy
    assert re.search(r"int i = blockIdx\.x \* blockDim\.x \+ threadIdx\.x;\s*return \(i >= n\);",
                     lane.text)
    # Templates keep their head and their arguments.
    tmpl = text.replace('extern "C" __global__', "template <int S>\n__global__")
    lane = _lanes.cuda_lane_kernel(tmpl, "push", "push<7>")
    assert lane is not None and lane.lanes_call == "push__cn_lanes<7>"
    assert lane.text.count("template <int S>") == 2


def test_atomics_and_barriers_fall_back_and_agree(private_cache, monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_CHECKS", "0")
    a = np.random.default_rng(5).random(1000, dtype=np.float32)

    def run():
        hist = np.zeros(8, np.int32)
        CudaKernel(ATOMIC, "count", engine="emulator")(a, hist, np.int32(1000), grid=8,
                                                        block=128)
        out = np.zeros(640, np.float32)
        CudaKernel(BARRIER, "rev", engine="emulator")(a[:640], out, grid=10, block=64)
        return hist, out

    (h1, o1), (h2, o2) = _both(monkeypatch, run)
    _bits_equal(h1, h2)
    _bits_equal(o1, o2)
    assert h1.sum() == 1000


def test_isa_level_from_cpuinfo():
    v2 = "cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3"
    v3 = v2 + " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
    v4 = v3 + " avx512f avx512bw avx512cd avx512dq avx512vl"
    assert _lanes.isa_level(f"flags\t: {v4}\n", "x86_64") == "x86-64-v4"
    assert _lanes.isa_level(f"flags\t: {v3}\n", "x86_64") == "x86-64-v3"
    assert _lanes.isa_level(f"flags\t: {v2} avx512f\n", "x86_64") == "x86-64-v2"
    assert _lanes.isa_level("flags\t: sse2\n", "x86_64") is None
    assert _lanes.isa_level(f"flags\t: {v4}\n", "aarch64") is None


@pytest.mark.parametrize("engine", ["cuda", "metal"])
def test_the_push_is_vectorised(engine, monkeypatch):
    """The compiler reports the lane loop of the unchecked push vectorised (GCC's
    -fopt-info-vec), with the flags kernels are built with."""
    monkeypatch.setenv("CUNUMPY_EMULATOR_LANES", "1")
    compiler = find_compiler()
    if compiler.family != "gcc":
        pytest.skip("the report is GCC's")
    if engine == "cuda":
        k = CudaKernel(PUSH, "push", engine="emulator")
        gen = emu_cuda.generate_source(emu_cuda.program_for(k), checks=False)
        where = "cn-lanes"
    else:
        from cunumpy.cli._runners import PUSH_METAL

        k = MetalKernel(PUSH_METAL.replace("NSTEPS", "50"), ["pos", "vel", "dt"], ["pos_out"],
                        emulator_options=EmulatorOptions(checks=False))
        pos = np.ones(4, np.float32)
        out = np.empty_like(pos)
        k(pos, pos, pos[:1], out=out, engine="emulator")  # binds the signature
        gen = emu_metal.generate_source(next(iter(k._signatures.values())), checks=False)
        where = "body"
    done = subprocess.run(
        [*compiler.command, *_build.compile_flags(compiler), "-I", str(_build.RUNTIME_DIR),
         "-x", "c++", "-", "-c", "-o", "/dev/null", "-fopt-info-vec-optimized"],
        input=gen.source, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(rf"^{where}:\d+:\d+: optimized: loop vectorized", done.stderr, re.M), \
        done.stderr[-2000:]


METAL_HISTOGRAM = """
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit((device atomic_uint*)&hist[uint(a[i] * 8.0f)], 1u,
                          memory_order_relaxed);
"""


def test_metal_device_atomics_in_a_lane_loop_count_every_thread(private_cache, monkeypatch):
    """Serial launches run atomics as plain read-modify-writes: the lane loop must not run
    them in vector lanes (eight threads adding to one bin would count once)."""
    monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", "1")
    a = np.random.default_rng(6).random(4096, dtype=np.float32)

    def run():
        k = MetalKernel(METAL_HISTOGRAM, ["a"], ["hist"], atomic_outputs=True,
                        init_value=0, emulator_options=EmulatorOptions(checks=False))
        hist = k(a, output_shapes=[(8,)], output_dtypes=[np.uint32], n_threads=a.size,
                 engine="emulator")
        return np.array(hist.get() if hasattr(hist, "get") else hist)

    on, off = _both(monkeypatch, run)
    _bits_equal(on, off)
    np.testing.assert_array_equal(on, np.bincount((a * 8).astype(int), minlength=8))
