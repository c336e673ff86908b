// cn_cuda_host.h: the part of CUDA the metal-cuda engine's translation units use, on the host,
// so that tests compile the generated CUDA text with g++ and run it without a GPU.
//
// A test stand-in, not an emulator (that is emu-cuda): one std::thread per CUDA thread, the
// blocks of a launch one after another, so that `__shared__` can be a function-local static.
// What the generated units rely on behaves as CUDA defines it:
// - __syncthreads: a barrier of the block's threads that have not exited (threads that returned
//   count as arrived, as on the H200);
// - warp functions (__shfl_sync, __ballot_sync, __all_sync, __any_sync, __syncwarp): lanes
//   32*w .. 32*w+31 of the block; each call waits for the lanes of its mask that have not exited;
//   __activemask() is the warp's lanes that have not exited (no divergence tracking: kernels that
//   shuffle inside divergent branches are out of scope);
// - atomics: GCC's __atomic builtins (relaxed), compare-and-swap loops for float;
// - the launch takes its arguments as cuLaunchKernel does: one pointer per parameter, to the
//   parameter's value (cn_host::launch).
#ifndef CN_CUDA_HOST_H
#define CN_CUDA_HOST_H

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __constant__
#define __align__(n) alignas(n)
#define __shared__ static
#define CN_DYNAMIC_SHARED(name) unsigned char* name = ::cn_host::dynamic_shared()

struct cn_host_dim {
  unsigned x, y, z;
};
inline thread_local cn_host_dim threadIdx, blockIdx, blockDim, gridDim;

namespace cn_host {

struct Block {
  std::mutex m;
  std::condition_variable cv;
  unsigned alive = 0, arrived = 0, gen = 0;
  std::vector<unsigned> warp_alive;  // per warp: lanes that have not exited
  struct Round {
    unsigned mask = 0, arrived = 0, gen = 0;
    unsigned long long in[32] = {}, out[32] = {};
  };
  std::vector<Round> rounds;  // per warp
  std::vector<unsigned char> shared;
};
inline Block* g_block = nullptr;

inline unsigned char* dynamic_shared() { return g_block->shared.data(); }
inline unsigned lane() { return threadIdx.x & 31u; }
inline unsigned warp() { return threadIdx.x >> 5; }

// Called with the lock held: release the block barrier or a warp round that is now complete.
inline void settle(Block& b) {
  if (b.arrived && b.arrived >= b.alive) {
    b.arrived = 0;
    ++b.gen;
    b.cv.notify_all();
  }
  for (size_t w = 0; w < b.rounds.size(); ++w) {
    Block::Round& r = b.rounds[w];
    if (r.arrived && (r.arrived & b.warp_alive[w]) == (r.mask & b.warp_alive[w])) {
      std::memcpy(r.out, r.in, sizeof r.in);
      r.arrived = 0;
      ++r.gen;
      b.cv.notify_all();
    }
  }
}

inline void barrier() {
  Block& b = *g_block;
  std::unique_lock<std::mutex> lk(b.m);
  const unsigned gen = b.gen;
  ++b.arrived;
  settle(b);
  b.cv.wait(lk, [&] { return b.gen != gen; });
}

// Every lane of `mask` gives `v`; `all` gets what each lane of the warp gave.
inline void exchange(unsigned mask, unsigned long long v, unsigned long long* all) {
  Block& b = *g_block;
  std::unique_lock<std::mutex> lk(b.m);
  Block::Round& r = b.rounds[warp()];
  if (r.arrived == 0) r.mask = mask;
  r.in[lane()] = v;
  r.arrived |= 1u << lane();
  const unsigned gen = r.gen;
  settle(b);
  b.cv.wait(lk, [&] { return r.gen != gen; });
  std::memcpy(all, r.out, sizeof r.out);
}

inline void exit_thread() {
  Block& b = *g_block;
  std::lock_guard<std::mutex> lk(b.m);
  --b.alive;
  b.warp_alive[warp()] &= ~(1u << lane());
  settle(b);
}

inline unsigned active_mask() {
  Block& b = *g_block;
  std::lock_guard<std::mutex> lk(b.m);
  return b.warp_alive[warp()];
}

template <class F, class Tuple, size_t... I>
void call(F f, Tuple& t, std::index_sequence<I...>) {
  f(std::get<I>(t)...);
}

template <class... A, size_t... I>
std::tuple<std::decay_t<A>...> unpack(void** params, std::index_sequence<I...>) {
  return std::tuple<std::decay_t<A>...>(*static_cast<std::decay_t<A>*>(params[I])...);
}

// Run kernel `k` on a grid of blocks; params[i] points at the value of parameter i.
template <class... A>
void launch(void (*k)(A...), cn_host_dim grid, cn_host_dim block, size_t shared_bytes,
            void** params) {
  std::tuple<std::decay_t<A>...> values = unpack<A...>(params, std::index_sequence_for<A...>{});
  const unsigned n = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        Block b;
        b.alive = n;
        const unsigned warps = (n + 31) / 32;
        b.warp_alive.assign(warps, 0);
        for (unsigned t = 0; t < n; ++t) b.warp_alive[t / 32] |= 1u << (t % 32);
        b.rounds.resize(warps);
        b.shared.assign(shared_bytes + 16, 0);
        g_block = &b;
        std::vector<std::thread> threads;
        threads.reserve(n);
        for (unsigned t = 0; t < n; ++t) {
          threads.emplace_back([&, t] {
            threadIdx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            blockIdx = {bx, by, bz};
            blockDim = block;
            gridDim = grid;
            call(k, values, std::index_sequence_for<A...>{});
            exit_thread();
          });
        }
        for (auto& th : threads) th.join();
        g_block = nullptr;
      }
}

