// cunumpy CPU emulation: thrust::complex<T> as CuPy's <cupy/complex.cuh> provides it (also in
// place of <thrust/complex.h> and <cuda/std/complex>).
//
// complex<T> holds {real, imag} with the alignment of two T (8 bytes for float, 16 for double),
// so arrays of complex64 / complex128 have its layout. Arithmetic mixes complex and real operands
// of any arithmetic type (the result has the promoted type); the functions are those CuPy kernels
// use (real, imag, abs, arg, norm, conj, polar, proj, exp, log, log10, log1p, log2, expm1, sqrt,
// pow, rint, min, max, isnan, isinf, isfinite, the trigonometric and hyperbolic functions and
// their inverses), computed through the host's std::complex.
#ifndef CN_CUPY_COMPLEX_H
#define CN_CUPY_COMPLEX_H

#include "cn_cuda.h"

#include <complex>

namespace thrust {

template <class T>
struct alignas(2 * sizeof(T)) complex {
  typedef T value_type;
  T re_, im_;

  complex(const T& re = T(), const T& im = T()) : re_(re), im_(im) {}
  template <class U>
  complex(const complex<U>& o) : re_(T(o.real())), im_(T(o.imag())) {}
  template <class U>
  complex(const std::complex<U>& o) : re_(T(o.real())), im_(T(o.imag())) {}
  operator std::complex<T>() const { return std::complex<T>(re_, im_); }

  T real() const volatile { return re_; }
  T imag() const volatile { return im_; }
  T real() const { return re_; }
  T imag() const { return im_; }
  void real(T v) { re_ = v; }
  void imag(T v) { im_ = v; }

