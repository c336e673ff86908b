// cunumpy CPU emulation: the CUDA C++ dialect on top of cn_core.h.
//
// What a CUDA kernel expects from its compiler, spelled in plain C++:
//   * qualifiers (__global__, __device__, __host__, __forceinline__, __launch_bounds__, ...) as
//     empty macros; `__shared__` declarations are rewritten by the Python side into references
//     to the per-block arena (cunumpy/emulation/_cuda_rewrite.py);
//   * the built-in variables threadIdx, blockIdx, blockDim, gridDim and warpSize, read from the
//     thread the emulator runs now (cn::g.cur, kept current by the launcher and the scheduler);
//   * CUDA vector types (float4, int2, dim3, ...) and their make_* functions;
//   * __syncthreads (and its _count/_and/_or forms), memory fences;
//   * warp functions in lockstep over the 32 lanes of a warp (__shfl*_sync, __ballot_sync,
//     __any_sync, __all_sync, __activemask, __syncwarp, __match_*_sync, __reduce_*_sync), with
//     checks: reading a lane that has exited, waits elsewhere, or is outside the mask is reported;
//   * atomics (real atomic operations when several workers run the launch: cn::atomic_rmw);
//   * CUDA math and intrinsics (sqrtf, __expf, rsqrtf, __popc, __float_as_int, ...), __half as
//     the compiler's _Float16, printf and a device assert that reports instead of aborting.
#ifndef CN_CUDA_H
#define CN_CUDA_H

#include "cn_core.h"

#include <math.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <type_traits>

// ---------------------------------------------------------------------------------------------
// Qualifiers and compiler identification
// ---------------------------------------------------------------------------------------------

// A kernel is declared inline so that the compiler folds it into the launcher's per-thread loop
// (its checked pointers then live in registers instead of being passed on the stack per thread).
#define __global__ inline
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
// __noinline__ is not a macro: libstdc++ 13 spells its own attribute __attribute__((__noinline__)),
// which such a macro breaks in every standard header included after it. The CUDA rewrite turns
// the kernel's own __noinline__ qualifiers into __attribute__((noinline)) instead.
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __align__(n) alignas(n)
#define __builtin_align__(n) alignas(n)
#define __grid_constant__
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDA_ARCH__ 900
// The toolkit a compute-capability 9.0 build sees (the CUDA 13.0 of the cupy engine's NVRTC):
// nvcc includes cuda_runtime.h in every translation unit, so these are always defined.
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
#define CUDART_VERSION 13000
#define CUDA_VERSION 13000
#define __CUDART_API_VERSION 13000
#define __CUDA_ARCH_LIST__ 900
#define CUNUMPY_EMULATION 1

// ---------------------------------------------------------------------------------------------
// Vector types
// ---------------------------------------------------------------------------------------------

#define CN_VEC1(N, T, A) \
  struct alignas(A) N##1 { T x; }; \
  inline N##1 make_##N##1(T x) { return N##1{x}; }
#define CN_VEC2(N, T, A) \
  struct alignas(A) N##2 { T x, y; }; \
  inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define CN_VEC3(N, T) \
  struct N##3 { T x, y, z; }; \
  inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define CN_VEC4(N, T, A) \
  struct alignas(A) N##4 { T x, y, z, w; }; \
  inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define CN_VECS(N, T, A1, A2, A4) CN_VEC1(N, T, A1) CN_VEC2(N, T, A2) CN_VEC3(N, T) CN_VEC4(N, T, A4)

CN_VECS(char, signed char, 1, 2, 4)
CN_VECS(uchar, unsigned char, 1, 2, 4)
CN_VECS(short, short, 2, 4, 8)
CN_VECS(ushort, unsigned short, 2, 4, 8)
CN_VECS(int, int, 4, 8, 16)
CN_VECS(uint, unsigned int, 4, 8, 16)
CN_VECS(long, long, 8, 16, 16)
CN_VECS(ulong, unsigned long, 8, 16, 16)
CN_VECS(longlong, long long, 8, 16, 16)
CN_VECS(ulonglong, unsigned long long, 8, 16, 16)
CN_VECS(float, float, 4, 8, 16)
CN_VECS(double, double, 8, 16, 16)

#undef CN_VEC1
#undef CN_VEC2
#undef CN_VEC3
#undef CN_VEC4
#undef CN_VECS

