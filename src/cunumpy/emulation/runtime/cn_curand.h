// cunumpy CPU emulation: cuRAND's device API (<curand_kernel.h>), with the GPU's numbers.
//
// Generators: XORWOW (curandState, curandStateXORWOW_t), Philox4_32_10 (cn_philox.h, shared
// with Metal ports and cunumpy.random) and MRG32k3a. For each: curand_init(seed, subsequence,
// offset, &state), skipahead, skipahead_sequence (and skipahead_subsequence for MRG32k3a),
// curand, the uniform, normal and log-normal distributions in float and double, and
// curand_poisson; for Philox also the four-wide forms. State layouts and sizes are the GPU's
// (48, 64 and 48 bytes), so states written by one kernel can be read by another.
//
// Equal to the GPU: every 32-bit output and every uniform, bit for bit (the float conversions
// are written as the fused multiply-adds the GPU's compiler makes of them). Normals go through
// logf/sqrtf and the SFU's __sincosf on the GPU (sincospi/log in double): here the argument
// reduction of __sincosf is reproduced exactly and the rest is computed to within one rounding,
// so float normals differ from the GPU's by the SFU's own error (a few units of 2^-22 of the
// Box-Muller radius) and double normals by a few ulps. curand_poisson uses the same algorithms
// as the GPU (Knuth's product below lambda 64, a gamma-function rejection method up to 4000,
// the normal approximation above); the rejection method's SFU approximations (rsqrt, ex2, lg2,
// rcp) are exact here, which changes a draw only when a value falls within ~2^-22 of a decision.
//
// Skip-ahead: XORWOW's state update is linear over GF(2) (160 x 160 bits) and MRG32k3a's over
// the integers modulo its two primes (3 x 3): the jump matrices M^(2^k) are computed here, at
// first use, by repeated squaring, and cached for the process. No table is taken from cuRAND.
#ifndef CN_CURAND_H
#define CN_CURAND_H

#include <atomic>
#include <cmath>
#include <mutex>

#include "cn_philox.h"

// No a * b + c here depends on whether the compiler contracts it (the GPU's contractions are
// written as fma, every other product is exact or not followed by an add), so the kernel's own
// floating-point contraction setting is left as it is.

#ifndef QUALIFIERS
#define QUALIFIERS static inline
#endif

#define CURAND_2POW32_INV (2.3283064e-10f)
#define CURAND_2POW32_INV_DOUBLE (2.3283064365386963e-10)
#define CURAND_2POW53_INV_DOUBLE (1.1102230246251565e-16)
#define CURAND_2PI (6.2831855f)
#define CURAND_PI_DOUBLE (3.1415926535897932)
#define CURAND_2PI_DOUBLE (6.2831853071795860)
#define EXTRA_FLAG_NORMAL 0x00000001
#define EXTRA_FLAG_LOG_NORMAL 0x00000002

// ---------------------------------------------------------------------------------------------
// States
// ---------------------------------------------------------------------------------------------

