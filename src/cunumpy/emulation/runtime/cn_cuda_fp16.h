// cunumpy CPU emulation: <cuda_fp16.h> for __half (the compiler's _Float16) and __half2, included
// by cn_cuda.h. The operations both 16-bit types share are in cn_cuda_halfops.h.
#ifndef CN_CUDA_FP16_H
#define CN_CUDA_FP16_H

#ifdef __FLT16_MAX__
#include "cn_cuda_halfops.h"

struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
inline unsigned short __half_as_ushort(__half h) { return __builtin_bit_cast(unsigned short, h); }
inline short __half_as_short(__half h) { return __builtin_bit_cast(short, h); }
inline __half __ushort_as_half(unsigned short u) { return __builtin_bit_cast(__half, u); }
inline __half __short_as_half(short u) { return __builtin_bit_cast(__half, u); }
inline float __half2float(__half h) { return float(h); }

CN_HALFOPS(__half, __half2, half, half2, 10, -14, 15, float, __ushort_as_half, __half_as_ushort)

inline __half2 __floats2half2_rn(float a, float b) { return __half2{__float2half_rn(a), __float2half_rn(b)}; }
inline __half2 __float2half2_rn(float a) { return __half2{__float2half_rn(a), __float2half_rn(a)}; }
inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
#endif

#endif  // CN_CUDA_FP16_H
