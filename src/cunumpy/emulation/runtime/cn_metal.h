// cunumpy CPU emulation: the Metal Shading Language dialect on top of cn_core.h.
//
// Types and math (half, vectors, metal:: math, MLX preamble helpers) come from cn_metal_types.h.
// This header adds what needs the scheduler or the checks: threadgroup_barrier and
// simdgroup_barrier, SIMD-group and quad-group functions (lockstep over the active lanes),
// atomics (atomic<T>, atomic_*_explicit), and the thread attributes the generated kernel wrapper
// passes to the kernel. MSL address-space keywords become empty macros at the very end, after
// every standard header, so they cannot clash with library names.
#ifndef CN_METAL_H
#define CN_METAL_H

// What the Metal compiler predefines and MLX-style code tests: the language version (Metal 3.1,
// which added bfloat) and bfloat support (cn_metal_types.h provides bfloat / bfloat16_t).
#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 310
#endif
#ifndef __HAVE_BFLOAT__
#define __HAVE_BFLOAT__ 1
#endif

#include "cn_core.h"
#include <tuple>

#if defined(__has_include)
#if __has_include("cn_metal_types.h")
#include "cn_metal_types.h"
#define CN_METAL_HAVE_TYPES 1
#endif
#endif

#ifndef CN_METAL_HAVE_TYPES
// Minimal stand-in until cn_metal_types.h exists: float scalars and the vectors the thread
// attributes need.
#include <cmath>
namespace metal {
typedef unsigned int uint;
typedef unsigned short ushort;
struct uint2 { uint x, y; uint2() = default; uint2(uint a, uint b) : x(a), y(b) {} };
struct uint3 {
  uint x, y, z;
  uint3() = default;
  uint3(uint a, uint b, uint c) : x(a), y(b), z(c) {}
};
template <class T> inline T min(T a, T b) { return b < a ? b : a; }
template <class T> inline T max(T a, T b) { return a < b ? b : a; }
using std::sqrt; using std::exp; using std::log; using std::sin; using std::cos; using std::fabs;
using std::floor; using std::ceil; using std::pow; using std::tanh;
}  // namespace metal
#endif

#include "cn_metal_flags.h"

