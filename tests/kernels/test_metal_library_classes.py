"""Classes of construct that whole public Metal libraries use (candle, ggml, MLX, PyTorch), each
with a library of our own: half members of anonymous structs, address-space overload families,
constexpr vectors, ``[[max_total_threads_per_threadgroup]]``, GNU range initializers,
instantiations that restate parameters, nested half conditionals, SIMD-group matrices filled by
``make_filled_simdgroup_matrix<T, N>``.

The kernels share one library and few compiled variants, so the file stays quick.
"""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation._address_spaces import address_space_edits, collisions
from cunumpy.emulation.errors import EmulatorWarning, KernelCompileError
from cunumpy.kernels import MetalLibrary

SOURCE = r"""
#include <metal_stdlib>
using namespace metal;

// ---- half in anonymous structs (a quantisation block as ggml lays them out) ----
#define QK 8
typedef struct {
    union {
        struct { half d; half m; };   // scale and minimum
        half2 dm;
    };
    uchar qs[QK / 2];                 // two 4-bit values per byte
} block_q;
static_assert(sizeof(block_q) == 8, "block_q is 8 bytes, as on the GPU");

// ---- address-space families (as MLX's complex.h and steel headers write them) ----
struct acc_t {
    float re, im;
    acc_t() thread : re(0), im(0) {}
    acc_t() threadgroup : re(0), im(0) {}
    acc_t(float r, float i) thread : re(r), im(i) {}
    acc_t(float r, float i) device : re(r), im(i) {}
    float norm2() const thread { return re * re + im * im; }
    float norm2() const device { return re * re + im * im; }
    float norm2() const constant { return re * re + im * im; }
};
inline thread acc_t& operator+=(thread acc_t& a, acc_t b) { a.re += b.re; a.im += b.im; return a; }
inline threadgroup acc_t& operator+=(threadgroup acc_t& a, acc_t b) { a.re += b.re; a.im += b.im; return a; }
inline device acc_t& operator+=(device acc_t& a, acc_t b) { a.re += b.re; a.im += b.im; return a; }
template <typename T> inline T first(const device T* p) { return p[0]; }
template <typename T> inline T first(const threadgroup T* p) { return p[0]; }
template <typename T> inline T first(const constant T* p) { return p[0]; }
template <typename T> struct elem_of;
template <typename T> struct elem_of<device T*> { using type = T; };
template <typename T> struct elem_of<thread T*> { using type = T; };
template <typename T> struct elem_of<threadgroup T*> { using type = T; };
// constant T& and device T& stay two overloads: const T& and T&
inline float pick(constant float& x) { return x + 100.0f; }
inline float pick(device float& x) { x += 1.0f; return x; }

// ---- constexpr vectors (candle's random.metal, c10/metal/random.h) ----
static constexpr constant int3 SHIFTS = {13, 19, 12};
constexpr uint2 split64(ulong v) { return uint2(v >> 32, v & 0xffffffff); }
constexpr constant uint2 KEY = split64(0x0123456789abcdefUL);
static_assert(SHIFTS[1] == 19 && KEY[0] == 0x01234567u, "constexpr vectors");

kernel void classes(device float* out [[buffer(0)]],
                    device half* hout [[buffer(1)]],
                    device const block_q* blocks [[buffer(2)]],
                    device acc_t* accs [[buffer(3)]],
                    constant float& c [[buffer(4)]],
                    device float* scratch [[buffer(5)]],
                    uint i [[thread_position_in_grid]]) {
    threadgroup acc_t shared_acc;
    threadgroup float shared_f[4];
    // one block per 8 values: y = d * q + m, in half
    const device block_q& b = blocks[i / QK];
    const uint q = (b.qs[(i % QK) / 2] >> (4 * (i & 1))) & 0xF;
    hout[i] = b.d * half(q) + b.m;
    // the union's other view of the same bytes
    out[i] = float(b.dm.x) - float(b.d) + float(b.dm.y) - float(b.m);
    if (i == 0) {
        acc_t a;                     // thread constructor
        a += acc_t(1.0f, 2.0f);
        accs[0] += a;                // the device operator
        shared_acc = acc_t(3.0f, 4.0f);
        shared_acc += a;             // the threadgroup operator
        shared_f[0] = 7.0f;
        // the trait applies to a buffer's own type (a checked pointer in checked builds)
        typename elem_of<decltype(scratch)>::type e = first<float>(shared_f) + scratch[0];
        out[32] = shared_acc.norm2() + accs[0].norm2() + e;  // 16+36 + 1+4 + (s+7)
        out[33] = pick(c) + pick(scratch[1]);                // (c + 100) + (s1 + 1)
        out[34] = float(SHIFTS.y) + float(KEY.y & 0xff);     // 19 + 0xef
    }
}

// ---- max_total_threads_per_threadgroup: on a plain kernel and on a template ----
[[max_total_threads_per_threadgroup(64)]]
kernel void limited(device uint* out, uint t [[threads_per_threadgroup]],
                    uint i [[thread_position_in_grid]]) {
    out[i] = t;
}
template <int WM, int WN>
[[kernel, max_total_threads_per_threadgroup(WM * WN * 32)]] void tiled(
    device uint* out, uint t [[threads_per_threadgroup]], uint i [[thread_position_in_grid]]) {
    out[i] = t + WM;
}
template [[host_name("tiled_2x1")]] [[kernel]] decltype(tiled<2, 1>) tiled<2, 1>;

// ---- an instantiation restating the parameters with other attributes: the definition's count
// (PyTorch's RMSNorm.metal writes [[thread_position_in_grid]] for the definition's
// [[threadgroup_position_in_grid]]); GNU range initializers; nested half conditionals ----
template <typename T>
kernel void rows(device T* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                 uint gid [[threadgroup_position_in_grid]],
                 uint lid [[thread_position_in_threadgroup]]) {
    float acc[4] = { [0 ... 3] = 0.5f };
    float more[4] = { [0 ... 1] = 1.0f, [2 ... 3] = 2.0f };
    int il = int(lid % 4u);
    half coef = il > 1 ? (il > 2 ? 1/64.h : 1/16.h) : (il > 0 ? 1/4.h : 1.h);
    if (lid < n) out[gid * n + lid] = T(float(gid) + acc[lid % 4] + more[lid % 4] + float(coef));
}
template [[host_name("rows_float")]] kernel void rows<float>(
    device float* out [[buffer(0)]], constant uint& n [[buffer(1)]],
    uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]]);

// ---- a helper template deducing T from `const device T*`, called with a non-const buffer ----
kernel void deduce(device float* y, uint i [[thread_position_in_grid]]) {
    y[i] = first(y) + 1.0f;
}

// ---- make_filled_simdgroup_matrix<T, N> (Rows defaults to Cols); void buffers ----
kernel void filled(device float* out, device const void* raw, uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8>(2.5f);
    simdgroup_store(m, out, 8);
    if (lane == 0) out[64] = float(((device const uchar*) raw)[1]);
}
"""


