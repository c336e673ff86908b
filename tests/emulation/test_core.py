"""The Metal emulator runs correct kernels correctly: geometry, attributes, templates, views,
threadgroup memory and barriers, SIMD-group and quad-group functions, atomics, random order."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation import metal
from cunumpy.emulation._options import EmulatorOptions
from cunumpy.emulation.errors import OutOfBoundsError
from cunumpy.emulation.metal import run_metal

CHECKED = EmulatorOptions(checks=True)
FAST = EmulatorOptions(checks=False)


def test_elementwise_partial_threadgroups(metal_sig):
    x = np.arange(1000, dtype=np.float32)
    y = np.empty_like(x)
    sig = metal_sig("scale", "uint i = thread_position_in_grid.x; y[i] = 2.0f * x[i] + 1.0f;",
                    [("x", x)], [("y", y)])
    # exactly grid-many threads run: 1000 threads in groups of 256, the last group partial
    run_metal(sig, [x], [y], (1000, 1, 1), (256, 1, 1), options=CHECKED)
    np.testing.assert_array_equal(y, 2 * x + 1)
    y2 = np.empty_like(x)
    run_metal(sig, [x], [y2], (1000, 1, 1), (256, 1, 1), options=FAST)
    np.testing.assert_array_equal(y2, 2 * x + 1)


def test_attributes_3d(metal_sig):
    grid, tg = (5, 3, 2), (2, 2, 2)
    n = 5 * 3 * 2
    out = np.empty((n, 12), dtype=np.uint32)
    src = """
    uint3 p = thread_position_in_grid;
    uint i = p.x + 5 * (p.y + 3 * p.z);
    device uint* o = &out[12 * i];
    o[0] = thread_position_in_threadgroup.x; o[1] = thread_position_in_threadgroup.y;
    o[2] = thread_position_in_threadgroup.z; o[3] = threadgroup_position_in_grid.x;
    o[4] = threadgroup_position_in_grid.y; o[5] = threadgroups_per_grid.x;
    o[6] = threads_per_threadgroup.x; o[7] = dispatch_threads_per_threadgroup.x;
    o[8] = thread_index_in_threadgroup; o[9] = threads_per_grid.y;
    o[10] = thread_execution_width; o[11] = simdgroup_index_in_threadgroup;
    """
    sig = metal_sig("attrs", src, [], [("out", out)])
    run_metal(sig, [], [out], grid, tg)
    z, y, x = np.meshgrid(range(2), range(3), range(5), indexing="ij")
    x, y, z = x.ravel(), y.ravel(), z.ravel()
    np.testing.assert_array_equal(out[:, 0], x % 2)
    np.testing.assert_array_equal(out[:, 2], z % 2)
    np.testing.assert_array_equal(out[:, 3], x // 2)
    np.testing.assert_array_equal(out[:, 4], y // 2)
    np.testing.assert_array_equal(out[:, 5], 3)
    # the edge group in x holds one thread: threads_per_threadgroup is its actual size
    np.testing.assert_array_equal(out[:, 6], np.where(x == 4, 1, 2))
    np.testing.assert_array_equal(out[:, 7], 2)
    gx = np.where(x == 4, 1, 2)
    gy = np.where(y == 2, 1, 2)
    np.testing.assert_array_equal(out[:, 8], x % 2 + gx * ((y % 2) + gy * (z % 2)))
    np.testing.assert_array_equal(out[:, 9], 3)
    np.testing.assert_array_equal(out[:, 10], 32)
    np.testing.assert_array_equal(out[:, 11], 0)


def test_template_values_and_scalar_input(metal_sig):
    x = np.arange(16, dtype=np.float32)
    a = np.array(3.0, dtype=np.float32)
    y = np.empty(16, dtype=np.float64)
    src = """
    uint i = thread_position_in_grid.x;
    T acc = 0;
    for (int k = 0; k < N; ++k) acc += a * x[i];
    y[i] = NEG ? -acc : acc;
    """
    tmpl = (("T", np.dtype(np.float64)), ("N", 4), ("NEG", True))
    sig = metal_sig("tmpl", src, [("x", x), ("a", a)], [("y", y)], template=tmpl)
    run_metal(sig, [x, a], [y], (16, 1, 1), (16, 1, 1))
    np.testing.assert_allclose(y, -12.0 * x)


def test_strided_view_with_shape_and_strides(metal_sig):
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    view = base[::2, 1::3]  # shape (3, 3), element strides (20, 3)
    y = np.empty(9, dtype=np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    uint r = i / x_shape[1], c = i % x_shape[1];
    y[i] = x[r * x_strides[0] + c * x_strides[1]] + float(x_ndim);
    """
    sig = metal_sig("strided", src, [("x", view)], [("y", y)])
    run_metal(sig, [view], [y], (9, 1, 1), (9, 1, 1))
    np.testing.assert_array_equal(y, view.ravel() + 2)


