// cn_metal_cuda.h: the device half of the Metal runtime, for Metal kernels compiled to CUDA.
//
// The `cuda` engine of MetalKernel compiles a Metal kernel with NVRTC as one CUDA C++
// translation unit: this header, the kernel's header, the body in a __device__ function with the
// parameters MLX declares, and a __global__ entry point that computes Metal's thread attributes.
// Types and math come from cn_metal_types.h, the same text the CPU emulator compiles with g++
// (with cn_rtc_std.h standing in for the C++ standard library). This header adds what the
// emulator implements with its scheduler: barriers, SIMD-group and quad-group functions (warp
// shuffles over the active lanes), atomics (CUDA atomics), simdgroup_matrix (two elements per
// lane, Apple's layout) and the address-space words.
//
// The entry point launches one CUDA block per Metal threadgroup with a one-dimensional block of
// threads_per_threadgroup.x*y*z threads. The Metal thread index in the threadgroup is
// threadIdx.x, linearised over the size of *this* threadgroup (edge threadgroups are smaller), so
// CUDA warps are exactly Metal's SIMD-groups (32 consecutive indices) and the threads beyond the
// grid, which Metal never runs, are the last ones of the block and return before the body.
#ifndef CN_METAL_CUDA_H
#define CN_METAL_CUDA_H

#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 310
#endif
#ifndef __HAVE_BFLOAT__
#define __HAVE_BFLOAT__ 1
#endif
// Most dimensions of an input whose _shape/_strides the body reads (the generated source sets it).
#ifndef CN_MAX_DIMS
#define CN_MAX_DIMS 12
#endif

#include "cn_rtc_std.h"
#include "cn_metal_types.h"

#include "cn_metal_flags.h"
#include "cn_metal_bind.h"