struct curandStateXORWOW {
  unsigned int d, v[5];
  int boxmuller_flag;
  int boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
typedef struct curandStateXORWOW curandStateXORWOW_t;
typedef struct curandStateXORWOW curandState_t;
typedef struct curandStateXORWOW curandState;

struct curandStateMRG32k3a {
  unsigned int s1[3];
  unsigned int s2[3];
  int boxmuller_flag;
  int boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
typedef struct curandStateMRG32k3a curandStateMRG32k3a_t;

static_assert(sizeof(curandStateXORWOW) == 48, "XORWOW state: the GPU's layout");
static_assert(sizeof(curandStatePhilox4_32_10) == 64 && alignof(curandStatePhilox4_32_10) == 16,
              "Philox state: the GPU's layout");
static_assert(sizeof(curandStateMRG32k3a) == 48, "MRG32k3a state: the GPU's layout");

namespace cn {
namespace rng {

// ---------------------------------------------------------------------------------------------
// XORWOW jumps: M^(2^k) over GF(2), k = 0..130 (offsets use 0..63, subsequences of 2^67
// numbers 67..130). A matrix is 160 rows of 5 words: row r is the image of state bit r
// (word r / 32, bit r % 32).
// ---------------------------------------------------------------------------------------------

constexpr int kXorwowPowers = 131;
struct XorwowMatrix {
  unsigned int row[160][5];
};

CN_NOTSAN inline void xorwow_step(unsigned int* v) {
  unsigned int t = v[0] ^ (v[0] >> 2);
  v[0] = v[1];
  v[1] = v[2];
  v[2] = v[3];
  v[3] = v[4];
  v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

CN_NOTSAN inline void xorwow_apply(const XorwowMatrix& m, unsigned int* v) {
  unsigned int out[5] = {0, 0, 0, 0, 0};
  for (int w = 0; w < 5; ++w) {
    unsigned int bits = v[w];
    while (bits) {
      int b = __builtin_ctz(bits);
      bits &= bits - 1;
      const unsigned int* r = m.row[w * 32 + b];
      for (int k = 0; k < 5; ++k) out[k] ^= r[k];
    }
  }
  for (int k = 0; k < 5; ++k) v[k] = out[k];
}

struct XorwowJumps {
  XorwowMatrix power[kXorwowPowers];
  std::atomic<int> ready{0};
  std::mutex lock;
};

CN_NOTSAN inline XorwowJumps& xorwow_jumps() {
  static XorwowJumps jumps;
  return jumps;
}

// M^(2^k), computing (once) the powers up to k.
CN_NOTSAN inline const XorwowMatrix& xorwow_power(int k) {
  XorwowJumps& j = xorwow_jumps();
  if (k < j.ready.load(std::memory_order_acquire)) return j.power[k];
  std::lock_guard<std::mutex> hold(j.lock);
  int have = j.ready.load(std::memory_order_relaxed);
  if (have == 0) {
    for (int r = 0; r < 160; ++r) {
      unsigned int v[5] = {0, 0, 0, 0, 0};
      v[r / 32] = 1u << (r % 32);
      xorwow_step(v);
      for (int w = 0; w < 5; ++w) j.power[0].row[r][w] = v[w];
    }
    have = 1;
  }
  for (; have <= k; ++have) {
    const XorwowMatrix& a = j.power[have - 1];
    XorwowMatrix& sq = j.power[have];
    for (int r = 0; r < 160; ++r) {
      unsigned int v[5];
      for (int w = 0; w < 5; ++w) v[w] = a.row[r][w];
      xorwow_apply(a, v);
      for (int w = 0; w < 5; ++w) sq.row[r][w] = v[w];
    }
  }
  j.ready.store(have, std::memory_order_release);
  return j.power[k];
}

CN_NOTSAN inline void xorwow_jump(unsigned int* v, unsigned long long n, int first_power) {
  for (int k = 0; n; ++k, n >>= 1)
    if (n & 1ull) xorwow_apply(xorwow_power(first_power + k), v);
}

// ---------------------------------------------------------------------------------------------
// MRG32k3a: two recurrences modulo primes m1, m2; jumps M^(2^k) for k = 0..190 (offsets 0..63,
// subsequences of 2^76 numbers 76..139, sequences of 2^127 numbers 127..190).
// ---------------------------------------------------------------------------------------------

constexpr unsigned long long kM1 = 4294967087ull, kM2 = 4294944443ull;
constexpr int kMrgPowers = 191;
struct Mat3 {
  unsigned long long a[3][3];
};

CN_NOTSAN inline Mat3 mat3_mul(const Mat3& x, const Mat3& y, unsigned long long m) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      unsigned long long s = 0;
      for (int k = 0; k < 3; ++k) s = (s + (x.a[i][k] * y.a[k][j]) % m) % m;
      r.a[i][j] = s;
    }
  return r;
}

struct MrgJumps {
  Mat3 p1[kMrgPowers], p2[kMrgPowers];
};

CN_NOTSAN inline const MrgJumps& mrg_jumps() {
  static const MrgJumps jumps = [] {
    MrgJumps j;
    j.p1[0] = Mat3{{{0, 1, 0}, {0, 0, 1}, {kM1 - 810728ull, 1403580ull, 0}}};
    j.p2[0] = Mat3{{{0, 1, 0}, {0, 0, 1}, {kM2 - 1370589ull, 0, 527612ull}}};
    for (int k = 1; k < kMrgPowers; ++k) {
      j.p1[k] = mat3_mul(j.p1[k - 1], j.p1[k - 1], kM1);
      j.p2[k] = mat3_mul(j.p2[k - 1], j.p2[k - 1], kM2);
    }
    return j;
  }();
  return jumps;
}

CN_NOTSAN inline void mat3_apply(const Mat3& m, unsigned int* s, unsigned long long mod) {
  unsigned long long r[3];
  for (int i = 0; i < 3; ++i) {
    unsigned long long t = 0;
    for (int k = 0; k < 3; ++k) t = (t + (m.a[i][k] * (unsigned long long)s[k]) % mod) % mod;
    r[i] = t;
  }
  for (int i = 0; i < 3; ++i) s[i] = (unsigned int)r[i];
}

CN_NOTSAN inline void mrg_jump(curandStateMRG32k3a_t* st, unsigned long long n, int first) {
  const MrgJumps& j = mrg_jumps();
  for (int k = first; n && k < kMrgPowers; ++k, n >>= 1)
    if (n & 1ull) {
      mat3_apply(j.p1[k], st->s1, kM1);
      mat3_apply(j.p2[k], st->s2, kM2);
    }
}

// One step of both recurrences; the combined value in (0, m1] (an integer in a double).
inline double mrg_next(curandStateMRG32k3a_t* s) {
  unsigned long long p1 = (1403580ull * s->s1[1] + 810728ull * (kM1 - s->s1[0])) % kM1;
  s->s1[0] = s->s1[1];
  s->s1[1] = s->s1[2];
  s->s1[2] = (unsigned int)p1;
  unsigned long long p2 = (527612ull * s->s2[2] + 1370589ull * (kM2 - s->s2[0])) % kM2;
  s->s2[0] = s->s2[1];
  s->s2[1] = s->s2[2];
  s->s2[2] = (unsigned int)p2;
  return p1 > p2 ? double(p1 - p2) : double(p1 + kM1 - p2);
}

// ---------------------------------------------------------------------------------------------
// Conversions and transforms
// ---------------------------------------------------------------------------------------------

inline double uniform_double_hq(unsigned int x, unsigned int y) {
  unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << 21);
  return (double)z * CURAND_2POW53_INV_DOUBLE + CURAND_2POW53_INV_DOUBLE / 2.0;
}

inline double uniform_double_bits(unsigned int x) {
  return (double)x * CURAND_2POW32_INV_DOUBLE + CURAND_2POW32_INV_DOUBLE;
}

// sin(pi x) and cos(pi x) to within an ulp: x reduced exactly by halves first.
inline void sincospi_double(double x, double* s, double* c) {
  double n = std::nearbyint(2.0 * x);  // x = n/2 + r, |r| <= 1/4, r exact
  double r = x - 0.5 * n;
  double sr = std::sin(CURAND_PI_DOUBLE * r), cr = std::cos(CURAND_PI_DOUBLE * r);
  long long q = (long long)std::fmod(n, 4.0);
  if (q < 0) q += 4;
  switch (q) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
  }
  if (r == 0.0) {  // exact zeros have the sign sinpi gives them
    if (q == 0 || q == 2) *s = std::copysign(0.0, x);
    else *c = 0.0;
  }
}

inline double2 box_muller_double(unsigned int x0, unsigned int x1, unsigned int y0,
                                 unsigned int y1) {
  unsigned long long zx = (unsigned long long)x0 ^ ((unsigned long long)x1 << 21);
  unsigned long long zy = (unsigned long long)y0 ^ ((unsigned long long)y1 << 21);
  double u = (double)zx * CURAND_2POW53_INV_DOUBLE + CURAND_2POW53_INV_DOUBLE / 2.0;
  double v = (double)zy * (CURAND_2POW53_INV_DOUBLE * 2.0) + CURAND_2POW53_INV_DOUBLE;
  double r = std::sqrt(-2.0 * std::log(u));
  double2 out;
  sincospi_double(v, &out.x, &out.y);
  out.x *= r;
  out.y *= r;
  return out;
}

inline float2 box_muller_mrg(curandStateMRG32k3a_t* s);
inline double2 box_muller_mrg_double(curandStateMRG32k3a_t* s);

}  // namespace rng
}  // namespace cn

