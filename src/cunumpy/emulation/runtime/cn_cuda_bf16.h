// cunumpy CPU emulation: <cuda_bf16.h> (the emulator includes this header in its place).
//
// __nv_bfloat16 is a 2-byte struct holding the bits (the upper half of a float); conversions from
// float round to nearest even (NaN becomes 0x7FFF, as on the GPU); arithmetic computes in float
// and rounds the result, which is what the hardware's bfloat16 instructions return for one
// operation. __nv_bfloat162 is two of them, 4-byte aligned. The intrinsics __half shares are in
// cn_cuda_halfops.h.
#ifndef CN_CUDA_BF16_H
#define CN_CUDA_BF16_H

#include "cn_cuda.h"
#include "cn_cuda_halfops.h"

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

inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 b) { return short(b.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16(__nv_bfloat16_raw{u}); }
inline __nv_bfloat16 __short_as_bfloat16(short u) { return __nv_bfloat16(__nv_bfloat16_raw{(unsigned short)u}); }
inline float __bfloat162float(__nv_bfloat16 b) { return cn::cuda::bf16_float(b.__x); }

CN_HALFOPS(__nv_bfloat16, __nv_bfloat162, bfloat16, bfloat162, 7, -126, 127, __bfloat162float,
           __ushort_as_bfloat16, __bfloat16_as_ushort)

inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__nv_bfloat16(a), __nv_bfloat16(b)}; }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return {__nv_bfloat16(a), __nv_bfloat16(a)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return {__nv_bfloat16(f.x), __nv_bfloat16(f.y)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{float(h.x), float(h.y)}; }
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)

#endif  // CN_CUDA_BF16_H