namespace metal {

// ---------------------------------------------------------------------------------------------
// Barriers
// ---------------------------------------------------------------------------------------------

// __syncthreads orders shared and global memory for the block, which covers every Metal flag.
// Threads beyond the grid have returned; CUDA counts exited threads as arrived.
__device__ __forceinline__ void threadgroup_barrier(mem_flags = mem_flags::mem_none) {
  __syncthreads();
}
__device__ __forceinline__ void simdgroup_barrier(mem_flags flags = mem_flags::mem_none) {
  __syncwarp(__activemask());
  if (unsigned(flags) & unsigned(mem_flags::mem_device)) __threadfence_block();
}

// ---------------------------------------------------------------------------------------------
// SIMD-group and quad-group functions. Metal defines them over the *active* lanes of the group;
// here the active lanes are __activemask(). With all 32 lanes active, reductions and scans are
// butterfly / Kogge-Stone networks of shuffles; with some inactive, they combine the active lanes
// in lane order (the order the CPU emulator uses).
// ---------------------------------------------------------------------------------------------

namespace cn_lanes {

enum Op { SUM, PRODUCT, MIN, MAX, AND, OR, XOR };

__device__ __forceinline__ unsigned lane() { return threadIdx.x & 31u; }

// Any trivially copyable value through __shfl_sync, 32 bits at a time.
template <class T>
__device__ __forceinline__ T shfl(unsigned mask, const T& v, int src) {
  constexpr int N = int((sizeof(T) + 3) / 4);
  unsigned w[N] = {};
  __builtin_memcpy(static_cast<void*>(w), static_cast<const void*>(&v), sizeof(T));
#pragma unroll
  for (int i = 0; i < N; ++i) w[i] = __shfl_sync(mask, w[i], src);
  T r;
  __builtin_memcpy(static_cast<void*>(&r), static_cast<const void*>(w), sizeof(T));
  return r;
}

template <class T>
__device__ __forceinline__ T lane_min(const T& a, const T& b) {
  if constexpr (std::is_arithmetic<T>::value) return b < a ? b : a;
  else return min(a, b);
}
template <class T>
__device__ __forceinline__ T lane_max(const T& a, const T& b) {
  if constexpr (std::is_arithmetic<T>::value) return a < b ? b : a;
  else return max(a, b);
}

template <int OP, class T>
__device__ __forceinline__ T combine(const T& a, const T& b) {
  if constexpr (OP == SUM) return a + b;
  else if constexpr (OP == PRODUCT) return a * b;
  else if constexpr (OP == MIN) return lane_min(a, b);
  else if constexpr (OP == MAX) return lane_max(a, b);
  else if constexpr (OP == AND) return a & b;
  else if constexpr (OP == OR) return a | b;
  else return a ^ b;
}

// W: lanes per group (32, or 4 for quad functions).
template <int OP, unsigned W, class T>
__device__ __forceinline__ T reduce(T v) {
  const unsigned mask = __activemask();
  if (mask == 0xFFFFFFFFu) {
#pragma unroll
    for (unsigned d = W / 2; d > 0; d >>= 1) v = combine<OP>(v, shfl(mask, v, int(lane() ^ d)));
    return v;
  }
  const unsigned base = lane() & ~(W - 1);
  T acc = v;
  bool have = false;
  for (unsigned k = 0; k < W; ++k) {
    const T x = shfl(mask, v, int(base + k));
    if ((mask >> (base + k)) & 1u) {
      acc = have ? combine<OP>(acc, x) : x;
      have = true;
    }
  }
  return acc;
}

template <int OP, unsigned W, bool Inclusive, class T>
__device__ __forceinline__ T scan(T v) {
  const unsigned mask = __activemask();
  const unsigned me = lane() & (W - 1);
  const T identity = OP == PRODUCT ? T(1) : T(0);
  if (mask == 0xFFFFFFFFu) {
    T x = v;
#pragma unroll
    for (unsigned d = 1; d < W; d <<= 1) {
      const T y = shfl(mask, x, int(me >= d ? lane() - d : lane()));
      if (me >= d) x = combine<OP>(y, x);
    }
    if constexpr (Inclusive) {
      return x;
    } else {
      const T y = shfl(mask, x, int(me >= 1 ? lane() - 1 : lane()));
      return me >= 1 ? y : identity;
    }
  }
  const unsigned base = lane() & ~(W - 1);
  T acc = identity;
  for (unsigned k = 0; k < W; ++k) {
    const T x = shfl(mask, v, int(base + k));
    if (((mask >> (base + k)) & 1u) && (k < me || (Inclusive && k == me))) acc = combine<OP>(acc, x);
  }
  return acc;
}

__device__ __forceinline__ unsigned group_mask(unsigned mask, unsigned W) {
  if (W == 32) return mask;
  const unsigned base = lane() & ~(W - 1);
  return mask & (((1u << W) - 1u) << base);
}

// Source lane (in the warp) of a shuffle; mode: 0 index, 1 up, 2 down, 3 xor, 4 rotate up,
// 5 rotate down (Metal's rules, as the CPU emulator implements them).
template <unsigned W>
__device__ __forceinline__ int source(int mode, int a) {
  const int base = int(lane() & ~(W - 1)), i = int(lane() & (W - 1)), w = int(W);
  int s;
  if (mode == 0) s = a;
  else if (mode == 1) s = i - a < 0 ? i : i - a;
  else if (mode == 2) s = i + a >= w ? i : i + a;
  else if (mode == 3) s = i ^ a;
  else if (mode == 4) s = ((i - a) % w + w) % w;
  else s = (i + a) % w;
  return base + s;
}

template <unsigned W, bool Down, class T>
__device__ __forceinline__ T fill(const T& data, const T& filling, int delta, int modulo) {
  const unsigned mask = __activemask();
  const int base0 = int(lane() & ~(W - 1)), i = int(lane() & (W - 1));
  int m = modulo;
  if (m == 0 || m > int(W)) m = int(W);
  const int base = (i / m) * m;
  const int k = i - base + (Down ? delta : -delta);
  const bool use_fill = Down ? k >= m : k < 0;
  const int src = base0 + base + (use_fill ? (Down ? k - m : k + m) : k);
  const T a = shfl(mask, data, src);
  const T b = shfl(mask, filling, src);
  return use_fill ? b : a;
}

}  // namespace cn_lanes

// simd_vote (the result of simd_ballot): cn_metal_flags.h.

#define CN_LANE_REDUCE(PREFIX, W)                                                               \
  template <class T> __device__ __forceinline__ T PREFIX##_sum(T d) {                           \
    return cn_lanes::reduce<cn_lanes::SUM, W>(d); }                                            \
  template <class T> __device__ __forceinline__ T PREFIX##_product(T d) {                       \
    return cn_lanes::reduce<cn_lanes::PRODUCT, W>(d); }                                        \
  template <class T> __device__ __forceinline__ T PREFIX##_min(T d) {                           \
    return cn_lanes::reduce<cn_lanes::MIN, W>(d); }                                            \
  template <class T> __device__ __forceinline__ T PREFIX##_max(T d) {                           \
    return cn_lanes::reduce<cn_lanes::MAX, W>(d); }                                            \
  template <class T> __device__ __forceinline__ T PREFIX##_and(T d) {                           \
    return cn_lanes::reduce<cn_lanes::AND, W>(d); }                                            \
  template <class T> __device__ __forceinline__ T PREFIX##_or(T d) {                            \
    return cn_lanes::reduce<cn_lanes::OR, W>(d); }                                             \
  template <class T> __device__ __forceinline__ T PREFIX##_xor(T d) {                           \
    return cn_lanes::reduce<cn_lanes::XOR, W>(d); }                                            \
  template <class T> __device__ __forceinline__ T PREFIX##_prefix_inclusive_sum(T d) {          \
    return cn_lanes::scan<cn_lanes::SUM, W, true>(d); }                                        \
  template <class T> __device__ __forceinline__ T PREFIX##_prefix_exclusive_sum(T d) {          \
    return cn_lanes::scan<cn_lanes::SUM, W, false>(d); }                                       \
  template <class T> __device__ __forceinline__ T PREFIX##_prefix_inclusive_product(T d) {      \
    return cn_lanes::scan<cn_lanes::PRODUCT, W, true>(d); }                                    \
  template <class T> __device__ __forceinline__ T PREFIX##_prefix_exclusive_product(T d) {      \
    return cn_lanes::scan<cn_lanes::PRODUCT, W, false>(d); }                                   \
  template <class T> __device__ __forceinline__ T PREFIX##_broadcast_first(T d) {               \
    const unsigned m = __activemask();                                                         \
    return cn_lanes::shfl(m, d, __ffs(cn_lanes::group_mask(m, W)) - 1); }                      \
  template <class T> __device__ __forceinline__ T PREFIX##_shuffle(T d, ushort l) {             \
    return cn_lanes::shfl(__activemask(), d, cn_lanes::source<W>(0, l)); }                     \
  template <class T> __device__ __forceinline__ T PREFIX##_broadcast(T d, ushort l) {           \
    return cn_lanes::shfl(__activemask(), d, cn_lanes::source<W>(0, l)); }                     \
  template <class T> __device__ __forceinline__ T PREFIX##_shuffle_up(T d, ushort l) {          \
    return cn_lanes::shfl(__activemask(), d, cn_lanes::source<W>(1, l)); }                     \
  template <class T> __device__ __forceinline__ T PREFIX##_shuffle_down(T d, ushort l) {        \
    return cn_lanes::shfl(__activemask(), d, cn_lanes::source<W>(2, l)); }                     \
  template <class T> __device__ __forceinline__ T PREFIX##_shuffle_xor(T d, ushort l) {         \
    return cn_lanes::shfl(__activemask(), d, cn_lanes::source<W>(3, l)); }                     \
  template <class T> __device__ __forceinline__ T PREFIX##_shuffle_rotate_up(T d, ushort l) {   \
    return cn_lanes::shfl(__activemask(), d, cn_lanes::source<W>(4, l)); }                     \
  template <class T> __device__ __forceinline__ T PREFIX##_shuffle_rotate_down(T d, ushort l) { \
    return cn_lanes::shfl(__activemask(), d, cn_lanes::source<W>(5, l)); }                     \
  template <class T>                                                                           \
  __device__ __forceinline__ T PREFIX##_shuffle_and_fill_down(T d, T f, ushort delta,          \
                                                              ushort modulo = 0) {             \
    return cn_lanes::fill<W, true>(d, f, delta, modulo); }                                     \
  template <class T>                                                                           \
  __device__ __forceinline__ T PREFIX##_shuffle_and_fill_up(T d, T f, ushort delta,            \
                                                            ushort modulo = 0) {               \
    return cn_lanes::fill<W, false>(d, f, delta, modulo); }

