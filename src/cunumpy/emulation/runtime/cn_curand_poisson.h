// cunumpy CPU emulation: curand_poisson and curand_poisson4 (included by cn_curand.h).
//
// The GPU's three regimes, by lambda:
//   * lambda < 64: Knuth's method in float: multiply uniforms into exp(lambda) until the product
//     is at most 1;
//   * 64 <= lambda <= 4000: rejection from a closed-form approximation of the regularised
//     incomplete gamma function (its inverse gives the candidate, its differences the envelope);
//     the GPU evaluates it with the SFU's approximate rsqrt, 2^x, log2 and reciprocal, here they
//     are exact (rounded once to float);
//   * lambda > 4000: round(lambda + sqrt(lambda) * normal) with a double normal.
// Every a * b + c the GPU's compiler contracts is written as an fma, so only the SFU
// approximations separate the two (a draw changes only when a value falls within ~2^-22 of a
// decision).
#ifndef CN_CURAND_POISSON_H
#define CN_CURAND_POISSON_H

namespace cn {
namespace rng {

inline float sfu_rsqrt(float a) { return (float)(1.0 / std::sqrt((double)a)); }
inline float sfu_exp(float a) { return (float)std::exp2((double)(float)((double)a * 1.4426950408889634)); }
inline float sfu_log(float a) { return (float)((double)(float)std::log2((double)a) * 0.6931471805599453); }
inline float sfu_rcp(float a) { return (float)(1.0 / (double)a); }

constexpr float kMa1 = 1.43248035075540910f, kMa2 = 0.12400979329415655f,
                kMa3 = 0.00025361074907033f, kMb1 = 0.21096734870196546f,
                kMb2 = 1.97381164089999420f, kMb3 = 0.94201734077887530f;

inline float pgammainc(float a, float x) {
  float alpha = std::fma(kMa1, sfu_rsqrt(a - kMa2), kMa3);
  float beta = std::fma(kMb1, sfu_rsqrt(a - kMb2), kMb3);
  float t = std::fma(alpha, a - x, -beta);
  t = 1.0f + sfu_exp(t);
  t = t * t;
  return sfu_rcp(t);
}

inline float pgammaincinv(float a, float y) {
  float alpha = std::fma(kMa1, sfu_rsqrt(a - kMa2), kMa3);
  float beta = std::fma(kMb1, sfu_rsqrt(a - kMb2), kMb3);
  float t = sfu_rsqrt(y) - 1.0f;
  t = sfu_log(t);
  t = beta + t;
  return std::fma(-t, sfu_rcp(alpha), a);
}

// log((a-1)!) for a >= 1: a table to 8, Stirling's series beyond.
inline double lgamma_integer(int a) {
  static const double table[9] = {0.0, 0.0, 6.931471805599453094e-1, 1.791759469228055001e0,
                                  3.178053830347945620e0, 4.787491742782045994e0,
                                  6.579251212010100995e0, 8.525161361065414300e0,
                                  1.060460290274525023e1};
  double fa = std::fabs((float)a);
  if (a <= 8) return table[(int)fa - 1 < 0 ? 0 : (int)fa - 1];
  double s = 1.0 / fa, t = s * s;
  double sum = -0.1633436431e-2;
  sum = std::fma(sum, t, 0.83645878922e-3);
  sum = std::fma(sum, t, -0.5951896861197e-3);
  sum = std::fma(sum, t, 0.793650576493454e-3);
  sum = std::fma(sum, t, -0.277777777735865004e-2);
  sum = std::fma(sum, t, 0.833333333333331018375e-1);
  sum = std::fma(sum, s, 0.918938533204672);
  double h = 0.5 * std::log(fa);
  double g = fa - 0.5;
  // (h * g - fa) + (h * g + sum): the product is fused into both sums.
  return std::fma(h, g, -fa) + std::fma(h, g, sum);
}

template <class S>
inline unsigned int poisson_knuth(S* s, float lambda) {
  unsigned int k = 0;
  float p = cn_rng_expf(lambda);
  do {
    k++;
    p *= curand_uniform(s);
  } while (p > 1.0);
  return k - 1;
}

template <class S>
inline unsigned int poisson_gammainc(S* s, float lambda) {
  float logl = sfu_log(lambda);
  for (;;) {
    float y = curand_uniform(s);
    float x = std::floor(pgammaincinv(lambda, y));
    float z = curand_uniform(s);
    float v = (pgammainc(lambda, x + 1.0f) - pgammainc(lambda, x)) * 1.3f;
    z = z * v;
    float lg = (float)lgamma_integer((int)(1.0f + x));
    float t = sfu_exp(std::fma(x, logl, -lambda) - lg);
    if (z < t && v >= 1e-20) return (unsigned int)x;
  }
}

inline unsigned int poisson_from(double normal, double lambda) {
  return (unsigned int)(std::fma(std::sqrt(lambda), normal, lambda) + 0.5);
}

template <class S>
inline unsigned int poisson(S* s, double lambda) {
  if (lambda < 64) return poisson_knuth(s, (float)lambda);
  if (lambda > 4000) return poisson_from(curand_normal_double(s), lambda);
  return poisson_gammainc(s, (float)lambda);
}

}  // namespace rng
}  // namespace cn

QUALIFIERS unsigned int curand_poisson(curandStateXORWOW_t* s, double lambda) {
  return cn::rng::poisson(s, lambda);
}
QUALIFIERS unsigned int curand_poisson(curandStatePhilox4_32_10_t* s, double lambda) {
  return cn::rng::poisson(s, lambda);
}
QUALIFIERS unsigned int curand_poisson(curandStateMRG32k3a_t* s, double lambda) {
  return cn::rng::poisson(s, lambda);
}

QUALIFIERS uint4 curand_poisson4(curandStatePhilox4_32_10_t* s, double lambda) {
  uint4 r;
  if (lambda < 64) {
    r.x = cn::rng::poisson_knuth(s, (float)lambda);
    r.y = cn::rng::poisson_knuth(s, (float)lambda);
    r.z = cn::rng::poisson_knuth(s, (float)lambda);
    r.w = cn::rng::poisson_knuth(s, (float)lambda);
  } else if (lambda > 4000) {
    double4 n = curand_normal4_double(s);
    r.x = cn::rng::poisson_from(n.x, lambda);
    r.y = cn::rng::poisson_from(n.y, lambda);
    r.z = cn::rng::poisson_from(n.z, lambda);
    r.w = cn::rng::poisson_from(n.w, lambda);
  } else {
    r.x = cn::rng::poisson_gammainc(s, (float)lambda);
    r.y = cn::rng::poisson_gammainc(s, (float)lambda);
    r.z = cn::rng::poisson_gammainc(s, (float)lambda);
    r.w = cn::rng::poisson_gammainc(s, (float)lambda);
  }
  return r;
}

#endif  // CN_CURAND_POISSON_H