// ---------------------------------------------------------------------------------------------
// XORWOW
// ---------------------------------------------------------------------------------------------

QUALIFIERS void skipahead(unsigned long long n, curandStateXORWOW_t* s) {
  cn::rng::xorwow_jump(s->v, n, 0);
  s->d += 362437u * (unsigned int)n;
}

// n subsequences of 2^67 numbers (d moves by a multiple of 2^32: unchanged).
QUALIFIERS void skipahead_sequence(unsigned long long n, curandStateXORWOW_t* s) {
  cn::rng::xorwow_jump(s->v, n, 67);
}

QUALIFIERS void curand_init(unsigned long long seed, unsigned long long subsequence,
                            unsigned long long offset, curandStateXORWOW_t* s) {
  unsigned int s0 = (unsigned int)seed ^ 0xaad26b49u;
  unsigned int s1 = (unsigned int)(seed >> 32) ^ 0xf7dcefddu;
  unsigned int t0 = 1099087573u * s0;
  unsigned int t1 = 2591861531u * s1;
  s->d = 6615241u + t1 + t0;
  s->v[0] = 123456789u + t0;
  s->v[1] = 362436069u ^ t0;
  s->v[2] = 521288629u + t1;
  s->v[3] = 88675123u ^ t1;
  s->v[4] = 5783321u + t0;
  skipahead_sequence(subsequence, s);
  skipahead(offset, s);
  s->boxmuller_flag = 0;
  s->boxmuller_flag_double = 0;
  s->boxmuller_extra = 0.0f;
  s->boxmuller_extra_double = 0.0;
}