CN_LANE_REDUCE(simd, 32u)
CN_LANE_REDUCE(quad, 4u)
#undef CN_LANE_REDUCE

__device__ __forceinline__ simd_vote simd_ballot(bool b) {
  return simd_vote(__ballot_sync(__activemask(), b));
}
__device__ __forceinline__ simd_vote simd_active_threads_mask() {
  return simd_vote(__activemask());
}
__device__ __forceinline__ bool simd_all(bool b) { return __all_sync(__activemask(), b); }
__device__ __forceinline__ bool simd_any(bool b) { return __any_sync(__activemask(), b); }
__device__ __forceinline__ bool simd_is_first() {
  return cn_lanes::lane() == unsigned(__ffs(__activemask()) - 1);
}
__device__ __forceinline__ bool simd_is_helper_thread() { return false; }
__device__ __forceinline__ quad_vote quad_ballot(bool b) {
  return quad_vote(cn_lanes::group_mask(__ballot_sync(__activemask(), b), 4));
}
__device__ __forceinline__ quad_vote quad_active_threads_mask() {
  return quad_vote(cn_lanes::group_mask(__activemask(), 4));
}
__device__ __forceinline__ bool quad_all(bool b) {
  const unsigned m = __activemask();
  return cn_lanes::group_mask(__ballot_sync(m, b), 4) == cn_lanes::group_mask(m, 4);
}
__device__ __forceinline__ bool quad_any(bool b) {
  return cn_lanes::group_mask(__ballot_sync(__activemask(), b), 4) != 0;
}
__device__ __forceinline__ bool quad_is_first() {
  return cn_lanes::lane() == unsigned(__ffs(cn_lanes::group_mask(__activemask(), 4)) - 1);
}

