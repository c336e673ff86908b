// cunumpy CPU emulation: <cuda_bf16.h> (the emulator includes this header in its place).
//
// __nv_bfloat16 is a 2-byte struct holding the bits (the upper half of a float); conversions from
// float round to nearest even (NaN becomes 0x7FFF, as on the GPU); arithmetic computes in float
// and rounds the result, which is what the hardware's bfloat16 instructions return for one
// operation. __nv_bfloat162 is two of them, 4-byte aligned.
#ifndef CN_CUDA_BF16_H
#define CN_CUDA_BF16_H

#include "cn_cuda.h"

struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

namespace cn {
namespace cuda {
inline unsigned short bf16_bits_rn(float f) {
  unsigned int u = __builtin_bit_cast(unsigned int, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
inline unsigned short bf16_bits_rz(float f) {
  unsigned int u = __builtin_bit_cast(unsigned int, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  return (unsigned short)(u >> 16);
}
inline float bf16_float(unsigned short b) {
  return __builtin_bit_cast(float, (unsigned int)b << 16);
}
}  // namespace cuda
}  // namespace cn

struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(const __nv_bfloat16_raw& r) : __x(r.x) {}
  __nv_bfloat16(float f) : __x(cn::cuda::bf16_bits_rn(f)) {}
  __nv_bfloat16(double f) : __x(cn::cuda::bf16_bits_rn(float(f))) {}
  __nv_bfloat16(short v) : __nv_bfloat16(float(v)) {}
  __nv_bfloat16(unsigned short v) : __nv_bfloat16(float(v)) {}
  __nv_bfloat16(int v) : __nv_bfloat16(float(v)) {}
  __nv_bfloat16(unsigned int v) : __nv_bfloat16(float(v)) {}
  __nv_bfloat16(long long v) : __nv_bfloat16(float(v)) {}
  __nv_bfloat16(unsigned long long v) : __nv_bfloat16(float(v)) {}
  operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
  operator float() const { return cn::cuda::bf16_float(__x); }
  explicit operator bool() const { return (__x & 0x7fffu) != 0; }
  __nv_bfloat16& operator+=(const __nv_bfloat16& o) { return *this = __nv_bfloat16(float(*this) + float(o)); }
  __nv_bfloat16& operator-=(const __nv_bfloat16& o) { return *this = __nv_bfloat16(float(*this) - float(o)); }
  __nv_bfloat16& operator*=(const __nv_bfloat16& o) { return *this = __nv_bfloat16(float(*this) * float(o)); }
  __nv_bfloat16& operator/=(const __nv_bfloat16& o) { return *this = __nv_bfloat16(float(*this) / float(o)); }
  __nv_bfloat16& operator++() { return *this += __nv_bfloat16(1.0f); }
  __nv_bfloat16& operator--() { return *this -= __nv_bfloat16(1.0f); }
};
typedef __nv_bfloat16 nv_bfloat16;

struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
  __nv_bfloat162() = default;
  __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
  __nv_bfloat162(const __nv_bfloat162_raw& r) : x(__nv_bfloat16_raw{r.x}), y(__nv_bfloat16_raw{r.y}) {}
};
typedef __nv_bfloat162 nv_bfloat162;

#define CN_BF_BIN(OP)                                                                       \
  inline __nv_bfloat16 operator OP(const __nv_bfloat16& a, const __nv_bfloat16& b) {       \
    return __nv_bfloat16(float(a) OP float(b));                                            \
  }
CN_BF_BIN(+) CN_BF_BIN(-) CN_BF_BIN(*) CN_BF_BIN(/)
#undef CN_BF_BIN
#define CN_BF_CMP(OP)                                                                       \
  inline bool operator OP(const __nv_bfloat16& a, const __nv_bfloat16& b) { return float(a) OP float(b); }
CN_BF_CMP(==) CN_BF_CMP(!=) CN_BF_CMP(<) CN_BF_CMP(>) CN_BF_CMP(<=) CN_BF_CMP(>=)
#undef CN_BF_CMP
inline __nv_bfloat16 operator-(const __nv_bfloat16& a) {
  __nv_bfloat16 r; r.__x = (unsigned short)(a.__x ^ 0x8000u); return r;
}
inline __nv_bfloat16 operator+(const __nv_bfloat16& a) { return a; }

// Conversions.
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rz(float f) {
  return __nv_bfloat16(__nv_bfloat16_raw{cn::cuda::bf16_bits_rz(f)});
}
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16(float(d)); }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline __nv_bfloat16 __int2bfloat16_rn(int v) { return __nv_bfloat16(float(v)); }
inline int __bfloat162int_rn(__nv_bfloat16 b) { return int(nearbyintf(float(b))); }
inline int __bfloat162int_rz(__nv_bfloat16 b) { return int(float(b)); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 b) { return short(b.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16(__nv_bfloat16_raw{u}); }
inline __nv_bfloat16 __short_as_bfloat16(short u) { return __nv_bfloat16(__nv_bfloat16_raw{(unsigned short)u}); }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__nv_bfloat16(a), __nv_bfloat16(b)}; }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return {__nv_bfloat16(a), __nv_bfloat16(a)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return {__nv_bfloat16(f.x), __nv_bfloat16(f.y)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{float(h.x), float(h.y)}; }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return {a, a}; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline float __low2float(__nv_bfloat162 h) { return float(h.x); }
inline float __high2float(__nv_bfloat162 h) { return float(h.y); }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }

// Arithmetic and comparisons (the __h* names are shared with __half, as in CUDA).
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return a / b; }
// The _rn forms forbid contraction into an FMA; the emulator never contracts, so they are the same.
inline __nv_bfloat16 __hadd_rn(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hsub_rn(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
inline __nv_bfloat16 __hmul_rn(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return -a; }
inline __nv_bfloat16 __habs(__nv_bfloat16 a) {
  __nv_bfloat16 r; r.__x = (unsigned short)(a.__x & 0x7fffu); return r;
}
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __nv_bfloat16(fmaf(float(a), float(b), float(c)));
}
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) { return a < b ? b : a; }
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) { return b < a ? b : a; }
inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) { return a == b; }
inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) { return a != b; }
inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) { return a < b; }
inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) { return a <= b; }
inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) { return a > b; }
inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) { return a >= b; }
inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }
inline int __hisinf(__nv_bfloat16 a) { return (a.__x & 0x7fffu) == 0x7f80u ? ((a.__x & 0x8000u) ? -1 : 1) : 0; }
#define CN_BF_FN(NAME, F) \
  inline __nv_bfloat16 NAME(__nv_bfloat16 a) { return __nv_bfloat16(F(float(a))); }
CN_BF_FN(hsqrt, sqrtf) CN_BF_FN(hexp, expf) CN_BF_FN(hexp2, exp2f) CN_BF_FN(hlog, logf)
CN_BF_FN(hlog2, log2f) CN_BF_FN(hsin, sinf) CN_BF_FN(hcos, cosf) CN_BF_FN(hfloor, floorf)
CN_BF_FN(hceil, ceilf) CN_BF_FN(htrunc, truncf) CN_BF_FN(hrint, rintf) CN_BF_FN(htanh, tanhf)
#undef CN_BF_FN
inline __nv_bfloat16 hrsqrt(__nv_bfloat16 a) { return __nv_bfloat16(1.0f / sqrtf(float(a))); }
inline __nv_bfloat16 hrcp(__nv_bfloat16 a) { return __nv_bfloat16(1.0f / float(a)); }
#define CN_BF2(NAME, OP)                                                                   \
  inline __nv_bfloat162 NAME(__nv_bfloat162 a, __nv_bfloat162 b) { return {a.x OP b.x, a.y OP b.y}; }
CN_BF2(__hadd2, +) CN_BF2(__hsub2, -) CN_BF2(__hmul2, *) CN_BF2(__h2div, /)
#undef CN_BF2
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline __nv_bfloat162 operator+(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hadd2(a, b); }
inline __nv_bfloat162 operator-(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hsub2(a, b); }
inline __nv_bfloat162 operator*(const __nv_bfloat162& a, const __nv_bfloat162& b) { return __hmul2(a, b); }

#endif  // CN_CUDA_BF16_H