QUALIFIERS unsigned int curand(curandStateXORWOW_t* s) {
  unsigned int t = s->v[0] ^ (s->v[0] >> 2);
  s->v[0] = s->v[1];
  s->v[1] = s->v[2];
  s->v[2] = s->v[3];
  s->v[3] = s->v[4];
  s->v[4] = (s->v[4] ^ (s->v[4] << 4)) ^ (t ^ (t << 1));
  s->d += 362437u;
  return s->v[4] + s->d;
}

// ---------------------------------------------------------------------------------------------
// MRG32k3a
// ---------------------------------------------------------------------------------------------

QUALIFIERS void skipahead(unsigned long long n, curandStateMRG32k3a_t* s) {
  cn::rng::mrg_jump(s, n, 0);
}

// n subsequences of 2^76 numbers. As on the GPU, only n < 2^51 is a jump: cuRAND's table of
// these powers holds 51 matrices and zeros after them (and nothing after 56), so a higher bit
// zeroes the state, which then gives m1 (curand_uniform 1.0) forever.
QUALIFIERS void skipahead_subsequence(unsigned long long n, curandStateMRG32k3a_t* s) {
  if (n >> 51) {
    for (int i = 0; i < 3; ++i) s->s1[i] = s->s2[i] = 0u;
    return;
  }
  cn::rng::mrg_jump(s, n, 76);
}

// n sequences of 2^127 numbers.
QUALIFIERS void skipahead_sequence(unsigned long long n, curandStateMRG32k3a_t* s) {
  cn::rng::mrg_jump(s, n, 127);
}