// ---------------------------------------------------------------------------------------------
// Atomics: atomic<T> has the size and alignment of T (atomic outputs alias the array); every
// operation is a CUDA atomic (relaxed, as Metal's are), a compare-and-swap loop where CUDA has no
// instruction for the type.
// ---------------------------------------------------------------------------------------------

// memory_order, atomic<T> and its aliases: cn_metal_flags.h.

__device__ __forceinline__ void atomic_thread_fence(
    mem_flags, memory_order, thread_scope s = thread_scope::thread_scope_device) {
  if (s == thread_scope::thread_scope_device) __threadfence();
  else __threadfence_block();
}

namespace cn_atomics {
template <class T>
using bits_t = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned int>;

template <class T>
__device__ __forceinline__ bits_t<T> to_bits(T v) {
  bits_t<T> b;
  __builtin_memcpy(static_cast<void*>(&b), static_cast<const void*>(&v), sizeof(T));
  return b;
}
template <class T>
__device__ __forceinline__ T from_bits(bits_t<T> b) {
  T v;
  __builtin_memcpy(static_cast<void*>(&v), static_cast<const void*>(&b), sizeof(T));
  return v;
}

// old = *p; *p = f(old), atomically; returns old.
template <class T, class F>
__device__ __forceinline__ T rmw(T* p, F f) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8,
                "Metal atomics on the cuda engine take 32- or 64-bit types");
  bits_t<T>* q = reinterpret_cast<bits_t<T>*>(p);
  bits_t<T> old = *reinterpret_cast<volatile bits_t<T>*>(q), seen;
  do {
    seen = old;
    old = atomicCAS(q, seen, to_bits<T>(f(from_bits<T>(seen))));
  } while (old != seen);
  return from_bits<T>(old);
}

template <class T>
constexpr bool i32 = std::is_same<T, int>::value || std::is_same<T, unsigned int>::value;
template <class T>
constexpr bool i64 = std::is_integral<T>::value && sizeof(T) == 8;
using ull = unsigned long long;