namespace metal {

// ---------------------------------------------------------------------------------------------
// Barriers
// ---------------------------------------------------------------------------------------------

// Race checking: mem_threadgroup orders threadgroup memory, mem_device device memory; mem_none
// is an execution barrier only.
inline void threadgroup_barrier(mem_flags f = mem_flags::mem_none, int line = __builtin_LINE(),
                                const char* file = __builtin_FILE()) {
  cn::barrier(line, file,
              ((unsigned(f) & unsigned(mem_flags::mem_threadgroup)) ? cn::BARRIER_SHARED : 0) |
                  ((unsigned(f) & unsigned(mem_flags::mem_device)) ? cn::BARRIER_DEVICE : 0));
}

// ---------------------------------------------------------------------------------------------
// SIMD-group and quad-group functions
// ---------------------------------------------------------------------------------------------

namespace cn_lanes {

enum Op {
  SUM, PRODUCT, MIN, MAX, AND, OR, XOR,
  PRE_INC_SUM, PRE_EXC_SUM, PRE_INC_PRODUCT, PRE_EXC_PRODUCT,
  SHUFFLE, SHUFFLE_UP, SHUFFLE_DOWN, SHUFFLE_XOR, SHUFFLE_ROTATE_UP, SHUFFLE_ROTATE_DOWN,
  BROADCAST_FIRST, BALLOT, ALL, ANY, IS_FIRST, NOP, FILL_DOWN, FILL_UP,
};

// Input of simd/quad_shuffle_and_fill_*: each lane deposits its data and its filling data.
template <class T>
struct fill_pair {
  T data;
  T fill;
};

template <class T>
inline T lane_min(const T& a, const T& b) {
  if constexpr (std::is_arithmetic<T>::value) return b < a ? b : a;
  else return min(a, b);
}
template <class T>
inline T lane_max(const T& a, const T& b) {
  if constexpr (std::is_arithmetic<T>::value) return a < b ? b : a;
  else return max(a, b);
}

template <int OP, class T>
inline T combine(const T& a, const T& b) {
  if constexpr (OP == SUM || OP == PRE_INC_SUM || OP == PRE_EXC_SUM) return a + b;
  else if constexpr (OP == PRODUCT || OP == PRE_INC_PRODUCT || OP == PRE_EXC_PRODUCT) return a * b;
  else if constexpr (OP == MIN) return lane_min(a, b);
  else if constexpr (OP == MAX) return lane_max(a, b);
  else if constexpr (std::is_integral<T>::value || metal::cn_detail::vn<T> > 0) {
    if constexpr (OP == AND) return a & b;
    else if constexpr (OP == OR) return a | b;
    else return a ^ b;
  } else {
    // and/or/xor of a floating-point value (MLX's bf16_math.h declares them for bfloat through
    // float): on the bits
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4,
                                 uint32_t, uint16_t>>;
    const U x = metal::cn_detail::bit_cast<U>(a), y = metal::cn_detail::bit_cast<U>(b);
    return metal::cn_detail::bit_cast<T>(
        static_cast<U>(OP == AND ? (x & y) : OP == OR ? (x | y) : (x ^ y)));
  }
}

// Computes every lane's result for one exchange. W: lanes per subgroup (0 = the SIMD width; 4
// for quad functions). Inactive lanes are null in `lanes`.
template <class T, int OP, unsigned W>
void resolve(cn::Fiber** lanes, uint32_t width) {
  const uint32_t w = W ? W : width;
  for (uint32_t q0 = 0; q0 < width; q0 += w) {
    cn::Fiber** L = lanes + q0;
    if constexpr (OP == NOP) {
      // simdgroup_barrier(mem_flags::mem_none) (arg 0): the lanes meet, but no memory is ordered.
      for (uint32_t i = 0; i < w; ++i)
        if (L[i] && L[i]->arg == 0) cn::race::st.unordered_sync = true;
      continue;
    } else if constexpr (OP <= XOR) {
      bool have = false;
      T acc{};
      for (uint32_t i = 0; i < w; ++i) {
        if (!L[i]) continue;
        const T& v = cn::lane_in<T>(L[i]);
        acc = have ? combine<OP>(acc, v) : v;
        have = true;
      }
      for (uint32_t i = 0; i < w; ++i) if (L[i]) cn::lane_out<T>(L[i], acc);
    } else if constexpr (OP >= PRE_INC_SUM && OP <= PRE_EXC_PRODUCT) {
      const bool inclusive = OP == PRE_INC_SUM || OP == PRE_INC_PRODUCT;
      T acc = (OP == PRE_INC_PRODUCT || OP == PRE_EXC_PRODUCT) ? T(1) : T(0);
      for (uint32_t i = 0; i < w; ++i) {
        if (!L[i]) continue;
        const T& v = cn::lane_in<T>(L[i]);
        T next = combine<OP>(acc, v);
        cn::lane_out<T>(L[i], inclusive ? next : acc);
        acc = next;
      }
    } else if constexpr (OP >= SHUFFLE && OP <= SHUFFLE_ROTATE_DOWN) {
      for (uint32_t i = 0; i < w; ++i) {
        if (!L[i]) continue;
        int64_t a = L[i]->arg;
        int64_t src;
        if constexpr (OP == SHUFFLE) src = a;
        else if constexpr (OP == SHUFFLE_UP) src = int64_t(i) - a < 0 ? int64_t(i) : int64_t(i) - a;
        else if constexpr (OP == SHUFFLE_DOWN) src = int64_t(i) + a >= int64_t(w) ? int64_t(i) : int64_t(i) + a;
        else if constexpr (OP == SHUFFLE_XOR) src = int64_t(i) ^ a;
        else if constexpr (OP == SHUFFLE_ROTATE_UP) src = ((int64_t(i) - a) % int64_t(w) + w) % w;
        else src = (int64_t(i) + a) % int64_t(w);
        if (src < 0 || src >= int64_t(w) || !L[src]) {
          cn::fail_inactive(L[i], int64_t(q0) + src);
          cn::lane_out<T>(L[i], T{});
        } else {
          cn::lane_out<T>(L[i], cn::lane_in<T>(L[src]));
        }
      }
    } else if constexpr (OP == BROADCAST_FIRST || OP == IS_FIRST) {
      uint32_t first = w;
      for (uint32_t i = 0; i < w; ++i) if (L[i]) { first = i; break; }
      for (uint32_t i = 0; i < w; ++i) {
        if (!L[i]) continue;
        if constexpr (OP == IS_FIRST) cn::lane_out<bool>(L[i], i == first);
        else cn::lane_out<T>(L[i], cn::lane_in<T>(L[first]));
      }
    } else if constexpr (OP == BALLOT) {
      uint64_t bits = 0;
      for (uint32_t i = 0; i < w; ++i)
        if (L[i] && cn::lane_in<bool>(L[i])) bits |= uint64_t(1) << (W ? q0 + i : i);
      for (uint32_t i = 0; i < w; ++i) if (L[i]) cn::lane_out<uint64_t>(L[i], bits);
    } else if constexpr (OP == ALL || OP == ANY) {
      bool all = true, any = false;
      for (uint32_t i = 0; i < w; ++i) {
        if (!L[i]) continue;
        bool b = cn::lane_in<bool>(L[i]);
        all = all && b;
        any = any || b;
      }
      for (uint32_t i = 0; i < w; ++i) if (L[i]) cn::lane_out<bool>(L[i], OP == ALL ? all : any);
    } else if constexpr (OP == FILL_DOWN || OP == FILL_UP) {
      // Sections of `modulo` lanes (the whole group when 0): lane j of a section reads data from
      // lane j + delta (down) or j - delta (up) of its section; past the section's end (down)
      // or before its start (up) it reads the filling data of the lane `modulo` further back
      // (down) or forward (up), i.e. data and filling data are concatenated per section.
      using U = decltype(T::data);
      for (uint32_t i = 0; i < w; ++i) {
        if (!L[i]) continue;
        const int64_t delta = L[i]->arg & 0xFFFF;
        int64_t m = (L[i]->arg >> 16) & 0xFFFF;
        if (m == 0 || m > int64_t(w)) m = int64_t(w);
        const int64_t base = (int64_t(i) / m) * m;
        const int64_t k = int64_t(i) - base + (OP == FILL_DOWN ? delta : -delta);
        const bool fill = OP == FILL_DOWN ? k >= m : k < 0;
        const int64_t src = base + (fill ? (OP == FILL_DOWN ? k - m : k + m) : k);
        if (src < 0 || src >= int64_t(w) || !L[src]) {
          cn::fail_inactive(L[i], int64_t(q0) + src);
          cn::lane_out<U>(L[i], U{});
        } else {
          const T& s = cn::lane_in<T>(L[src]);
          cn::lane_out<U>(L[i], fill ? s.fill : s.data);
        }
      }
    }
  }
}

template <int OP, unsigned W, class R = void, class T>
inline auto exchange(const T& v, int64_t arg, int line, const char* file) {
  using Out = std::conditional_t<std::is_void<R>::value, T, R>;
  return cn::lane_exchange<Out, T>(v, arg, &resolve<T, OP, W>, line, file);
}

}  // namespace cn_lanes

// simd_vote (the result of simd_ballot): cn_metal_flags.h.

#define CN_LANE_SITE int line = __builtin_LINE(), const char* file = __builtin_FILE()
#define CN_LANE_REDUCE(NAME, OP, W)                                            \
  template <class T>                                                           \
  inline T NAME(T data, CN_LANE_SITE) {                                        \
    return cn_lanes::exchange<cn_lanes::OP, W>(data, 0, line, file);           \
  }
#define CN_LANE_INDEXED(NAME, OP, W)                                           \
  template <class T>                                                           \
  inline T NAME(T data, ushort arg, CN_LANE_SITE) {                            \
    return cn_lanes::exchange<cn_lanes::OP, W>(data, int64_t(arg), line, file); \
  }

CN_LANE_REDUCE(simd_sum, SUM, 0)
CN_LANE_REDUCE(simd_product, PRODUCT, 0)
CN_LANE_REDUCE(simd_min, MIN, 0)
CN_LANE_REDUCE(simd_max, MAX, 0)
CN_LANE_REDUCE(simd_and, AND, 0)
CN_LANE_REDUCE(simd_or, OR, 0)
CN_LANE_REDUCE(simd_xor, XOR, 0)
CN_LANE_REDUCE(simd_prefix_inclusive_sum, PRE_INC_SUM, 0)
CN_LANE_REDUCE(simd_prefix_exclusive_sum, PRE_EXC_SUM, 0)
CN_LANE_REDUCE(simd_prefix_inclusive_product, PRE_INC_PRODUCT, 0)
CN_LANE_REDUCE(simd_prefix_exclusive_product, PRE_EXC_PRODUCT, 0)
CN_LANE_REDUCE(simd_broadcast_first, BROADCAST_FIRST, 0)
CN_LANE_INDEXED(simd_shuffle, SHUFFLE, 0)
CN_LANE_INDEXED(simd_broadcast, SHUFFLE, 0)
CN_LANE_INDEXED(simd_shuffle_up, SHUFFLE_UP, 0)
CN_LANE_INDEXED(simd_shuffle_down, SHUFFLE_DOWN, 0)
CN_LANE_INDEXED(simd_shuffle_xor, SHUFFLE_XOR, 0)
CN_LANE_INDEXED(simd_shuffle_rotate_up, SHUFFLE_ROTATE_UP, 0)
CN_LANE_INDEXED(simd_shuffle_rotate_down, SHUFFLE_ROTATE_DOWN, 0)

CN_LANE_REDUCE(quad_sum, SUM, 4)
CN_LANE_REDUCE(quad_product, PRODUCT, 4)
CN_LANE_REDUCE(quad_min, MIN, 4)
CN_LANE_REDUCE(quad_max, MAX, 4)
CN_LANE_REDUCE(quad_and, AND, 4)
CN_LANE_REDUCE(quad_or, OR, 4)
CN_LANE_REDUCE(quad_xor, XOR, 4)
CN_LANE_REDUCE(quad_prefix_inclusive_sum, PRE_INC_SUM, 4)
CN_LANE_REDUCE(quad_prefix_exclusive_sum, PRE_EXC_SUM, 4)
CN_LANE_REDUCE(quad_prefix_inclusive_product, PRE_INC_PRODUCT, 4)
CN_LANE_REDUCE(quad_prefix_exclusive_product, PRE_EXC_PRODUCT, 4)
CN_LANE_REDUCE(quad_broadcast_first, BROADCAST_FIRST, 4)
CN_LANE_INDEXED(quad_shuffle, SHUFFLE, 4)
CN_LANE_INDEXED(quad_broadcast, SHUFFLE, 4)
CN_LANE_INDEXED(quad_shuffle_up, SHUFFLE_UP, 4)
CN_LANE_INDEXED(quad_shuffle_down, SHUFFLE_DOWN, 4)
CN_LANE_INDEXED(quad_shuffle_xor, SHUFFLE_XOR, 4)
CN_LANE_INDEXED(quad_shuffle_rotate_up, SHUFFLE_ROTATE_UP, 4)
CN_LANE_INDEXED(quad_shuffle_rotate_down, SHUFFLE_ROTATE_DOWN, 4)

// simd_shuffle_and_fill_down/up (MSL 2.4) and the quad versions; modulo 0 means the whole
// SIMD group (4 lanes for quad functions).
#define CN_LANE_FILL(NAME, OP, W)                                                        \
  template <class T>                                                                     \
  inline T NAME(T data, T filling_data, ushort delta, ushort modulo = 0, CN_LANE_SITE) { \
    return cn_lanes::exchange<cn_lanes::OP, W, T>(cn_lanes::fill_pair<T>{data, filling_data}, \
                                                  int64_t(delta) | (int64_t(modulo) << 16), \
                                                  line, file);                           \
  }

CN_LANE_FILL(simd_shuffle_and_fill_down, FILL_DOWN, 0)
CN_LANE_FILL(simd_shuffle_and_fill_up, FILL_UP, 0)
CN_LANE_FILL(quad_shuffle_and_fill_down, FILL_DOWN, 4)
CN_LANE_FILL(quad_shuffle_and_fill_up, FILL_UP, 4)

#undef CN_LANE_REDUCE
#undef CN_LANE_INDEXED
#undef CN_LANE_FILL

inline simd_vote simd_ballot(bool b, CN_LANE_SITE) {
  return simd_vote(cn_lanes::exchange<cn_lanes::BALLOT, 0, uint64_t>(b, 0, line, file));
}
inline simd_vote simd_active_threads_mask(CN_LANE_SITE) {
  return simd_vote(cn_lanes::exchange<cn_lanes::BALLOT, 0, uint64_t>(true, 0, line, file));
}
inline bool simd_all(bool b, CN_LANE_SITE) {
  return cn_lanes::exchange<cn_lanes::ALL, 0>(b, 0, line, file);
}
inline bool simd_any(bool b, CN_LANE_SITE) {
  return cn_lanes::exchange<cn_lanes::ANY, 0>(b, 0, line, file);
}
inline bool simd_is_first(CN_LANE_SITE) {
  return cn_lanes::exchange<cn_lanes::IS_FIRST, 0>(true, 0, line, file);
}
inline bool simd_is_helper_thread() { return false; }
inline quad_vote quad_ballot(bool b, CN_LANE_SITE) {
  return quad_vote(cn_lanes::exchange<cn_lanes::BALLOT, 4, uint64_t>(b, 0, line, file));
}
inline quad_vote quad_active_threads_mask(CN_LANE_SITE) {
  return quad_vote(cn_lanes::exchange<cn_lanes::BALLOT, 4, uint64_t>(true, 0, line, file));
}
inline bool quad_all(bool b, CN_LANE_SITE) {
  return cn_lanes::exchange<cn_lanes::ALL, 4>(b, 0, line, file);
}
inline bool quad_any(bool b, CN_LANE_SITE) {
  return cn_lanes::exchange<cn_lanes::ANY, 4>(b, 0, line, file);
}
inline bool quad_is_first(CN_LANE_SITE) {
  return cn_lanes::exchange<cn_lanes::IS_FIRST, 4>(true, 0, line, file);
}
inline void simdgroup_barrier(mem_flags f = mem_flags::mem_none, CN_LANE_SITE) {
  (void)cn_lanes::exchange<cn_lanes::NOP, 0>(false, int64_t(unsigned(f)), line, file);
}

#undef CN_LANE_SITE

// ---------------------------------------------------------------------------------------------
// Atomics, through cn::atomic_rmw / atomic_cas (real atomics when several workers run the launch,
// plain read-modify-writes otherwise); atomic<T> has the size and alignment of T (atomic outputs
// alias the array).
// ---------------------------------------------------------------------------------------------

// memory_order, atomic<T> and its aliases: cn_metal_flags.h.

inline void atomic_thread_fence(mem_flags f, memory_order,
                                thread_scope = thread_scope::thread_scope_device) {
  if (unsigned(f) & unsigned(mem_flags::mem_device)) CN_RACE_FENCE();
}

#define CN_ATOMIC_RMW(NAME, EXPR, LOCK)                                                   \
  template <class T>                                                                      \
  __attribute__((always_inline)) inline T NAME(volatile atomic<T>* o, cn_arg<T> a,       \
                                               memory_order = memory_order_relaxed) {     \
    CN_RACE_ATOMIC;                                                                       \
    atomic<T>* p = const_cast<atomic<T>*>(o);                                             \
    T prev = ::cn::atomic_rmw(&p->v, [&](T old) { return T(EXPR); });                     \
    CN_RACE_SYNC(o, prev, p->v, true, LOCK);                                              \
    return prev;                                                                          \
  }                                                                                       \
  template <class T>                                                                      \
  inline T NAME(cn::ptr<atomic<T>> o, cn_arg<T> a, memory_order m = memory_order_relaxed) { \
    return NAME(&o[0], a, m);                                                             \
  }

CN_ATOMIC_RMW(atomic_fetch_add_explicit, T(old + a), false)
CN_ATOMIC_RMW(atomic_fetch_sub_explicit, T(old - a), false)
CN_ATOMIC_RMW(atomic_fetch_and_explicit, T(old & a), false)
CN_ATOMIC_RMW(atomic_fetch_or_explicit, T(old | a), false)
CN_ATOMIC_RMW(atomic_fetch_xor_explicit, T(old ^ a), false)
CN_ATOMIC_RMW(atomic_fetch_min_explicit, (a < old ? a : old), false)
CN_ATOMIC_RMW(atomic_fetch_max_explicit, (old < a ? a : old), false)
CN_ATOMIC_RMW(atomic_exchange_explicit, a, true)
#undef CN_ATOMIC_RMW

template <class T>
__attribute__((always_inline)) inline T atomic_load_explicit(const volatile atomic<T>* o,
                                                            memory_order = memory_order_relaxed) {
  CN_RACE_ATOMIC;
  T v = ::cn::atomic_load(&const_cast<const atomic<T>*>(o)->v);
  CN_RACE_SYNC(o, v, v, false, false);
  return v;
}
template <class T>
inline T atomic_load_explicit(cn::ptr<atomic<T>> o, memory_order m = memory_order_relaxed) {
  return atomic_load_explicit(&o[0], m);
}
template <class T>
inline T atomic_load_explicit(cn::ptr<const atomic<T>> o, memory_order m = memory_order_relaxed) {
  return atomic_load_explicit(&o[0], m);
}
template <class T>
__attribute__((always_inline)) inline void atomic_store_explicit(
    volatile atomic<T>* o, cn_arg<T> a, memory_order = memory_order_relaxed) {
  CN_RACE_ATOMIC;
#if CN_RACES
  T old = const_cast<atomic<T>*>(o)->v;  // race-checking builds run serially
#endif
  ::cn::atomic_store(&const_cast<atomic<T>*>(o)->v, a);
  CN_RACE_SYNC(o, old, T(a), true, false);
}
template <class T>
inline void atomic_store_explicit(cn::ptr<atomic<T>> o, cn_arg<T> a,
                                  memory_order m = memory_order_relaxed) {
  atomic_store_explicit(&o[0], a, m);
}
template <class T>
inline bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* o, cn_arg<T>* expected,
                                                  cn_arg<T> desired,
                                                  memory_order = memory_order_relaxed,
                                                  memory_order = memory_order_relaxed) {
  CN_RACE_CAS;
  atomic<T>* p = const_cast<atomic<T>*>(o);
  T want = *expected;
  T old = ::cn::atomic_cas(&p->v, want, desired);
  CN_RACE_SYNC(o, old, old == want ? T(desired) : old, old == want, true);
  if (old == want) return true;
  *expected = old;
  return false;
}
template <class T>
inline bool atomic_compare_exchange_weak_explicit(cn::ptr<atomic<T>> o, cn_arg<T>* expected,
                                                  cn_arg<T> desired,
                                                  memory_order s = memory_order_relaxed,
                                                  memory_order f = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(&o[0], expected, desired, s, f);
}
template <class T>
inline bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* o, cn_arg<T>* expected,
                                                    cn_arg<T> desired,
                                                    memory_order s = memory_order_relaxed,
                                                    memory_order f = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(o, expected, desired, s, f);
}