struct dim3 {
  unsigned int x, y, z;
  // always_inline: also inside the uninstrumented accessors of race-checking builds.
  __attribute__((always_inline)) constexpr dim3(unsigned int vx = 1, unsigned int vy = 1,
                                                unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __attribute__((always_inline)) constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---------------------------------------------------------------------------------------------
// Built-in variables
// ---------------------------------------------------------------------------------------------

namespace cn {
namespace cuda {

// The builtins read the thread they are given: the launched kernel gets its thread as a hidden
// first parameter named `cn_this_thread` (emulation/_cuda_rewrite.py), a local of the grid walk
// that the compiler keeps in registers; everywhere else (device functions) the name finds the
// namespace-scope tag below, and the builtins read the thread through cn::g.cur. A read through
// g.cur is reloaded after every store (the emulator compiles with -fno-strict-aliasing), which
// kept an element-wise kernel from hoisting `blockIdx.x * blockDim.x` out of the thread loop.
struct CurrentThread {};

CN_BUILTIN inline uint3 thread_idx(const ThreadInfo& t) {
  return uint3{t.tid[0], t.tid[1], t.tid[2]};
}
CN_BUILTIN inline uint3 block_idx(const ThreadInfo& t) {
  return uint3{t.gid[0], t.gid[1], t.gid[2]};
}
CN_BUILTIN inline dim3 block_dim(const ThreadInfo& t) {
  return dim3(t.dsize[0], t.dsize[1], t.dsize[2]);
}
CN_BUILTIN inline dim3 grid_dim(const ThreadInfo& t) {
  return dim3(t.ngroups[0], t.ngroups[1], t.ngroups[2]);
}
// Through g.cur: loads hidden from the race-checking instrumentation (quiet_load; plain loads in
// other builds), as they read the emulator's own state.
CN_BUILTIN inline uint3 thread_idx(CurrentThread) {
  const ThreadInfo* t = quiet_load(&g.cur);
  return uint3{quiet_load(&t->tid[0]), quiet_load(&t->tid[1]), quiet_load(&t->tid[2])};
}
CN_BUILTIN inline uint3 block_idx(CurrentThread) {
  const ThreadInfo* t = quiet_load(&g.cur);
  return uint3{quiet_load(&t->gid[0]), quiet_load(&t->gid[1]), quiet_load(&t->gid[2])};
}
CN_BUILTIN inline dim3 block_dim(CurrentThread) {
  const ThreadInfo* t = quiet_load(&g.cur);
  return dim3(quiet_load(&t->dsize[0]), quiet_load(&t->dsize[1]), quiet_load(&t->dsize[2]));
}
CN_BUILTIN inline dim3 grid_dim(CurrentThread) {
  const ThreadInfo* t = quiet_load(&g.cur);
  return dim3(quiet_load(&t->ngroups[0]), quiet_load(&t->ngroups[1]),
              quiet_load(&t->ngroups[2]));
}

}  // namespace cuda
}  // namespace cn

inline constexpr ::cn::cuda::CurrentThread cn_this_thread{};

#define threadIdx (::cn::cuda::thread_idx(cn_this_thread))
#define blockIdx (::cn::cuda::block_idx(cn_this_thread))
#define blockDim (::cn::cuda::block_dim(cn_this_thread))
#define gridDim (::cn::cuda::grid_dim(cn_this_thread))
#define warpSize 32

// ---------------------------------------------------------------------------------------------
// Block barriers and fences
// ---------------------------------------------------------------------------------------------

#define CN_SITE int cn_line = __builtin_LINE(), const char* cn_file = __builtin_FILE()

inline void __syncthreads(CN_SITE) { cn::barrier(cn_line, cn_file); }

namespace cn {
namespace cuda {

// __syncthreads_count/and/or: three barriers around a per-block accumulator (blocks run one at a
// time, so one accumulator per library is enough).
inline int sync_reduce(int pred, int op, int line, const char* file) {
  static int acc;
  cn::barrier(line, file);
  if (g.cur && linear_index(g.cur) == 0) acc = (op == 1) ? 1 : 0;
  cn::barrier(line, file);
  if (op == 0) acc += pred ? 1 : 0;
  else if (op == 1) acc = acc && pred;
  else acc = acc || pred;
  cn::barrier(line, file);
  return acc;
}

}  // namespace cuda
}  // namespace cn

inline int __syncthreads_count(int pred, CN_SITE) {
  return cn::cuda::sync_reduce(pred, 0, cn_line, cn_file);
}
inline int __syncthreads_and(int pred, CN_SITE) {
  return cn::cuda::sync_reduce(pred, 1, cn_line, cn_file);
}
inline int __syncthreads_or(int pred, CN_SITE) {
  return cn::cuda::sync_reduce(pred, 2, cn_line, cn_file);
}
inline void __threadfence() { CN_RACE_FENCE(); }
inline void __threadfence_block() { CN_RACE_FENCE_BLOCK(); }
inline void __threadfence_system() { CN_RACE_FENCE(); }

// ---------------------------------------------------------------------------------------------
// Warp functions. Every call is a lane exchange of cn_core.h: the lanes of a warp that reach the
// same call resolve together once every lane of the warp has arrived there, exited, or waits
// elsewhere. A lane that reads a lane outside that set, or outside its mask, is reported.
// ---------------------------------------------------------------------------------------------

namespace cn {
namespace cuda {

enum WarpOp {
  W_SHFL, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL, W_ACTIVEMASK, W_SYNCWARP,
  W_MATCH_ANY, W_MATCH_ALL, W_RED_ADD, W_RED_MIN, W_RED_MAX, W_RED_AND, W_RED_OR, W_RED_XOR,
};

constexpr const char* warp_name(int op) {
  return op == W_SHFL ? "__shfl_sync" : op == W_SHFL_UP ? "__shfl_up_sync"
       : op == W_SHFL_DOWN ? "__shfl_down_sync" : op == W_SHFL_XOR ? "__shfl_xor_sync"
       : op == W_BALLOT ? "__ballot_sync" : op == W_ANY ? "__any_sync"
       : op == W_ALL ? "__all_sync" : op == W_ACTIVEMASK ? "__activemask"
       : op == W_SYNCWARP ? "__syncwarp" : op == W_MATCH_ANY ? "__match_any_sync"
       : op == W_MATCH_ALL ? "__match_all_sync" : "__reduce_*_sync";
}

template <class T>
struct WarpIn {
  T v;
  uint32_t mask;
  int32_t arg;
  int32_t width;
};

template <class T>
struct WarpOut {
  T v;
  uint32_t bits;
  int32_t flag;
};

// Undefined behaviour (a shuffle reading a lane that takes no part in the call or that the mask
// leaves out, a calling lane missing from its own mask, ...) goes to a report of its own, filled
// through the launch's meta buffer (cunumpy/emulation/_cuda_undefined.py). With ub_mode 0 (the
// default, "error") the launch stops at the first case; with 1 ("warn") it goes on and Python
// warns once per launch.
struct UbReport {
  int64_t count;
  int32_t kind;  // UB_INACTIVE or UB_OTHER
  int32_t line;
  int32_t reader;
  int32_t source;
  uint32_t thread[3];
  uint32_t group[3];
  char file[64];
  char detail[512];
  int32_t lock;      // the workers of a parallel launch share this report
  int32_t pad;
  int64_t position;  // position in the group order of the reported case's group
};
enum UbKind { UB_INACTIVE = 1, UB_OTHER = 2 };
inline UbReport* ub_report = nullptr;
inline int64_t ub_mode = 0;

__attribute__((noinline, cold, format(printf, 5, 6))) inline void undefined(
    const Fiber* reader, int kind, int64_t reader_lane, int64_t source_lane, const char* fmt, ...) {
  if (ub_mode == 0) stop_launch();
  UbReport* r = ub_report;
  if (!r) return;
  // The case a serial run meets first is reported (the earliest group in the order); with mode
  // 0 the count is that of its group (a serial run stops after it), else of the whole launch.
  while (__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE)) {
  }
  bool take = r->count == 0 || g.pos < r->position;
  if (take) {
    if (ub_mode == 0) r->count = 0;
    r->position = g.pos;
    ++r->count;
  } else if (ub_mode != 0 || g.pos == r->position) {
    ++r->count;
  }
  if (!take) {
    __atomic_store_n(&r->lock, 0, __ATOMIC_RELEASE);
    return;
  }
  r->kind = kind;
  r->line = reader->line;
  r->reader = int32_t(reader_lane);
  r->source = int32_t(source_lane);
  for (int d = 0; d < 3; ++d) { r->thread[d] = reader->info.tid[d]; r->group[d] = reader->info.gid[d]; }
  const char* f = reader->file ? reader->file : "";
  std::strncpy(r->file, f, sizeof(r->file) - 1);
  r->file[sizeof(r->file) - 1] = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
  va_end(ap);
  __atomic_store_n(&r->lock, 0, __ATOMIC_RELEASE);
}

// Why lane `src` of the reader's warp takes no part in the call.
inline void why_absent(const Fiber* reader, uint32_t w, uint32_t src, char* out, size_t n) {
  uint32_t t = reader->subgroup * w + src;
  if (src >= w || t >= sched.n) {
    std::snprintf(out, n, "does not exist (this warp has %u threads)",
                  (sched.n - reader->subgroup * w) < w ? sched.n - reader->subgroup * w : w);
    return;
  }
  const Fiber& f = sched.fibers[t];
  if (f.state == F_DONE) std::snprintf(out, n, "has exited");
  else std::snprintf(out, n, "waits elsewhere (at %s:%d)", f.file ? f.file : "?", f.line);
}

// The lanes named in `mask` that take no part in this call but have not exited either: they wait
// at another barrier or warp function, which CUDA leaves undefined.
inline void check_mask_members(Fiber** L, uint32_t w, uint32_t mask, const Fiber* reader, int op) {
  uint32_t base = reader->subgroup * w;
  for (uint32_t j = 0; j < w && j < 32; ++j) {
    if (!(mask >> j & 1u) || L[j]) continue;
    if (base + j >= sched.n) continue;  // no such thread (partial warp)
    const Fiber& f = sched.fibers[base + j];
    if (f.state == F_DONE) continue;
    undefined(reader, UB_OTHER, reader->lane, j,
              "%s with mask 0x%08x: lane %u is named in the mask but waits elsewhere (at %s:%d); "
              "rule: every non-exited lane named in the mask must execute the same call",
              warp_name(op), mask, j, f.file ? f.file : "?", f.line);
    return;
  }
}

template <class T, int OP>
void resolve(Fiber** L, uint32_t width) {
  const uint32_t w = width < 32 ? width : 32;
  uint32_t present = 0;
  for (uint32_t i = 0; i < w; ++i) if (L[i]) present |= 1u << i;
  bool checked_members = false;
  for (uint32_t i = 0; i < w; ++i) {
    if (!L[i]) continue;
    const WarpIn<T>& in = lane_in<WarpIn<T>>(L[i]);
    WarpOut<T> out{};
    const uint32_t mask = in.mask;
    if (g.checks && !checked_members && OP != W_ACTIVEMASK) {
      checked_members = true;
      check_mask_members(L, w, mask, L[i], OP);
    }
    if (g.checks && !(mask >> i & 1u) && OP != W_ACTIVEMASK) {
      undefined(L[i], UB_OTHER, i, i,
                "%s with mask 0x%08x: lane %u calls it but the mask leaves the lane itself out; "
                "rule: every calling lane must be named in its mask", warp_name(OP), mask, i);
    }
    if constexpr (OP <= W_SHFL_XOR) {
      const int32_t sw = in.width;
      if (sw < 1 || sw > 32 || (sw & (sw - 1)) != 0) {
        undefined(L[i], UB_OTHER, i, i,
                  "%s: width %d; rule: the width must be a power of two between 1 and 32",
                  warp_name(OP), sw);
        out.v = in.v;
      } else {
        const uint32_t uw = uint32_t(sw);
        const uint32_t seg = i & ~(uw - 1);
        uint32_t src = i;
        if constexpr (OP == W_SHFL) {
          src = seg + (uint32_t(in.arg) & (uw - 1));
        } else if constexpr (OP == W_SHFL_UP) {
          uint32_t d = uint32_t(in.arg);
          src = (i - seg) >= d ? i - d : i;
        } else if constexpr (OP == W_SHFL_DOWN) {
          uint64_t d = uint32_t(in.arg);
          src = uint64_t(i - seg) + d < uw ? uint32_t(i + d) : i;
        } else {
          src = i ^ (uint32_t(in.arg) & 31u);
          if (src >= seg + uw) src = i;  // a later segment: own value
        }
        if (src == i) {
          out.v = in.v;
        } else if (src >= w || !L[src]) {
          char why[96];
          why_absent(L[i], w, src, why, sizeof why);
          undefined(L[i], UB_INACTIVE, i, src,
                    "%s with mask 0x%08x: lane %u reads lane %u, which %s; rule: the source lane "
                    "must be active and execute the same call", warp_name(OP), mask, i, src, why);
          out.v = T{};
        } else if (g.checks && !(mask >> src & 1u)) {
          undefined(L[i], UB_OTHER, i, src,
                    "%s with mask 0x%08x: lane %u reads lane %u, which the mask leaves out; rule: "
                    "the source lane must be named in the mask", warp_name(OP), mask, i, src);
          out.v = lane_in<WarpIn<T>>(L[src]).v;
        } else {
          out.v = lane_in<WarpIn<T>>(L[src]).v;
        }
      }
    } else if constexpr (OP == W_BALLOT || OP == W_ANY || OP == W_ALL) {
      uint32_t bits = 0;
      uint32_t named = mask & present;
      for (uint32_t j = 0; j < w; ++j)
        if ((named >> j & 1u) && lane_in<WarpIn<T>>(L[j]).v) bits |= 1u << j;
      out.bits = bits;
      out.flag = OP == W_BALLOT ? 0 : OP == W_ANY ? (bits != 0) : (bits == named);
    } else if constexpr (OP == W_ACTIVEMASK || OP == W_SYNCWARP) {
      out.bits = present;
    } else if constexpr (OP == W_MATCH_ANY || OP == W_MATCH_ALL) {
      uint32_t bits = 0;
      uint32_t named = mask & present;
      for (uint32_t j = 0; j < w; ++j)
        if ((named >> j & 1u) &&
            std::memcmp(&lane_in<WarpIn<T>>(L[j]).v, &in.v, sizeof(T)) == 0)
          bits |= 1u << j;
      if constexpr (OP == W_MATCH_ANY) {
        out.bits = bits;
      } else {
        out.flag = bits == named;
        out.bits = out.flag ? named : 0u;
      }
    } else {
      bool have = false;
      T acc{};
      for (uint32_t j = 0; j < w; ++j) {
        if (!(mask >> j & 1u) || !L[j]) continue;
        T v = lane_in<WarpIn<T>>(L[j]).v;
        if (!have) { acc = v; have = true; continue; }
        if constexpr (OP == W_RED_ADD) acc = T(acc + v);
        else if constexpr (OP == W_RED_MIN) acc = v < acc ? v : acc;
        else if constexpr (OP == W_RED_MAX) acc = acc < v ? v : acc;
        else if constexpr (OP == W_RED_AND) acc = T(acc & v);
        else if constexpr (OP == W_RED_OR) acc = T(acc | v);
        else acc = T(acc ^ v);
      }
      out.v = acc;
    }
    lane_out<WarpOut<T>>(L[i], out);
  }
}

template <int OP, class T>
inline WarpOut<T> warp(uint32_t mask, const T& v, int32_t arg, int32_t width, int line,
                       const char* file) {
  static_assert(sizeof(WarpIn<T>) <= kSlotBytes && sizeof(WarpOut<T>) <= kSlotBytes,
                "warp function value too large for the emulator (at most 48 bytes)");
  static_assert(std::is_trivially_copyable<T>::value, "warp function values must be trivially copyable");
  WarpIn<T> in{v, mask, arg, width};
  return lane_exchange<WarpOut<T>, WarpIn<T>>(in, 0, &resolve<T, OP>, line, file,
                                              OP == W_ACTIVEMASK ? 0u : mask);
}

}  // namespace cuda
}  // namespace cn

template <class T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize, CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_SHFL>(mask, var, srcLane, width, cn_line, cn_file).v;
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize, CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_SHFL_UP>(mask, var, int32_t(delta > 64 ? 64 : delta), width,
                                             cn_line, cn_file).v;
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                          CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_SHFL_DOWN>(mask, var, int32_t(delta > 64 ? 64 : delta),
                                               width, cn_line, cn_file).v;
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize, CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_SHFL_XOR>(mask, var, laneMask, width, cn_line, cn_file).v;
}
inline unsigned __ballot_sync(unsigned mask, int pred, CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_BALLOT>(mask, int(pred != 0), 0, 32, cn_line, cn_file).bits;
}
inline int __any_sync(unsigned mask, int pred, CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_ANY>(mask, int(pred != 0), 0, 32, cn_line, cn_file).flag;
}
inline int __all_sync(unsigned mask, int pred, CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_ALL>(mask, int(pred != 0), 0, 32, cn_line, cn_file).flag;
}
inline unsigned __activemask(CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_ACTIVEMASK>(0xffffffffu, 0, 0, 32, cn_line, cn_file).bits;
}
inline void __syncwarp(unsigned mask = 0xffffffffu, CN_SITE) {
  (void)cn::cuda::warp<cn::cuda::W_SYNCWARP>(mask, 0, 0, 32, cn_line, cn_file);
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, CN_SITE) {
  return cn::cuda::warp<cn::cuda::W_MATCH_ANY>(mask, value, 0, 32, cn_line, cn_file).bits;
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, CN_SITE) {
  auto r = cn::cuda::warp<cn::cuda::W_MATCH_ALL>(mask, value, 0, 32, cn_line, cn_file);
  *pred = r.flag;
  return r.bits;
}
#define CN_WARP_REDUCE(NAME, OP)                                                            \
  inline unsigned NAME(unsigned mask, unsigned value, CN_SITE) {                            \
    return cn::cuda::warp<cn::cuda::OP>(mask, value, 0, 32, cn_line, cn_file).v;            \
  }                                                                                         \
  inline int NAME(unsigned mask, int value, CN_SITE) {                                      \
    return cn::cuda::warp<cn::cuda::OP>(mask, value, 0, 32, cn_line, cn_file).v;            \
  }