QUALIFIERS void curand_init(unsigned long long seed, unsigned long long subsequence,
                            unsigned long long offset, curandStateMRG32k3a_t* s) {
  for (int i = 0; i < 3; ++i) s->s1[i] = s->s2[i] = 12345u;
  if (seed != 0ull) {
    unsigned long long x1 = (unsigned int)seed ^ 0x55555555u;
    unsigned long long x2 = (unsigned int)(seed >> 32) ^ 0xAAAAAAAAu;
    using cn::rng::kM1;
    using cn::rng::kM2;
    s->s1[0] = (unsigned int)(x1 * s->s1[0] % kM1);
    s->s1[1] = (unsigned int)(x2 * s->s1[1] % kM1);
    s->s1[2] = (unsigned int)(x1 * s->s1[2] % kM1);
    s->s2[0] = (unsigned int)(x2 * s->s2[0] % kM2);
    s->s2[1] = (unsigned int)(x1 * s->s2[1] % kM2);
    s->s2[2] = (unsigned int)(x2 * s->s2[2] % kM2);
  }
  skipahead_subsequence(subsequence, s);
  skipahead(offset, s);
  s->boxmuller_flag = 0;
  s->boxmuller_flag_double = 0;
  s->boxmuller_extra = 0.0f;
  s->boxmuller_extra_double = 0.0;
}

// The GPU converts a double to unsigned int saturating (cvt.rzi.u32.f64): m1 * 1.000000048662
// (a zeroed state) rounds to 2^32 and gives 0xFFFFFFFF there, where a C++ cast is undefined.
QUALIFIERS unsigned int curand(curandStateMRG32k3a_t* s) {
  double x = cn::rng::mrg_next(s) * 1.000000048662;
  return x >= 4294967295.0 ? 0xFFFFFFFFu : (unsigned int)x;
}

// ---------------------------------------------------------------------------------------------
// Uniforms
// ---------------------------------------------------------------------------------------------

QUALIFIERS float curand_uniform(curandStateXORWOW_t* s) { return cn_rng_uniform_bits(curand(s)); }
QUALIFIERS double curand_uniform_double(curandStateXORWOW_t* s) {
  unsigned int x = curand(s);
  unsigned int y = curand(s);
  return cn::rng::uniform_double_hq(x, y);
}
QUALIFIERS float curand_uniform(curandStateMRG32k3a_t* s) {
  return (float)(cn::rng::mrg_next(s) * 2.3283065498378288e-10);
}
QUALIFIERS double curand_uniform_double(curandStateMRG32k3a_t* s) {
  return cn::rng::mrg_next(s) * 2.3283065498378288e-10;
}
QUALIFIERS double curand_uniform_double(curandStatePhilox4_32_10_t* s) {
  return cn::rng::uniform_double_bits(curand(s));
}
QUALIFIERS double2 curand_uniform2_double(curandStatePhilox4_32_10_t* s) {
  uint4 b = curand4(s);
  return double2{cn::rng::uniform_double_hq(b.x, b.y), cn::rng::uniform_double_hq(b.z, b.w)};
}
QUALIFIERS double4 curand_uniform4_double(curandStatePhilox4_32_10_t* s) {
  uint4 a = curand4(s);
  uint4 b = curand4(s);
  using cn::rng::uniform_double_hq;
  return double4{uniform_double_hq(a.x, a.y), uniform_double_hq(a.z, a.w),
                 uniform_double_hq(b.x, b.y), uniform_double_hq(b.z, b.w)};
}

// ---------------------------------------------------------------------------------------------
// Normals (pairs from Box-Muller; the one-value forms keep the second value in the state)
// ---------------------------------------------------------------------------------------------

inline float2 cn::rng::box_muller_mrg(curandStateMRG32k3a_t* s) {
  float x = curand_uniform(s);
  float y = curand_uniform(s) * CURAND_2PI;
  float r = cn_rng_sqrtf(-2.0f * cn_rng_logf(x));
  float2 out;
  cn_rng_sincos_sfu(y, &out.x, &out.y);
  out.x *= r;
  out.y *= r;
  return out;
}

