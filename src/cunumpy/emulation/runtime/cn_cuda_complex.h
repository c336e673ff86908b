// cunumpy CPU emulation: <cuComplex.h> (the emulator includes this header in its place).
//
// cuFloatComplex is float2 and cuDoubleComplex is double2 (8- and 16-byte aligned), as in the CUDA
// toolkit, so arrays of complex64 / complex128 have the same layout. Division scales by the
// divisor's magnitude first and the modulus is a hypot, so intermediate values do not overflow.
#ifndef CN_CUDA_COMPLEX_H
#define CN_CUDA_COMPLEX_H

#include "cn_cuda.h"

typedef float2 cuFloatComplex;
typedef double2 cuDoubleComplex;
typedef cuFloatComplex cuComplex;

#define CN_CX(SUF, R, C)                                                                      \
  inline R cuCreal##SUF(C x) { return x.x; }                                                 \
  inline R cuCimag##SUF(C x) { return x.y; }                                                 \
  inline C cuConj##SUF(C x) { return C{x.x, -x.y}; }                                         \
  inline C cuCadd##SUF(C a, C b) { return C{a.x + b.x, a.y + b.y}; }                         \
  inline C cuCsub##SUF(C a, C b) { return C{a.x - b.x, a.y - b.y}; }                         \
  inline C cuCmul##SUF(C a, C b) {                                                           \
    return C{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};                                  \
  }                                                                                          \
  inline C cuCdiv##SUF(C a, C b) {                                                           \
    R s = std::fabs(b.x) + std::fabs(b.y);                                                   \
    R inv = R(1) / s;                                                                        \
    R ar = a.x * inv, ai = a.y * inv, br = b.x * inv, bi = b.y * inv;                        \
    R d = R(1) / (br * br + bi * bi);                                                        \
    return C{(ar * br + ai * bi) * d, (ai * br - ar * bi) * d};                              \
  }                                                                                          \
  inline R cuCabs##SUF(C x) { return std::hypot(x.x, x.y); }                                 \
  inline C cuCfma##SUF(C x, C y, C d) {                                                      \
    R re = x.x * y.x + d.x;                                                                  \
    R im = x.x * y.y + d.y;                                                                  \
    re = -(x.y * y.y) + re;                                                                  \
    im = x.y * y.x + im;                                                                     \
    return C{re, im};                                                                        \
  }
CN_CX(f, float, cuFloatComplex)
CN_CX(, double, cuDoubleComplex)
#undef CN_CX

inline cuFloatComplex make_cuFloatComplex(float r, float i) { return cuFloatComplex{r, i}; }
inline cuDoubleComplex make_cuDoubleComplex(double r, double i) { return cuDoubleComplex{r, i}; }
inline cuComplex make_cuComplex(float r, float i) { return cuComplex{r, i}; }
inline cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex c) {
  return cuDoubleComplex{double(c.x), double(c.y)};
}
inline cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex c) {
  return cuFloatComplex{float(c.x), float(c.y)};
}

#endif  // CN_CUDA_COMPLEX_H