CN_WARP_REDUCE(__reduce_add_sync, W_RED_ADD)
CN_WARP_REDUCE(__reduce_min_sync, W_RED_MIN)
CN_WARP_REDUCE(__reduce_max_sync, W_RED_MAX)
CN_WARP_REDUCE(__reduce_and_sync, W_RED_AND)
CN_WARP_REDUCE(__reduce_or_sync, W_RED_OR)
CN_WARP_REDUCE(__reduce_xor_sync, W_RED_XOR)
#undef CN_WARP_REDUCE

// ---------------------------------------------------------------------------------------------
// Atomics: read-modify-writes through cn::atomic_rmw (real atomics when other workers run the
// same launch, plain otherwise). Each takes a raw pointer (from &a[i], bounds-checked by the
// subscript) or a checked pointer (a + i, checked here).
// ---------------------------------------------------------------------------------------------

namespace cn {
namespace cuda {
template <class T> struct same { using type = T; };
template <class T> using arg_t = typename same<T>::type;
}  // namespace cuda
}  // namespace cn

// Device function templates with checked pointer parameters deduce from raw pointers, checked
// pointers and shared arrays alike through a forwarder (emulation/_cuda_forward.py): as_raw gives
// the raw pointer the twin that deduces sees; if_pointer_arg_t enables the forwarder only when
// some argument is a pointer or a shared array.
namespace cn {
namespace cuda {
template <class T> struct checked_kind { static constexpr int value = 0; };
template <class T> struct checked_kind<::cn::ptr<T>> { static constexpr int value = 1; };
template <class T, int64_t N, int ID> struct checked_kind<::cn::tarr<T, N, ID>> {
  static constexpr int value = 2;
};
// (std::is_pointer misses GCC's `T* __restrict__`; a data pointer converts to void*.)
template <class A>
constexpr bool is_data_pointer = std::is_convertible<std::decay_t<A>, const volatile void*>::value &&
                                 !std::is_same<std::decay_t<A>, std::nullptr_t>::value;
template <class A>
constexpr bool is_pointer_arg = checked_kind<std::decay_t<A>>::value != 0 || is_data_pointer<A>;
template <class A>
__attribute__((always_inline)) inline decltype(auto) as_raw(A&& a) {
  if constexpr (checked_kind<std::decay_t<A>>::value == 1) {
    return a.p;
  } else if constexpr (checked_kind<std::decay_t<A>>::value == 2) {
    return &a.a[0];
  } else {
    return static_cast<A&&>(a);
  }
}
template <class... A>
using if_pointer_arg_t = std::enable_if_t<(is_pointer_arg<A> || ...)>;
}  // namespace cuda
}  // namespace cn