// ---------------------------------------------------------------------------------------------
// SIMD-group matrices (simdgroup_float8x8 ...). On the GPU the 64 elements are spread over the
// 32 lanes; here every lane holds the whole matrix and every lane performs each load, multiply
// and store (the same values, since Metal requires all lanes to make the same call with the same
// arguments). Loads and stores index the pointer they are given, so buffer pointers stay
// bounds-checked.
//
// thread_elements() gives a lane its own two elements, with Apple's layout: with q = lane / 4,
// lane l holds row (q & 4) + (l / 2) % 4, columns (q & 2) * 2 + (l % 2) * 2 and the next one.
// It is a reference into the lane's copy, so a lane that writes it changes only its copy; the
// matrix is then marked, and the next whole-matrix operation (store, multiply, copy into another
// fragment's owner) first gathers every lane's two elements from the SIMD group (four lane
// exchanges), as the hardware's distributed matrix would hold them. A kernel that calls
// thread_elements() runs its threads as fibers for that.
// ---------------------------------------------------------------------------------------------

namespace cn_frag {
// Row and first column of lane `lane`'s two elements of an 8x8 SIMD-group matrix.
inline int row(uint32_t lane) { return int(((lane / 4) & 4) + (lane / 2) % 4); }
inline int col(uint32_t lane) { return int(((lane / 4) & 2) * 2 + (lane % 2) * 2); }
inline uint32_t current_lane() {
  const cn::ThreadInfo* t = cn::g.cur;
  return t ? t->lin % t->width : 0;
}
template <class T>
struct pair {
  T a, b;
};
// The elements of 8 lanes (lanes 8k .. 8k+7), 16 values.
template <class T>
struct part {
  T v[16];
};
template <class T, int K>
void resolve(cn::Fiber** lanes, uint32_t width) {
  part<T> p{};
  for (uint32_t j = 0; j < 8; ++j) {
    const uint32_t src = uint32_t(K) * 8 + j;
    if (src < width && lanes[src]) {
      const pair<T>& e = cn::lane_in<pair<T>>(lanes[src]);
      p.v[2 * j] = e.a;
      p.v[2 * j + 1] = e.b;
    }
  }
  for (uint32_t i = 0; i < width; ++i)
    if (lanes[i]) cn::lane_out<part<T>>(lanes[i], p);
}
}  // namespace cn_frag

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "Metal SIMD-group matrices are 8x8");
  static_assert(sizeof(vec<T, 2>) == 2 * sizeof(T), "vec<T, 2> must be two packed elements");
  alignas(alignof(vec<T, 2>)) T e[Rows][Cols];  // row-major: e[row][column]
  // True when a lane may have written its thread_elements(): the copies differ between lanes.
  mutable bool cn_split = false;
  simdgroup_matrix() = default;
  // A diagonal matrix with dval on the diagonal.
  explicit simdgroup_matrix(T dval) {
    for (int r = 0; r < Rows; ++r)
      for (int c = 0; c < Cols; ++c) e[r][c] = r == c ? dval : T(0);
  }
  // This lane's two elements (see the comment above cn_frag).
  vec<T, 2>& thread_elements() {
    const uint32_t l = cn_frag::current_lane();
    cn_split = true;
    return *reinterpret_cast<vec<T, 2>*>(&e[cn_frag::row(l)][cn_frag::col(l)]);
  }
  const vec<T, 2>& thread_elements() const {
    const uint32_t l = cn_frag::current_lane();
    return *reinterpret_cast<const vec<T, 2>*>(&e[cn_frag::row(l)][cn_frag::col(l)]);
  }
  // Makes this lane's copy whole again: every element from the lane that owns it.
  void cn_gather(int line = __builtin_LINE(), const char* file = __builtin_FILE()) const {
    if (!cn_split) return;
    cn_split = false;
    T(&m)[Rows][Cols] = const_cast<simdgroup_matrix*>(this)->e;
    const uint32_t me = cn_frag::current_lane();
    const cn_frag::pair<T> mine{m[cn_frag::row(me)][cn_frag::col(me)],
                                m[cn_frag::row(me)][cn_frag::col(me) + 1]};
    cn_frag::part<T> parts[4];
    parts[0] = cn::lane_exchange<cn_frag::part<T>>(mine, 0, &cn_frag::resolve<T, 0>, line, file);
    parts[1] = cn::lane_exchange<cn_frag::part<T>>(mine, 1, &cn_frag::resolve<T, 1>, line, file);
    parts[2] = cn::lane_exchange<cn_frag::part<T>>(mine, 2, &cn_frag::resolve<T, 2>, line, file);
    parts[3] = cn::lane_exchange<cn_frag::part<T>>(mine, 3, &cn_frag::resolve<T, 3>, line, file);
    for (uint32_t l = 0; l < 32; ++l) {
      const T* v = &parts[l / 8].v[2 * (l % 8)];
      if (l == me) continue;
      m[cn_frag::row(l)][cn_frag::col(l)] = v[0];
      m[cn_frag::row(l)][cn_frag::col(l) + 1] = v[1];
    }
  }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows = Cols>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) m.e[r][c] = value;
  return m;
}

