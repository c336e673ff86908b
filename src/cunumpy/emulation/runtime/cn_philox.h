// cunumpy: the Philox4x32-10 stream of cuRAND, in the common subset of C++17 and Metal.
//
// One implementation for three users: the CUDA emulator's <curand_kernel.h> (cn_curand.h adds
// the double-precision functions and the other generators), Metal ports (`#include
// <cunumpy/random.h>` in a MetalKernel header or a Metal library: every Metal engine gets this
// text), and, through the same formulas, cunumpy.random on the host. The numbers are cuRAND's:
// for the same (seed, subsequence, offset) the 32-bit outputs and the uniforms are equal bit for
// bit; normals follow the same Box-Muller transform (see cn_rng_sincos_2pi below).
//
// The algorithm (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11, and
// cuRAND's documentation): a 128-bit counter (x lowest) and a 64-bit key (the seed); ten rounds
// of two 32x32->64 multiplications with the key bumped by the Weyl constants between rounds.
// curand_init(seed, subsequence, offset) starts at counter (offset / 4) + subsequence * 2^64
// (the subsequence adds to the upper 64 bits), position offset % 4 within the block of four.
#ifndef CN_PHILOX_H
#define CN_PHILOX_H

#ifdef __METAL_VERSION__
#define CN_RNG_T thread
typedef ulong cn_rng_u64;
inline unsigned int cn_rng_mulhi(unsigned int a, unsigned int b) { return mulhi(a, b); }
inline float cn_rng_fmaf(float a, float b, float c) { return fma(a, b, c); }
inline float cn_rng_logf(float x) { return log(x); }
inline float cn_rng_sqrtf(float x) { return sqrt(x); }
inline float cn_rng_expf(float x) { return exp(x); }
#else
#define CN_RNG_T
typedef unsigned long long cn_rng_u64;
inline unsigned int cn_rng_mulhi(unsigned int a, unsigned int b) {
  return (unsigned int)(((cn_rng_u64)a * (cn_rng_u64)b) >> 32);
}
inline float cn_rng_fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
// Correctly rounded in practice: the double result rounded once to float (the GPU's logf and
// expf are within 1-2 ulps of it).
inline float cn_rng_logf(float x) { return (float)__builtin_log((double)x); }
inline float cn_rng_sqrtf(float x) { return __builtin_sqrtf(x); }
inline float cn_rng_expf(float x) { return (float)__builtin_exp((double)x); }
#endif

#define CN_PHILOX_W0 0x9E3779B9u
#define CN_PHILOX_W1 0xBB67AE85u
#define CN_PHILOX_M0 0xD2511F53u
#define CN_PHILOX_M1 0xCD9E8D57u
#define CN_RNG_2POW32_INV 2.3283064e-10f
#define CN_RNG_2POW32_INV_2PI (2.3283064e-10f * 6.2831855f)

struct curandStatePhilox4_32_10 {
  uint4 ctr;
  uint4 output;
  uint2 key;
  unsigned int STATE;
  int boxmuller_flag;
  int boxmuller_flag_double;
  float boxmuller_extra;
#ifndef __METAL_VERSION__
  double boxmuller_extra_double;  // Metal has no double: the state there is 48 bytes
#endif
};
typedef struct curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;

inline uint4 cn_philox_round(uint4 c, uint2 k) {
  unsigned int lo0 = CN_PHILOX_M0 * c.x, hi0 = cn_rng_mulhi(CN_PHILOX_M0, c.x);
  unsigned int lo1 = CN_PHILOX_M1 * c.z, hi1 = cn_rng_mulhi(CN_PHILOX_M1, c.z);
  uint4 r;
  r.x = hi1 ^ c.y ^ k.x;
  r.y = lo1;
  r.z = hi0 ^ c.w ^ k.y;
  r.w = lo0;
  return r;
}

inline uint4 cn_philox4x32_10(uint4 c, uint2 k) {
  for (int i = 0; i < 9; ++i) {
    c = cn_philox_round(c, k);
    k.x += CN_PHILOX_W0;
    k.y += CN_PHILOX_W1;
  }
  return cn_philox_round(c, k);
}

// The counter moves by n blocks of four (carries as cuRAND carries them: from x into y, and
// from y into z and w only when y wrapped).
inline void cn_philox_advance(CN_RNG_T curandStatePhilox4_32_10_t* s, cn_rng_u64 n) {
  unsigned int nlo = (unsigned int)n, nhi = (unsigned int)(n >> 32);
  s->ctr.x += nlo;
  if (s->ctr.x < nlo) nhi++;
  s->ctr.y += nhi;
  if (nhi <= s->ctr.y) return;
  if (++s->ctr.z) return;
  ++s->ctr.w;
}

