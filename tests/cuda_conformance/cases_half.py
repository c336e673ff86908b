"""Conformance kernels for ``<cuda_fp16.h>`` and ``<cuda_bf16.h>`` (issue 25): the intrinsics
both headers give ``__half``/``__half2`` and ``__nv_bfloat16``/``__nv_bfloat162``, bit for bit.

One kernel template serves both types (``template <typename H, typename H2>``, instantiated
with ``numpy.float16`` or ml_dtypes' ``bfloat16`` as the template argument, which cunumpy spells
``__half``/``__nv_bfloat16``). It writes the raw bits of each result, so the comparison is exact:
rounding (nearest-even and the directed ``_rd``/``_ru``/``_rz`` conversions), the canonical
NaN (0x7FFF) of arithmetic, ``+0.0 > -0.0`` in min/max, NaN passing or winning in
``__hmax``/``__hmax_nan``, ordered and unordered comparisons, ``-0.0`` saturating to ``+0.0``,
``__hneg``/``__habs`` of a NaN giving the canonical NaN (both seen on an H200). The NumPy
reference computes each operation in float64 and rounds once (exact for these formats: float32
would be too, see the runtime's cn_cuda_halfops.h).
"""

from __future__ import annotations

import numpy as np

from .cases import Args, Case

CASES: list[Case] = []

N = 256