template <class T> __device__ __forceinline__ T add(T* p, T a) {
  if constexpr (i32<T> || std::is_same<T, float>::value) return atomicAdd(p, a);
  else if constexpr (i64<T>) return T(atomicAdd(reinterpret_cast<ull*>(p), ull(a)));
  else return rmw(p, [=](T o) { return T(o + a); });
}
template <class T> __device__ __forceinline__ T sub(T* p, T a) {
  if constexpr (i32<T>) return atomicSub(p, a);
  else if constexpr (i64<T>) return T(atomicAdd(reinterpret_cast<ull*>(p), ull(0) - ull(a)));
  else return rmw(p, [=](T o) { return T(o - a); });
}
template <class T> __device__ __forceinline__ T min_(T* p, T a) {
  if constexpr (i32<T>) return atomicMin(p, a);
  else if constexpr (i64<T> && std::is_signed<T>::value)
    return T(atomicMin(reinterpret_cast<long long*>(p), (long long)a));
  else if constexpr (i64<T>) return T(atomicMin(reinterpret_cast<ull*>(p), ull(a)));
  else return rmw(p, [=](T o) { return a < o ? a : o; });
}
template <class T> __device__ __forceinline__ T max_(T* p, T a) {
  if constexpr (i32<T>) return atomicMax(p, a);
  else if constexpr (i64<T> && std::is_signed<T>::value)
    return T(atomicMax(reinterpret_cast<long long*>(p), (long long)a));
  else if constexpr (i64<T>) return T(atomicMax(reinterpret_cast<ull*>(p), ull(a)));
  else return rmw(p, [=](T o) { return o < a ? a : o; });
}
template <class T> __device__ __forceinline__ T and_(T* p, T a) {
  if constexpr (i32<T>) return atomicAnd(p, a);
  else if constexpr (i64<T>) return T(atomicAnd(reinterpret_cast<ull*>(p), ull(a)));
  else return rmw(p, [=](T o) { return T(o & a); });
}
template <class T> __device__ __forceinline__ T or_(T* p, T a) {
  if constexpr (i32<T>) return atomicOr(p, a);
  else if constexpr (i64<T>) return T(atomicOr(reinterpret_cast<ull*>(p), ull(a)));
  else return rmw(p, [=](T o) { return T(o | a); });
}
template <class T> __device__ __forceinline__ T xor_(T* p, T a) {
  if constexpr (i32<T>) return atomicXor(p, a);
  else if constexpr (i64<T>) return T(atomicXor(reinterpret_cast<ull*>(p), ull(a)));
  else return rmw(p, [=](T o) { return T(o ^ a); });
}
template <class T> __device__ __forceinline__ T exch(T* p, T a) {
  if constexpr (i32<T> || std::is_same<T, float>::value) return atomicExch(p, a);
  else if constexpr (i64<T>) return T(atomicExch(reinterpret_cast<ull*>(p), ull(a)));
  else return rmw(p, [=](T) { return a; });
}
}  // namespace cn_atomics

#define CN_ATOMIC_RMW(NAME, FN)                                                               \
  template <class T>                                                                          \
  __device__ __forceinline__ T NAME(volatile atomic<T>* o, cn_arg<T> a,                       \
                                    memory_order = memory_order_relaxed) {                    \
    return cn_atomics::FN(&const_cast<atomic<T>*>(o)->v, T(a));                               \
  }

CN_ATOMIC_RMW(atomic_fetch_add_explicit, add)
CN_ATOMIC_RMW(atomic_fetch_sub_explicit, sub)
CN_ATOMIC_RMW(atomic_fetch_and_explicit, and_)
CN_ATOMIC_RMW(atomic_fetch_or_explicit, or_)
CN_ATOMIC_RMW(atomic_fetch_xor_explicit, xor_)
CN_ATOMIC_RMW(atomic_fetch_min_explicit, min_)
CN_ATOMIC_RMW(atomic_fetch_max_explicit, max_)
CN_ATOMIC_RMW(atomic_exchange_explicit, exch)
#undef CN_ATOMIC_RMW

template <class T>
__device__ __forceinline__ T atomic_load_explicit(const volatile atomic<T>* o,
                                                  memory_order = memory_order_relaxed) {
  return o->v;
}
template <class T>
__device__ __forceinline__ void atomic_store_explicit(volatile atomic<T>* o, cn_arg<T> a,
                                                      memory_order = memory_order_relaxed) {
  o->v = a;
}
template <class T>
__device__ __forceinline__ bool atomic_compare_exchange_weak_explicit(
    volatile atomic<T>* o, cn_arg<T>* expected, cn_arg<T> desired,
    memory_order = memory_order_relaxed, memory_order = memory_order_relaxed) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8,
                "Metal atomics on the cuda engine take 32- or 64-bit types");
  using B = cn_atomics::bits_t<T>;
  B* q = reinterpret_cast<B*>(const_cast<T*>(&o->v));
  const B want = cn_atomics::to_bits<T>(*expected);
  const B old = atomicCAS(q, want, cn_atomics::to_bits<T>(T(desired)));
  if (old == want) return true;
  *expected = cn_atomics::from_bits<T>(old);
  return false;
}
template <class T>
__device__ __forceinline__ bool atomic_compare_exchange_strong_explicit(
    volatile atomic<T>* o, cn_arg<T>* expected, cn_arg<T> desired,
    memory_order s = memory_order_relaxed, memory_order f = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(o, expected, desired, s, f);
}