inline void cn_philox_next_block(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  if (++s->ctr.x) return;
  if (++s->ctr.y) return;
  if (++s->ctr.z) return;
  ++s->ctr.w;
}

// Skip n subsequences of 2^66 numbers: the upper 64 bits of the counter.
inline void skipahead_sequence(cn_rng_u64 n, CN_RNG_T curandStatePhilox4_32_10_t* s) {
  unsigned int nlo = (unsigned int)n, nhi = (unsigned int)(n >> 32);
  s->ctr.z += nlo;
  if (s->ctr.z < nlo) nhi++;
  s->ctr.w += nhi;
  s->output = cn_philox4x32_10(s->ctr, s->key);
}

// Skip n numbers.
inline void skipahead(cn_rng_u64 n, CN_RNG_T curandStatePhilox4_32_10_t* s) {
  s->STATE += (unsigned int)(n & 3u);
  n /= 4;
  if (s->STATE > 3u) {
    n += 1;
    s->STATE -= 4u;
  }
  cn_philox_advance(s, n);
  s->output = cn_philox4x32_10(s->ctr, s->key);
}

inline void curand_init(cn_rng_u64 seed, cn_rng_u64 subsequence, cn_rng_u64 offset,
                        CN_RNG_T curandStatePhilox4_32_10_t* s) {
  s->ctr.x = 0u;
  s->ctr.y = 0u;
  s->ctr.z = 0u;
  s->ctr.w = 0u;
  s->key.x = (unsigned int)seed;
  s->key.y = (unsigned int)(seed >> 32);
  s->STATE = 0u;
  s->boxmuller_flag = 0;
  s->boxmuller_flag_double = 0;
  s->boxmuller_extra = 0.0f;
#ifndef __METAL_VERSION__
  s->boxmuller_extra_double = 0.0;
#endif
  skipahead_sequence(subsequence, s);
  skipahead(offset, s);
}

// The next 32 bits; output always holds the current block.
inline unsigned int curand(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  unsigned int k = s->STATE++;
  unsigned int r = k == 1u ? s->output.y : k == 2u ? s->output.z : k == 3u ? s->output.w
                                                                           : s->output.x;
  if (s->STATE == 4u) {
    cn_philox_next_block(s);
    s->output = cn_philox4x32_10(s->ctr, s->key);
    s->STATE = 0u;
  }
  return r;
}

// The next four 32-bit numbers (the position within the block is kept).
inline uint4 curand4(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  uint4 a = s->output;
  cn_philox_next_block(s);
  s->output = cn_philox4x32_10(s->ctr, s->key);
  uint4 b = s->output;
  uint4 r = a;
  if (s->STATE == 1u) {
    r.x = a.y; r.y = a.z; r.z = a.w; r.w = b.x;
  } else if (s->STATE == 2u) {
    r.x = a.z; r.y = a.w; r.z = b.x; r.w = b.y;
  } else if (s->STATE == 3u) {
    r.x = a.w; r.y = b.x; r.z = b.y; r.w = b.z;
  }
  return r;
}

// 32 bits to a float in (0, 1]: x * 2^-32 + 2^-33, one rounding (the GPU contracts it to an FMA).
inline float cn_rng_uniform_bits(unsigned int x) {
  return cn_rng_fmaf((float)x, CN_RNG_2POW32_INV, CN_RNG_2POW32_INV / 2.0f);
}

// sin and cos of v as the GPU's __sincosf computes them: v times 1/(2 pi) rounded toward zero
// to a float (the SFU's argument reduction), then sine and cosine of 2 pi times that fraction.
// The SFU itself approximates them to about 2^-22 absolute; here they are exact (rounded once).
#ifdef __METAL_VERSION__
inline void cn_rng_sincos_sfu(float v, thread float* s, thread float* c) {
  float p = v * 0.15915494f;
  float e = fma(v, 0.15915494f, -p);  // the rounding error of p
  if ((p > 0.0f && e < 0.0f) || (p < 0.0f && e > 0.0f)) p = as_type<float>(as_type<uint>(p) - 1u);
  *s = sinpi(2.0f * p);
  *c = cospi(2.0f * p);
}
#else
inline float cn_rng_mul_rz(float a, float b) {
  double p = (double)a * (double)b;  // exact
  float f = (float)p;
  if (__builtin_fabs((double)f) > __builtin_fabs(p)) {
    unsigned int u = __builtin_bit_cast(unsigned int, f) - 1u;
    f = __builtin_bit_cast(float, u);
  }
  return f;
}
inline void cn_rng_sincos_sfu(float v, float* s, float* c) {
  double t = 6.283185307179586 * (double)cn_rng_mul_rz(v, 0.15915494f);
  *s = (float)__builtin_sin(t);
  *c = (float)__builtin_cos(t);
}
#endif

