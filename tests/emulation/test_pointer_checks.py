"""Bounds checks through pointers the kernel declares itself, and header helpers taking
``threadgroup T*``.

With checks on, ``[const] device|constant|threadgroup T* p = ...;`` in a kernel body or a helper
(a statement or a for-init statement) declares a checked pointer: an index through it is checked
against the buffer or threadgroup array it was derived from, and a failure names that argument
with the index relative to its start. Casts and ``&x[i]`` still give unchecked pointers.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from cunumpy.emulation import metal
from cunumpy.emulation._options import EmulatorOptions
from cunumpy.emulation.errors import EmulatorWarning, OutOfBoundsError
from cunumpy.emulation.metal import run_metal

# A kernel that corrupts memory must not take pytest down with it, should the check regress.
ISOLATED = EmulatorOptions(isolated=True)


@contextmanager
def _no_warning() -> Iterator[None]:
    """No fallback: the kernel compiles with every pointer checked."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmulatorWarning)
        yield


def test_row_pointer_declared_with_its_type_is_checked(metal_sig):
    x = np.ones((8, 16), np.float32)
    y = np.empty(8, np.float32)
    src = """
    uint r = thread_position_in_grid.x;
    const device float* row = x + r * L;
    float s = 0.0f;
    for (uint j = 0; j <= uint(L); ++j) s += row[j];
    y[r] = s;
    """
    sig = metal_sig("row_sum", src, [("x", x)], [("y", y)], template=[("L", 16)])
    with pytest.raises(OutOfBoundsError, match=r"^\[emu-metal kernel 'row_sum'\] argument 'x' "
                       r"\(float32\[8,16\]\): index 128 out of bounds \(size 128\) at thread "
                       r"\(7,0,0\) threadgroup \(0,0,0\), body:5$"):
        run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1), options=ISOLATED)