// ---------------------------------------------------------------------------------------------
// SIMD-group matrices: 8x8, two elements per lane with Apple's layout (thread_elements()): with
// q = lane / 4, lane l holds row (q & 4) + (l / 2) % 4, columns (q & 2) * 2 + (l % 2) * 2 and the
// next one. Whole-matrix operations exchange elements between the lanes with shuffles.
// ---------------------------------------------------------------------------------------------

namespace cn_frag {
__device__ __forceinline__ int row(unsigned l) { return int(((l / 4) & 4) + (l / 2) % 4); }
__device__ __forceinline__ int col(unsigned l) { return int(((l / 4) & 2) * 2 + (l % 2) * 2); }
// The lane holding element (r, c), and which of its two elements it is (c & 1).
__device__ __forceinline__ int owner(int r, int c) {
  return ((r >> 2) & 1) << 4 | ((c >> 2) & 1) << 3 | ((r >> 1) & 1) << 2 | (r & 1) << 1 |
         ((c >> 1) & 1);
}
}  // namespace cn_frag

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "Metal SIMD-group matrices are 8x8");
  vec<T, 2> cn_e;  // this lane's two elements
  simdgroup_matrix() = default;
  // A diagonal matrix with dval on the diagonal.
  __device__ explicit simdgroup_matrix(T dval) {
    const unsigned l = cn_lanes::lane();
    const int r = cn_frag::row(l), c = cn_frag::col(l);
    cn_e = vec<T, 2>(r == c ? dval : T(0), r == c + 1 ? dval : T(0));
  }
  __device__ vec<T, 2>& thread_elements() { return cn_e; }
  __device__ const vec<T, 2>& thread_elements() const { return cn_e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
__device__ __forceinline__ simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(
    const T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.cn_e = vec<T, 2>(value, value);
  return m;
}

// Element (r, c) is src[(origin.y + r) * elements_per_row + origin.x + c]; transposed, the
// matrix gets element (c, r) of that layout.
template <class T, int Cols, int Rows, class P, class O = ulong2>
__device__ __forceinline__ void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, P src,
                                               ulong elements_per_row = Cols,
                                               O matrix_origin = O(0),
                                               bool transpose_matrix = false) {
  const ulong2 o = ulong2(matrix_origin);
  const unsigned l = cn_lanes::lane();
  const int r = cn_frag::row(l), c = cn_frag::col(l);
  T v[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const ulong i = transpose_matrix ? ulong(c + k) : ulong(r);
    const ulong j = transpose_matrix ? ulong(r) : ulong(c + k);
    v[k] = static_cast<T>(src[(o.y + i) * elements_per_row + o.x + j]);
  }
  d.cn_e = vec<T, 2>(v[0], v[1]);
}

template <class T, int Cols, int Rows, class P, class O = ulong2>
__device__ __forceinline__ void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, P dst,
                                                ulong elements_per_row = Cols,
                                                O matrix_origin = O(0),
                                                bool transpose_matrix = false) {
  const ulong2 o = ulong2(matrix_origin);
  const unsigned l = cn_lanes::lane();
  const int r = cn_frag::row(l), c = cn_frag::col(l);
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const ulong i = transpose_matrix ? ulong(c + k) : ulong(r);
    const ulong j = transpose_matrix ? ulong(r) : ulong(c + k);
    dst[(o.y + i) * elements_per_row + o.x + j] = a.cn_e[k];
  }
}

// d = a * b (+ c), accumulated in float (double for double) and rounded to T once, as the
// emulator does.
template <class T, class TA, class TB, int K, int Cols, int Rows>
__device__ __forceinline__ void simdgroup_multiply_accumulate(
    simdgroup_matrix<T, Cols, Rows>& d, const simdgroup_matrix<TA, K, Rows>& a,
    const simdgroup_matrix<TB, Cols, K>& b, const simdgroup_matrix<T, Cols, Rows>& c) {
  using W = cn_detail::wide_t<T>;
  const unsigned mask = __activemask();
  const unsigned l = cn_lanes::lane();
  const int r = cn_frag::row(l), col = cn_frag::col(l);
  W s0 = static_cast<W>(c.cn_e[0]), s1 = static_cast<W>(c.cn_e[1]);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const TA ak = cn_lanes::shfl(mask, a.cn_e[k & 1], cn_frag::owner(r, k));
    const int ob = cn_frag::owner(k, col);
    const TB b0 = cn_lanes::shfl(mask, b.cn_e[0], ob);
    const TB b1 = cn_lanes::shfl(mask, b.cn_e[1], ob);
    s0 += static_cast<W>(ak) * static_cast<W>(b0);
    s1 += static_cast<W>(ak) * static_cast<W>(b1);
  }
  d.cn_e = vec<T, 2>(static_cast<T>(s0), static_cast<T>(s1));
}