inline float2 cn_rng_box_muller(unsigned int x, unsigned int y) {
  float u = cn_rng_fmaf((float)x, CN_RNG_2POW32_INV, CN_RNG_2POW32_INV / 2.0f);
  float v = cn_rng_fmaf((float)y, CN_RNG_2POW32_INV_2PI, CN_RNG_2POW32_INV_2PI / 2.0f);
  float r = cn_rng_sqrtf(-2.0f * cn_rng_logf(u));
  float sn, cs;
  cn_rng_sincos_sfu(v, &sn, &cs);
  float2 out;
  out.x = sn * r;
  out.y = cs * r;
  return out;
}

inline float curand_uniform(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  return cn_rng_uniform_bits(curand(s));
}

inline float4 curand_uniform4(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  uint4 b = curand4(s);
  float4 r;
  r.x = cn_rng_uniform_bits(b.x);
  r.y = cn_rng_uniform_bits(b.y);
  r.z = cn_rng_uniform_bits(b.z);
  r.w = cn_rng_uniform_bits(b.w);
  return r;
}

// Normals come in pairs; curand_normal returns the first and keeps the second for the next call.
inline float curand_normal(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  if (s->boxmuller_flag != 1) {
    unsigned int x = curand(s);
    unsigned int y = curand(s);
    float2 v = cn_rng_box_muller(x, y);
    s->boxmuller_extra = v.y;
    s->boxmuller_flag = 1;
    return v.x;
  }
  s->boxmuller_flag = 0;
  return s->boxmuller_extra;
}

inline float2 curand_normal2(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  unsigned int x = curand(s);
  unsigned int y = curand(s);
  return cn_rng_box_muller(x, y);
}

inline float4 curand_normal4(CN_RNG_T curandStatePhilox4_32_10_t* s) {
  uint4 b = curand4(s);
  float2 a = cn_rng_box_muller(b.x, b.y);
  float2 c = cn_rng_box_muller(b.z, b.w);
  float4 r;
  r.x = a.x; r.y = a.y; r.z = c.x; r.w = c.y;
  return r;
}

// Log-normals: exp(mean + stddev * normal) (flag 2 marks a kept log-normal).
inline float curand_log_normal(CN_RNG_T curandStatePhilox4_32_10_t* s, float mean, float stddev) {
  if (s->boxmuller_flag != 2) {
    unsigned int x = curand(s);
    unsigned int y = curand(s);
    float2 v = cn_rng_box_muller(x, y);
    s->boxmuller_extra = cn_rng_expf(cn_rng_fmaf(stddev, v.y, mean));
    s->boxmuller_flag = 2;
    return cn_rng_expf(cn_rng_fmaf(stddev, v.x, mean));
  }
  s->boxmuller_flag = 0;
  return s->boxmuller_extra;
}

inline float2 curand_log_normal2(CN_RNG_T curandStatePhilox4_32_10_t* s, float mean,
                                 float stddev) {
  float2 v = curand_normal2(s);
  v.x = cn_rng_expf(cn_rng_fmaf(stddev, v.x, mean));
  v.y = cn_rng_expf(cn_rng_fmaf(stddev, v.y, mean));
  return v;
}

inline float4 curand_log_normal4(CN_RNG_T curandStatePhilox4_32_10_t* s, float mean,
                                 float stddev) {
  float4 v = curand_normal4(s);
  v.x = cn_rng_expf(cn_rng_fmaf(stddev, v.x, mean));
  v.y = cn_rng_expf(cn_rng_fmaf(stddev, v.y, mean));
  v.z = cn_rng_expf(cn_rng_fmaf(stddev, v.z, mean));
  v.w = cn_rng_expf(cn_rng_fmaf(stddev, v.w, mean));
  return v;
}

#endif  // CN_PHILOX_H