inline double2 cn::rng::box_muller_mrg_double(curandStateMRG32k3a_t* s) {
  double x = curand_uniform_double(s);
  double y = curand_uniform_double(s) * 2.0;
  double r = std::sqrt(-2.0 * std::log(x));
  double2 out;
  sincospi_double(y, &out.x, &out.y);
  out.x *= r;
  out.y *= r;
  return out;
}

// Pair generators per state type, and the one-value forms built on them (FLAG 1: a normal
// kept, 2: a log-normal kept).
namespace cn {
namespace rng {
inline float2 pair(curandStateXORWOW_t* s) {
  unsigned int x = curand(s);
  unsigned int y = curand(s);
  return cn_rng_box_muller(x, y);
}
inline float2 pair(curandStatePhilox4_32_10_t* s) { return curand_normal2(s); }
inline float2 pair(curandStateMRG32k3a_t* s) { return box_muller_mrg(s); }
inline double2 pair_double(curandStateXORWOW_t* s) {
  unsigned int x0 = curand(s), x1 = curand(s), y0 = curand(s), y1 = curand(s);
  return box_muller_double(x0, x1, y0, y1);
}
inline double2 pair_double(curandStatePhilox4_32_10_t* s) {
  uint4 b = curand4(s);
  return box_muller_double(b.x, b.y, b.z, b.w);
}
inline double2 pair_double(curandStateMRG32k3a_t* s) { return box_muller_mrg_double(s); }

template <class S>
inline float normal(S* s) {
  if (s->boxmuller_flag != EXTRA_FLAG_NORMAL) {
    float2 v = pair(s);
    s->boxmuller_extra = v.y;
    s->boxmuller_flag = EXTRA_FLAG_NORMAL;
    return v.x;
  }
  s->boxmuller_flag = 0;
  return s->boxmuller_extra;
}
template <class S>
inline double normal_double(S* s) {
  if (s->boxmuller_flag_double != EXTRA_FLAG_NORMAL) {
    double2 v = pair_double(s);
    s->boxmuller_extra_double = v.y;
    s->boxmuller_flag_double = EXTRA_FLAG_NORMAL;
    return v.x;
  }
  s->boxmuller_flag_double = 0;
  return s->boxmuller_extra_double;
}
template <class S>
inline float log_normal(S* s, float mean, float stddev) {
  if (s->boxmuller_flag != EXTRA_FLAG_LOG_NORMAL) {
    float2 v = pair(s);
    s->boxmuller_extra = cn_rng_expf(cn_rng_fmaf(stddev, v.y, mean));
    s->boxmuller_flag = EXTRA_FLAG_LOG_NORMAL;
    return cn_rng_expf(cn_rng_fmaf(stddev, v.x, mean));
  }
  s->boxmuller_flag = 0;
  return s->boxmuller_extra;
}
template <class S>
inline double log_normal_double(S* s, double mean, double stddev) {
  if (s->boxmuller_flag_double != EXTRA_FLAG_LOG_NORMAL) {
    double2 v = pair_double(s);
    s->boxmuller_extra_double = std::exp(std::fma(stddev, v.y, mean));
    s->boxmuller_flag_double = EXTRA_FLAG_LOG_NORMAL;
    return std::exp(std::fma(stddev, v.x, mean));
  }
  s->boxmuller_flag_double = 0;
  return s->boxmuller_extra_double;
}
inline float2 log2f(float2 v, float mean, float stddev) {
  return float2{cn_rng_expf(cn_rng_fmaf(stddev, v.x, mean)),
                cn_rng_expf(cn_rng_fmaf(stddev, v.y, mean))};
}
inline double2 log2d(double2 v, double mean, double stddev) {
  return double2{std::exp(std::fma(stddev, v.x, mean)), std::exp(std::fma(stddev, v.y, mean))};
}
}  // namespace rng
}  // namespace cn