def test_header_helpers_and_half_literals(metal_sig):
    header = ("#include <metal_stdlib>\n#include <metal_simdgroup>\nusing namespace metal;\n"
              "inline float twice(float v) { return v * 2.0h; }\n")
    x = np.arange(8, dtype=np.float32)
    y = np.empty_like(x)
    sig = metal_sig("hdr", "uint i = thread_position_in_grid.x; y[i] = twice(x[i]) + 1.5h;",
                    [("x", x)], [("y", y)], header=header)
    run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1))
    np.testing.assert_array_equal(y, 2 * x + 1.5)


REDUCE = """
threadgroup float buf[256];
uint tid = thread_index_in_threadgroup;
uint gid = thread_position_in_grid.x;
buf[tid] = gid < n ? x[gid] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = threads_per_threadgroup.x / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (tid == 0) out[threadgroup_position_in_grid.x] = buf[0];
"""


@pytest.mark.parametrize("options", [CHECKED, FAST], ids=["checks", "nochecks"])
def test_barrier_reduction(metal_sig, options):
    rng = np.random.default_rng(0)
    x = rng.random(1000, dtype=np.float32)
    n = np.array(1000, dtype=np.uint32)
    out = np.empty(4, dtype=np.float32)
    sig = metal_sig("reduce", REDUCE, [("x", x), ("n", n)], [("out", out)])
    run_metal(sig, [x, n], [out], (1024, 1, 1), (256, 1, 1), options=options)
    np.testing.assert_allclose(out, np.pad(x, (0, 24)).reshape(4, 256).sum(1), rtol=1e-5)


