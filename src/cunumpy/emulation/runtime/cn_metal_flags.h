// cunumpy Metal runtime: the barrier memory flags, thread scopes, memory orders, the atomic<T>
// type and simd_vote, one definition shared by the CPU emulator (cn_metal.h) and the CUDA engine
// (cn_metal_cuda.h), which each define the operations on them. Plain C++ that g++ and NVRTC both
// compile.
#pragma once

namespace metal {

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}
constexpr mem_flags operator&(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) & unsigned(b));
}

enum class thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup,
                          thread_scope_device };

// atomic<T> has the size and alignment of T (atomic outputs alias the array).
enum memory_order {
  memory_order_relaxed,
  memory_order_consume,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

template <class T>
struct atomic {
  T v;
};
using atomic_int = atomic<int>;
using atomic_uint = atomic<unsigned int>;
using atomic_bool = atomic<bool>;
using atomic_float = atomic<float>;
using atomic_long = atomic<long>;
using atomic_ulong = atomic<unsigned long>;

template <class T> struct cn_same { using type = T; };
template <class T> using cn_arg = typename cn_same<T>::type;

// The result of simd_ballot: one bit per lane.
struct simd_vote {
  using vote_t = uint64_t;
  vote_t v = 0;
  constexpr simd_vote() = default;
  constexpr explicit simd_vote(vote_t x) : v(x) {}
  constexpr operator vote_t() const { return v; }
  // All 32 lanes of the SIMD group voted true (lanes that are inactive or missing count as false).
  constexpr bool all() const { return (v & 0xFFFFFFFFull) == 0xFFFFFFFFull; }
  constexpr bool any() const { return v != 0; }
};
using quad_vote = simd_vote;

}  // namespace metal