  template <class U> complex& operator+=(const complex<U>& o) { re_ += T(o.real()); im_ += T(o.imag()); return *this; }
  template <class U> complex& operator-=(const complex<U>& o) { re_ -= T(o.real()); im_ -= T(o.imag()); return *this; }
  template <class U> complex& operator*=(const complex<U>& o) { return *this = *this * complex<T>(o); }
  template <class U> complex& operator/=(const complex<U>& o) { return *this = *this / complex<T>(o); }
  template <class U, class = std::enable_if_t<std::is_arithmetic<U>::value>>
  complex& operator+=(const U& v) { re_ += T(v); return *this; }
  template <class U, class = std::enable_if_t<std::is_arithmetic<U>::value>>
  complex& operator-=(const U& v) { re_ -= T(v); return *this; }
  template <class U, class = std::enable_if_t<std::is_arithmetic<U>::value>>
  complex& operator*=(const U& v) { re_ *= T(v); im_ *= T(v); return *this; }
  template <class U, class = std::enable_if_t<std::is_arithmetic<U>::value>>
  complex& operator/=(const U& v) { re_ /= T(v); im_ /= T(v); return *this; }
};

namespace cn_detail {
template <class A, class B> using promoted = decltype(A() + B());
template <class U> using if_real = std::enable_if_t<std::is_arithmetic<U>::value, int>;
template <class T> inline std::complex<T> s(const complex<T>& z) { return std::complex<T>(z.real(), z.imag()); }
template <class T> inline complex<T> t(const std::complex<T>& z) { return complex<T>(z.real(), z.imag()); }
}  // namespace cn_detail

template <class A, class B>
inline complex<cn_detail::promoted<A, B>> operator+(const complex<A>& a, const complex<B>& b) {
  return {a.real() + b.real(), a.imag() + b.imag()};
}
template <class A, class B>
inline complex<cn_detail::promoted<A, B>> operator-(const complex<A>& a, const complex<B>& b) {
  return {a.real() - b.real(), a.imag() - b.imag()};
}
template <class A, class B>
inline complex<cn_detail::promoted<A, B>> operator*(const complex<A>& a, const complex<B>& b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
template <class A, class B>
inline complex<cn_detail::promoted<A, B>> operator/(const complex<A>& a, const complex<B>& b) {
  using P = cn_detail::promoted<A, B>;
  return cn_detail::t(cn_detail::s(complex<P>(a)) / cn_detail::s(complex<P>(b)));
}

#define CN_CX_MIXED(OP)                                                                         \
  template <class A, class B, cn_detail::if_real<B> = 0>                                       \
  inline complex<cn_detail::promoted<A, B>> operator OP(const complex<A>& a, const B& b) {      \
    return complex<cn_detail::promoted<A, B>>(a) OP complex<cn_detail::promoted<A, B>>(b);      \
  }                                                                                            \
  template <class A, class B, cn_detail::if_real<A> = 0>                                       \
  inline complex<cn_detail::promoted<A, B>> operator OP(const A& a, const complex<B>& b) {      \
    return complex<cn_detail::promoted<A, B>>(a) OP complex<cn_detail::promoted<A, B>>(b);      \
  }
CN_CX_MIXED(+)
CN_CX_MIXED(-)
CN_CX_MIXED(/)
#undef CN_CX_MIXED
template <class A, class B, cn_detail::if_real<B> = 0>
inline complex<cn_detail::promoted<A, B>> operator*(const complex<A>& a, const B& b) {
  return {a.real() * b, a.imag() * b};
}
template <class A, class B, cn_detail::if_real<A> = 0>
inline complex<cn_detail::promoted<A, B>> operator*(const A& a, const complex<B>& b) {
  return {a * b.real(), a * b.imag()};
}

template <class T> inline complex<T> operator+(const complex<T>& z) { return z; }
template <class T> inline complex<T> operator-(const complex<T>& z) { return {-z.real(), -z.imag()}; }
template <class A, class B>
inline bool operator==(const complex<A>& a, const complex<B>& b) {
  return a.real() == b.real() && a.imag() == b.imag();
}
template <class A, class B>
inline bool operator!=(const complex<A>& a, const complex<B>& b) { return !(a == b); }
template <class A, class B, cn_detail::if_real<B> = 0>
inline bool operator==(const complex<A>& a, const B& b) { return a.real() == b && a.imag() == 0; }
template <class A, class B, cn_detail::if_real<A> = 0>
inline bool operator==(const A& a, const complex<B>& b) { return b == a; }
template <class A, class B, cn_detail::if_real<B> = 0>
inline bool operator!=(const complex<A>& a, const B& b) { return !(a == b); }
template <class A, class B, cn_detail::if_real<A> = 0>
inline bool operator!=(const A& a, const complex<B>& b) { return !(b == a); }

template <class T> inline T abs(const complex<T>& z) { return std::hypot(z.real(), z.imag()); }
template <class T> inline T arg(const complex<T>& z) { return std::atan2(z.imag(), z.real()); }
template <class T> inline T norm(const complex<T>& z) { return z.real() * z.real() + z.imag() * z.imag(); }
template <class T> inline complex<T> conj(const complex<T>& z) { return {z.real(), -z.imag()}; }
template <class T> inline complex<T> polar(const T& m, const T& theta = T()) {
  return {m * std::cos(theta), m * std::sin(theta)};
}
template <class T> inline complex<T> proj(const complex<T>& z) { return cn_detail::t(std::proj(cn_detail::s(z))); }

#define CN_CX_FN(NAME)                                                                          \
  template <class T> inline complex<T> NAME(const complex<T>& z) {                            \
    return cn_detail::t(std::NAME(cn_detail::s(z)));                                           \
  }
CN_CX_FN(exp) CN_CX_FN(log) CN_CX_FN(log10) CN_CX_FN(sqrt)
CN_CX_FN(sin) CN_CX_FN(cos) CN_CX_FN(tan) CN_CX_FN(sinh) CN_CX_FN(cosh) CN_CX_FN(tanh)
CN_CX_FN(asin) CN_CX_FN(acos) CN_CX_FN(atan) CN_CX_FN(asinh) CN_CX_FN(acosh) CN_CX_FN(atanh)
#undef CN_CX_FN

template <class A, class B>
inline complex<cn_detail::promoted<A, B>> pow(const complex<A>& a, const complex<B>& b) {
  using P = cn_detail::promoted<A, B>;
  return cn_detail::t(std::pow(cn_detail::s(complex<P>(a)), cn_detail::s(complex<P>(b))));
}
template <class A, class B, cn_detail::if_real<B> = 0>
inline complex<cn_detail::promoted<A, B>> pow(const complex<A>& a, const B& b) {
  using P = cn_detail::promoted<A, B>;
  return cn_detail::t(std::pow(cn_detail::s(complex<P>(a)), P(b)));
}
template <class A, class B, cn_detail::if_real<A> = 0>
inline complex<cn_detail::promoted<A, B>> pow(const A& a, const complex<B>& b) {
  using P = cn_detail::promoted<A, B>;
  return cn_detail::t(std::pow(P(a), cn_detail::s(complex<P>(b))));
}

template <class T> inline T real(const complex<T>& z) { return z.real(); }
template <class T> inline T imag(const complex<T>& z) { return z.imag(); }

template <class T> inline bool isnan(const complex<T>& z) { return std::isnan(z.real()) || std::isnan(z.imag()); }
template <class T> inline bool isinf(const complex<T>& z) { return std::isinf(z.real()) || std::isinf(z.imag()); }
template <class T> inline bool isfinite(const complex<T>& z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }

// What CuPy's header adds to thrust's: log1p, log2, expm1, rint, and min/max in NumPy's order
// (real part first, then imaginary; a NaN operand loses).
template <class T> inline complex<T> log1p(complex<T> z) { return log(z + T(1)); }
template <class T> inline complex<T> log2(complex<T> z) { return log(z) / std::log(T(2)); }
template <class T> inline complex<T> expm1(complex<T> z) { return exp(z) - T(1); }
template <class T> inline complex<T> rint(complex<T> z) { return {std::rint(z.real()), std::rint(z.imag())}; }
template <class T> inline bool cn_less(const complex<T>& a, const complex<T>& b) {
  return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
}
template <class T> inline complex<T> min(complex<T> a, complex<T> b) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  return cn_less(b, a) ? b : a;
}
template <class T> inline complex<T> max(complex<T> a, complex<T> b) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  return cn_less(a, b) ? b : a;
}

}  // namespace thrust

// CuPy's header makes these visible unqualified, so kernels write complex<float> and exp(z).
using thrust::complex;
using thrust::abs;
using thrust::arg;
using thrust::norm;
using thrust::conj;
using thrust::polar;
using thrust::proj;
using thrust::exp;
using thrust::log;
using thrust::log10;
using thrust::sqrt;
using thrust::pow;
using thrust::sin;
using thrust::cos;
using thrust::tan;
using thrust::sinh;
using thrust::cosh;
using thrust::tanh;
using thrust::asin;
using thrust::acos;
using thrust::atan;
using thrust::asinh;
using thrust::acosh;
using thrust::atanh;
using thrust::isnan;
using thrust::isinf;
using thrust::isfinite;
using thrust::real;
using thrust::imag;
using thrust::log1p;
using thrust::log2;
using thrust::expm1;
using thrust::rint;
using thrust::min;
using thrust::max;

#endif  // CN_CUPY_COMPLEX_H
