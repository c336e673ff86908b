"""The float arithmetic of cuRAND's conversions, on NumPy or CuPy arrays, rounded as the GPU
rounds it: fused multiply-adds (one rounding), the SFU's argument reduction for ``__sincosf``
(a product rounded toward zero), ``sincospi`` reduced exactly. The same formulas as
``cn_philox.h`` / ``cn_curand.h`` in the CUDA emulator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

INV_2POW32 = np.float32(2.0**-32)
INV_2POW32_2PI = np.float32(np.float32(2.3283064e-10) * np.float32(6.2831855))
INV_2PI = np.float32(0.15915494)
INV_2POW53 = 1.1102230246251565e-16
INV_2POW32_DOUBLE = 2.3283064365386963e-10
TWO_PI = 6.283185307179586


def fma32(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` in float32 with one rounding (the GPU's ``fmaf``).

    The product of two floats is exact in float64; the sum rounded to float64 and then to
    float32 differs from one rounding only when it lands exactly on a float32 midpoint, which
    the sign of the sum's rounding error (an exact two-sum) then decides.
    """
    a, b, c = (xp.asarray(v, dtype=np.float32).astype(np.float64) for v in (a, b, c))
    p = a * b
    s = p + c
    bp = s - c
    err = (p - bp) + (c - (s - bp))  # s + err == p + c exactly
    r = s.astype(np.float32)
    up = xp.nextafter(r, np.float32(np.inf))
    down = xp.nextafter(r, np.float32(-np.inf))
    fix_up = (err > 0) & (s == (r.astype(np.float64) + up.astype(np.float64)) / 2)
    fix_down = (err < 0) & (s == (r.astype(np.float64) + down.astype(np.float64)) / 2)
    return xp.where(fix_up, up, xp.where(fix_down, down, r))


def fma64(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` in float64 as an fma (Dekker's exact product and a two-sum; one rounding
    but for ties of the final sum, far rarer than one in 2**50)."""
    a, b, c = (xp.asarray(v, dtype=np.float64) for v in (a, b, c))
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ah = a * split - (a * split - a)
    bh = b * split - (b * split - b)
    e = ((ah * bh - p) + ah * (b - bh) + (a - ah) * bh) + (a - ah) * (b - bh)
    s = p + c
    bp = s - c
    t = (p - bp) + (c - (s - bp))
    return s + (t + e)


def mul_rz32(xp: Any, a: Any, b: Any) -> Any:
    """``a * b`` in float32 rounded toward zero (the SFU's argument reduction)."""
    p = xp.asarray(a, dtype=np.float32).astype(np.float64) * np.float64(np.float32(b))
    f = p.astype(np.float32)
    return xp.where(xp.abs(f.astype(np.float64)) > xp.abs(p), xp.nextafter(f, np.float32(0)), f)


def uniform_bits(xp: Any, x: Any) -> Any:
    """32 random bits to a float32 in (0, 1] (``curand_uniform``)."""
    return fma32(xp, x.astype(np.float32), INV_2POW32, INV_2POW32 / np.float32(2))


def box_muller(xp: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """Two float32 normals from two 32-bit numbers, as cuRAND forms them."""
    u = uniform_bits(xp, x)
    v = fma32(xp, y.astype(np.float32), INV_2POW32_2PI, INV_2POW32_2PI / np.float32(2))
    r = xp.sqrt(np.float32(-2.0) * xp.log(u.astype(np.float64)).astype(np.float32))
    t = TWO_PI * mul_rz32(xp, v, INV_2PI).astype(np.float64)
    return xp.sin(t).astype(np.float32) * r, xp.cos(t).astype(np.float32) * r


def uniform_double_hq(xp: Any, x: Any, y: Any) -> Any:
    """53 bits from two 32-bit numbers to a float64 in (0, 1)."""
    z = x.astype(np.uint64) ^ (y.astype(np.uint64) << np.uint64(21))
    return z.astype(np.float64) * INV_2POW53 + INV_2POW53 / 2.0


def uniform_double_bits(xp: Any, x: Any) -> Any:
    """One 32-bit number to a float64 in (0, 1] (Philox's ``curand_uniform_double``)."""
    return x.astype(np.float64) * INV_2POW32_DOUBLE + INV_2POW32_DOUBLE


def sincospi(xp: Any, v: Any) -> tuple[Any, Any]:
    """sin(pi v), cos(pi v), reduced by halves exactly first."""
    n = xp.rint(2.0 * v)
    r = v - 0.5 * n
    sr, cr = xp.sin(np.pi * r), xp.cos(np.pi * r)
    q = xp.mod(n, 4.0)
    s = xp.where(q == 0, sr, xp.where(q == 1, cr, xp.where(q == 2, -sr, -cr)))
    c = xp.where(q == 0, cr, xp.where(q == 1, -sr, xp.where(q == 2, -cr, sr)))
    exact = r == 0.0  # zeros carry the sign sinpi/cospi give them
    s = xp.where(exact & ((q == 0) | (q == 2)), xp.copysign(0.0, v), s)
    c = xp.where(exact & ((q == 1) | (q == 3)), 0.0, c)
    return s, c


def box_muller_double(xp: Any, x0: Any, x1: Any, y0: Any, y1: Any) -> tuple[Any, Any]:
    """Two float64 normals from four 32-bit numbers, as cuRAND forms them."""
    u = uniform_double_hq(xp, x0, x1)
    zy = y0.astype(np.uint64) ^ (y1.astype(np.uint64) << np.uint64(21))
    v = zy.astype(np.float64) * (INV_2POW53 * 2.0) + INV_2POW53
    r = xp.sqrt(-2.0 * xp.log(u))
    s, c = sincospi(xp, v)
    return s * r, c * r


def exp32(xp: Any, x: Any) -> Any:
    """``expf``: the float64 exponential rounded once."""
    return xp.exp(x.astype(np.float64)).astype(np.float32)