#define CN_ATOMIC(NAME, EXPR, LOCK)                                                        \
  template <class T>                                                                       \
  __attribute__((always_inline)) inline T NAME(T* p, cn::cuda::arg_t<T> val) {            \
    CN_RACE_ATOMIC;                                                                        \
    T prev = ::cn::atomic_rmw(p, [&](T old) { return T(EXPR); });                          \
    CN_RACE_SYNC(p, prev, *p, true, LOCK);                                                 \
    return prev;                                                                           \
  }                                                                                        \
  template <class T>                                                                       \
  inline T NAME(cn::ptr<T> p, cn::cuda::arg_t<T> val) { return NAME(&p[0], val); }         \
  template <class T>                                                                       \
  inline T NAME##_block(T* p, cn::cuda::arg_t<T> val) {                                    \
    CN_RACE_BLOCK_SCOPE;                                                                   \
    return NAME(p, val);                                                                   \
  }                                                                                        \
  template <class T>                                                                       \
  inline T NAME##_block(cn::ptr<T> p, cn::cuda::arg_t<T> val) {                            \
    CN_RACE_BLOCK_SCOPE;                                                                   \
    return NAME(&p[0], val);                                                               \
  }                                                                                        \
  template <class T>                                                                       \
  inline T NAME##_system(T* p, cn::cuda::arg_t<T> val) { return NAME(p, val); }            \
  template <class T>                                                                       \
  inline T NAME##_system(cn::ptr<T> p, cn::cuda::arg_t<T> val) { return NAME(&p[0], val); }