def test_simd_functions_match_numpy(metal_sig):
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, 128).astype(np.float32)
    outs = {k: np.empty(128, dtype=np.float32) for k in
            ("sum", "pre_ex", "pre_in", "mx", "mn", "shx", "up", "down", "bc", "first")}
    ballot = np.empty(4, dtype=np.uint64)
    src = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    float v = x[i];
    sum[i] = simd_sum(v);
    pre_ex[i] = simd_prefix_exclusive_sum(v);
    pre_in[i] = simd_prefix_inclusive_sum(v);
    mx[i] = simd_max(v);
    mn[i] = simd_min(v);
    shx[i] = simd_shuffle_xor(v, 1);
    up[i] = simd_shuffle_up(v, 3);
    down[i] = simd_shuffle_down(v, 2);
    bc[i] = simd_broadcast(v, 5);
    first[i] = simd_broadcast_first(v);
    uint64_t b = uint64_t(simd_ballot(v > 0));
    if (!simd_ballot(true).all() || simd_ballot(false).any() || !simd_all(true)) b = 0;
    if (simd_is_first()) ballot[simdgroup_index_in_threadgroup + 2 * threadgroup_position_in_grid.x] = b;
    (void)lane;
    """
    names = list(outs)
    sig = metal_sig("simd", src, [("x", x)], [*((k, outs[k]) for k in names), ("ballot", ballot)])
    run_metal(sig, [x], [*outs.values(), ballot], (128, 1, 1), (64, 1, 1))
    g = x.reshape(4, 32)
    lane = np.arange(32)

    def per(v):
        return np.asarray(v).reshape(-1)

    np.testing.assert_array_equal(outs["sum"], per(np.repeat(g.sum(1), 32)))
    np.testing.assert_array_equal(outs["pre_in"], per(np.cumsum(g, 1)))
    np.testing.assert_array_equal(outs["pre_ex"], per(np.cumsum(g, 1) - g))
    np.testing.assert_array_equal(outs["mx"], per(np.repeat(g.max(1), 32)))
    np.testing.assert_array_equal(outs["mn"], per(np.repeat(g.min(1), 32)))
    np.testing.assert_array_equal(outs["shx"], per(g[:, lane ^ 1]))
    np.testing.assert_array_equal(outs["up"], per(g[:, np.where(lane >= 3, lane - 3, lane)]))
    np.testing.assert_array_equal(outs["down"], per(g[:, np.where(lane + 2 < 32, lane + 2, lane)]))
    np.testing.assert_array_equal(outs["bc"], per(np.repeat(g[:, 5], 32)))
    np.testing.assert_array_equal(outs["first"], per(np.repeat(g[:, 0], 32)))
    bits = [(int(sum(1 << k for k in range(32) if row[k] > 0))) for row in g]
    np.testing.assert_array_equal(ballot, np.array(bits, dtype=np.uint64))


def test_simd_partial_group_and_quads(metal_sig):
    # 48 threads: SIMD group 1 holds 16 lanes; reductions cover the lanes that exist
    x = np.arange(48, dtype=np.int32)
    s = np.empty(48, dtype=np.int32)
    q = np.empty(48, dtype=np.int32)
    src = """
    uint i = thread_position_in_grid.x;
    s[i] = simd_sum(x[i]);
    q[i] = quad_sum(x[i]);
    """
    sig = metal_sig("partial", src, [("x", x)], [("s", s), ("q", q)])
    run_metal(sig, [x], [s, q], (48, 1, 1), (48, 1, 1))
    np.testing.assert_array_equal(s[:32], x[:32].sum())
    np.testing.assert_array_equal(s[32:], x[32:].sum())
    np.testing.assert_array_equal(q, np.repeat(x.reshape(12, 4).sum(1), 4))


def test_simd_reduction_in_divergent_branch(metal_sig):
    # lanes that take the branch reduce among themselves; the others have exited
    x = np.ones(32, dtype=np.float32)
    y = np.zeros(32, dtype=np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    if (i >= 10) return;
    y[i] = simd_sum(x[i]);
    """
    sig = metal_sig("branch", src, [("x", x)], [("y", y)])
    run_metal(sig, [x], [y], (32, 1, 1), (32, 1, 1), init_value=0.0)
    np.testing.assert_array_equal(y, np.where(np.arange(32) < 10, 10.0, 0.0))


def test_atomic_histogram_device_and_threadgroup(metal_sig):
    rng = np.random.default_rng(2)
    vals = rng.integers(0, 16, 5000).astype(np.uint32)
    hist = np.zeros(16, dtype=np.uint32)
    count = np.zeros(1, dtype=np.int32)
    src = """
    threadgroup atomic_uint local[16];
    threadgroup atomic_int seen;
    uint tid = thread_index_in_threadgroup;
    if (tid < 16) atomic_store_explicit(&local[tid], 0u, memory_order_relaxed);
    if (tid == 0) atomic_store_explicit(&seen, 0, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint i = thread_position_in_grid.x;
    if (i < 5000) {
        atomic_fetch_add_explicit(&local[vals[i]], 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(&seen, 1, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid < 16) atomic_fetch_add_explicit(hist + tid, atomic_load_explicit(&local[tid], memory_order_relaxed), memory_order_relaxed);
    if (tid == 0) atomic_fetch_add_explicit(&count[0], atomic_load_explicit(&seen, memory_order_relaxed), memory_order_relaxed);
    """
    sig = metal_sig("hist", src, [("vals", vals)], [("hist", hist), ("count", count)],
                    atomic_outputs=True)
    run_metal(sig, [vals], [hist, count], (5120, 1, 1), (256, 1, 1), init_value=0)
    np.testing.assert_array_equal(hist, np.bincount(vals, minlength=16))
    assert count[0] == 5000


