// cunumpy CPU emulation: the rest of <cuda_fp16.h> for __half (the compiler's _Float16), included
// by cn_cuda.h after the basic conversions and arithmetic.
#ifndef CN_CUDA_FP16_H
#define CN_CUDA_FP16_H

#ifdef __FLT16_MAX__
inline __half __float2half_rz(float f) {
  __half h = __half(f);
  if (std::fabs(float(h)) > std::fabs(f)) {  // rounded away from zero: step back one ulp
    unsigned short u = __builtin_bit_cast(unsigned short, h);
    h = __builtin_bit_cast(__half, (unsigned short)(u - 1u));
  }
  return h;
}
inline __half __int2half_rn(int v) { return __half(float(v)); }
inline __half __uint2half_rn(unsigned int v) { return __half(float(v)); }
inline int __half2int_rn(__half h) { return int(nearbyintf(float(h))); }
inline int __half2int_rz(__half h) { return int(float(h)); }
inline unsigned short __half_as_ushort(__half h) { return __builtin_bit_cast(unsigned short, h); }
inline short __half_as_short(__half h) { return __builtin_bit_cast(short, h); }
inline __half __ushort_as_half(unsigned short u) { return __builtin_bit_cast(__half, u); }
inline __half __short_as_half(short u) { return __builtin_bit_cast(__half, u); }
inline __half __habs(__half a) { return __ushort_as_half((unsigned short)(__half_as_ushort(a) & 0x7fffu)); }
inline bool __hne(__half a, __half b) { return a != b; }
inline bool __hle(__half a, __half b) { return a <= b; }
inline bool __hge(__half a, __half b) { return a >= b; }
inline int __hisinf(__half a) {
  unsigned short u = __half_as_ushort(a);
  return (u & 0x7fffu) == 0x7c00u ? ((u & 0x8000u) ? -1 : 1) : 0;
}
#define CN_H_FN(NAME, F) inline __half NAME(__half a) { return __half(F(float(a))); }
CN_H_FN(hexp2, exp2f) CN_H_FN(hlog2, log2f) CN_H_FN(hlog10, log10f) CN_H_FN(hsin, sinf)
CN_H_FN(hcos, cosf) CN_H_FN(hfloor, floorf) CN_H_FN(hceil, ceilf) CN_H_FN(htrunc, truncf)
CN_H_FN(hrint, rintf) CN_H_FN(htanh, tanhf)
#undef CN_H_FN
inline __half hrsqrt(__half a) { return __half(1.0f / sqrtf(float(a))); }
inline __half hrcp(__half a) { return __half(1.0f / float(a)); }
inline __half2 __half2half2(__half a) { return __half2{a, a}; }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
inline __half2 __float22half2_rn(float2 f) { return __half2{__half(f.x), __half(f.y)}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{__half(a.x - b.x), __half(a.y - b.y)}; }
inline __half2 __h2div(__half2 a, __half2 b) { return __half2{__half(a.x / b.x), __half(a.y / b.y)}; }
inline __half2 __hneg2(__half2 a) { return __half2{__half(-a.x), __half(-a.y)}; }
inline __half2 __habs2(__half2 a) { return __half2{__habs(a.x), __habs(a.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
#endif

#endif  // CN_CUDA_FP16_H