CN_ATOMIC(atomicAdd, old + val, false)
CN_ATOMIC(atomicSub, old - val, false)
CN_ATOMIC(atomicExch, val, true)
CN_ATOMIC(atomicMin, (val < old ? val : old), false)
CN_ATOMIC(atomicMax, (old < val ? val : old), false)
CN_ATOMIC(atomicAnd, old & val, false)
CN_ATOMIC(atomicOr, old | val, false)
CN_ATOMIC(atomicXor, old ^ val, false)
CN_ATOMIC(atomicInc, (old >= val ? T(0) : T(old + 1)), false)
CN_ATOMIC(atomicDec, ((old == 0 || old > val) ? val : T(old - 1)), false)
#undef CN_ATOMIC

template <class T>
__attribute__((always_inline)) inline T atomicCAS(T* p, cn::cuda::arg_t<T> compare,
                                                 cn::cuda::arg_t<T> val) {
  CN_RACE_CAS;
  T prev = ::cn::atomic_cas(p, compare, val);
  CN_RACE_SYNC(p, prev, *p, prev == compare, true);
  return prev;
}
template <class T>
inline T atomicCAS(cn::ptr<T> p, cn::cuda::arg_t<T> compare, cn::cuda::arg_t<T> val) {
  return atomicCAS(&p[0], compare, val);
}
template <class T>
inline T atomicCAS_block(T* p, cn::cuda::arg_t<T> compare, cn::cuda::arg_t<T> val) {
  CN_RACE_BLOCK_SCOPE;
  return atomicCAS(p, compare, val);
}
template <class T>
inline T atomicCAS_block(cn::ptr<T> p, cn::cuda::arg_t<T> compare, cn::cuda::arg_t<T> val) {
  CN_RACE_BLOCK_SCOPE;
  return atomicCAS(&p[0], compare, val);
}
template <class T>
inline T atomicCAS_system(T* p, cn::cuda::arg_t<T> compare, cn::cuda::arg_t<T> val) {
  return atomicCAS(p, compare, val);
}