template <class T>
inline T cas_loop(T* p, T (*f)(T, T), T a) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "32- or 64-bit atomics");
  using B = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned>;
  B* q = reinterpret_cast<B*>(p);
  B old = __atomic_load_n(q, __ATOMIC_RELAXED);
  for (;;) {
    T o;
    std::memcpy(&o, &old, sizeof o);
    const T n = f(o, a);
    B nb;
    std::memcpy(&nb, &n, sizeof nb);
    if (__atomic_compare_exchange_n(q, &old, nb, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return o;
  }
}

}  // namespace cn_host

// ---- intrinsics -------------------------------------------------------------------------------
inline void __syncthreads() { cn_host::barrier(); }
inline unsigned __activemask() { return cn_host::active_mask(); }
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
  unsigned long long all[32];
  cn_host::exchange(mask, 0, all);
}
inline unsigned __shfl_sync(unsigned mask, unsigned v, int src) {
  unsigned long long all[32];
  cn_host::exchange(mask, v, all);
  return unsigned(all[unsigned(src) & 31u]);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  unsigned long long all[32];
  const unsigned active = __activemask();
  cn_host::exchange(mask, pred ? 1u : 0u, all);
  unsigned bits = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (((mask & active) >> l) & 1u && all[l]) bits |= 1u << l;
  return bits;
}
inline int __all_sync(unsigned mask, int pred) {
  const unsigned m = mask & __activemask();
  return (__ballot_sync(mask, pred) & m) == m;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }

#define CN_HOST_ATOMIC_INT(NAME, BUILTIN)                                                        \
  inline int NAME(int* p, int a) { return BUILTIN(p, a, __ATOMIC_RELAXED); }                   \
  inline unsigned NAME(unsigned* p, unsigned a) { return BUILTIN(p, a, __ATOMIC_RELAXED); }    \
  inline unsigned long long NAME(unsigned long long* p, unsigned long long a) {                \
    return BUILTIN(p, a, __ATOMIC_RELAXED);                                                    \
  }
CN_HOST_ATOMIC_INT(atomicAdd, __atomic_fetch_add)
CN_HOST_ATOMIC_INT(atomicSub, __atomic_fetch_sub)
CN_HOST_ATOMIC_INT(atomicAnd, __atomic_fetch_and)
CN_HOST_ATOMIC_INT(atomicOr, __atomic_fetch_or)
CN_HOST_ATOMIC_INT(atomicXor, __atomic_fetch_xor)
CN_HOST_ATOMIC_INT(atomicExch, __atomic_exchange_n)
#undef CN_HOST_ATOMIC_INT
inline float atomicAdd(float* p, float a) {
  return cn_host::cas_loop<float>(p, [](float o, float x) { return o + x; }, a);
}
inline float atomicExch(float* p, float a) {
  return cn_host::cas_loop<float>(p, [](float, float x) { return x; }, a);
}
template <class T>
inline T cn_host_minmax(T* p, T a, bool is_min) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    const T n = is_min ? (a < old ? a : old) : (old < a ? a : old);
    if (__atomic_compare_exchange_n(p, &old, n, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return old;
  }
}
inline int atomicMin(int* p, int a) { return cn_host_minmax(p, a, true); }
inline unsigned atomicMin(unsigned* p, unsigned a) { return cn_host_minmax(p, a, true); }
inline long long atomicMin(long long* p, long long a) { return cn_host_minmax(p, a, true); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long a) {
  return cn_host_minmax(p, a, true);
}
inline int atomicMax(int* p, int a) { return cn_host_minmax(p, a, false); }
inline unsigned atomicMax(unsigned* p, unsigned a) { return cn_host_minmax(p, a, false); }
inline long long atomicMax(long long* p, long long a) { return cn_host_minmax(p, a, false); }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long a) {
  return cn_host_minmax(p, a, false);
}
template <class T>
inline T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}

#endif  // CN_CUDA_HOST_H