HALF_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <typename H> struct conv;
template <> struct conv<__half> {
    __device__ static __half rd(float f) { return __float2half_rd(f); }
    __device__ static __half ru(float f) { return __float2half_ru(f); }
    __device__ static __half rz(float f) { return __float2half_rz(f); }
    __device__ static int to_rd(__half h) { return __half2int_rd(h); }
    __device__ static int to_ru(__half h) { return __half2int_ru(h); }
    __device__ static int to_rn(__half h) { return __half2int_rn(h); }
    __device__ static unsigned short bits(__half h) { return __half_as_ushort(h); }
};
template <> struct conv<__nv_bfloat16> {
    __device__ static __nv_bfloat16 rd(float f) { return __float2bfloat16_rd(f); }
    __device__ static __nv_bfloat16 ru(float f) { return __float2bfloat16_ru(f); }
    __device__ static __nv_bfloat16 rz(float f) { return __float2bfloat16_rz(f); }
    __device__ static int to_rd(__nv_bfloat16 h) { return __bfloat162int_rd(h); }
    __device__ static int to_ru(__nv_bfloat16 h) { return __bfloat162int_ru(h); }
    __device__ static int to_rn(__nv_bfloat16 h) { return __bfloat162int_rn(h); }
    __device__ static unsigned short bits(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
};

template <typename H, typename H2>
__global__ void half_ops(const H* A, const H* B, const H* C, const float* X,
                         unsigned short* out, int* flags, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    H a = A[i], b = B[i], c = C[i];
    float x = X[i];
    typedef conv<H> cv;
    H r[20];
    r[0] = __hadd_sat(a, b);
    r[1] = __hsub(a, b);
    r[2] = __hdiv(a, b);
    r[3] = __hfma(a, b, c);
    r[4] = __hfma_relu(a, b, c);
    r[5] = __hmax(a, b);
    r[6] = __hmin(a, b);
    r[7] = __hmax_nan(a, b);
    r[8] = __hmin_nan(a, b);
    r[9] = __habs(a);
    r[10] = __hneg(a);
    r[11] = hsqrt(__habs(a));
    r[12] = cv::rd(x);
    r[13] = cv::ru(x);
    r[14] = cv::rz(x);
    r[15] = __hmul_sat(a, b);
    H2 p = make_pair(a, b), q = make_pair(c, a), s = make_pair(b, c);
    H2 m = __hcmadd(p, q, s);
    r[16] = __low2half_of(m);
    r[17] = __high2half_of(m);
    H2 w = __lowhigh2highlow(__hmax2_nan(p, q));
    r[18] = __low2half_of(w);
    r[19] = __high2half_of(w);
    for (int k = 0; k < 20; ++k) out[k * n + i] = cv::bits(r[k]);
    flags[0 * n + i] = __heq(a, b) | __hne(a, b) << 1 | __hlt(a, b) << 2 | __hle(a, b) << 3
        | __hgt(a, b) << 4 | __hge(a, b) << 5 | __hequ(a, b) << 6 | __hneu(a, b) << 7
        | __hltu(a, b) << 8 | __hleu(a, b) << 9 | __hgtu(a, b) << 10 | __hgeu(a, b) << 11
        | __hisnan(a) << 12 | __hbgtu2(p, q) << 13 | __hbeq2(p, p) << 14;
    flags[1 * n + i] = __hisinf(a);
    flags[2 * n + i] = cv::to_rd(a);
    flags[3 * n + i] = cv::to_ru(a);
    flags[4 * n + i] = cv::to_rn(a);
    flags[5 * n + i] = (int)__heq2_mask(p, q);
}
"""

# Pair helpers with one spelling for both types (the headers' names differ by type).
HALF_SOURCE = HALF_SOURCE.replace(
    "template <typename H, typename H2>\n__global__",
    r"""__device__ inline __half2 make_pair(__half a, __half b) { return make_half2(a, b); }
__device__ inline __nv_bfloat162 make_pair(__nv_bfloat16 a, __nv_bfloat16 b) {
    return make_bfloat162(a, b);
}
__device__ inline __half __low2half_of(__half2 h) { return __low2half(h); }
__device__ inline __half __high2half_of(__half2 h) { return __high2half(h); }
__device__ inline __nv_bfloat16 __low2half_of(__nv_bfloat162 h) { return __low2bfloat16(h); }
__device__ inline __nv_bfloat16 __high2half_of(__nv_bfloat162 h) { return __high2bfloat16(h); }

template <typename H, typename H2>
__global__""",
)


class _Format:
    """A 16-bit float format: conversion of float64 values to its bits, rounded as asked."""

    def __init__(self, dtype: np.dtype, frac_bits: int) -> None:
        self.dtype = np.dtype(dtype)
        self.frac = frac_bits

    def bits_rn(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float64)
        if self.dtype == np.float16:
            out = v.astype(np.float16).view(np.uint16).copy()
        else:  # ml_dtypes rounds float32 to nearest even; float64 -> float32 is exact here
            out = v.astype(np.float32).astype(self.dtype).view(np.uint16).copy()
        out[np.isnan(v)] = 0x7FFF  # the canonical NaN of arithmetic
        return out

    def value(self, bits: np.ndarray) -> np.ndarray:
        return np.asarray(bits, np.uint16).view(self.dtype).astype(np.float64)

    def directed(self, v: np.ndarray, mode: str) -> np.ndarray:
        """Bits of ``v`` rounded down, up or toward zero (from the nearest, one step back)."""
        v = np.asarray(v, np.float64)
        bits = self.bits_rn(v)
        near = self.value(bits)
        down = np.where(near > v, self._step(bits, -1), bits)
        up = np.where(near < v, self._step(bits, +1), bits)
        if mode == "rd":
            out = down
        elif mode == "ru":
            out = up
        else:
            out = np.where(v >= 0, down, up)
        return np.where(np.isnan(v), 0x7FFF, out).astype(np.uint16)

    def _step(self, bits: np.ndarray, direction: int) -> np.ndarray:
        """The neighbouring value's bits toward -inf (-1) or +inf (+1)."""
        b = bits.astype(np.int64)
        neg = (b & 0x8000) != 0
        mag = b & 0x7FFF
        away = np.where(neg, direction < 0, direction > 0)  # moving away from zero
        out = np.where(away, mag + 1, mag - 1)
        zero = mag == 0
        out = np.where(neg, out | 0x8000, out)
        # from zero, a step gives the smallest subnormal of the step's sign
        out = np.where(zero, np.where(direction > 0, 1, 0x8001), out)
        return out.astype(np.uint16)


def _half_inputs(fmt: _Format):
    def make(rng: np.random.Generator) -> Args:
        def vals() -> np.ndarray:
            x = rng.uniform(-4.0, 4.0, N)
            x[rng.random(N) < 0.1] = 0.0
            return fmt.value(fmt.bits_rn(x)).astype(np.float32).astype(fmt.dtype)
        a, b, c = vals(), vals(), vals()
        b[b.astype(np.float64) == 0.0] = 0.5  # random divisors are not zero
        specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5]
        for j, s in enumerate(specials):  # each special against every other, in a and b
            for k, t in enumerate(specials):
                a[j * 8 + k], b[j * 8 + k] = s, t
        a[70], b[70] = 0.0, -0.0
        x = rng.uniform(-3.0, 3.0, N).astype(np.float32)
        x[:4] = [np.nan, 1e-3, -1e-3, 65519.0]
        return [a, b, c, x, np.zeros(20 * N, np.uint16), np.zeros(6 * N, np.int32), N]
    return make


