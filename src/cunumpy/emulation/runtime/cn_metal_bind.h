// cn_metal_bind.h: how a kernel of a whole Metal library (MetalLibrary) gets its parameters,
// shared by the CPU emulator (cn_metal.h) and the CUDA engine (cn_metal_cuda.h).
//
// The launcher of either engine binds each parameter of the kernel function by the parameter's
// own C++ type, read from the function's type (param_t): a buffer as a pointer or a reference
// into the bound bytes, a thread attribute converted from Metal's uint / uint3 to the declared
// type (attr_as), threadgroup memory as a pointer into the group's allocation. value_size and
// value_kind are what the engines check the bound buffers against (the compiler's sizeof, not a
// parse of the source). Plain C++17 that g++ and NVRTC both compile; the CPU runtime adds its
// checked pointers to `pointee` (cn_metal.h).
//
// Also here: cond_t, the type of a conditional expression whose branches mix half with other
// arithmetic types (cunumpy.emulation._conditional rewrites such conditionals for both engines).
#ifndef CN_METAL_BIND_H
#define CN_METAL_BIND_H

#ifndef CN_BIND_INLINE
#define CN_BIND_INLINE inline
#endif

namespace cn {
namespace msl {

template <class... A> struct type_list {};
template <int I, class L> struct type_at;
template <class H, class... T> struct type_at<0, type_list<H, T...>> { using type = H; };
template <int I, class H, class... T> struct type_at<I, type_list<H, T...>> {
  using type = typename type_at<I - 1, type_list<T...>>::type;
};

template <class F> struct fn_traits;
template <class R, class... A> struct fn_traits<R (*)(A...)> {
  static constexpr int arity = sizeof...(A);
  template <int I> using arg = typename type_at<I, type_list<A...>>::type;
};
// The declared type of parameter I of the function a pointer of type F points at.
template <class F, int I> using param_t = typename fn_traits<F>::template arg<I>;

template <class P> using bare_t = std::remove_cv_t<std::remove_reference_t<P>>;

// What a pointer parameter points at (is: a pointer at all). Raw pointers here; the CPU runtime
// adds its checked pointers.
template <class Q> struct pointee {
  static constexpr bool is = false;
  using type = void;
};
template <class T> struct pointee<T*> {
  static constexpr bool is = true;
  using type = T;
};

// Bytes one element (pointers) or the value (references, values) of a parameter occupies: what
// a buffer bound to it is checked against (void pointees count as bytes); kind: 1 pointer,
// 2 reference, 3 value. Static members, not functions, so that a device variable's initializer
// can read them under NVRTC.
template <class Q, bool = pointee<Q>::is> struct element_size {
  static constexpr long long value = (long long)sizeof(Q);
};
template <class Q> struct element_size<Q, true> {
  using T = std::remove_cv_t<typename pointee<Q>::type>;
  static constexpr long long value = std::is_void<T>::value ? 1 : (long long)sizeof(
      std::conditional_t<std::is_void<T>::value, char, T>);
};
template <class P> struct value_info {
  static constexpr long long size = element_size<bare_t<P>>::value;
  static constexpr long long kind =
      pointee<bare_t<P>>::is ? 1 : std::is_reference<P>::value ? 2 : 3;
};
template <class P> constexpr long long value_size() { return value_info<P>::size; }
template <class P> constexpr long long value_kind() { return value_info<P>::kind; }

// A thread attribute as the parameter declares it: uint3 values become ushort2, uint, ...
template <class To, class From>
CN_BIND_INLINE To attr_as(const From& v) {
  using T = bare_t<To>;
  constexpr int n = metal::cn_detail::vtraits<T>::n;
  if constexpr (metal::cn_detail::vtraits<From>::n == 0) {
    return T(v);
  } else if constexpr (n == 0) {
    return T(v.x);
  } else if constexpr (n == 2) {
    return T(v.x, v.y);
  } else {
    return T(v.x, v.y, v.z);
  }
}

}  // namespace msl

// The type of `c ? a : b` (cunumpy.emulation._conditional): the C++ conditional's where it is
// well-formed, else Metal's arithmetic result (half and float give float).
template <class A, class B, class = void>
struct cond_common {
  using type = decltype(std::declval<std::remove_cv_t<std::remove_reference_t<A>>>() +
                        std::declval<std::remove_cv_t<std::remove_reference_t<B>>>());
};
template <class A, class B>
struct cond_common<A, B, std::void_t<decltype(true ? std::declval<A>() : std::declval<B>())>> {
  using type = decltype(true ? std::declval<A>() : std::declval<B>());
};
template <class A, class B> using cond_t = typename cond_common<A, B>::type;

}  // namespace cn

#endif  // CN_METAL_BIND_H