// ---------------------------------------------------------------------------------------------
// Math: CUDA's float and double functions come from <math.h> (glibc declares sqrtf, expf, ...,
// and libstdc++ adds the float overloads of sqrt, exp, ...). Intrinsics map to the precise forms.
// ---------------------------------------------------------------------------------------------

template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) < C(b) ? C(b) : C(a);
}
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / ::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / ::cbrt(x); }
inline float exp10f(float x) { return powf(10.0f, x); }
inline double exp10(double x) { return ::pow(10.0, x); }
inline float sinpif(float x) { return sinf(float(M_PI) * x); }
inline float cospif(float x) { return cosf(float(M_PI) * x); }
inline double sinpi(double x) { return ::sin(M_PI * x); }
inline double cospi(double x) { return ::cos(M_PI * x); }
inline void sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline void sincos(double x, double* s, double* c) { *s = ::sin(x); *c = ::cos(x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
inline float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
inline double norm3d(double a, double b, double c) { return ::sqrt(a * a + b * b + c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
inline float rhypotf(float a, float b) { return 1.0f / hypotf(a, b); }
// Functions CUDA has and the C library lacks: the normal CDF and the inverse error functions
// (an initial guess refined by Newton steps on erf, to double precision).
inline double erfinv(double y) {
  if (y <= -1.0) return y == -1.0 ? -HUGE_VAL : NAN;
  if (y >= 1.0) return y == 1.0 ? HUGE_VAL : NAN;
  double w = -::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    x = 3.43273939e-07 + x * w; x = -3.5233877e-06 + x * w; x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w; x = -0.00125372503 + x * w; x = -0.00417768164 + x * w;
    x = 0.246640727 + x * w; x = 1.50140941 + x * w;
  } else {
    w = ::sqrt(w) - 3.0;
    x = -0.000200214257;
    x = 0.000100950558 + x * w; x = 0.00134934322 + x * w; x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w; x = -0.0076224613 + x * w; x = 0.00943887047 + x * w;
    x = 1.00167406 + x * w; x = 2.83297682 + x * w;
  }
  x *= y;
  for (int k = 0; k < 3; ++k) x -= (::erf(x) - y) / (1.1283791670955126 * ::exp(-x * x));
  return x;
}
inline float erfinvf(float y) { return float(erfinv(double(y))); }
inline double erfcinv(double y) { return erfinv(1.0 - y); }
inline float erfcinvf(float y) { return float(erfinv(1.0 - double(y))); }
inline double normcdf(double x) { return 0.5 * ::erfc(-x * 0.7071067811865476); }
inline float normcdff(float x) { return float(normcdf(double(x))); }
inline double normcdfinv(double p) { return -1.4142135623730951 * erfcinv(2.0 * p); }
inline float normcdfinvf(float p) { return float(normcdfinv(double(p))); }

inline float saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __saturatef(float x) { return saturatef(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline double __dsqrt_rn(double x) { return ::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
#define CN_ROUNDED(OP, E)                                                        \
  inline float __f##OP##_rn(float a, float b) { return E; }                     \
  inline float __f##OP##_rz(float a, float b) { return E; }                     \
  inline float __f##OP##_ru(float a, float b) { return E; }                     \
  inline float __f##OP##_rd(float a, float b) { return E; }                     \
  inline double __d##OP##_rn(double a, double b) { return E; }                  \
  inline double __d##OP##_rz(double a, double b) { return E; }                  \
  inline double __d##OP##_ru(double a, double b) { return E; }                  \
  inline double __d##OP##_rd(double a, double b) { return E; }
CN_ROUNDED(add, a + b)
CN_ROUNDED(sub, a - b)
CN_ROUNDED(mul, a * b)
CN_ROUNDED(div, a / b)
#undef CN_ROUNDED
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return ::fma(a, b, c); }

// Reinterpretation and conversion intrinsics.
inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
inline int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
inline float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
inline unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }
inline double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
inline long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
inline int __double2hiint(double x) { return int(__builtin_bit_cast(unsigned long long, x) >> 32); }
inline int __double2loint(double x) { return int(__builtin_bit_cast(unsigned long long, x)); }
inline double __hiloint2double(int hi, int lo) {
  return __builtin_bit_cast(double, (static_cast<unsigned long long>(unsigned(hi)) << 32) | unsigned(lo));
}
inline int __float2int_rn(float x) { return int(nearbyintf(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(floorf(x)); }
inline int __float2int_ru(float x) { return int(ceilf(x)); }
inline unsigned int __float2uint_rn(float x) { return (unsigned int)(nearbyintf(x)); }
inline unsigned int __float2uint_rz(float x) { return (unsigned int)(x); }
inline long long __float2ll_rn(float x) { return (long long)(nearbyintf(x)); }
inline long long __float2ll_rz(float x) { return (long long)(x); }
inline int __double2int_rn(double x) { return int(::nearbyint(x)); }
inline int __double2int_rz(double x) { return int(x); }
inline long long __double2ll_rn(double x) { return (long long)(::nearbyint(x)); }
inline float __double2float_rn(double x) { return float(x); }
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned int x) { return float(x); }
inline double __int2double_rn(int x) { return double(x); }
inline float __ll2float_rn(long long x) { return float(x); }
inline double __ll2double_rn(long long x) { return double(x); }

// Integer intrinsics.
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(unsigned(x))) << 32) | __brev(unsigned(x >> 32));
}
inline int __mul24(int a, int b) { return int((long long)((a << 8) >> 8) * ((b << 8) >> 8)); }
inline unsigned int __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline int __mulhi(int a, int b) { return int(((long long)a * b) >> 32); }
inline unsigned int __umulhi(unsigned a, unsigned b) {
  return unsigned(((unsigned long long)a * b) >> 32);
}
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned int __sad(int a, int b, unsigned int c) { return c + unsigned(a > b ? a - b : b - a); }
inline unsigned int __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }
inline int __hadd(int a, int b) { return int(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return int(((long long)a + b + 1) >> 1); }
inline unsigned int __uhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b) >> 1); }
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned int r = 0;
  for (int k = 0; k < 4; ++k) r |= unsigned((v >> (8 * ((s >> (4 * k)) & 7u))) & 0xFFu) << (8 * k);
  return r;
}
inline unsigned int __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return unsigned((v << (s & 31u)) >> 32);
}
inline unsigned int __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return unsigned(v >> (s & 31u));
}