def _half_reference(fmt: _Format):
    def ref(args: Args) -> dict[int, np.ndarray]:
        a, b, c = (np.asarray(v).astype(np.float64) for v in args[:3])
        abits = np.asarray(args[0]).view(np.uint16)
        x = np.asarray(args[3], np.float64)
        rn, val = fmt.bits_rn, fmt.value

        def sat(v):  # NaN and -0.0 saturate to +0.0
            return rn(np.where(np.isnan(v) | (v <= 0), 0.0, np.minimum(v, 1.0)))

        def fma(p, q, s):
            return val(rn(p * q + s))

        with np.errstate(all="ignore"):
            def maxmin(p, q, pb, qb, nan_wins, is_max):
                out = np.where(p > q, pb, qb) if is_max else np.where(p < q, pb, qb)
                eq = p == q
                pneg = (pb & 0x8000) != 0
                zero_pick = np.where(pneg, qb, pb) if is_max else np.where(pneg, pb, qb)
                out = np.where(eq, zero_pick, out)
                pn, qn = np.isnan(p), np.isnan(q)
                if nan_wins:
                    out = np.where(pn | qn, 0x7FFF, out)
                else:
                    out = np.where(pn & ~qn, qb, np.where(qn & ~pn, pb, out))
                    out = np.where(pn & qn, 0x7FFF, out)
                return out.astype(np.uint16)

            bb = np.asarray(args[1]).view(np.uint16)
            cb = np.asarray(args[2]).view(np.uint16)
            r = np.zeros((20, N), np.uint16)
            r[0] = sat(val(rn(a + b)))
            r[1] = rn(a - b)
            r[2] = rn(a / b)
            r[3] = rn(a * b + c)
            f = val(rn(a * b + c))
            r[4] = np.where(np.isnan(f), 0x7FFF, np.where(f < 0, 0, rn(f)))
            r[5] = maxmin(a, b, abits, bb, False, True)
            r[6] = maxmin(a, b, abits, bb, False, False)
            r[7] = maxmin(a, b, abits, bb, True, True)
            r[8] = maxmin(a, b, abits, bb, True, False)
            r[9] = np.where(np.isnan(a), 0x7FFF, abits & 0x7FFF)  # NaN: the canonical NaN
            r[10] = np.where(np.isnan(a), 0x7FFF, abits ^ 0x8000)
            r[11] = rn(np.sqrt(np.abs(a)))
            r[12] = fmt.directed(x, "rd")
            r[13] = fmt.directed(x, "ru")
            r[14] = fmt.directed(x, "rz")
            r[15] = sat(val(rn(a * b)))
            # p = (a, b), q = (c, a), s = (b, c): complex multiply-add, one rounding per fma
            re = fma(a, c, b)
            im = fma(a, a, c)
            r[16] = rn(-b * a + re)
            r[17] = rn(b * c + im)
            hi = maxmin(b, a, bb, abits, True, True)
            lo = maxmin(a, c, abits, cb, True, True)
            r[18], r[19] = hi, lo
            flags = np.zeros((6, N), np.int64)
            cmp = [a == b, (a < b) | (a > b), a < b, a <= b, a > b, a >= b,
                   ~((a < b) | (a > b)), ~(a == b), ~(a >= b), ~(a > b), ~(a <= b), ~(a < b),
                   np.isnan(a), ~(a <= c) & ~(b <= a), (a == a) & (b == b)]
            for bit, m in enumerate(cmp):
                flags[0] |= m.astype(np.int64) << bit
            flags[1] = np.where(np.isinf(a), np.sign(a), 0)
            big = np.iinfo(np.int32)

            def to_int(v):
                v = np.where(np.isnan(v), 0.0, v)
                return np.clip(v, big.min, big.max)
            flags[2] = to_int(np.floor(a))
            flags[3] = to_int(np.ceil(a))
            flags[4] = to_int(np.rint(a))
            mask = np.where(a == c, 0xFFFF, 0) | np.where(b == a, 0xFFFF0000, 0)
            flags[5] = mask.astype(np.int64).astype(np.uint32).view(np.int32)
        return {4: r.reshape(-1), 5: flags.astype(np.int32).reshape(-1)}
    return ref


def _half_cases() -> None:
    CASES.append(Case(
        id="fp16_intrinsics",
        name="half_ops",
        source=HALF_SOURCE,
        inputs=_half_inputs(_Format(np.float16, 10)),
        reference=_half_reference(_Format(np.float16, 10)),
        launch=lambda a: {"n_threads": N, "block": 64},
        kernel_kwargs={"template_args": (np.float16, "__half2")},
        features=("fp16", "template-dtype"),
    ))
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a test dependency
        return
    bf16 = np.dtype(ml_dtypes.bfloat16)
    CASES.append(Case(
        id="bf16_intrinsics",
        name="half_ops",
        source=HALF_SOURCE,
        inputs=_half_inputs(_Format(bf16, 7)),
        reference=_half_reference(_Format(bf16, 7)),
        launch=lambda a: {"n_threads": N, "block": 64},
        kernel_kwargs={"template_args": (bf16, "__nv_bfloat162")},
        features=("bf16", "template-dtype"),
    ))


_half_cases()