template <class T, class TA, class TB, int K, int Cols, int Rows>
__device__ __forceinline__ void simdgroup_multiply(simdgroup_matrix<T, Cols, Rows>& d,
                                                   const simdgroup_matrix<TA, K, Rows>& a,
                                                   const simdgroup_matrix<TB, Cols, K>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, Cols, Rows>(T(0)));
}

}  // namespace metal

// ---------------------------------------------------------------------------------------------
// The launch: grid, threadgroup size and threadgroup count, passed by value to every kernel.
// ---------------------------------------------------------------------------------------------

namespace cn {
struct launch_t {
  unsigned grid[3];    // threads per dimension (Metal dispatchThreads)
  unsigned dsize[3];   // threadgroup size at dispatch
};

// Buffers of fewer than 8 elements (Metal's constant address space) passed by value.
template <class T>
struct small_t {
  T v[8];
};
// _shape / _strides / _ndim of one input, passed by value.
struct meta_t {
  int shape[CN_MAX_DIMS];
  int64_t strides[CN_MAX_DIMS];
  int ndim;
};

// Metal's thread attributes of the calling thread (see the comment at the top).
struct thread_t {
  metal::uint3 gid, gsize, dsize, tid, pos, grid, ngroups;
  unsigned lin, nthreads;
};

__device__ __forceinline__ bool thread_of(const launch_t& L, thread_t& t) {
  t.lin = threadIdx.x;
  t.gid = metal::uint3(blockIdx.x, blockIdx.y, blockIdx.z);
  t.dsize = metal::uint3(L.dsize[0], L.dsize[1], L.dsize[2]);
  t.grid = metal::uint3(L.grid[0], L.grid[1], L.grid[2]);
  t.ngroups = metal::uint3(gridDim.x, gridDim.y, gridDim.z);
  const metal::uint3 base = t.gid * t.dsize;
  t.gsize = metal::uint3(::min(t.dsize.x, t.grid.x - base.x), ::min(t.dsize.y, t.grid.y - base.y),
                  ::min(t.dsize.z, t.grid.z - base.z));
  t.nthreads = t.gsize.x * t.gsize.y * t.gsize.z;
  if (t.lin >= t.nthreads) return false;
  if (t.gsize.y == 1 && t.gsize.z == 1) {
    t.tid = metal::uint3(t.lin, 0u, 0u);
  } else {
    const unsigned xy = t.gsize.x * t.gsize.y;
    t.tid = metal::uint3(t.lin % t.gsize.x, (t.lin % xy) / t.gsize.x, t.lin / xy);
  }
  t.pos = base + t.tid;
  return true;
}

namespace msl {
__device__ __forceinline__ unsigned cdiv(unsigned a, unsigned b) { return (a + b - 1) / b; }
__device__ __forceinline__ metal::uint3 dispatch_threads_per_threadgroup(const thread_t& t) {
  return t.dsize;
}
__device__ __forceinline__ unsigned dispatch_simdgroups_per_threadgroup(const thread_t& t) {
  return cdiv(t.dsize.x * t.dsize.y * t.dsize.z, 32);
}
__device__ __forceinline__ unsigned dispatch_quadgroups_per_threadgroup(const thread_t& t) {
  return cdiv(t.dsize.x * t.dsize.y * t.dsize.z, 4);
}
__device__ __forceinline__ metal::uint3 grid_origin(const thread_t&) { return metal::uint3(0u, 0u, 0u); }
__device__ __forceinline__ metal::uint3 grid_size(const thread_t& t) { return t.grid; }
__device__ __forceinline__ unsigned quadgroup_index_in_threadgroup(const thread_t& t) {
  return t.lin / 4;
}
__device__ __forceinline__ unsigned quadgroups_per_threadgroup(const thread_t& t) {
  return cdiv(t.nthreads, 4);
}
__device__ __forceinline__ unsigned simdgroup_index_in_threadgroup(const thread_t& t) {
  return t.lin / 32;
}
__device__ __forceinline__ unsigned simdgroups_per_threadgroup(const thread_t& t) {
  return cdiv(t.nthreads, 32);
}
__device__ __forceinline__ unsigned thread_execution_width(const thread_t&) { return 32; }
__device__ __forceinline__ unsigned thread_index_in_quadgroup(const thread_t& t) { return t.lin % 4; }
__device__ __forceinline__ unsigned thread_index_in_simdgroup(const thread_t& t) { return t.lin % 32; }
__device__ __forceinline__ unsigned thread_index_in_threadgroup(const thread_t& t) { return t.lin; }
__device__ __forceinline__ metal::uint3 thread_position_in_grid(const thread_t& t) { return t.pos; }
__device__ __forceinline__ metal::uint3 thread_position_in_threadgroup(const thread_t& t) {
  return t.tid;
}
__device__ __forceinline__ metal::uint3 threadgroup_position_in_grid(const thread_t& t) { return t.gid; }
__device__ __forceinline__ metal::uint3 threadgroups_per_grid(const thread_t& t) { return t.ngroups; }
__device__ __forceinline__ metal::uint3 threads_per_grid(const thread_t& t) { return t.grid; }
__device__ __forceinline__ unsigned threads_per_simdgroup(const thread_t&) { return 32; }
__device__ __forceinline__ metal::uint3 threads_per_threadgroup(const thread_t& t) { return t.gsize; }

// A parameter of a library kernel (MetalLibrary) bound to memory at `p`: a pointer parameter
// points there, a reference refers to it, a value is read from it.
template <class P>
__device__ __forceinline__ P bind_ptr(void* p) {
  using Q = bare_t<P>;
  if constexpr (std::is_pointer<Q>::value) return static_cast<Q>(p);
  else if constexpr (std::is_reference<P>::value) return *static_cast<std::remove_reference_t<P>*>(p);
  else return *static_cast<const Q*>(p);
}
}  // namespace msl
}  // namespace cn