QUALIFIERS float curand_normal(curandStateXORWOW_t* s) { return cn::rng::normal(s); }
QUALIFIERS float curand_normal(curandStateMRG32k3a_t* s) { return cn::rng::normal(s); }
QUALIFIERS float2 curand_normal2(curandStateXORWOW_t* s) { return cn::rng::pair(s); }
QUALIFIERS float2 curand_normal2(curandStateMRG32k3a_t* s) { return cn::rng::pair(s); }
QUALIFIERS double curand_normal_double(curandStateXORWOW_t* s) { return cn::rng::normal_double(s); }
QUALIFIERS double curand_normal_double(curandStatePhilox4_32_10_t* s) {
  return cn::rng::normal_double(s);
}
QUALIFIERS double curand_normal_double(curandStateMRG32k3a_t* s) {
  return cn::rng::normal_double(s);
}
QUALIFIERS double2 curand_normal2_double(curandStateXORWOW_t* s) {
  return cn::rng::pair_double(s);
}
QUALIFIERS double2 curand_normal2_double(curandStatePhilox4_32_10_t* s) {
  return cn::rng::pair_double(s);
}
QUALIFIERS double2 curand_normal2_double(curandStateMRG32k3a_t* s) {
  return cn::rng::pair_double(s);
}
QUALIFIERS double4 curand_normal4_double(curandStatePhilox4_32_10_t* s) {
  double2 a = cn::rng::pair_double(s);
  double2 b = cn::rng::pair_double(s);
  return double4{a.x, a.y, b.x, b.y};
}

QUALIFIERS float curand_log_normal(curandStateXORWOW_t* s, float mean, float stddev) {
  return cn::rng::log_normal(s, mean, stddev);
}
QUALIFIERS float curand_log_normal(curandStateMRG32k3a_t* s, float mean, float stddev) {
  return cn::rng::log_normal(s, mean, stddev);
}
QUALIFIERS float2 curand_log_normal2(curandStateXORWOW_t* s, float mean, float stddev) {
  return cn::rng::log2f(cn::rng::pair(s), mean, stddev);
}
QUALIFIERS float2 curand_log_normal2(curandStateMRG32k3a_t* s, float mean, float stddev) {
  return cn::rng::log2f(cn::rng::pair(s), mean, stddev);
}
QUALIFIERS double curand_log_normal_double(curandStateXORWOW_t* s, double mean, double stddev) {
  return cn::rng::log_normal_double(s, mean, stddev);
}
QUALIFIERS double curand_log_normal_double(curandStatePhilox4_32_10_t* s, double mean,
                                           double stddev) {
  return cn::rng::log_normal_double(s, mean, stddev);
}
QUALIFIERS double curand_log_normal_double(curandStateMRG32k3a_t* s, double mean, double stddev) {
  return cn::rng::log_normal_double(s, mean, stddev);
}
QUALIFIERS double2 curand_log_normal2_double(curandStateXORWOW_t* s, double mean, double stddev) {
  return cn::rng::log2d(cn::rng::pair_double(s), mean, stddev);
}
QUALIFIERS double2 curand_log_normal2_double(curandStatePhilox4_32_10_t* s, double mean,
                                             double stddev) {
  return cn::rng::log2d(cn::rng::pair_double(s), mean, stddev);
}
QUALIFIERS double2 curand_log_normal2_double(curandStateMRG32k3a_t* s, double mean,
                                             double stddev) {
  return cn::rng::log2d(cn::rng::pair_double(s), mean, stddev);
}
QUALIFIERS double4 curand_log_normal4_double(curandStatePhilox4_32_10_t* s, double mean,
                                             double stddev) {
  double2 a = cn::rng::log2d(cn::rng::pair_double(s), mean, stddev);
  double2 b = cn::rng::log2d(cn::rng::pair_double(s), mean, stddev);
  return double4{a.x, a.y, b.x, b.y};
}

#include "cn_curand_poisson.h"

#endif  // CN_CURAND_H
