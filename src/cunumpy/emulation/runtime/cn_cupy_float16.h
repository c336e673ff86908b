// cunumpy CPU emulation: CuPy's float16 class (<cupy/float16.cuh>), a 2-byte IEEE half that
// computes in float: it converts to float implicitly and from float implicitly (from other
// numbers explicitly), so `a + b` is a float and `float16 c = a + b;` rounds once.
#ifndef CN_CUPY_FLOAT16_H
#define CN_CUPY_FLOAT16_H

#include "cn_cuda.h"

#ifdef __FLT16_MAX__
class float16 {
  __half data_;

 public:
  float16() = default;
  float16(float v) : data_(__half(v)) {}
  explicit float16(bool v) : data_(__half(float(v))) {}
  explicit float16(double v) : data_(__half(v)) {}
  explicit float16(int v) : data_(__half(float(v))) {}
  explicit float16(unsigned int v) : data_(__half(float(v))) {}
  explicit float16(long long v) : data_(__half(float(v))) {}
  explicit float16(unsigned long long v) : data_(__half(float(v))) {}
  explicit float16(const __half& v) : data_(v) {}
  operator float() const { return float(data_); }

  template <class T>
  float16& operator=(const T& v) { data_ = __half(float(v)); return *this; }

  unsigned short to_bits() const { return __builtin_bit_cast(unsigned short, data_); }
  static float16 from_bits(unsigned short v) { return float16(__builtin_bit_cast(__half, v)); }
  int iszero() const { return (to_bits() & 0x7fffu) == 0; }
  int isnan() const { return (to_bits() & 0x7fffu) > 0x7c00u; }
  int isinf() const { return (to_bits() & 0x7fffu) == 0x7c00u; }
  int isfinite() const { return (to_bits() & 0x7c00u) != 0x7c00u; }
  int signbit() const { return (to_bits() & 0x8000u) != 0; }
  float16 operator-() const { return from_bits((unsigned short)(to_bits() ^ 0x8000u)); }
  template <class T> float16& operator+=(const T& v) { return *this = float(*this) + float(v); }
  template <class T> float16& operator-=(const T& v) { return *this = float(*this) - float(v); }
  template <class T> float16& operator*=(const T& v) { return *this = float(*this) * float(v); }
  template <class T> float16& operator/=(const T& v) { return *this = float(*this) / float(v); }

  friend float16 copysign(float16 x, float16 y) {
    return from_bits((unsigned short)((x.to_bits() & 0x7fffu) | (y.to_bits() & 0x8000u)));
  }
  // The next representable value after x in the direction of y.
  friend float16 nextafter(float16 x, float16 y) {
    if (x.isnan() || y.isnan()) return x.isnan() ? x : y;
    if (float(x) == float(y)) return y;
    unsigned short b = x.to_bits();
    if (x.iszero()) return from_bits((unsigned short)((y.to_bits() & 0x8000u) | 1u));
    bool up = (float(x) < float(y)) != bool(x.signbit());
    return from_bits((unsigned short)(up ? b + 1u : b - 1u));
  }
};

// NaN-propagating min/max and NaN-ignoring fmin/fmax, as NumPy defines them.
inline float16 min(float16 x, float16 y) { return x.isnan() ? x : y.isnan() ? y : (float(y) < float(x) ? y : x); }
inline float16 max(float16 x, float16 y) { return x.isnan() ? x : y.isnan() ? y : (float(x) < float(y) ? y : x); }
inline float16 fmin(float16 x, float16 y) { return x.isnan() ? y : y.isnan() ? x : (float(y) < float(x) ? y : x); }
inline float16 fmax(float16 x, float16 y) { return x.isnan() ? y : y.isnan() ? x : (float(x) < float(y) ? y : x); }
inline int iszero(float16 x) { return x.iszero(); }
inline int isnan(float16 x) { return x.isnan(); }
inline int isinf(float16 x) { return x.isinf(); }
inline int isfinite(float16 x) { return x.isfinite(); }
inline int signbit(float16 x) { return x.signbit(); }
#endif

#endif  // CN_CUPY_FLOAT16_H