@pytest.fixture
def metal_engine(metal_engine):
    """The plugin's Metal engines; MetalLibrary launches on emu-metal only in this version."""
    if metal_engine not in ("emulator", "emu-metal"):
        pytest.skip(f"MetalLibrary does not launch on the {metal_engine} engine yet")
    return metal_engine


@pytest.fixture(scope="module")
def lib() -> MetalLibrary:
    return MetalLibrary(SOURCE, filename="classes.metal")


def _blocks(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = rng.uniform(-2, 2, n).astype(np.float16)
    m = rng.uniform(-1, 1, n).astype(np.float16)
    qs = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    raw = np.zeros((n, 8), np.uint8)
    raw[:, 0:2] = d.view(np.uint8).reshape(n, 2)
    raw[:, 2:4] = m.view(np.uint8).reshape(n, 2)
    raw[:, 4:] = qs
    return raw, d, m


def test_half_members_of_anonymous_structs_and_address_space_families(lib, metal_engine):
    rng = np.random.default_rng(1)
    raw, d, m = _blocks(rng, 4)
    n = 32
    out = np.zeros(n + 3, np.float32)
    hout = np.zeros(n, np.float16)
    accs = np.zeros(2, np.float32)
    scratch = np.array([5.0, 10.0], np.float32)
    lib.classes(out, hout, raw, accs.view(np.uint8), 3.0, scratch, grid=n, engine=metal_engine)
    i = np.arange(n)
    q = (raw[i // 8, 4 + (i % 8) // 2] >> (4 * (i & 1))) & 0xF
    want = d[i // 8] * q.astype(np.float16) + m[i // 8]   # NumPy rounds each op to float16
    assert hout.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    assert out[:n].tolist() == [0.0] * n
    assert accs.tolist() == [1.0, 2.0]
    assert out[n] == 16 + 36 + 1 + 4 + (5 + 7)
    assert out[n + 1] == (3 + 100) + (10 + 1) and scratch[1] == 11
    assert out[n + 2] == 19 + 0xEF


def test_helper_deducing_const_pointee_runs_unchecked_and_says_so(lib, metal_engine):
    # `first(const device T*)` deduces T from a checked non-const buffer: C++ cannot, so the
    # kernel is compiled with raw buffer pointers, and says so (a known class, see the docs)
    y = np.array([1.0, 2.0], np.float32)
    with pytest.warns(EmulatorWarning, match="bounds checks of buffer arguments.* are off"):
        lib.deduce(y, grid=1, engine=metal_engine)
    assert y.tolist() == [2.0, 2.0]


def test_max_total_threads_per_threadgroup(lib, metal_engine):
    assert lib.limited.max_threads_per_threadgroup == 64
    assert lib.tiled_2x1.max_threads_per_threadgroup == 64
    assert lib.rows_float.max_threads_per_threadgroup == 1024
    out = np.zeros(192, np.uint32)
    lib.limited(out, grid=192, engine=metal_engine)         # default: min(grid, 64)
    assert set(out.tolist()) == {64}
    lib.tiled_2x1(out, grid=128, engine=metal_engine)
    assert set(out[:128].tolist()) == {66}
    with pytest.raises(ValueError, match=r"at most 64 \(its \[\[max_total_threads_per_threadgroup"
                                         r"\(2\*1\*32\)\]\]\)"):
        lib.tiled_2x1(out, grid=100, threadgroup=128, engine=metal_engine)
    with pytest.raises(ValueError, match="at most 64"):
        lib.limited(out, threadgroups=1, threadgroup=(8, 16), engine=metal_engine)


def test_definition_attributes_range_initializers_nested_half_conditionals(lib, metal_engine):
    k = lib.rows_float
    assert [p.attribute for p in k.params if p.kind == "attribute"] == [
        "threadgroup_position_in_grid", "thread_position_in_threadgroup"]
    out = np.zeros(12, np.float32)
    lib.rows_float(out, 4, threadgroups=3, threadgroup=4, engine=metal_engine)
    coef = [1.0, 1 / 4, 1 / 16, 1 / 64]
    more = [1.0, 1.0, 2.0, 2.0]
    want = [g + 0.5 + more[t] + coef[t] for g in range(3) for t in range(4)]
    np.testing.assert_array_equal(out, np.float32(want))


def test_filled_simdgroup_matrix_and_void_buffers(lib, metal_engine):
    out = np.zeros(65, np.float32)
    raw = np.array([3, 9], np.uint8)
    lib.filled(out, raw, grid=32, threadgroup=32, engine=metal_engine)
    assert out[:64].tolist() == [2.5] * 64 and out[64] == 9


def test_different_bodies_are_not_merged():
    """A family whose members differ in more than their address spaces is kept: on one address
    space the compiler reports the redefinition (the rule of emulation/_address_spaces.py)."""
    src = """
inline float load1(const device float* p) { return p[0]; }
inline float load1(const threadgroup float* p) { return p[1]; }
kernel void k(device float* y, uint i [[thread_position_in_grid]]) { y[i] = load1(y); }
"""
    assert [c.head for c in collisions(src)] == [
        "inline float load1 ( const threadgroup float * p )"]
    lib = MetalLibrary(src, filename="differ.metal")
    with pytest.raises(KernelCompileError, match="redefinition"):
        lib.k(np.zeros(2, np.float32), grid=1, engine="emulator")


def test_address_space_rule_on_text():
    text = """namespace ns {
template <class T> struct S { T v; S() thread : v(0) {} S() device : v(0) {} };
inline float f(device float& a) { return a; }
inline float f(thread float& a) { return a; }
inline float f(constant float& a) { return a; }
}"""
    edits = address_space_edits(text)
    out, pos = [], 0
    for a, b, new in sorted(edits, key=lambda e: (e[0], -e[1])):
        if a < pos:
            continue
        out.append(text[pos:a] + new)
        pos = b
    edited = "".join(out) + text[pos:]
    assert edited.count("S()") == 1 and "thread" not in edited.split("f(")[0]
    assert edited.count("inline float f(") == 2          # device/thread merged; constant kept
    assert "f(constant float& a)" in edited
    assert edited.count("\n") == text.count("\n")        # lines stay where they were


def test_half_is_a_builtin_with_metal_conversions(metal_engine):
    """half + int converts the int to half (2049 -> 2048), c ? half : float is a float, and
    half(double) rounds once; each arithmetic operation rounds to half, as NumPy's float16."""
    from cunumpy.emulation import _build
    from cunumpy.emulation._toolchain import find_compiler

    lib = MetalLibrary("""
kernel void conv(device float* out, device half* hs, device const half* a, device const half* b,
                 uint i [[thread_position_in_grid]]) {
    half x = a[i], y = b[i];
    hs[4 * i] = x + y; hs[4 * i + 1] = x * y; hs[4 * i + 2] = x / y; hs[4 * i + 3] = x * y + x;
    if (i == 0) {
        half one = 1, big = 2048;
        out[0] = float(one + 2049);
        out[1] = float(true ? big : 0.5f);
        out[2] = float(half(0.1));
    }
}""", filename="conv.metal")
    rng = np.random.default_rng(3)
    a = rng.uniform(-8, 8, 256).astype(np.float16)
    b = rng.uniform(0.5, 4, 256).astype(np.float16)
    out = np.zeros(3, np.float32)
    hs = np.zeros(4 * 256, np.float16)
    lib.conv(out, hs, a, b, grid=256, engine=metal_engine)
    want = np.stack([a + b, a * b, a / b, a * b + a], axis=1).ravel()
    assert hs.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    builtin = metal_engine in ("emulator", "emu-metal") and \
        "-DCN_HALF_CLASS" not in _build.half_flags(find_compiler())
    if builtin:  # the 16-bit class (NVRTC, older compilers) converts through float instead
        assert out.tolist() == [2048.0, 2048.0, float(np.float16(0.1))]


def test_function_constant_indices_are_expressions():
    """ggml numbers its function constants ``FC_UNARY + 1``: the index is the expression's
    value, once the preprocessor has run."""
    lib = MetalLibrary("""
#define FC_U 100
constant short fc_op [[function_constant(FC_U + 0)]];
constant bool  fc_cnt [[function_constant(FC_U + 1)]];
kernel void k(device float* y) { y[0] = fc_op + (fc_cnt ? 1 : 0); }
""", filename="fc.metal")
    assert lib.function_constants == {"fc_op": ("short", 100), "fc_cnt": ("bool", 101)}
    with pytest.raises(ValueError, match="no integer constant expression"):
        MetalLibrary("constant int x [[function_constant(N)]];\nkernel void k(device int* y) {}")