// Element (r, c) is src[(origin.y + r) * elements_per_row + origin.x + c]; transposed, the
// matrix gets element (c, r) of that layout.
template <class T, int Cols, int Rows, class P, class O = ulong2>
inline void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, P src,
                           ulong elements_per_row = Cols, O matrix_origin = O(0),
                           bool transpose_matrix = false) {
  const ulong2 o = ulong2(matrix_origin);
  d.cn_split = false;
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) {
      const ulong i = transpose_matrix ? ulong(c) : ulong(r), j = transpose_matrix ? ulong(r) : ulong(c);
      d.e[r][c] = static_cast<T>(src[int64_t((o.y + i) * elements_per_row + o.x + j)]);
    }
}

template <class T, int Cols, int Rows, class P, class O = ulong2>
inline void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, P dst,
                            ulong elements_per_row = Cols, O matrix_origin = O(0),
                            bool transpose_matrix = false) {
  const ulong2 o = ulong2(matrix_origin);
  a.cn_gather();
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c) {
      const ulong i = transpose_matrix ? ulong(c) : ulong(r), j = transpose_matrix ? ulong(r) : ulong(c);
      dst[int64_t((o.y + i) * elements_per_row + o.x + j)] = a.e[r][c];
    }
}

// d = a * b (+ c), accumulated in float (double for double) and rounded to T once.
template <class T, class TA, class TB, int K, int Cols, int Rows>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<T, Cols, Rows>& d,
                                          const simdgroup_matrix<TA, K, Rows>& a,
                                          const simdgroup_matrix<TB, Cols, K>& b,
                                          const simdgroup_matrix<T, Cols, Rows>& c) {
  using W = cn_detail::wide_t<T>;
  a.cn_gather();
  b.cn_gather();
  c.cn_gather();
  simdgroup_matrix<T, Cols, Rows> out;
  for (int r = 0; r < Rows; ++r)
    for (int j = 0; j < Cols; ++j) {
      W s = static_cast<W>(c.e[r][j]);
      for (int k = 0; k < K; ++k) s += static_cast<W>(a.e[r][k]) * static_cast<W>(b.e[k][j]);
      out.e[r][j] = static_cast<T>(s);
    }
  d = out;
}

