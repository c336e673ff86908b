// cunumpy: included before every kernel the cupy engine compiles (NVRTC's --pre-include).
//
// nvcc compiles device code with the host's C++ library in scope: <cmath>'s overloads promote
// mixed and integer arguments (fmax(0.0, x) with a float x is fmax(double, double), sqrt(2) is
// sqrt(double)), std::sqrt and friends exist without an include, and cuda.h's CUDA_VERSION
// matches the runtime's. NVRTC has only CUDA's float and double overloads, so those calls are
// ambiguous there. This header gives NVRTC the same overload set: templates that lose to every
// exact overload NVRTC already has and convert the arguments as <cmath> does (integers and
// doubles to double, floats alone stay float).
#pragma once
#ifndef CUNUMPY_NVRTC_H
#define CUNUMPY_NVRTC_H

#ifndef CUDA_VERSION
#define CUDA_VERSION CUDART_VERSION
#endif

// What glibc's headers, which nvcc's cuda_runtime.h includes, give every kernel: the short
// unsigned type names of <sys/types.h> and <math.h>'s constants.
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF __int_as_float(0x7f800000)
#endif
#ifndef HUGE_VAL
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#endif
#ifndef M_PI
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif

namespace cunumpy_nvrtc {
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
// rank: 0 not arithmetic, 1 float, 2 double or an integer (promoted to double), 3 long double.
template <class T> struct num { enum { rank = 0, integral = 0 }; };
template <class T> struct num<const T> : num<T> {};
template <class T> struct num<volatile T> : num<T> {};
template <class T> struct num<const volatile T> : num<T> {};
#define CUNUMPY_NVRTC_INT(T) template <> struct num<T> { enum { rank = 2, integral = 1 }; };
CUNUMPY_NVRTC_INT(bool) CUNUMPY_NVRTC_INT(char) CUNUMPY_NVRTC_INT(signed char)
CUNUMPY_NVRTC_INT(unsigned char) CUNUMPY_NVRTC_INT(short) CUNUMPY_NVRTC_INT(unsigned short)
CUNUMPY_NVRTC_INT(int) CUNUMPY_NVRTC_INT(unsigned int) CUNUMPY_NVRTC_INT(long)
CUNUMPY_NVRTC_INT(unsigned long) CUNUMPY_NVRTC_INT(long long)
CUNUMPY_NVRTC_INT(unsigned long long)
#undef CUNUMPY_NVRTC_INT
template <> struct num<float> { enum { rank = 1, integral = 0 }; };
template <> struct num<double> { enum { rank = 2, integral = 0 }; };
template <int R> struct of_rank { typedef double type; };
template <> struct of_rank<1> { typedef float type; };
template <class A, class B, class C = float> struct promote {
  enum { ok = num<A>::rank && num<B>::rank && num<C>::rank };
  enum { r = num<A>::rank > num<B>::rank ? (num<A>::rank > num<C>::rank ? num<A>::rank : num<C>::rank)
                                         : (num<B>::rank > num<C>::rank ? num<B>::rank : num<C>::rank) };
  typedef typename of_rank<r>::type type;
};
// min/max: the usual arithmetic conversions when one operand is floating-point.
template <class A, class B> struct common {
  enum { ok = num<A>::rank && num<B>::rank && !(num<A>::integral && num<B>::integral) };
  enum { r = (num<A>::integral ? 1 : num<A>::rank) > (num<B>::integral ? 1 : num<B>::rank)
                 ? (num<A>::integral ? 1 : num<A>::rank) : (num<B>::integral ? 1 : num<B>::rank) };
  typedef typename of_rank<r>::type type;
};
}  // namespace cunumpy_nvrtc

#define CUNUMPY_NVRTC_MIXED2(F)                                                                \
  template <class A, class B>                                                                  \
  __device__ inline typename cunumpy_nvrtc::enable_if<cunumpy_nvrtc::promote<A, B>::ok,        \
      typename cunumpy_nvrtc::promote<A, B>::type>::type F(A a, B b) {                        \
    typedef typename cunumpy_nvrtc::promote<A, B>::type P;                                     \
    return ::F((P)a, (P)b);                                                                    \
  }
#define CUNUMPY_NVRTC_INT1(F, R)                                                               \
  template <class T>                                                                           \
  __device__ inline typename cunumpy_nvrtc::enable_if<cunumpy_nvrtc::num<T>::integral, R>::type \
  F(T a) { return ::F((double)a); }
#define CUNUMPY_NVRTC_MINMAX(F)                                                                \
  template <class A, class B>                                                                  \
  __device__ inline typename cunumpy_nvrtc::enable_if<cunumpy_nvrtc::common<A, B>::ok,         \
      typename cunumpy_nvrtc::common<A, B>::type>::type F(A a, B b) {                         \
    typedef typename cunumpy_nvrtc::common<A, B>::type P;                                      \
    return ::F((P)a, (P)b);                                                                    \
  }