// Loads and stores with cache hints: plain loads and stores on the CPU, on raw pointers (any
// type, vector types included) and on checked pointers (bounds-checked like a subscript).
#define CN_LOAD(NAME)                                                           \
  template <class T> inline T NAME(const T* p) { return *p; }                    \
  template <class T> inline T NAME(cn::ptr<const T> p) { return p[0]; }          \
  template <class T> inline T NAME(cn::ptr<T> p) { return p[0]; }
CN_LOAD(__ldg) CN_LOAD(__ldcg) CN_LOAD(__ldca) CN_LOAD(__ldcs) CN_LOAD(__ldlu) CN_LOAD(__ldcv)
#undef CN_LOAD
#define CN_STORE(NAME)                                                                      \
  template <class T> inline void NAME(T* p, cn::cuda::arg_t<T> v) { *p = v; }                \
  template <class T> inline void NAME(cn::ptr<T> p, cn::cuda::arg_t<T> v) { p[0] = v; }
CN_STORE(__stcg) CN_STORE(__stcs) CN_STORE(__stwb) CN_STORE(__stwt)
#undef CN_STORE

// Compiler hints CUDA accepts and GCC lacks (the condition is not evaluated, as in CUDA).
#if !defined(__has_builtin) || !__has_builtin(__builtin_assume)
#define __builtin_assume(...) ((void)0)
#endif
#define __assume(...) ((void)0)

// Constants of <math_constants.h> (the include itself is dropped by the emulator).
#define CUDART_PI_F 3.141592654f
#define CUDART_PIO2_F 1.570796327f
#define CUDART_2PI_F 6.283185307f
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_PIO2 1.5707963267948966e+0
#define CUDART_2PI 6.2831853071795862e+0
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_SQRT_2_F 1.414213562f
#define CUDART_LN2_F 0.693147181f
#define CUDART_L2E_F 1.442695041f
#define CUDART_INF_F __builtin_inff()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_INF __builtin_inf()
#define CUDART_NAN __builtin_nan("")
#define CUDART_MAX_NORMAL_F FLT_MAX
#define CUDART_MIN_DENORM_F 1.40129846e-45f
#define CUDART_ONE_F 1.0f
#define CUDART_ZERO_F 0.0f

// Clocks: clock64() is a counter that only moves forward; clock() is the C library's (declared
// by <ctime> with CUDA's return type, clock_t), so a kernel or header that includes <time.h>
// sees no conflicting declaration.
inline long long clock64() {
  static long long c = 0;
  return c += 1;
}

// ---------------------------------------------------------------------------------------------
// __half: the compiler's IEEE binary16 (_Float16), with CUDA's conversion and arithmetic names.
// ---------------------------------------------------------------------------------------------

#ifdef __FLT16_MAX__
typedef _Float16 __half;
typedef _Float16 half;
struct alignas(4) __half2 {
  __half x, y;
  __half2() = default;
  __half2(__half a, __half b) : x(a), y(b) {}  // floats convert to __half, as in CUDA
};
typedef __half2 half2;
#endif

#include "cn_cuda_fp16.h"
#include "cn_cuda_ptx.h"
#include "cn_cuda_tex.h"

// ---------------------------------------------------------------------------------------------
// printf (the C library's, flushed after every launch) and a device assert that reports the
// failing thread and stops the launch instead of aborting the process.
// ---------------------------------------------------------------------------------------------

namespace cn {
namespace cuda {
__attribute__((noinline, cold)) inline void assert_failed(const char* expr, int line, const char* file) {
  fail_fatal(ERR_INTERNAL, line, file, "assertion `%s` failed", expr);
}
}  // namespace cuda
}  // namespace cn

// __trap() stops the launch with a report, as it stops the kernel on a GPU.
__attribute__((noinline, cold)) inline void __trap(int cn_line = __builtin_LINE(),
                                                   const char* cn_file = __builtin_FILE()) {
  cn::fail_fatal(cn::ERR_INTERNAL, cn_line, cn_file, "the kernel called __trap()");
}
inline void __brkpt() {}
inline void __nanosleep(unsigned int) {}