template <class T, class TA, class TB, int K, int Cols, int Rows>
inline void simdgroup_multiply(simdgroup_matrix<T, Cols, Rows>& d,
                               const simdgroup_matrix<TA, K, Rows>& a,
                               const simdgroup_matrix<TB, Cols, K>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, Cols, Rows>(T(0)));
}
// a * b: the matrix product of two SIMD-group matrices (MLX's Winograd convolution writes it).
template <class T, int K, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> operator*(const simdgroup_matrix<T, K, Rows>& a,
                                                 const simdgroup_matrix<T, Cols, K>& b) {
  simdgroup_matrix<T, Cols, Rows> d;
  simdgroup_multiply(d, a, b);
  return d;
}

// metal::uniform<T> (<metal_uniform>): a value the same in every thread; it converts to and
// from T, so arithmetic on it is T's (the GPU's scalarisation hint has no CPU counterpart).
template <class T>
struct uniform {
  T value;
  uniform() = default;
  constexpr uniform(T v) : value(v) {}
  constexpr operator T() const { return value; }
};
template <class T>
constexpr uniform<T> make_uniform(T v) { return uniform<T>(v); }

// metal::array (<metal_array>): a fixed-size aggregate like std::array.
template <class T, size_t N>
struct array {
  T cn_elems[N > 0 ? N : 1];
  T& operator[](size_t i) { return cn_elems[i]; }
  const T& operator[](size_t i) const { return cn_elems[i]; }
  static constexpr size_t size() { return N; }
  static constexpr bool empty() { return N == 0; }
  T* data() { return cn_elems; }
  const T* data() const { return cn_elems; }
  T* begin() { return cn_elems; }
  T* end() { return cn_elems + N; }
  const T* begin() const { return cn_elems; }
  const T* end() const { return cn_elems + N; }
  T& front() { return cn_elems[0]; }
  T& back() { return cn_elems[N - 1]; }
};