// CUDA declares vector types with Metal's names (float4, int2, uint3, ...) and scalar math
// functions in the global namespace. The kernel's header and body are compiled inside namespace
// cn_user, where these using-declarations make the Metal ones win.
namespace cn_user {
using namespace metal;
#define CN_VEC_USING(T) using metal::T##2; using metal::T##3; using metal::T##4;
CN_VEC_USING(char)
CN_VEC_USING(uchar)
CN_VEC_USING(short)
CN_VEC_USING(ushort)
CN_VEC_USING(int)
CN_VEC_USING(uint)
CN_VEC_USING(long)
CN_VEC_USING(ulong)
CN_VEC_USING(float)
CN_VEC_USING(half)
CN_VEC_USING(bfloat)
CN_VEC_USING(bool)
#undef CN_VEC_USING
// Some NVRTC builds pre-declare ::half (cuda_fp16.h): Metal's half wins here too.
using metal::half;
using metal::bfloat;
using metal::float16_t;
using metal::bfloat16_t;
using metal::min;
using metal::max;
using metal::abs;
using metal::sqrt;
using metal::rsqrt;
using metal::exp;
using metal::exp2;
using metal::log;
using metal::log2;
using metal::pow;
using metal::sin;
using metal::cos;
using metal::tan;
using metal::tanh;
using metal::floor;
using metal::ceil;
using metal::round;
using metal::trunc;
using metal::fabs;
using metal::fmin;
using metal::fmax;
using metal::fma;
using metal::fmod;
using metal::isnan;
using metal::isinf;
using metal::isfinite;
using metal::signbit;
using metal::clamp;
using metal::copysign;
using metal::atan2;
}  // namespace cn_user

// The dynamic shared memory of a launch: the [[threadgroup(i)]] allocations of a library kernel,
// each at its offset (multiples of 16 bytes, as Metal sizes them).
#ifndef CN_DYNAMIC_SHARED
#define CN_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

// MSL address-space and function qualifiers. `threadgroup` is rewritten by the Python side.
#define device
#define constant
#define thread
#define kernel
#ifndef METAL_FUNC
#define METAL_FUNC inline
#endif

#endif  // CN_METAL_CUDA_H