def test_atomic_float_and_compare_exchange(metal_sig):
    x = np.arange(100, dtype=np.float32)
    total = np.zeros(1, dtype=np.float32)
    mx = np.zeros(1, dtype=np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&total[0], x[i], memory_order_relaxed);
    float old = atomic_load_explicit(&mx[0], memory_order_relaxed);
    while (old < x[i] && !atomic_compare_exchange_weak_explicit(&mx[0], &old, x[i],
           memory_order_relaxed, memory_order_relaxed)) {}
    """
    sig = metal_sig("fatom", src, [("x", x)], [("total", total), ("mx", mx)], atomic_outputs=True)
    run_metal(sig, [x], [total, mx], (100, 1, 1), (32, 1, 1), init_value=0.0)
    assert total[0] == x.sum() and mx[0] == 99


ORDER_DEPENDENT = """
uint g = threadgroup_position_in_grid.x;
if (thread_index_in_threadgroup == 0) y[g] = g == 0 ? 1.0f : y[g - 1] + 1.0f;
"""


def test_random_order_keeps_correct_results_and_exposes_order_dependence(metal_sig):
    rng = np.random.default_rng(3)
    x = rng.random(1000, dtype=np.float32)
    n = np.array(1000, dtype=np.uint32)
    out = np.empty(4, dtype=np.float32)
    sig = metal_sig("reduce", REDUCE, [("x", x), ("n", n)], [("out", out)])
    for seed in range(3):
        run_metal(sig, [x, n], [out], (1024, 1, 1), (256, 1, 1),
                  options=EmulatorOptions(random_order=True, seed=seed))
        np.testing.assert_allclose(out, np.pad(x, (0, 24)).reshape(4, 256).sum(1), rtol=1e-5)

    y = np.zeros(16, dtype=np.float32)
    bad = metal_sig("chain", ORDER_DEPENDENT, [], [("y", y)])
    run_metal(bad, [], [y], (64, 1, 1), (4, 1, 1), init_value=0.0)
    np.testing.assert_array_equal(y, np.arange(1, 17))  # in order it happens to work
    y[:] = 0
    run_metal(bad, [], [y], (64, 1, 1), (4, 1, 1), init_value=0.0,
              options=EmulatorOptions(random_order=True, seed=7))
    assert not np.array_equal(y, np.arange(1, 17))


def test_random_order_from_environment(metal_sig, monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_ORDER", "random")
    y = np.zeros(16, dtype=np.float32)
    bad = metal_sig("chain", ORDER_DEPENDENT, [], [("y", y)])
    differs = 0
    for _ in range(3):
        y[:] = 0
        run_metal(bad, [], [y], (64, 1, 1), (4, 1, 1), init_value=0.0)
        differs += not np.array_equal(y, np.arange(1, 17))
    assert differs >= 1


def test_fibers_only_when_the_kernel_synchronises(metal_sig):
    plain = metal_sig("p", "y[thread_position_in_grid.x] = 1;", [], [("y", np.empty(4))])
    synced = metal_sig("s", "threadgroup_barrier(mem_flags::mem_none);", [], [])
    assert not metal.generate_source(plain, checks=True).fibers
    assert metal.generate_source(synced, checks=True).fibers
    hidden = metal_sig("h", "#define SYNC threadgroup_barrier(mem_flags::mem_none)\nSYNC;", [], [])
    assert metal.generate_source(hidden, checks=True).fibers
    assert "cn::tarr" not in metal.generate_source(
        metal_sig("r", REDUCE, [("x", np.empty(4, np.float32)), ("n", np.uint32(4))],
                  [("out", np.empty(1, np.float32))]), checks=False).source


def test_geometry_validation(metal_sig):
    y = np.empty(4, dtype=np.float32)
    sig = metal_sig("g", "y[thread_position_in_grid.x] = 0;", [], [("y", y)])
    with pytest.raises(ValueError, match="over Metal's limit of 1024"):
        run_metal(sig, [], [y], (2048, 1, 1), (2048, 1, 1))
    with pytest.raises(ValueError, match="C-contiguous"):
        run_metal(sig, [], [np.empty(8, np.float32)[::2]], (4, 1, 1), (4, 1, 1))


def test_pointer_casts_and_threadgroup_pointer_parameters(metal_sig):
    header = """
    inline float sum4(const device float4* p, uint k) { float4 v = p[k]; return v.x + v.y + v.z + v.w; }
    inline void stash(threadgroup float* t, uint k, float v) { t[k] = v; }
    """
    x = np.arange(32, dtype=np.float32)
    y = np.empty(8, dtype=np.float32)
    src = """
    threadgroup float tmp[8];
    uint i = thread_position_in_grid.x;
    const device float4* v = (const device float4*)x;
    stash(tmp, i, sum4(v, i));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    device float* o = y + 0;
    o[i] = tmp[7 - i];
    """
    sig = metal_sig("casts", src, [("x", x)], [("y", y)], header=header)
    run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1))
    np.testing.assert_array_equal(y, x.reshape(8, 4).sum(1)[::-1])


def test_header_function_template_falls_back_to_raw_pointers(metal_sig):
    from cunumpy.emulation.errors import EmulatorWarning

    header = "template <typename T> T pair(const device T* p, uint i) { return p[i] + p[i + 1]; }\n"
    x = np.arange(9, dtype=np.float32)
    y = np.empty(8, dtype=np.float32)
    # a raw pointer (&x[0]) cannot deduce T of a checked parameter: the kernel falls back
    sig = metal_sig("tmplhdr", "uint i = thread_position_in_grid.x; y[i] = pair(&x[0], i);",
                    [("x", x)], [("y", y)], header=header)
    with pytest.warns(EmulatorWarning, match="bounds checks of buffer arguments are off"):
        run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1))
    np.testing.assert_array_equal(y, x[:-1] + x[1:])
    assert "cn::ptr" not in metal._VARIANTS[metal._memo_key(sig, True)][0].source


def test_complex_float16_and_integer_types(metal_sig):
    z = (np.arange(8) + 1j * np.arange(8)).astype(np.complex64)
    h = np.linspace(-1, 1, 8).astype(np.float16)
    k = np.arange(8, dtype=np.int64)
    zo = np.empty_like(z)
    ho = np.empty_like(h)
    ko = np.empty(8, dtype=np.uint8)
    src = """
    uint i = thread_position_in_grid.x;
    zo[i] = z[i] * z[i];
    ho[i] = h[i] * 2.0h;
    ko[i] = uint8_t(k[i] * 3);
    """
    sig = metal_sig("types", src, [("z", z), ("h", h), ("k", k)], [("zo", zo), ("ho", ho),
                                                                      ("ko", ko)])
    run_metal(sig, [z, h, k], [zo, ho, ko], (8, 1, 1), (8, 1, 1))
    np.testing.assert_allclose(zo, z * z)
    np.testing.assert_array_equal(ho, h * np.float16(2))
    np.testing.assert_array_equal(ko, (k * 3).astype(np.uint8))


def test_threads_of_a_library_launch_one_at_a_time(metal_sig):
    import threading

    x = np.arange(4096, dtype=np.float32)
    n = np.array(4096, dtype=np.uint32)
    sig = metal_sig("reduce", REDUCE, [("x", x), ("n", n)], [("out", np.empty(16, np.float32))])
    outs = [np.empty(16, np.float32) for _ in range(4)]

    def work(out):
        for _ in range(5):
            run_metal(sig, [x, n], [out], (4096, 1, 1), (256, 1, 1))

    threads = [threading.Thread(target=work, args=(o,)) for o in outs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for o in outs:
        np.testing.assert_allclose(o, x.reshape(16, 256).sum(1))


def test_buffers_passed_to_header_helpers_stay_checked(metal_sig):
    header = """
    template <typename T> T pair(const device T* p, uint i) { return p[i] + p[i + 1]; }
    inline float first(const device float* p) { return p[0]; }
    """
    x = np.arange(8, dtype=np.float32)
    y = np.empty(8, dtype=np.float32)
    src = "uint i = thread_position_in_grid.x; y[i] = pair(x, i) + first(&x[i]);"
    sig = metal_sig("helper_oob", src, [("x", x)], [("y", y)], header=header)
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[8\]\): index 8 out of "
                       r"bounds \(size 8\) at thread \(7,0,0\)"):
        run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1))
    ok = metal_sig("helper_ok", src.replace("pair(x, i)", "pair(x, i % 7)"), [("x", x)],
                   [("y", y)], header=header)
    run_metal(ok, [x], [y], (8, 1, 1), (8, 1, 1))
    i = np.arange(8)
    np.testing.assert_array_equal(y, x[i % 7] + x[i % 7 + 1] + x)