def test_write_through_a_derived_output_pointer_is_contained(metal_sig):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    device float* yr = y + 60;
    yr[i % 8] = x[i];
    """
    sig = metal_sig("tail", src, [("x", x)], [("y", y)])
    with pytest.raises(OutOfBoundsError, match=r"output 'y' \(float32\[64\]\): index 64 out of "
                       r"bounds \(size 64\) at thread \(4,0,0\)"):
        run_metal(sig, [x], [y], (64, 1, 1), (64, 1, 1), init_value=0.0)
    # Not isolated on purpose: the bad writes went to a scratch slot, nothing else was touched.
    assert (y[:60] == 0).all()
    np.testing.assert_array_equal(y[60:], [56, 57, 58, 59])  # the last writers


def test_threadgroup_pointer_overrun_names_the_array(metal_sig):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    src = """
    threadgroup float s[32];
    uint l = thread_index_in_threadgroup;
    threadgroup float* p = s;
    p[l + 1] = x[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[thread_position_in_grid.x] = s[l];
    """
    sig = metal_sig("tg_ptr", src, [("x", x)], [("y", y)])
    with pytest.raises(OutOfBoundsError, match=r"threadgroup array 's' \(float\[32\]\): index 32 "
                       r"out of bounds \(size 32\) at thread \(31,0,0\) threadgroup \(0,0,0\), body:5; "
                       r"1 further failure"):
        run_metal(sig, [x], [y], (64, 1, 1), (32, 1, 1), options=ISOLATED)


def test_for_init_and_several_declarators_are_checked(metal_sig):
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    walk = """
    uint i = thread_position_in_grid.x;
    float s = 0.0f;
    for (const device float* q = x + i; q <= x + 16; ++q) s += *q;
    y[i] = s;
    """
    sig = metal_sig("walk", walk, [("x", x)], [("y", y)])
    with pytest.raises(OutOfBoundsError, match=r"argument 'x' \(float32\[16\]\): index 16 "):
        run_metal(sig, [x], [y], (16, 1, 1), (16, 1, 1), options=ISOLATED)
    pair = """
    uint i = thread_position_in_grid.x;
    device float *lo = y, *hi = y + 8;
    lo[i] = x[i];
    hi[i] = -x[i];
    """
    sig = metal_sig("pair", pair, [("x", x)], [("y", y)])
    with pytest.raises(OutOfBoundsError, match=r"output 'y' \(float32\[16\]\): index 16 "
                       r"out of bounds \(size 16\) at thread \(8,0,0\)"):
        run_metal(sig, [x], [y], (16, 1, 1), (16, 1, 1), options=ISOLATED)


def test_in_bounds_pointers_of_every_kind_still_work(metal_sig):
    """Checked declarations compile and compute the same as raw ones, next to the forms that
    stay raw: casts, ``&x[i]``, struct members."""
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(8, np.float32)
    src = """
    struct Span { const device float* p; uint n; };
    threadgroup float s[8];
    uint i = thread_position_in_grid.x;
    const device float4* v = (const device float4*)x;   // a cast: raw, unchecked
    const device float* at = &x[4 * i];                  // &x[i]: raw, unchecked
    const device float* const* pp = &at;                 // to a (checked) pointer
    Span span = {x + 4 * i, 4};
    threadgroup float* t = s + i;
    *t = v[i].x + at[1] + (*pp)[2] + span.p[3];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    device float* out = y;
    out = out + i;
    *out = s[7 - i];
    """
    sig = metal_sig("kinds", src, [("x", x)], [("y", y)])
    with _no_warning():
        run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1))
    np.testing.assert_array_equal(y, x.reshape(8, 4).sum(1)[::-1])
    source = metal.generate_source(sig, checks=True).source
    assert "cn::ptr<const float> at = &x[4 * i];" in source
    assert "cn::ptr<float> t = cn::tview(s) + i;" in source
    assert "cn::ptr<const float> const* pp = &at;" in source
    assert "struct Span { const device float* p;" in source  # a member: raw
    unchecked = metal.generate_source(sig, checks=False).source
    assert "cn::ptr" not in unchecked and "cn::tview" not in unchecked


def test_reinterpret_cast_of_checked_pointers_compiles(metal_sig):
    """``reinterpret_cast`` of a buffer, a declared (checked) pointer or a threadgroup array gives
    a raw pointer, as on Metal, without a fallback."""
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(8, np.float32)
    src = """
    threadgroup float s[32];
    uint i = thread_position_in_grid.x;
    const device float* row = x + 4 * i;
    const device float4* v = reinterpret_cast<const device float4*>(row);
    const device float4* w = reinterpret_cast<const device float4*>(x);
    threadgroup float4* t = reinterpret_cast<threadgroup float4*>(s);
    t[i] = v[0] + w[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[i] = s[4 * i] + s[4 * i + 3];
    """
    sig = metal_sig("reinterpret", src, [("x", x)], [("y", y)])
    with _no_warning():
        run_metal(sig, [x], [y], (8, 1, 1), (8, 1, 1))
    np.testing.assert_array_equal(y, 2 * (x[0::4] + x[3::4]))
    assert "cn::msl::cast<const device float4*>(row)" in metal.generate_source(
        sig, checks=True).source


def test_threadgroup_pointer_helper_template_keeps_checks(metal_sig):
    header = """
    template <typename T>
    METAL_FUNC void put(threadgroup T* dst, uint k, T v) { dst[k] = v; }
    """
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    src = """
    threadgroup float fs[32];
    threadgroup int is[32];
    uint l = thread_index_in_threadgroup;
    put(fs, l, x[l]);
    put(is, l, int(l));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[l] = fs[31 - l] + float(is[l]);
    """
    sig = metal_sig("put", src, [("x", x)], [("y", y)], header=header)
    with _no_warning():
        run_metal(sig, [x], [y], (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(y, x[::-1] + np.arange(32))
    bad = metal_sig("put_bad", src.replace("put(is, l, int(l));", "put(is, l + 2, int(l));"),
                    [("x", x)], [("y", y)], header=header)
    with _no_warning(), pytest.raises(
        OutOfBoundsError, match=r"threadgroup array 'is' \(int\[32\]\): index 32 out of bounds "
        r"\(size 32\) at thread \(30,0,0\)"
    ):
        run_metal(bad, [x], [y], (32, 1, 1), (32, 1, 1))


def test_threadgroup_pointer_helper_template_falls_back(metal_sig):
    """A helper template called with a raw pointer, or with a row of a 2-D threadgroup array,
    cannot deduce T from checked types: the kernel is rebuilt without them, and says so."""
    header = """
    template <typename T>
    METAL_FUNC T pick(threadgroup T* src, uint k) { return src[k]; }
    """
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    raw = """
    threadgroup float s[16];
    uint l = thread_index_in_threadgroup;
    s[l] = x[l];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[l] = pick(&s[0], 15 - l);
    """
    sig = metal_sig("pick_raw", raw, [("x", x)], [("y", y)], header=header)
    with pytest.warns(EmulatorWarning, match=r"bounds checks of buffer arguments are off.*"
                      r"Threadgroup arrays, unwritten outputs"):
        run_metal(sig, [x], [y], (16, 1, 1), (16, 1, 1))
    np.testing.assert_array_equal(y, x[::-1])
    rows = """
    threadgroup float t[2][8];
    uint l = thread_index_in_threadgroup;
    t[l / 8][l % 8] = x[l];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[l] = pick(t[1 - l / 8], l % 8);
    """
    sig = metal_sig("pick_rows", rows, [("x", x)], [("y", y)], header=header)
    with pytest.warns(EmulatorWarning, match=r"bounds checks of buffer arguments and threadgroup "
                      r"arrays are off.*Unwritten outputs"):
        run_metal(sig, [x], [y], (16, 1, 1), (16, 1, 1))
    np.testing.assert_array_equal(y, np.concatenate([x[8:], x[:8]]))


def test_metal_version_and_bfloat_macros(metal_sig):
    y = np.zeros(2, np.float32)
    src = """
    #if defined(__METAL_VERSION__) && __METAL_VERSION__ >= 310
    y[0] = float(__METAL_VERSION__);
    #endif
    #if defined(__HAVE_BFLOAT__)
    y[1] = float(bfloat(1.5f));
    #endif
    """
    sig = metal_sig("version", src, [], [("y", y)])
    run_metal(sig, [], [y], (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(y, [310, 1.5])