CUNUMPY_NVRTC_MIXED2(fmax) CUNUMPY_NVRTC_MIXED2(fmin) CUNUMPY_NVRTC_MIXED2(pow)
CUNUMPY_NVRTC_MIXED2(atan2) CUNUMPY_NVRTC_MIXED2(fmod) CUNUMPY_NVRTC_MIXED2(hypot)
CUNUMPY_NVRTC_MIXED2(copysign) CUNUMPY_NVRTC_MIXED2(remainder) CUNUMPY_NVRTC_MIXED2(fdim)
CUNUMPY_NVRTC_MIXED2(nextafter)
CUNUMPY_NVRTC_MINMAX(min) CUNUMPY_NVRTC_MINMAX(max)

template <class A, class B, class C>
__device__ inline typename cunumpy_nvrtc::enable_if<cunumpy_nvrtc::promote<A, B, C>::ok,
    typename cunumpy_nvrtc::promote<A, B, C>::type>::type fma(A a, B b, C c) {
  typedef typename cunumpy_nvrtc::promote<A, B, C>::type P;
  return ::fma((P)a, (P)b, (P)c);
}

CUNUMPY_NVRTC_INT1(sqrt, double) CUNUMPY_NVRTC_INT1(cbrt, double) CUNUMPY_NVRTC_INT1(exp, double)
CUNUMPY_NVRTC_INT1(exp2, double) CUNUMPY_NVRTC_INT1(expm1, double) CUNUMPY_NVRTC_INT1(log, double)
CUNUMPY_NVRTC_INT1(log2, double) CUNUMPY_NVRTC_INT1(log10, double) CUNUMPY_NVRTC_INT1(log1p, double)
CUNUMPY_NVRTC_INT1(sin, double) CUNUMPY_NVRTC_INT1(cos, double) CUNUMPY_NVRTC_INT1(tan, double)
CUNUMPY_NVRTC_INT1(asin, double) CUNUMPY_NVRTC_INT1(acos, double) CUNUMPY_NVRTC_INT1(atan, double)
CUNUMPY_NVRTC_INT1(sinh, double) CUNUMPY_NVRTC_INT1(cosh, double) CUNUMPY_NVRTC_INT1(tanh, double)
CUNUMPY_NVRTC_INT1(asinh, double) CUNUMPY_NVRTC_INT1(acosh, double)
CUNUMPY_NVRTC_INT1(atanh, double) CUNUMPY_NVRTC_INT1(floor, double)
CUNUMPY_NVRTC_INT1(ceil, double) CUNUMPY_NVRTC_INT1(trunc, double) CUNUMPY_NVRTC_INT1(round, double)
CUNUMPY_NVRTC_INT1(rint, double) CUNUMPY_NVRTC_INT1(nearbyint, double)
CUNUMPY_NVRTC_INT1(fabs, double) CUNUMPY_NVRTC_INT1(erf, double) CUNUMPY_NVRTC_INT1(erfc, double)
CUNUMPY_NVRTC_INT1(tgamma, double) CUNUMPY_NVRTC_INT1(lgamma, double)
CUNUMPY_NVRTC_INT1(isnan, bool) CUNUMPY_NVRTC_INT1(isinf, bool) CUNUMPY_NVRTC_INT1(isfinite, bool)
CUNUMPY_NVRTC_INT1(signbit, bool)
#undef CUNUMPY_NVRTC_MIXED2
#undef CUNUMPY_NVRTC_INT1
#undef CUNUMPY_NVRTC_MINMAX

// <cmath>'s and <cstddef>'s std:: names, which nvcc's device code sees without an include.
namespace std {
using ::size_t; using ::ptrdiff_t;
using ::abs; using ::fabs; using ::sqrt; using ::cbrt; using ::exp; using ::exp2; using ::expm1;
using ::log; using ::log2; using ::log10; using ::log1p; using ::pow; using ::sin; using ::cos;
using ::tan; using ::asin; using ::acos; using ::atan; using ::atan2; using ::sinh; using ::cosh;
using ::tanh; using ::asinh; using ::acosh; using ::atanh; using ::floor; using ::ceil;
using ::trunc; using ::round; using ::rint; using ::nearbyint; using ::lround; using ::llround;
using ::fmod; using ::remainder; using ::fmin; using ::fmax; using ::fdim; using ::hypot;
using ::copysign; using ::nextafter; using ::fma; using ::erf; using ::erfc; using ::tgamma;
using ::lgamma; using ::ldexp; using ::frexp; using ::modf; using ::scalbn; using ::ilogb;
using ::logb; using ::isnan; using ::isinf; using ::isfinite; using ::signbit;
}  // namespace std

#endif  // CUNUMPY_NVRTC_H