using std::declval;

template <class T, class U>
inline bool isunordered(T a, U b) { return isnan(a) || isnan(b); }
template <class T, class U>
inline bool isordered(T a, U b) { return !isunordered(a, b); }

// Metal's compiler intrinsics, as MLX's bf16_math.h calls them (`__metal_exp(x, fast)`): the
// last bool (fast math) is dropped.
#define CN_I1(n) template <class T> inline auto __metal_##n(T x, bool = false) { return metal::n(x); }
#define CN_I2(n) template <class T, class U> inline auto __metal_##n(T x, U y, bool = false) { return metal::n(x, y); }
#define CN_I3(n) template <class T, class U, class V> inline auto __metal_##n(T x, U y, V z, bool = false) { return metal::n(x, y, z); }
CN_I1(fabs) CN_I1(acos) CN_I1(acosh) CN_I1(asin) CN_I1(asinh) CN_I1(atan) CN_I1(atanh) CN_I1(ceil)
CN_I1(cos) CN_I1(cosh) CN_I1(cospi) CN_I1(exp) CN_I1(exp10) CN_I1(exp2) CN_I1(floor) CN_I1(fract)
CN_I1(log) CN_I1(log10) CN_I1(log2) CN_I1(rint) CN_I1(round) CN_I1(rsqrt) CN_I1(sin) CN_I1(sinh)
CN_I1(sinpi) CN_I1(sqrt) CN_I1(tan) CN_I1(tanh) CN_I1(tanpi) CN_I1(trunc)
CN_I2(atan2) CN_I2(fmax) CN_I2(fmin) CN_I2(fmod) CN_I2(pow) CN_I2(powr) CN_I2(nextafter)
CN_I2(ldexp)
template <class T, class E> inline auto __metal_frexp(T x, E* e, bool = false) { return metal::frexp(x, *e); }
CN_I3(fma) CN_I3(fmax3) CN_I3(fmin3) CN_I3(fmedian3)
template <class T, class U> inline auto __metal_divide(T x, U y, bool = false) { return x / y; }
#undef CN_I1
#undef CN_I2
#undef CN_I3
#define CN_S(n) template <class... A> inline auto __metal_##n(A... a) { return metal::n(a...); }
CN_S(simd_broadcast) CN_S(simd_max) CN_S(simd_min) CN_S(simd_prefix_exclusive_product)
CN_S(simd_prefix_exclusive_sum) CN_S(simd_prefix_inclusive_product) CN_S(simd_prefix_inclusive_sum)
CN_S(simd_product) CN_S(simd_shuffle) CN_S(simd_shuffle_and_fill_down) CN_S(simd_shuffle_and_fill_up)
CN_S(simd_shuffle_down) CN_S(simd_shuffle_rotate_down) CN_S(simd_shuffle_rotate_up)
CN_S(simd_shuffle_up) CN_S(simd_shuffle_xor) CN_S(simd_sum) CN_S(simd_xor) CN_S(simd_and) CN_S(simd_or)
#undef CN_S
template <class T> inline uint __metal_get_simdgroup_size(T) { return 32; }

}  // namespace metal