#include <assert.h>
#undef assert
#define assert(e) \
  ((e) ? (void)0 : ::cn::cuda::assert_failed(#e, __builtin_LINE(), __builtin_FILE()))

// ---------------------------------------------------------------------------------------------
// Launch support: arguments as the generated launcher passes them, and dynamic shared memory.
// ---------------------------------------------------------------------------------------------

namespace cn {
namespace cuda {

inline int64_t dynamic_shared_bytes = 0;

// `extern __shared__ T name[];` -- every such declaration aliases one region of shared_mem bytes
// (arena slot SLOT); indexing is checked against shared_mem / sizeof(T) elements and reported
// under ID (the declaration's label).
template <class T, int SLOT, int ID, bool Checks>
inline auto dynamic_shared() {
  void* s = g.arena.slots[SLOT];
  if (!s) s = arena_alloc(SLOT, dynamic_shared_bytes > 0 ? size_t(dynamic_shared_bytes) : 16, 16,
                          elem_size<T>::value);
  T* p = static_cast<T*>(s);
  if constexpr (Checks) {
    return ptr<T>(p, p, int64_t(dynamic_shared_bytes / int64_t(sizeof(T))), -1 - ID);
  } else {
    return p;
  }
}

template <class T> struct is_ptr : std::false_type {};
template <class T> struct is_ptr<ptr<T>> : std::true_type {};
template <class T> struct is_tarr : std::false_type {};
template <class T, int64_t N, int ID> struct is_tarr<tarr<T, N, ID>> : std::true_type {};

// reinterpret_cast, as the rewritten source spells it: checked pointers and shared arrays are
// cast through their raw address.
template <class To, class From>
inline To cast(From&& v) {
  using F = std::remove_cv_t<std::remove_reference_t<From>>;
  constexpr bool to_address = std::is_pointer<To>::value || std::is_integral<To>::value;
  if constexpr (is_ptr<F>::value && to_address) {
    return reinterpret_cast<To>(v.p);  // a pointer of another type, or its address (uintptr_t)
  } else if constexpr (is_tarr<F>::value && to_address) {
    return reinterpret_cast<To>(&v.a[0]);
  } else {
    return reinterpret_cast<To>(v);
  }
}

// Source sites of checked subscripts: with checks on, the rewritten source spells `x[i]` as
// `::cn::cuda::at_site(x, __LINE__, __FILE__)[i]` for pointer parameters and shared arrays, so an
// out-of-bounds failure made by that subscript is reported with its line.
template <class T> struct tarr_id;
template <class T, int64_t N, int ID> struct tarr_id<tarr<T, N, ID>> {
  static constexpr int value = ID;
};

// A subscript with its site: the bounds check of a checked pointer or shared array passes the
// line to the cold failure path (nothing is loaded per access to record it). Race-checking
// builds name lines from code addresses instead.
template <class A>
struct sited {
  A* a;
  int line;
  const char* file;
  template <class I>
  __attribute__((always_inline)) decltype(auto) operator[](I i) const {
    using U = std::remove_cv_t<A>;
    if constexpr (!CN_RACES && (is_ptr<U>::value || is_tarr<U>::value)) {
      decltype(auto) r = a->at(i, line, file);
      using R = std::remove_cv_t<std::remove_reference_t<decltype(r)>>;
      if constexpr (is_tarr<R>::value) {
        return sited<std::remove_reference_t<decltype(r)>>{&r, line, file};
      } else {
        return r;
      }
    } else {
      decltype(auto) r = (*a)[i];
      using R = std::remove_cv_t<std::remove_reference_t<decltype(r)>>;
      if constexpr (is_tarr<R>::value) {
        return sited<std::remove_reference_t<decltype(r)>>{&r, line, file};
      } else {
        return r;
      }
    }
  }
};

template <class A>
__attribute__((always_inline)) inline sited<A> at_site(A& a, int line, const char* file) {
  return sited<A>{&a, line, file};
}
template <class A>
__attribute__((always_inline)) inline sited<const A> at_site(const A& a, int line, const char* file) {
  return sited<const A>{&a, line, file};
}

// A pointer argument: converts to the kernel's declared parameter type (raw or checked). The
// conversions of PtrArg and ValArg run in the launch glue (not instrumented in race builds).
struct PtrArg {
  void* data;
  int64_t bytes;
  int32_t id;
  template <class T>
  __attribute__((always_inline)) operator T*() const { return static_cast<T*>(data); }
  template <class T>
  __attribute__((always_inline)) operator ptr<T>() const {
    T* p = static_cast<T*>(data);
    return ptr<T>(p, p, bytes / int64_t(sizeof(T)), id);
  }
};

// A value argument: its bytes, copied into the kernel's declared parameter type. Up to 64 bytes
// are kept inside the argument itself, so that the launcher's per-thread loop reads them from its
// own copy (which no store through a buffer pointer can change: the compiler keeps it in
// registers) instead of from the caller's memory for every thread.
struct ValArg {
  static constexpr int64_t kInline = 64;
  const void* data;
  int64_t bytes;
  const char* name;
  alignas(16) unsigned char inl[kInline] = {};
  ValArg(const void* data_, int64_t bytes_, const char* name_)
      : data(data_), bytes(bytes_), name(name_) {
    if (bytes > 0 && bytes <= kInline) std::memcpy(inl, data, size_t(bytes));
  }
  template <class T>
  __attribute__((always_inline)) operator T() const {
    static_assert(std::is_trivially_copyable<T>::value, "kernel parameters must be trivially copyable");
    if (__builtin_expect(int64_t(sizeof(T)) != bytes, 0)) {
      fail_fatal(ERR_INTERNAL, 0, nullptr,
                 "argument '%s' holds %lld bytes but its parameter's C type has %zu; pass a "
                 "value of exactly that size (a NumPy scalar or a structured/void scalar)",
                 name, (long long)bytes, sizeof(T));
      return T{};
    }
    T v;
    if constexpr (int64_t(sizeof(T)) <= kInline) {
      std::memcpy(&v, inl, sizeof(T));
    } else {
      std::memcpy(&v, data, sizeof(T));
    }
    return v;
  }
};

}  // namespace cuda
}  // namespace cn

#undef CN_SITE

#if CN_RACES
// Race-checking builds: the kernel's memcpy/memmove/memset calls are seen as accesses (cn_race.h).
namespace std {
using ::cn_race_memcpy;
using ::cn_race_memmove;
using ::cn_race_memset;
}  // namespace std
#define memcpy cn_race_memcpy
#define memmove cn_race_memmove
#define memset cn_race_memset
// The builtins too (a constant-size __builtin_memcpy is expanded after the instrumentation ran).
#define __builtin_memcpy cn_race_memcpy
#define __builtin_memmove cn_race_memmove
#define __builtin_memset cn_race_memset
#endif

#endif  // CN_CUDA_H
