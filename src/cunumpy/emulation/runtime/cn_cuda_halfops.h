// cunumpy CPU emulation: the operations <cuda_fp16.h> and <cuda_bf16.h> share, written once for
// both 16-bit types. cn_cuda_fp16.h instantiates them for __half/__half2, cn_cuda_bf16.h for
// __nv_bfloat16/__nv_bfloat162.
//
// Exactness: one operation computes in float and rounds the result once to the 16-bit type.
// float has 24 significand bits, at least 2p + 2 for both types (p = 11 and 8), so for +, -, *,
// / and sqrt the result equals the correctly rounded 16-bit one, as the GPU's instructions give
// it. Fused multiply-adds compute in long double (an exact product, one rounding) and then round
// once more; directed roundings (_rd, _ru, _rz) go through cn::cuda::round16 from a value that is
// exact. NaN results are the canonical NaN (0x7FFF), as the GPU returns them; min and max order
// +0.0 above -0.0.
#ifndef CN_CUDA_HALFOPS_H
#define CN_CUDA_HALFOPS_H

#include <cmath>
#include <climits>

namespace cn {
namespace cuda {
enum Round16 { RN16, RZ16, RD16, RU16 };

// The value of the 16-bit format (M fraction bits, exponents EMIN..EMAX) nearest to v in the
// given direction, as a long double (exactly representable in the format). NaN stays NaN.
template <int M, int EMIN, int EMAX>
inline long double round16(long double v, Round16 mode) {
  if (v != v || v == 0 || std::isinf(v)) return v;
  const bool neg = v < 0;
  long double a = neg ? -v : v;
  int e = std::ilogb(a);
  if (e < EMIN) e = EMIN;
  long double q = std::ldexp((long double)1, e - M);  // the quantum at this exponent
  long double n = a / q, fl = std::floor(n), frac = n - fl;
  long double m;
  switch (mode) {
    case RZ16: m = fl; break;
    case RD16: m = neg ? (frac > 0 ? fl + 1 : fl) : fl; break;
    case RU16: m = neg ? fl : (frac > 0 ? fl + 1 : fl); break;
    default:
      m = (frac > 0.5L || (frac == 0.5L && std::fmod(fl, 2.0L) != 0)) ? fl + 1 : fl;
  }
  long double r = m * q;
  const long double top = std::ldexp((long double)1, EMAX + 1);
  if (r >= top) {
    const long double maxf = top - std::ldexp((long double)1, EMAX - M);
    bool to_inf = mode == RN16 || (mode == RU16 && !neg) || (mode == RD16 && neg);
    r = to_inf ? HUGE_VALL : maxf;
  }
  return neg ? -r : r;
}

template <class I>
inline I to_int16_mode(float f, Round16 mode, I nan_value) {
  if (f != f) return nan_value;
  double d = mode == RZ16 ? std::trunc(f) : mode == RD16 ? std::floor(f)
           : mode == RU16 ? std::ceil(f) : std::nearbyint(f);
  if (d <= (double)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
  if (d >= (double)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
  return (I)d;
}
}  // namespace cuda
}  // namespace cn

// H: the scalar type, H2: the pair, N: the name in conversions (half, bfloat16), N2: the pair's
// name (half2, bfloat162), M/EMIN/EMAX: the format, TOF(x): to float, FROMBITS(u), BITS(x).
#define CN_HALFOPS(H, H2, N, N2, M, EMIN, EMAX, TOF, FROMBITS, BITS)                          \
  inline H cn_##N##_rn(float f) {                                                             \
    return f != f ? FROMBITS(0x7fffu) : H(f);                                                 \
  }                                                                                           \
  inline H cn_##N##_round(long double v, cn::cuda::Round16 mode) {                            \
    if (v != v) return FROMBITS(0x7fffu);                                                     \
    return H(float(cn::cuda::round16<M, EMIN, EMAX>(v, mode)));                               \
  }                                                                                           \
  /* conversions with a rounding mode */                                                      \
  inline H __float2##N##_rd(float f) { return cn_##N##_round(f, cn::cuda::RD16); }           \
  inline H __float2##N##_ru(float f) { return cn_##N##_round(f, cn::cuda::RU16); }           \
  inline H __float2##N##_rz(float f) { return cn_##N##_round(f, cn::cuda::RZ16); }           \
  inline H __float2##N##_rn(float f) { return cn_##N##_rn(f); }                              \
  inline H __float2##N(float f) { return cn_##N##_rn(f); }                                   \
  inline H __double2##N(double d) { return cn_##N##_round(d, cn::cuda::RN16); }              \
  CN_HALF_FROM_INT(H, N, int, int) CN_HALF_FROM_INT(H, N, unsigned int, uint)                 \
  CN_HALF_FROM_INT(H, N, long long, ll) CN_HALF_FROM_INT(H, N, unsigned long long, ull)       \
  CN_HALF_FROM_INT(H, N, short, short) CN_HALF_FROM_INT(H, N, unsigned short, ushort)         \
  CN_HALF_TO_INT(H, N, int, int, 0, TOF) CN_HALF_TO_INT(H, N, unsigned int, uint, 0, TOF)    \
  CN_HALF_TO_INT(H, N, long long, ll, (long long)0x8000000000000000ull, TOF)                 \
  CN_HALF_TO_INT(H, N, unsigned long long, ull, 0x8000000000000000ull, TOF)                  \
  CN_HALF_TO_INT(H, N, short, short, 0, TOF) CN_HALF_TO_INT(H, N, unsigned short, ushort, 0, TOF) \
  inline signed char __##N##2char_rz(H a) {                                                   \
    return cn::cuda::to_int16_mode<signed char>(TOF(a), cn::cuda::RZ16, 0);                  \
  }                                                                                           \
  inline unsigned char __##N##2uchar_rz(H a) {                                                \
    return cn::cuda::to_int16_mode<unsigned char>(TOF(a), cn::cuda::RZ16, 0);                \
  }                                                                                           \
  /* arithmetic */                                                                            \
  /* saturation to [0, 1]: NaN and -0.0 give +0.0 (min(max(r, +0), 1), +0 > -0) */           \
  inline H cn_##N##_sat(float r) {                                                            \
    return !(r > 0.0f) ? H(0.0f) : cn_##N##_rn(r > 1.0f ? 1.0f : r);                         \
  }                                                                                           \
  inline H __hadd(H a, H b) { return cn_##N##_rn(TOF(a) + TOF(b)); }                         \
  inline H __hsub(H a, H b) { return cn_##N##_rn(TOF(a) - TOF(b)); }                         \
  inline H __hmul(H a, H b) { return cn_##N##_rn(TOF(a) * TOF(b)); }                         \
  inline H __hdiv(H a, H b) { return cn_##N##_rn(TOF(a) / TOF(b)); }                         \
  /* The _rn forms forbid contraction into an FMA; the emulator never contracts. */           \
  inline H __hadd_rn(H a, H b) { return __hadd(a, b); }                                       \
  inline H __hsub_rn(H a, H b) { return __hsub(a, b); }                                       \
  inline H __hmul_rn(H a, H b) { return __hmul(a, b); }                                       \
  inline H __hadd_sat(H a, H b) { return cn_##N##_sat(TOF(__hadd(a, b))); }                  \
  inline H __hsub_sat(H a, H b) { return cn_##N##_sat(TOF(__hsub(a, b))); }                  \
  inline H __hmul_sat(H a, H b) { return cn_##N##_sat(TOF(__hmul(a, b))); }                  \
  inline H __hfma(H a, H b, H c) {                                                            \
    return cn_##N##_round((long double)TOF(a) * TOF(b) + TOF(c), cn::cuda::RN16);            \
  }                                                                                           \
  inline H __hfma_sat(H a, H b, H c) { return cn_##N##_sat(TOF(__hfma(a, b, c))); }          \
  inline H __hfma_relu(H a, H b, H c) {                                                       \
    H r = __hfma(a, b, c);                                                                    \
    return TOF(r) < 0.0f ? H(0.0f) : r;                                                       \
  }                                                                                           \
  /* neg and abs flip or clear the sign; a NaN gives the canonical NaN, as the GPU's do */   \
  inline H __hneg(H a) {                                                                      \
    return TOF(a) != TOF(a) ? FROMBITS(0x7fffu) : FROMBITS((unsigned short)(BITS(a) ^ 0x8000u)); \
  }                                                                                           \
  inline H __habs(H a) {                                                                      \
    return TOF(a) != TOF(a) ? FROMBITS(0x7fffu) : FROMBITS((unsigned short)(BITS(a) & 0x7fffu)); \
  }                                                                                           \
  /* comparisons: ordered ones are false with a NaN, unordered (..u) ones true */            \
  inline bool __heq(H a, H b) { return TOF(a) == TOF(b); }                                   \
  inline bool __hne(H a, H b) { return TOF(a) < TOF(b) || TOF(a) > TOF(b); }                 \
  inline bool __hlt(H a, H b) { return TOF(a) < TOF(b); }                                    \
  inline bool __hle(H a, H b) { return TOF(a) <= TOF(b); }                                   \
  inline bool __hgt(H a, H b) { return TOF(a) > TOF(b); }                                    \
  inline bool __hge(H a, H b) { return TOF(a) >= TOF(b); }                                   \
  inline bool __hequ(H a, H b) { return !(TOF(a) < TOF(b) || TOF(a) > TOF(b)); }             \
  inline bool __hneu(H a, H b) { return !(TOF(a) == TOF(b)); }                               \
  inline bool __hltu(H a, H b) { return !(TOF(a) >= TOF(b)); }                               \
  inline bool __hleu(H a, H b) { return !(TOF(a) > TOF(b)); }                                \
  inline bool __hgtu(H a, H b) { return !(TOF(a) <= TOF(b)); }                               \
  inline bool __hgeu(H a, H b) { return !(TOF(a) < TOF(b)); }                                \
  inline bool __hisnan(H a) { return TOF(a) != TOF(a); }                                     \
  inline int __hisinf(H a) { float f = TOF(a); return std::isinf(f) ? (f < 0 ? -1 : 1) : 0; } \
  inline H cn_##N##_max(H a, H b, bool nan_wins) {                                           \
    float x = TOF(a), y = TOF(b);                                                             \
    if (x != x || y != y) {                                                                   \
      if (nan_wins || (x != x && y != y)) return FROMBITS(0x7fffu);                           \
      return x != x ? b : a;                                                                  \
    }                                                                                         \
    if (x == y) return (BITS(a) & 0x8000u) ? b : a; /* +0.0 > -0.0 */                         \
    return x > y ? a : b;                                                                     \
  }                                                                                           \
  inline H cn_##N##_min(H a, H b, bool nan_wins) {                                           \
    float x = TOF(a), y = TOF(b);                                                             \
    if (x != x || y != y) {                                                                   \
      if (nan_wins || (x != x && y != y)) return FROMBITS(0x7fffu);                           \
      return x != x ? b : a;                                                                  \
    }                                                                                         \
    if (x == y) return (BITS(a) & 0x8000u) ? a : b;                                           \
    return x < y ? a : b;                                                                     \
  }                                                                                           \
  inline H __hmax(H a, H b) { return cn_##N##_max(a, b, false); }                            \
  inline H __hmin(H a, H b) { return cn_##N##_min(a, b, false); }                            \
  inline H __hmax_nan(H a, H b) { return cn_##N##_max(a, b, true); }                         \
  inline H __hmin_nan(H a, H b) { return cn_##N##_min(a, b, true); }                         \
  /* math: computed in float, rounded once */                                                 \
  CN_HALF_FN(H, N, hsqrt, sqrtf, TOF) CN_HALF_FN(H, N, hexp, expf, TOF)                        \
  CN_HALF_FN(H, N, hexp2, exp2f, TOF) CN_HALF_FN(H, N, hexp10, cn_exp10f, TOF)                \
  CN_HALF_FN(H, N, hlog, logf, TOF) CN_HALF_FN(H, N, hlog2, log2f, TOF)                       \
  CN_HALF_FN(H, N, hlog10, log10f, TOF) CN_HALF_FN(H, N, hsin, sinf, TOF)                     \
  CN_HALF_FN(H, N, hcos, cosf, TOF) CN_HALF_FN(H, N, htanh, tanhf, TOF)                       \
  CN_HALF_FN(H, N, htanh_approx, tanhf, TOF) CN_HALF_FN(H, N, hceil, ceilf, TOF)              \
  CN_HALF_FN(H, N, hfloor, floorf, TOF) CN_HALF_FN(H, N, htrunc, truncf, TOF)                 \
  CN_HALF_FN(H, N, hrint, rintf, TOF) CN_HALF_FN(H, N, hrsqrt, cn_rsqrtf, TOF)                \
  CN_HALF_FN(H, N, hrcp, cn_rcpf, TOF)                                                         \
  /* pairs */                                                                                 \
  inline H2 make_##N2(H a, H b) { return H2{a, b}; }                                          \
  inline H2 __##N##2##N2(H a) { return H2{a, a}; }                                            \
  inline H2 __lowhigh2highlow(H2 a) { return H2{a.y, a.x}; }                                  \
  inline H2 __low2##N2(H2 a) { return H2{a.x, a.x}; }                                         \
  inline H2 __high2##N2(H2 a) { return H2{a.y, a.y}; }                                        \
  inline H2 __lows2##N2(H2 a, H2 b) { return H2{a.x, b.x}; }                                  \
  inline H2 __highs2##N2(H2 a, H2 b) { return H2{a.y, b.y}; }                                 \
  inline H __low2##N(H2 a) { return a.x; }                                                    \
  inline H __high2##N(H2 a) { return a.y; }                                                   \
  inline float __low2float(H2 a) { return TOF(a.x); }                                         \
  inline float __high2float(H2 a) { return TOF(a.y); }                                        \
  inline H2 __halves2##N2(H a, H b) { return H2{a, b}; }                                      \
  CN_HALF2_BIN(H2, __hadd2, __hadd) CN_HALF2_BIN(H2, __hsub2, __hsub)                          \
  CN_HALF2_BIN(H2, __hmul2, __hmul) CN_HALF2_BIN(H2, __h2div, __hdiv)                          \
  CN_HALF2_BIN(H2, __hadd2_rn, __hadd) CN_HALF2_BIN(H2, __hsub2_rn, __hsub)                    \
  CN_HALF2_BIN(H2, __hmul2_rn, __hmul) CN_HALF2_BIN(H2, __hadd2_sat, __hadd_sat)               \
  CN_HALF2_BIN(H2, __hsub2_sat, __hsub_sat) CN_HALF2_BIN(H2, __hmul2_sat, __hmul_sat)          \
  CN_HALF2_BIN(H2, __hmax2, __hmax) CN_HALF2_BIN(H2, __hmin2, __hmin)                          \
  CN_HALF2_BIN(H2, __hmax2_nan, __hmax_nan) CN_HALF2_BIN(H2, __hmin2_nan, __hmin_nan)          \
  inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; } \
  inline H2 __hfma2_sat(H2 a, H2 b, H2 c) {                                                   \
    return H2{__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)};                          \
  }                                                                                           \
  inline H2 __hfma2_relu(H2 a, H2 b, H2 c) {                                                  \
    return H2{__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)};                        \
  }                                                                                           \
  /* complex multiply-add: (a.x + i a.y)(b.x + i b.y) + (c.x + i c.y), each part one fma pair */ \
  inline H2 __hcmadd(H2 a, H2 b, H2 c) {                                                      \
    H re = __hfma(a.x, b.x, c.x), im = __hfma(a.x, b.y, c.y);                                 \
    return H2{__hfma(__hneg(a.y), b.y, re), __hfma(a.y, b.x, im)};                            \
  }                                                                                           \
  inline H2 __hneg2(H2 a) { return H2{__hneg(a.x), __hneg(a.y)}; }                            \
  inline H2 __habs2(H2 a) { return H2{__habs(a.x), __habs(a.y)}; }                            \
  inline H2 __hisnan2(H2 a) {                                                                 \
    return H2{H(__hisnan(a.x) ? 1.0f : 0.0f), H(__hisnan(a.y) ? 1.0f : 0.0f)};               \
  }                                                                                           \
  CN_HALF2_CMP(H, H2, eq) CN_HALF2_CMP(H, H2, ne) CN_HALF2_CMP(H, H2, lt)                      \
  CN_HALF2_CMP(H, H2, le) CN_HALF2_CMP(H, H2, gt) CN_HALF2_CMP(H, H2, ge)                      \
  CN_HALF2_CMP(H, H2, equ) CN_HALF2_CMP(H, H2, neu) CN_HALF2_CMP(H, H2, ltu)                   \
  CN_HALF2_CMP(H, H2, leu) CN_HALF2_CMP(H, H2, gtu) CN_HALF2_CMP(H, H2, geu)                   \
  CN_HALF2_FN(H2, h2sqrt, hsqrt) CN_HALF2_FN(H2, h2rsqrt, hrsqrt) CN_HALF2_FN(H2, h2rcp, hrcp) \
  CN_HALF2_FN(H2, h2exp, hexp) CN_HALF2_FN(H2, h2exp2, hexp2) CN_HALF2_FN(H2, h2exp10, hexp10) \
  CN_HALF2_FN(H2, h2log, hlog) CN_HALF2_FN(H2, h2log2, hlog2) CN_HALF2_FN(H2, h2log10, hlog10) \
  CN_HALF2_FN(H2, h2sin, hsin) CN_HALF2_FN(H2, h2cos, hcos) CN_HALF2_FN(H2, h2tanh, htanh)     \
  CN_HALF2_FN(H2, h2tanh_approx, htanh_approx) CN_HALF2_FN(H2, h2ceil, hceil)                  \
  CN_HALF2_FN(H2, h2floor, hfloor) CN_HALF2_FN(H2, h2trunc, htrunc) CN_HALF2_FN(H2, h2rint, hrint) \
  /* operators of the pair (cuda_fp16.hpp / cuda_bf16.hpp) */                                 \
  inline H2 operator+(const H2& a, const H2& b) { return __hadd2(a, b); }                     \
  inline H2 operator-(const H2& a, const H2& b) { return __hsub2(a, b); }                     \
  inline H2 operator*(const H2& a, const H2& b) { return __hmul2(a, b); }                     \
  inline H2 operator/(const H2& a, const H2& b) { return __h2div(a, b); }                     \
  inline H2 operator-(const H2& a) { return __hneg2(a); }                                     \
  inline H2 operator+(const H2& a) { return a; }                                              \
  inline H2& operator+=(H2& a, const H2& b) { return a = __hadd2(a, b); }                     \
  inline H2& operator-=(H2& a, const H2& b) { return a = __hsub2(a, b); }                     \
  inline H2& operator*=(H2& a, const H2& b) { return a = __hmul2(a, b); }                     \
  inline H2& operator/=(H2& a, const H2& b) { return a = __h2div(a, b); }                     \
  inline bool operator==(const H2& a, const H2& b) { return __hbeq2(a, b); }                  \
  inline bool operator!=(const H2& a, const H2& b) { return __hbneu2(a, b); }                 \
  inline bool operator<(const H2& a, const H2& b) { return __hblt2(a, b); }                   \
  inline bool operator<=(const H2& a, const H2& b) { return __hble2(a, b); }                  \
  inline bool operator>(const H2& a, const H2& b) { return __hbgt2(a, b); }                   \
  inline bool operator>=(const H2& a, const H2& b) { return __hbge2(a, b); }

#define CN_HALF_FROM_INT(H, N, T, TN)                                                         \
  inline H __##TN##2##N##_rn(T v) { return cn_##N##_round((long double)v, cn::cuda::RN16); } \
  inline H __##TN##2##N##_rz(T v) { return cn_##N##_round((long double)v, cn::cuda::RZ16); } \
  inline H __##TN##2##N##_rd(T v) { return cn_##N##_round((long double)v, cn::cuda::RD16); } \
  inline H __##TN##2##N##_ru(T v) { return cn_##N##_round((long double)v, cn::cuda::RU16); }
#define CN_HALF_TO_INT(H, N, T, TN, NANV, TOF)                                                \
  inline T __##N##2##TN##_rn(H a) { return cn::cuda::to_int16_mode<T>(TOF(a), cn::cuda::RN16, (T)(NANV)); } \
  inline T __##N##2##TN##_rz(H a) { return cn::cuda::to_int16_mode<T>(TOF(a), cn::cuda::RZ16, (T)(NANV)); } \
  inline T __##N##2##TN##_rd(H a) { return cn::cuda::to_int16_mode<T>(TOF(a), cn::cuda::RD16, (T)(NANV)); } \
  inline T __##N##2##TN##_ru(H a) { return cn::cuda::to_int16_mode<T>(TOF(a), cn::cuda::RU16, (T)(NANV)); }
#define CN_HALF_FN(H, N, NAME, F, TOF) inline H NAME(H a) { return cn_##N##_rn(F(TOF(a))); }
#define CN_HALF2_BIN(H2, NAME, F) inline H2 NAME(H2 a, H2 b) { return H2{F(a.x, b.x), F(a.y, b.y)}; }
#define CN_HALF2_FN(H2, NAME, F) inline H2 NAME(H2 a) { return H2{F(a.x), F(a.y)}; }
// __h<op>2: 1.0 or 0.0 per half; _mask: 0xFFFF or 0 per half; __hb<op>2: both halves true.
#define CN_HALF2_CMP(H, H2, OP)                                                               \
  inline H2 __h##OP##2(H2 a, H2 b) {                                                          \
    return H2{H(__h##OP(a.x, b.x) ? 1.0f : 0.0f), H(__h##OP(a.y, b.y) ? 1.0f : 0.0f)};       \
  }                                                                                           \
  inline unsigned __h##OP##2_mask(H2 a, H2 b) {                                               \
    return (__h##OP(a.x, b.x) ? 0xffffu : 0u) | (__h##OP(a.y, b.y) ? 0xffff0000u : 0u);       \
  }                                                                                           \
  inline bool __hb##OP##2(H2 a, H2 b) { return __h##OP(a.x, b.x) && __h##OP(a.y, b.y); }

inline float cn_exp10f(float x) { return std::pow(10.0f, x); }
inline float cn_rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float cn_rcpf(float x) { return 1.0f / x; }

#endif  // CN_CUDA_HALFOPS_H