using namespace metal;

#define CN_BIND_INLINE __attribute__((always_inline)) inline
#include "cn_metal_bind.h"

// ---------------------------------------------------------------------------------------------
// Thread attributes, as the generated wrapper passes them (Metal names, uint / uint3 values)
// ---------------------------------------------------------------------------------------------

namespace cn {
namespace msl {

// reinterpret_cast, as the rewritten source spells it when pointers are checked: a checked
// pointer or threadgroup array is cast through its raw address (the result is unchecked).
template <class T> struct is_checked_ptr : std::false_type {};
template <class T> struct is_checked_ptr<ptr<T>> : std::true_type {};
template <class T> struct is_checked_arr : std::false_type {};
template <class T, int64_t N, int ID> struct is_checked_arr<tarr<T, N, ID>> : std::true_type {};

template <class To, class From>
inline To cast(From&& v) {
  using F = std::remove_cv_t<std::remove_reference_t<From>>;
  if constexpr (is_checked_ptr<F>::value &&
                (std::is_pointer<To>::value || std::is_integral<To>::value)) {
    return reinterpret_cast<To>(v.p);  // to another pointer type, or to an address
  } else if constexpr (is_checked_arr<F>::value && std::is_pointer<To>::value) {
    return reinterpret_cast<To>(&v.a[0]);
  } else {
    return reinterpret_cast<To>(v);
  }
}

// Called by the generated launcher (uninstrumented in race-checking builds).
#define CN_ATTRIBUTE __attribute__((always_inline)) CN_NOTSAN
CN_ATTRIBUTE inline uint3 u3(const uint32_t* v) {
  uint3 r;
  std::memcpy(&r, v, 3 * sizeof(uint32_t));
  return r;
}
CN_ATTRIBUTE inline uint cdiv(uint a, uint b) { return (a + b - 1) / b; }

CN_ATTRIBUTE inline uint3 dispatch_threads_per_threadgroup(const ThreadInfo& t) { return u3(t.dsize); }
CN_ATTRIBUTE inline uint dispatch_simdgroups_per_threadgroup(const ThreadInfo& t) {
  return cdiv(t.dsize[0] * t.dsize[1] * t.dsize[2], t.width);
}
CN_ATTRIBUTE inline uint dispatch_quadgroups_per_threadgroup(const ThreadInfo& t) {
  return cdiv(t.dsize[0] * t.dsize[1] * t.dsize[2], 4);
}
CN_ATTRIBUTE inline uint3 grid_origin(const ThreadInfo&) { return uint3(0, 0, 0); }
CN_ATTRIBUTE inline uint3 grid_size(const ThreadInfo& t) { return u3(t.grid); }
CN_ATTRIBUTE inline uint quadgroup_index_in_threadgroup(const ThreadInfo& t) { return t.lin / 4; }
CN_ATTRIBUTE inline uint quadgroups_per_threadgroup(const ThreadInfo& t) { return cdiv(t.nthreads, 4); }
CN_ATTRIBUTE inline uint simdgroup_index_in_threadgroup(const ThreadInfo& t) { return t.lin / t.width; }
CN_ATTRIBUTE inline uint simdgroups_per_threadgroup(const ThreadInfo& t) { return cdiv(t.nthreads, t.width); }
CN_ATTRIBUTE inline uint thread_execution_width(const ThreadInfo& t) { return t.width; }
CN_ATTRIBUTE inline uint thread_index_in_quadgroup(const ThreadInfo& t) { return t.lin % 4; }
CN_ATTRIBUTE inline uint thread_index_in_simdgroup(const ThreadInfo& t) { return t.lin % t.width; }
CN_ATTRIBUTE inline uint thread_index_in_threadgroup(const ThreadInfo& t) { return t.lin; }
CN_ATTRIBUTE inline uint3 thread_position_in_grid(const ThreadInfo& t) { return u3(t.pos); }
CN_ATTRIBUTE inline uint3 thread_position_in_threadgroup(const ThreadInfo& t) { return u3(t.tid); }
CN_ATTRIBUTE inline uint3 threadgroup_position_in_grid(const ThreadInfo& t) { return u3(t.gid); }
CN_ATTRIBUTE inline uint3 threadgroups_per_grid(const ThreadInfo& t) { return u3(t.ngroups); }
CN_ATTRIBUTE inline uint3 threads_per_grid(const ThreadInfo& t) { return u3(t.grid); }
CN_ATTRIBUTE inline uint threads_per_simdgroup(const ThreadInfo& t) { return t.width; }
CN_ATTRIBUTE inline uint3 threads_per_threadgroup(const ThreadInfo& t) { return u3(t.gsize); }
#undef CN_ATTRIBUTE

// ---------------------------------------------------------------------------------------------
// Whole libraries (MetalLibrary): the generated launcher binds each parameter of the kernel
// function from its buffer, its threadgroup allocation or its thread attribute, by the
// parameter's own C++ type (the kernel's declared types, after the rewrite to checked pointers).
// ---------------------------------------------------------------------------------------------

// fn_traits, param_t, bare_t, value_size, value_kind and attr_as: cn_metal_bind.h, shared with
// the CUDA engine; a checked pointer points at its element type.
template <class T> struct pointee<ptr<T>> {
  static constexpr bool is = true;
  using type = T;
};

template <class P>
__attribute__((always_inline)) inline P bind(const LaunchDesc* d, int slot) {
  using Q = bare_t<P>;
  void* data = d->buffers[slot].data;
  if constexpr (is_checked_ptr<Q>::value) {
    using T = typename pointee<Q>::type;
    T* p = static_cast<T*>(data);
    return Q(p, p, d->buffers[slot].bytes / value_size<P>(), slot);
  } else if constexpr (std::is_pointer<Q>::value) {
    return static_cast<Q>(data);
  } else if constexpr (std::is_reference<P>::value) {
    return *static_cast<std::remove_reference_t<P>*>(data);
  } else {
    alignas(Q) unsigned char raw[sizeof(Q)];
    std::memcpy(raw, data, sizeof(Q));
    return *reinterpret_cast<Q*>(raw);
  }
}

// A [[threadgroup(i)]] parameter: `bytes` of the group's arena in shared slot `slot`, made by
// the first thread of each group that asks.
template <class P>
__attribute__((always_inline)) inline P bind_threadgroup(int slot, int64_t bytes) {
  using Q = bare_t<P>;
  void* s = g.arena.slots[slot];
  if (__builtin_expect(!s, 0)) s = arena_alloc(slot, size_t(bytes), 16, size_t(value_size<P>()));
  if constexpr (is_checked_ptr<Q>::value) {
    using T = typename pointee<Q>::type;
    T* p = static_cast<T*>(s);
    return Q(p, p, bytes / value_size<P>(), -1 - slot);
  } else if constexpr (std::is_pointer<Q>::value) {
    return static_cast<Q>(s);
  } else {
    return *static_cast<std::remove_reference_t<P>*>(s);
  }
}

}  // namespace msl
}  // namespace cn

// MSL address-space and function qualifiers. `threadgroup` is rewritten by the Python side.
#define device
#define constant
#define thread
#define kernel
#define coherent(space)
// Function qualifier of Metal's standard library headers (MLX's headers use it too).
#ifndef METAL_FUNC
#define METAL_FUNC inline
#endif

#endif  // CN_METAL_H
