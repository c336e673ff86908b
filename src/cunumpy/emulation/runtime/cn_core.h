// cunumpy CPU emulation core: dialect-neutral runtime for GPU kernels compiled as C++.
//
// What lives here (shared by the Metal and CUDA dialect headers):
//   * the launch ABI (cn::LaunchDesc, cn::Buffer, cn::Report), read and written by Python (ctypes);
//   * thread geometry (cn::ThreadInfo) and the grid walk: plain loops for kernels that never
//     synchronise, cooperative fibers (one per thread of a group) for kernels that do;
//   * synchronisation primitives on fibers: group barriers and lane exchanges in lockstep for
//     SIMD groups / warps (cn::barrier, cn::lane_exchange);
//   * checks: bounds-checked buffer pointers (cn::ptr), bounds-checked shared arrays (cn::tarr),
//     the per-group shared-memory arena (cn::tg_alloc), and the failure report.
//
// One call of cn_launch runs on one thread: threadgroups run one after another (in order or in a
// random permutation); inside a group, threads run one after another (loop mode) or as fibers
// that switch at every barrier / lane exchange (fiber mode). A launch spread over several workers
// (cunumpy/emulation/_workers.py) runs one copy of the library per worker, so every global here
// is per worker and no access pays for thread-local storage; the workers share only the buffers
// and a few counters of the descriptor (next batch, earliest fatal failure, progress, cancel).
// Atomics are real atomic operations when the launch runs on several workers
// (LAUNCH_PARALLEL), plain read-modify-writes otherwise.
//
// Checks never abort the process: an out-of-bounds read returns a zeroed dummy and an
// out-of-bounds write lands in a scratch slot. The first failure is recorded in full (with the
// position of its group in the order, so that the reports of several workers merge into the one a
// serial run gives), later ones are counted. Fatal failures (barrier divergence, shared-memory
// overflow) stop the launch: this worker at once, the others before any group that comes later
// in the order.
#ifndef CN_CORE_H
#define CN_CORE_H

// libstdc++'s <cmath> brings the C++17 special functions (std::riemann_zeta and the like), whose
// inline overloads instantiate templates at the end of every translation unit, also one that
// includes them from a precompiled header: 0.03-0.04 s of every kernel's compile. No GPU dialect
// has them; defining their header's include guard keeps them out.
#ifndef _GLIBCXX_BITS_SPECFUN_H
#define _GLIBCXX_BITS_SPECFUN_H 1
#endif
#include <limits>  // which the special functions' header would have included

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <csignal>
#include <type_traits>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__x86_64__) && !defined(_WIN32) && !defined(CN_FIBER_UCONTEXT)
#define CN_FIBER_ASM 1
#else
#define CN_FIBER_ASM 0
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <ucontext.h>
#endif

#define CN_EXPORT extern "C" __attribute__((visibility("default")))

// The runtime's out-of-line part (the grid scheduler, fibers, failure reports, cn_fill/cn_count,
// the race checker's hooks) is compiled either into each kernel's translation unit, as inline
// functions, or, with CN_PREBUILT, once per cache and flag set into a runtime object that kernel
// libraries link with (cunumpy/emulation/_build.py); then kernels see only declarations.
// CN_RUNTIME_IMPL marks the runtime object's own translation unit. CN_RT is how its functions
// are declared and defined: `inline` in the first case, a plain (hidden) function in the second.
#if !defined(CN_PREBUILT) || defined(CN_RUNTIME_IMPL)
#define CN_RUNTIME_BODIES 1
#else
#define CN_RUNTIME_BODIES 0
#endif
#if defined(CN_PREBUILT)
#define CN_RT
#else
#define CN_RT inline
#endif

// Race-checking builds (cn_race.h) are compiled with -fsanitize=thread: every load and store of
// an instrumented function calls the emulator. CN_NOTSAN keeps the runtime's own functions out of
// that; CN_BUILTIN marks small accessors of runtime state that kernels call for every thread
// (threadIdx, thread attributes, launch arguments): inlined, their loads hidden from the
// instrumentation in race-checking builds (quiet_load).
#if defined(__SANITIZE_THREAD__)
#define CN_RACES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CN_RACES 1
#endif
#endif
#ifndef CN_RACES
#define CN_RACES 0
#endif
#define CN_NOTSAN __attribute__((no_sanitize_thread))
#define CN_BUILTIN __attribute__((always_inline))
// The per-thread functor of a generated launcher: folded into the grid walk's loop.
#if CN_RACES
#define CN_THREAD_FN __attribute__((always_inline))
#else
#define CN_THREAD_FN CN_NOTSAN __attribute__((always_inline))
#endif
#define CN_ABI_VERSION 3
// Lanes (cunumpy/emulation/_lanes.py): the grid walk's loop over the threads of a row is an
// OpenMP SIMD loop (-fopenmp-simd: no runtime library), so that the compiler runs consecutive
// threads in the lanes of the vector registers where it can vectorise the kernel body. Off in
// race-checking builds (every access is instrumented: nothing to vectorise).
#ifndef CN_LANES
#define CN_LANES (!CN_RACES)
#endif

// The emulator's own loads and stores made from instrumented code (the grid walk, the builtins)
// in race-checking builds: as inline assembly, which the instrumentation does not see, so that
// they cost nothing more than a plain access (x86-64; elsewhere, plain accesses, which the
// race checker sees as accesses to untracked memory).
#if CN_RACES && defined(__x86_64__)
#define CN_QUIET_ASM 1
#else
#define CN_QUIET_ASM 0
#endif
template <class T>
CN_NOTSAN __attribute__((always_inline)) inline T quiet_load(const T* p) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "quiet_load: 4 or 8 bytes");
#if CN_QUIET_ASM
  T v;
  asm("mov %1, %0" : "=r"(v) : "m"(*p));
  return v;
#else
  return *p;
#endif
}
template <class T>
CN_NOTSAN __attribute__((always_inline)) inline void quiet_store(T* p, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "quiet_store: 4 or 8 bytes");
#if CN_QUIET_ASM
  asm("mov %1, %0" : "=m"(*p) : "r"(v));
#else
  *p = v;
#endif
}

namespace cn {

// ---------------------------------------------------------------------------------------------
// Launch ABI (mirrored in cunumpy/emulation/_launch.py; bump CN_ABI_VERSION on any change)
// ---------------------------------------------------------------------------------------------

enum ErrorKind : int32_t {
  ERR_NONE = 0,
  ERR_OOB = 1,            // index outside a buffer or shared array
  ERR_BARRIER = 2,        // barrier not reached by every thread of the group (fatal)
  ERR_INACTIVE_LANE = 3,  // lane exchange read a lane that is not taking part
  ERR_SHARED_LIMIT = 4,   // shared (threadgroup) memory over the dialect's limit (fatal)
  ERR_INTERNAL = 5,       // emulator misuse (fatal)
  ERR_RACE = 6,           // data race between two threads (race-checking builds)
};

enum LaunchFlags : int32_t {
  LAUNCH_RACES = 1,            // check data races (the library must be a race-checking build)
  LAUNCH_STRICT_BARRIERS = 2,  // threads that returned do not count as arrived at a barrier
  LAUNCH_PARALLEL = 4,         // other workers run groups of the same launch: real atomics
  LAUNCH_SIGINT = 8,           // catch SIGINT during the call: set *cancel (main thread only)
  LAUNCH_COOPERATIVE = 16,     // a cooperative launch: every group co-resident (cn_coop.h)
};

enum BarrierFlags : int32_t { BARRIER_SHARED = 1, BARRIER_DEVICE = 2, BARRIER_ALL = 3 };

struct Report {
  int32_t kind;        // ErrorKind of the first failure
  int32_t buffer;      // buffer slot (>= 0) or -1 - k for shared array k
  int64_t index;       // offending index (may be negative)
  int64_t extent;      // number of elements the index must stay below
  uint32_t thread[3];  // position of the failing thread inside its group
  uint32_t group[3];   // position of its group in the grid
  int64_t count;       // total number of failures (first included)
  int32_t line;        // source line where known (barriers, lane exchanges), else 0
  int32_t lane;        // lane that was read (inactive-lane failures)
  char file[32];       // file name of `line` ("body", "header")
  char detail[512];    // free text for divergence / internal failures
  uint32_t thread2[3]; // races: the other thread, its group
  uint32_t group2[3];
  int32_t access[2];   // races: access kinds (cn::race::Access) of this thread and the other
  uint32_t pc[2];      // code offsets in the library (this access, the other): file:line
  int64_t position;    // position in the group order of the first failure's group
};

struct Buffer {
  void* data;
  int64_t extent;  // elements reachable from data (strided extent for views)
  int64_t bytes;   // bytes reachable from data
  int32_t elem;    // element size in bytes
  int32_t track;   // race checking: the kernel may write it
};

struct LaunchDesc {
  int32_t abi;
  int32_t nbuffers;
  Buffer* buffers;
  uint32_t grid[3];   // threads per dimension (Metal dispatchThreads semantics)
  uint32_t group[3];  // threads per group
  int32_t random_order;
  int32_t simd_width;          // lanes per SIMD group / warp (32)
  uint64_t seed;
  int64_t shared_limit;        // bytes of shared memory a group may use (0: no limit)
  Report* report;
  int32_t flags;               // LaunchFlags
  int32_t pad;
  // The share of the launch this call runs: positions [first, last) of the group order, taken
  // in batches of `batch` from the shared cursor *next when it is given, else in order.
  int64_t first;
  int64_t last;                // 0 or -1: to the end
  int64_t* next;               // shared batch cursor (null: this call runs its range alone)
  int64_t batch;
  int64_t* stop;               // shared: position of the earliest fatal failure (INT64_MAX: none)
  int64_t* done;               // shared: groups finished (progress; may be null)
  int32_t* cancel;             // shared: nonzero stops the launch before the next group (may be null)
  int32_t pad2;
};

// ---------------------------------------------------------------------------------------------
// Thread geometry
// ---------------------------------------------------------------------------------------------

struct ThreadInfo {
  uint32_t tid[3];      // position in the group
  uint32_t gid[3];      // position of the group in the grid
  uint32_t pos[3];      // position in the grid (gid * dsize + tid)
  uint32_t gsize[3];    // size of this group (edge groups may be smaller)
  uint32_t dsize[3];    // group size at dispatch
  uint32_t grid[3];     // threads in the grid
  uint32_t ngroups[3];  // groups in the grid
  uint32_t lin;         // linear index in the group (x fastest, over gsize)
  uint32_t nthreads;    // threads in this group
  uint32_t width;       // SIMD width
  uint32_t pad;
};

// Linear index of a thread in its group, from its position (the same as ThreadInfo::lin, which
// the grid walk's loop mode does not keep up to date for g.cur outside race-checking builds).
__attribute__((always_inline)) inline uint32_t linear_index(const ThreadInfo* t) {
  return t->tid[0] + t->gsize[0] * (t->tid[1] + t->gsize[1] * t->tid[2]);
}

// ---------------------------------------------------------------------------------------------
// Per-library state (one launch at a time per loaded library)
// ---------------------------------------------------------------------------------------------

constexpr int kMaxShared = 256;  // shared declarations per kernel

struct Arena {
  unsigned char* mem = nullptr;
  size_t cap = 0;
  size_t used = 0;
  int nslots = 0;
  void* slots[kMaxShared] = {};
};

struct Fiber;

struct State {
  Report* report = nullptr;
  const ThreadInfo* cur = nullptr;  // thread running now (for failure reports)
  Fiber* fiber = nullptr;           // fiber running now (fiber mode only)
  bool checks = false;
  bool abort = false;
  bool strict_barriers = false;
  bool parallel = false;            // other workers run the same launch (LAUNCH_PARALLEL)
  int64_t shared_limit = 0;
  int64_t pos = 0;                  // position in the group order of the group running now
  int64_t* stop = nullptr;          // shared earliest fatal failure (LaunchDesc::stop)
  // Failures per group, for a count that ends at the first fatal failure (cn_failures_upto):
  // (position, failures so far) after every group that had one.
  int64_t* log = nullptr;
  size_t nlog = 0, caplog = 0;
  Arena arena;
};

inline State g;

// Stops the launch: this worker at once, the others before any group after this one.
CN_NOTSAN inline void stop_launch() {
  g.abort = true;
  if (int64_t* s = g.stop) {
    int64_t cur = __atomic_load_n(s, __ATOMIC_RELAXED);
    while (g.pos < cur &&
           !__atomic_compare_exchange_n(s, &cur, g.pos, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Atomics of the dialects: `*p = f(*p)` returning the old value, and compare-and-swap. Plain
// when one worker runs the launch; otherwise a compare-and-swap loop on the value's bytes (floats
// included), or a striped spin lock for sizes the CPU has no atomic instruction for.
// ---------------------------------------------------------------------------------------------

inline int32_t atomic_locks[64];

template <class U>
constexpr bool lock_free_size = sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 ||
                                sizeof(U) == 8;

struct StripeLock {
  int32_t* l;
  explicit StripeLock(const void* p)
      : l(&atomic_locks[(reinterpret_cast<uintptr_t>(p) >> 4) & 63]) {
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
    }
  }
  ~StripeLock() { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }
};

template <class T, class F>
__attribute__((noinline)) inline std::remove_cv_t<T> atomic_rmw_shared(T* p, F f) {
  using U = std::remove_cv_t<T>;
  U* q = const_cast<U*>(p);
  if constexpr (lock_free_size<U>) {
    U old, next;
    __atomic_load(q, &old, __ATOMIC_RELAXED);
    do {
      next = f(old);
    } while (!__atomic_compare_exchange(q, &old, &next, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    return old;
  } else {
    StripeLock lock(q);
    U old = *q;
    *q = f(old);
    return old;
  }
}

template <class T, class F>
__attribute__((always_inline)) inline std::remove_cv_t<T> atomic_rmw(T* p, F f) {
  using U = std::remove_cv_t<T>;
#if !CN_RACES  // race-checking launches run on one worker
  if (__builtin_expect(g.parallel, 0)) return atomic_rmw_shared(p, f);
#endif
  U* q = const_cast<U*>(p);
  U old = *q;
  *q = f(old);
  return old;
}

// Compare-and-swap: stores `desired` when *p holds `expected` (compared as values, as the
// dialects do); returns what *p held.
template <class T>
__attribute__((always_inline)) inline std::remove_cv_t<T> atomic_cas(
    T* p, std::remove_cv_t<T> expected, std::remove_cv_t<T> desired) {
  using U = std::remove_cv_t<T>;
  U* q = const_cast<U*>(p);
#if !CN_RACES
  if (__builtin_expect(g.parallel, 0)) {
    if constexpr (lock_free_size<U>) {
      U old;
      __atomic_load(q, &old, __ATOMIC_RELAXED);
      for (;;) {
        if (!(old == expected)) return old;
        if (__atomic_compare_exchange(q, &old, &desired, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED)) {
          return old;
        }
      }
    } else {
      StripeLock lock(q);
      U old = *q;
      if (old == expected) *q = desired;
      return old;
    }
  }
#endif
  U old = *q;
  if (old == expected) *q = desired;
  return old;
}

// An atomic load / store (whole values, never torn, when workers share the launch).
template <class T>
__attribute__((always_inline)) inline std::remove_cv_t<T> atomic_load(const T* p) {
  using U = std::remove_cv_t<T>;
  const U* q = const_cast<const U*>(p);
#if !CN_RACES
  if constexpr (lock_free_size<U>) {
    if (__builtin_expect(g.parallel, 0)) {
      U v;
      __atomic_load(q, &v, __ATOMIC_SEQ_CST);
      return v;
    }
  } else {
    if (__builtin_expect(g.parallel, 0)) { StripeLock lock(q); return *q; }
  }
#endif
  return *q;
}

template <class T>
__attribute__((always_inline)) inline void atomic_store(T* p, std::remove_cv_t<T> v) {
  using U = std::remove_cv_t<T>;
  U* q = const_cast<U*>(p);
#if !CN_RACES
  if constexpr (lock_free_size<U>) {
    if (__builtin_expect(g.parallel, 0)) { __atomic_store(q, &v, __ATOMIC_SEQ_CST); return; }
  } else {
    if (__builtin_expect(g.parallel, 0)) { StripeLock lock(q); *q = v; return; }
  }
#endif
  *q = v;
}

// ---------------------------------------------------------------------------------------------
// Failure recording
// ---------------------------------------------------------------------------------------------

inline void copy_file(Report* r, const char* file) {
  if (!file) { r->file[0] = 0; return; }
  std::strncpy(r->file, file, sizeof(r->file) - 1);
  r->file[sizeof(r->file) - 1] = 0;
}

// Starts a failure record; returns the report when this is the first failure, else nullptr.
#if CN_RUNTIME_BODIES
CN_NOTSAN CN_RT Report* begin_failure(int32_t kind) {
  Report* r = g.report;
  if (!r) return nullptr;
  // A barrier divergence is reported rather than the races it causes (threads that skip a
  // barrier race with the threads that wait at it).
  bool replace = kind == ERR_BARRIER && r->count != 0 && r->kind == ERR_RACE;
  if (r->count++ != 0 && !replace) return nullptr;
  r->kind = kind;
  r->position = g.pos;
  if (g.cur) {
    for (int d = 0; d < 3; ++d) { r->thread[d] = g.cur->tid[d]; r->group[d] = g.cur->gid[d]; }
  }
  return r;
}
#else
CN_NOTSAN CN_RT Report* begin_failure(int32_t kind);
#endif


// Offset of a code address in this library (the Python side turns it into file:line).
#if CN_RUNTIME_BODIES
__attribute__((noinline, cold)) CN_RT uint32_t code_offset(const void* pc) {
  Dl_info info;
  if (!pc || !dladdr(pc, &info)) return 0;
  return uint32_t(uintptr_t(pc) - uintptr_t(info.dli_fbase) - 1);
}
#else
__attribute__((noinline, cold)) CN_RT uint32_t code_offset(const void* pc);
#endif


#if CN_RUNTIME_BODIES
__attribute__((noinline, cold)) CN_RT void fail_oob_at(int32_t buffer, int64_t index, int64_t extent,
                                                        const void* pc) {
  if (Report* r = begin_failure(ERR_OOB)) {
    r->buffer = buffer; r->index = index; r->extent = extent;
    r->pc[0] = code_offset(pc);
  }
}
#else
__attribute__((noinline, cold)) CN_RT void fail_oob_at(int32_t buffer, int64_t index, int64_t extent,
                                                        const void* pc);
#endif


// An out-of-bounds access made by a subscript whose source line is known (the CUDA rewriter's
// at_site): the site travels down this cold path, so the hot path loads nothing to record it.
#if CN_RUNTIME_BODIES
__attribute__((noinline, cold)) CN_RT void fail_oob_site(int32_t buffer, int64_t index,
                                                          int64_t extent, int line,
                                                          const char* file, const void* pc) {
  if (Report* r = begin_failure(ERR_OOB)) {
    r->buffer = buffer; r->index = index; r->extent = extent;
    r->line = line;
    copy_file(r, file);
    r->pc[0] = code_offset(pc);
  }
}
#else
__attribute__((noinline, cold)) CN_RT void fail_oob_site(int32_t buffer, int64_t index,
                                                          int64_t extent, int line,
                                                          const char* file, const void* pc);
#endif


#if CN_RUNTIME_BODIES
__attribute__((noinline, cold)) CN_RT void fail_oob(int32_t buffer, int64_t index, int64_t extent) {
  fail_oob_at(buffer, index, extent, __builtin_return_address(0));
}
#else
__attribute__((noinline, cold)) CN_RT void fail_oob(int32_t buffer, int64_t index, int64_t extent);
#endif


#if CN_RUNTIME_BODIES
__attribute__((noinline, cold, format(printf, 4, 5))) CN_RT void fail_fatal(
    int32_t kind, int line, const char* file, const char* fmt, ...) {
  stop_launch();
  Report* r = begin_failure(kind);
  if (!r) return;
  r->line = line;
  copy_file(r, file);
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
  va_end(ap);
}
#else
__attribute__((noinline, cold, format(printf, 4, 5))) CN_RT void fail_fatal(
    int32_t kind, int line, const char* file, const char* fmt, ...);
#endif


// A zeroed object of type T to read from, or a scratch slot to write to, after a bad index.
template <class T>
__attribute__((noinline, cold)) T& scratch() {
  using U = std::remove_cv_t<T>;
  alignas(64) static unsigned char slot[sizeof(U) < 64 ? 64 : sizeof(U)];
  std::memset(slot, 0, sizeof(slot));
  return *reinterpret_cast<U*>(slot);
}

// ---------------------------------------------------------------------------------------------
// Checked buffer pointer. Same size class as a few raw pointers; converts to T* implicitly, so
// kernels may pass it where raw pointers are expected or cast it to other pointer types (the
// result of such a conversion is unchecked).
// ---------------------------------------------------------------------------------------------

constexpr int64_t kUnknownExtent = INT64_MAX;  // a ptr made from a raw pointer: unchecked

template <class T, int64_t N, int ID>
struct tarr;

template <class T>
struct ptr {
  T* p = nullptr;
  T* base = nullptr;
  int64_t extent = 0;
  int32_t id = 0;

  ptr() = default;
  // always_inline: a ptr made in uninstrumented runtime code must not call an instrumented one.
  __attribute__((always_inline)) ptr(T* p_, T* base_, int64_t extent_, int32_t id_)
      : p(p_), base(base_), extent(extent_), id(id_) {}
  // From a raw pointer (a helper function declared with a checked parameter, called with &x[i]
  // or a cast): nothing is known of its extent, so it is not checked.
  ptr(T* raw) : p(raw), base(raw), extent(kUnknownExtent), id(-1) {}
  template <class U, class = std::enable_if_t<std::is_convertible<U*, T*>::value>>
  ptr(const ptr<U>& o) : p(o.p), base(o.base), extent(o.extent), id(o.id) {}
  // From a shared (threadgroup) array: checked against its size, failures name the array.
  template <class U, int64_t N, int ID,
            class = std::enable_if_t<std::is_convertible<U*, T*>::value>>
  ptr(tarr<U, N, ID>& a) : p(a.a), base(a.a), extent(N), id(-1 - ID) {}
  template <class U, int64_t N, int ID,
            class = std::enable_if_t<std::is_convertible<const U*, T*>::value>>
  ptr(const tarr<U, N, ID>& a) : p(a.a), base(a.a), extent(N), id(-1 - ID) {}

  __attribute__((always_inline)) T& operator[](int64_t i) const {
    int64_t k = (p - base) + i;
    if (__builtin_expect(static_cast<uint64_t>(k) >= static_cast<uint64_t>(extent), 0)) {
      return outside(p, k, i, extent, id);  // by value: the ptr itself must not escape
    }
    return p[i];
  }
  __attribute__((noinline, cold)) static T& outside(T* p, int64_t k, int64_t i, int64_t extent,
                                                    int32_t id) {
    if (extent == kUnknownExtent) return p[i];
    fail_oob_at(id, k, extent, __builtin_return_address(0));
    return scratch<T>();
  }
  // The same subscript, naming its source line when it fails.
  __attribute__((always_inline)) T& at(int64_t i, int line, const char* file) const {
    int64_t k = (p - base) + i;
    if (__builtin_expect(static_cast<uint64_t>(k) >= static_cast<uint64_t>(extent), 0)) {
      return outside_site(p, k, i, extent, id, line, file);
    }
    return p[i];
  }
  __attribute__((noinline, cold)) static T& outside_site(T* p, int64_t k, int64_t i,
                                                         int64_t extent, int32_t id, int line,
                                                         const char* file) {
    if (extent == kUnknownExtent) return p[i];
    fail_oob_site(id, k, extent, line, file, __builtin_return_address(0));
    return scratch<T>();
  }
  T& operator*() const { return (*this)[0]; }
  T* operator->() const { (void)(*this)[0]; return p; }
  operator T*() const { return p; }
  template <class U>
  explicit operator U*() const { return (U*)(p); }

  ptr operator+(int64_t n) const { return ptr(p + n, base, extent, id); }
  ptr operator-(int64_t n) const { return ptr(p - n, base, extent, id); }
  friend ptr operator+(int64_t n, const ptr& a) { return a + n; }
  std::ptrdiff_t operator-(const ptr& o) const { return p - o.p; }
  std::ptrdiff_t operator-(const T* o) const { return p - o; }
  ptr& operator+=(int64_t n) { p += n; return *this; }
  ptr& operator-=(int64_t n) { p -= n; return *this; }
  ptr& operator++() { ++p; return *this; }
  ptr& operator--() { --p; return *this; }
  ptr operator++(int) { ptr t = *this; ++p; return t; }
  ptr operator--(int) { ptr t = *this; --p; return t; }
};

template <class T>
inline ptr<T> make_ptr(const LaunchDesc* d, int slot) {
  T* p = static_cast<T*>(d->buffers[slot].data);
  return ptr<T>(p, p, d->buffers[slot].extent, slot);
}

// ---------------------------------------------------------------------------------------------
// Shared (threadgroup) memory: a bump arena reset for every group, poisoned with 0xFF bytes when
// checks are on (NaN for floats, -1 for ints). Declaration k of a kernel gets one allocation per
// group, made by the first thread that reaches the declaration.
// ---------------------------------------------------------------------------------------------

// Whether `q[i]` is inside its buffer: the bounds proof of a lane row (cunumpy/emulation/_lanes.py),
// the same comparison as ptr::operator[] without the report.
template <class T>
__attribute__((always_inline)) inline bool lane_in_bounds(const ptr<T>& q, int64_t i) {
  return static_cast<uint64_t>((q.p - q.base) + i) < static_cast<uint64_t>(q.extent);
}

template <class T, int64_t N, int ID>
struct tarr {
  T a[N];
  __attribute__((always_inline)) T& operator[](int64_t i) {
    if (__builtin_expect(static_cast<uint64_t>(i) >= static_cast<uint64_t>(N), 0)) {
      fail_oob(-1 - ID, i, N);
      return scratch<T>();
    }
    return a[i];
  }
  __attribute__((always_inline)) const T& operator[](int64_t i) const {
    return const_cast<tarr*>(this)->operator[](i);
  }
  __attribute__((always_inline)) T& at(int64_t i, int line, const char* file) {
    if (__builtin_expect(static_cast<uint64_t>(i) >= static_cast<uint64_t>(N), 0)) {
      fail_oob_site(-1 - ID, i, N, line, file, __builtin_return_address(0));
      return scratch<T>();
    }
    return a[i];
  }
  __attribute__((always_inline)) const T& at(int64_t i, int line, const char* file) const {
    return const_cast<tarr*>(this)->at(i, line, file);
  }
  operator T*() { return a; }
  operator const T*() const { return a; }
  // C-style casts to other pointer types (`(unsigned int*)bytes`): the result is unchecked.
  template <class U>
  explicit operator U*() { return (U*)(a); }
  template <class U>
  explicit operator U*() const { return (U*)(a); }
};

template <class A> struct is_tarr_1d : std::false_type {};
template <class T, int64_t N, int ID> struct is_tarr_1d<tarr<T, N, ID>> : std::true_type {};
template <class T, int64_t N, int ID, int64_t M, int J>
struct is_tarr_1d<tarr<tarr<T, M, J>, N, ID>> : std::false_type {};

// A shared array named without a subscript (passed to a function, assigned to a pointer): a
// one-dimensional array becomes a checked pointer, so that a helper template taking
// `threadgroup T*` (rewritten to cn::ptr<T>) can deduce T and keeps checking; anything else
// (arrays of arrays, a local variable that shadows the array's name) passes through unchanged.
template <class A>
__attribute__((always_inline)) inline decltype(auto) tview(A& a) {
  if constexpr (is_tarr_1d<std::remove_cv_t<A>>::value) {
    using E = std::remove_reference_t<decltype(a.a[0])>;
    return ptr<E>(a);
  } else {
    return (a);
  }
}

CN_NOTSAN inline void arena_begin_group(int nslots) {
  Arena& a = g.arena;
  a.used = 0;
  a.nslots = nslots;
  for (int k = 0; k < nslots; ++k) a.slots[k] = nullptr;
}

namespace race {
inline void shared_slot(int k, void* at, size_t size, size_t elem);
}

// Size of the elements of a shared declaration's type (the granule of its race shadow).
template <class A> struct elem_size { static constexpr size_t value = sizeof(A); };
template <class A, size_t N> struct elem_size<A[N]> { static constexpr size_t value = elem_size<A>::value; };
template <class T, int64_t N, int ID> struct elem_size<tarr<T, N, ID>> {
  static constexpr size_t value = elem_size<T>::value;
};

#if CN_RUNTIME_BODIES
CN_NOTSAN __attribute__((noinline)) CN_RT void* arena_alloc(int k, size_t size, size_t align, size_t elem = 1) {
  Arena& a = g.arena;
  if (!a.mem) {
    a.cap = size_t(64) << 20;  // virtual; only touched pages cost memory
    void* m = mmap(nullptr, a.cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { std::abort(); }
    a.mem = static_cast<unsigned char*>(m);
  }
  size_t at = (a.used + align - 1) & ~(align - 1);
  if (at + size > a.cap) {
    fail_fatal(ERR_SHARED_LIMIT, 0, nullptr, "%zu bytes of shared memory requested; the emulator has %zu",
               at + size, a.cap);
    return &scratch<unsigned char[64]>();
  }
  if (g.shared_limit > 0 && int64_t(at + size) > g.shared_limit && a.used <= size_t(g.shared_limit)) {
    fail_fatal(ERR_SHARED_LIMIT, 0, nullptr, "%zu bytes of shared memory per group, over the limit of %lld bytes",
               at + size, (long long)g.shared_limit);
  }
  a.used = at + size;
  void* s = a.mem + at;
  if (g.checks) std::memset(s, 0xFF, size);
  a.slots[k] = s;
  race::shared_slot(k, s, size, elem);
  return s;
}
#else
CN_NOTSAN __attribute__((noinline)) CN_RT void* arena_alloc(int k, size_t size, size_t align, size_t elem = 1);
#endif


template <class A>
__attribute__((always_inline)) inline A& tg_alloc(int k) {
  void* s = g.arena.slots[k];
  if (__builtin_expect(!s, 0)) s = arena_alloc(k, sizeof(A), alignof(A) < 16 ? 16 : alignof(A), elem_size<A>::value);
  return *static_cast<A*>(s);
}

// ---------------------------------------------------------------------------------------------
// Fibers
// ---------------------------------------------------------------------------------------------

enum FiberState : int32_t { F_RUN = 0, F_BARRIER = 1, F_LANES = 2, F_DONE = 3, F_GRID = 4 };

struct Fiber;
using Resolver = void (*)(Fiber** lanes, uint32_t width);  // lanes[i] null when inactive

constexpr size_t kSlotBytes = 64;

struct Fiber {
#if CN_FIBER_ASM
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
  int32_t state = F_DONE;
  int32_t returned = 0;      // left the kernel through a `return` statement
  int32_t line = 0;          // where it waits (barrier / lane exchange)
  const char* file = nullptr;
  Resolver resolve = nullptr;
  int64_t arg = 0;           // lane exchange argument (source lane, delta, mask)
  uint32_t members = 0;      // lanes the exchange names as taking part (0: not known)
  uint32_t lane = 0;
  uint32_t subgroup = 0;     // SIMD group index
  alignas(16) unsigned char in[kSlotBytes];
  alignas(16) unsigned char out[kSlotBytes];
  ThreadInfo info;
  unsigned char* stack = nullptr;
  size_t stack_size = 0;
};

}  // namespace cn

#include "cn_race.h"

namespace cn {

#if CN_FIBER_ASM
// Saves callee-saved registers on the current stack, stores the stack pointer in *from, loads
// `to` and restores the registers saved there. A fresh stack is laid out so that the final `ret`
// enters fiber_entry with r12 = argument and r13 = function.
__attribute__((naked, noinline)) inline void fiber_switch(void** /*from*/, void* /*to*/) {
  __asm__ volatile(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

__attribute__((naked, noinline)) inline void fiber_entry() {
  __asm__ volatile(
      "movq %r12, %rdi\n\t"
      "callq *%r13\n\t"
      "ud2\n\t");
}
#endif

struct Scheduler;

struct Scheduler {
#if CN_FIBER_ASM
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
  void (*call)(void* functor, const ThreadInfo& t) = nullptr;
  void* functor = nullptr;
  Fiber* fibers = nullptr;
  uint32_t capacity = 0;
  uint32_t n = 0;
  uint32_t* order = nullptr;
  int64_t pos = -1;  // cursor in `order` of the current pass
  uint32_t n_done = 0;
  uint32_t n_barrier = 0;
  uint32_t n_lanes = 0;
  uint32_t n_grid = 0;  // fibers waiting at a grid-wide barrier (cooperative launches)
  int32_t barrier_line = 0;
  const char* barrier_file = nullptr;
  bool barrier_mismatch = false;
  int32_t barrier_flags = BARRIER_ALL;      // memory the barrier being waited at orders
  uint32_t mismatch_a = 0, mismatch_b = 0;  // fibers waiting at two different barriers
};

inline Scheduler sched;

constexpr size_t kStackBytes = size_t(256) << 10;  // virtual; touched pages only

CN_NOTSAN inline void fiber_main_body(Fiber* f) {
  sched.call(sched.functor, f->info);
  f->state = F_DONE;
  ++sched.n_done;
}

// The next fiber of the current pass that can run, or null when the pass is over.
CN_NOTSAN __attribute__((always_inline)) inline Fiber* next_runnable() {
  while (++sched.pos < int64_t(sched.n)) {
    Fiber* f = &sched.fibers[sched.order[sched.pos]];
    if (f->state == F_RUN) return f;
  }
  return nullptr;
}

// Leaves fiber `f` (blocked or done): switches straight to the next runnable fiber of the pass,
// or back to the scheduler when there is none.
CN_NOTSAN __attribute__((always_inline)) inline void leave(Fiber* f) {
#if CN_RACES
  if (race::st.npending) race::flush_pending();
#endif
  Fiber* n = next_runnable();
#if CN_FIBER_ASM
  if (n) {
    g.fiber = n;
    g.cur = &n->info;
    fiber_switch(&f->sp, n->sp);
  } else {
    fiber_switch(&f->sp, sched.sp);
  }
#else
  if (n) {
    g.fiber = n;
    g.cur = &n->info;
    swapcontext(&f->ctx, &n->ctx);
  } else {
    swapcontext(&f->ctx, &sched.ctx);
  }
#endif
}

#if CN_FIBER_ASM
CN_NOTSAN inline void fiber_main(void* arg) {
  Fiber* f = static_cast<Fiber*>(arg);
  fiber_main_body(f);
  leave(f);
  __builtin_unreachable();
}
#else
CN_NOTSAN inline void fiber_main_uc(unsigned hi, unsigned lo) {
  Fiber* f = reinterpret_cast<Fiber*>((uintptr_t(hi) << 32) | uintptr_t(lo));
  fiber_main_body(f);
  leave(f);
  std::abort();
}
#endif

CN_NOTSAN inline void ensure_fibers(uint32_t n) {
  if (n <= sched.capacity) return;
  Fiber* nf = static_cast<Fiber*>(std::calloc(n, sizeof(Fiber)));
  uint32_t* order = static_cast<uint32_t*>(std::calloc(n, sizeof(uint32_t)));
  if (!nf || !order) std::abort();
  for (uint32_t i = 0; i < n; ++i) {
    new (&nf[i]) Fiber();
    if (i < sched.capacity) {
      nf[i].stack = sched.fibers[i].stack;
      nf[i].stack_size = sched.fibers[i].stack_size;
    } else {
      size_t page = size_t(sysconf(_SC_PAGESIZE));
      size_t total = kStackBytes + page;
      void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) std::abort();
      mprotect(m, page, PROT_NONE);  // guard page below the stack
      nf[i].stack = static_cast<unsigned char*>(m) + page;
      nf[i].stack_size = kStackBytes;
    }
  }
  std::free(sched.fibers);
  std::free(sched.order);
  sched.fibers = nf;
  sched.order = order;
  sched.capacity = n;
}

CN_NOTSAN inline void fiber_start(Fiber* f) {
  f->state = F_RUN;
  f->returned = 0;
#if CN_FIBER_ASM
  // Stack tops are staggered by a multiple of 64 bytes so that the fibers' hot frames do not all
  // fall into the same L1 cache sets.
  size_t color = (size_t(f - sched.fibers) % 61) * 64;
  uintptr_t top = (reinterpret_cast<uintptr_t>(f->stack) + f->stack_size - color) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top - 72);  // 8 mod 16, see fiber_switch
  sp[0] = nullptr;                                  // r15
  sp[1] = nullptr;                                  // r14
  sp[2] = reinterpret_cast<void*>(&fiber_main);     // r13
  sp[3] = f;                                        // r12
  sp[4] = nullptr;                                  // rbx
  sp[5] = nullptr;                                  // rbp
  sp[6] = reinterpret_cast<void*>(&fiber_entry);    // return address
  f->sp = sp;
#else
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = f->stack;
  f->ctx.uc_stack.ss_size = f->stack_size;
  f->ctx.uc_link = nullptr;
  uintptr_t a = reinterpret_cast<uintptr_t>(f);
  makecontext(&f->ctx, reinterpret_cast<void (*)()>(&fiber_main_uc), 2, unsigned(a >> 32),
              unsigned(a & 0xffffffffu));
#endif
}

// Runs one pass: every runnable fiber, in order, until each has blocked or finished.
CN_NOTSAN inline void run_pass() {
  sched.pos = -1;
  Fiber* f = next_runnable();
  if (!f) return;
  g.fiber = f;
  g.cur = &f->info;
#if CN_FIBER_ASM
  fiber_switch(&sched.sp, f->sp);
#else
  swapcontext(&sched.ctx, &f->ctx);
#endif
  g.fiber = nullptr;
}

// The kernel executes a `return` statement (the rewriters mark those of the kernel's own body):
// such a thread has left early and counts as arrived at later barriers.
__attribute__((always_inline)) inline void mark_return() {
  if (Fiber* f = g.fiber) f->returned = 1;
}

#if CN_RUNTIME_BODIES
__attribute__((noinline, cold)) CN_RT void fail_no_fiber(const char* what, int line, const char* file) {
  fail_fatal(ERR_INTERNAL, line, file,
             "%s called in a kernel the emulator runs without fibers (it found no synchronisation "
             "in the source text); please report this kernel", what);
}
#else
__attribute__((noinline, cold)) CN_RT void fail_no_fiber(const char* what, int line, const char* file);
#endif


// Group barrier: every thread of the group that has not returned must reach the same barrier
// (same source line). `flags` (BarrierFlags) says which memory it orders, for race checking.
#if CN_RUNTIME_BODIES
CN_NOTSAN __attribute__((noinline)) CN_RT void barrier(int line, const char* file, int flags = BARRIER_ALL) {
  Fiber* f = g.fiber;
  if (!f) {
    if (g.cur && g.cur->nthreads > 1) fail_no_fiber("a barrier", line, file);
    return;
  }
  f->state = F_BARRIER;
  f->line = line;
  f->file = file;
  if (sched.n_barrier++ == 0) {
    sched.barrier_line = line;
    sched.barrier_file = file;
    sched.barrier_flags = flags;
  } else if (!sched.barrier_mismatch &&
             (line != sched.barrier_line ||
              (file != sched.barrier_file && std::strcmp(file, sched.barrier_file) != 0))) {
    sched.barrier_mismatch = true;
    sched.mismatch_b = uint32_t(f - sched.fibers);
  }
  leave(f);
}
#else
CN_NOTSAN __attribute__((noinline)) CN_RT void barrier(int line, const char* file, int flags = BARRIER_ALL);
#endif


// Lane exchange: deposits `in` and waits until every active lane of the SIMD group reached the
// same exchange (same line); `resolve` then computes every lane's `out`.
template <class R, class T>
CN_NOTSAN inline R lane_exchange(const T& value, int64_t arg, Resolver resolve, int line,
                                 const char* file, uint32_t members = 0) {
  static_assert(sizeof(T) <= kSlotBytes && sizeof(R) <= kSlotBytes, "lane value too large");
  Fiber* f = g.fiber;
  if (!f) {
    // A group of one thread has nothing to wait for: resolve alone.
    Fiber solo;
    solo.lane = 0;
    solo.arg = arg;
    std::memcpy(solo.in, &value, sizeof(T));
    if (g.cur && g.cur->nthreads > 1) {
      fail_no_fiber("a SIMD-group function", line, file);
      R r{};
      return r;
    }
    Fiber* lanes[1] = {&solo};
    resolve(lanes, 1);
    R r;
    std::memcpy(&r, solo.out, sizeof(R));
    return r;
  }
  std::memcpy(f->in, &value, sizeof(T));
  f->arg = arg;
  f->members = members;
  f->resolve = resolve;
  f->line = line;
  f->file = file;
  f->state = F_LANES;
  ++sched.n_lanes;
  leave(f);
  R r;
  std::memcpy(&r, f->out, sizeof(R));
  return r;
}

template <class T>
inline const T& lane_in(const Fiber* f) { return *reinterpret_cast<const T*>(f->in); }
template <class T>
inline void lane_out(Fiber* f, const T& v) { std::memcpy(f->out, &v, sizeof(T)); }

#if CN_RUNTIME_BODIES
CN_NOTSAN __attribute__((noinline, cold)) CN_RT void fail_inactive(const Fiber* reader, int64_t lane) {
  const ThreadInfo* saved = g.cur;
  g.cur = &reader->info;
  if (Report* r = begin_failure(ERR_INACTIVE_LANE)) {
    r->lane = int32_t(lane);
    r->line = reader->line;
    copy_file(r, reader->file);
  }
  g.cur = saved;
}
#else
CN_NOTSAN __attribute__((noinline, cold)) CN_RT void fail_inactive(const Fiber* reader, int64_t lane);
#endif


// ---------------------------------------------------------------------------------------------
// Random numbers for the random-order option
// ---------------------------------------------------------------------------------------------

struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return uint32_t(next() % n); }
};

template <class I>
inline void shuffle(I* a, uint32_t n, Rng& rng) {
  for (uint32_t i = n; i > 1; --i) {
    uint32_t j = rng.below(i);
    I t = a[i - 1]; a[i - 1] = a[j]; a[j] = t;
  }
}

// ---------------------------------------------------------------------------------------------
// Fiber scheduling of one group
// ---------------------------------------------------------------------------------------------

inline void describe_thread(char* out, size_t n, const ThreadInfo& t) {
  std::snprintf(out, n, "(%u,%u,%u)", t.tid[0], t.tid[1], t.tid[2]);
}

// Resolves the lanes of SIMD group `s` waiting at the same exchange as `first`; with `full`, only
// when every lane that has not exited waits there.
CN_NOTSAN inline bool resolve_lanes(uint32_t s, bool full) {
  uint32_t w = sched.fibers[0].info.width;
  uint32_t lo = s * w, hi = lo + w < sched.n ? lo + w : sched.n;
  Fiber* first = nullptr;
  for (uint32_t i = lo; i < hi; ++i) {
    Fiber* f = &sched.fibers[i];
    if (f->state == F_LANES) { first = f; break; }
  }
  if (!first) return false;
  auto same_site = [](const Fiber* a, const Fiber* b) {
    return a->state == F_LANES && a->line == b->line && a->resolve == b->resolve &&
           std::strcmp(a->file, b->file) == 0;
  };
  if (!full) {
    // Diverged lanes wait at several exchanges: resolve first one whose callers' member masks
    // name no lane that waits elsewhere (the other branch then runs on to its own exchange).
    for (uint32_t i = lo; i < hi; ++i) {
      Fiber* c = &sched.fibers[i];
      if (c->state != F_LANES) continue;
      bool seen = false;
      for (uint32_t k = lo; k < i && !seen; ++k) seen = same_site(&sched.fibers[k], c);
      if (seen) continue;
      bool complete = true;
      for (uint32_t k = lo; k < hi && complete; ++k) {
        const Fiber* f = &sched.fibers[k];
        if (!same_site(f, c)) continue;
        for (uint32_t j = 0; j < 32 && j < w && complete; ++j) {
          if (!(f->members >> j & 1u) || lo + j >= hi) continue;
          const Fiber* m = &sched.fibers[lo + j];
          complete = m->state == F_DONE || same_site(m, c);
        }
      }
      if (complete) { first = c; break; }
    }
  }
  Fiber* lanes[64] = {};
  for (uint32_t i = lo; i < hi; ++i) {
    Fiber* f = &sched.fibers[i];
    if (f->state == F_DONE) continue;
    bool same = same_site(f, first);
    if (!same) {
      if (full) return false;
      continue;
    }
    lanes[i - lo] = f;
  }
  first->resolve(lanes, w);
  race::lanes_synced(lanes, w, s, sched.n);
  for (uint32_t i = 0; i < w; ++i) {
    if (lanes[i]) { lanes[i]->state = F_RUN; --sched.n_lanes; }
  }
  return true;
}

CN_NOTSAN __attribute__((noinline, cold)) inline void fail_divergence() {
  char a[48], b[48];
  const ThreadInfo* first_waiting = nullptr;
  const ThreadInfo* first_done = nullptr;
  for (uint32_t i = 0; i < sched.n; ++i) {
    const Fiber& f = sched.fibers[i];
    if (f.state == F_BARRIER && !first_waiting) first_waiting = &f.info;
    if (f.state == F_DONE && !first_done && (g.strict_barriers || !f.returned)) first_done = &f.info;
  }
  g.cur = first_waiting ? first_waiting : &sched.fibers[0].info;
  if (sched.barrier_mismatch) {
    const Fiber& fa = sched.fibers[sched.mismatch_a];
    const Fiber& fb = sched.fibers[sched.mismatch_b];
    describe_thread(a, sizeof a, fa.info);
    describe_thread(b, sizeof b, fb.info);
    g.cur = &fa.info;
    fail_fatal(ERR_BARRIER, fa.line, fa.file,
               "threads wait at different barriers: thread %s at %s:%d, thread %s at %s:%d", a,
               fa.file, fa.line, b, fb.file, fb.line);
  } else {
    uint32_t skipped = 0;
    for (uint32_t i = 0; i < sched.n; ++i) {
      const Fiber& f = sched.fibers[i];
      if (f.state == F_DONE && (g.strict_barriers || !f.returned)) ++skipped;
    }
    describe_thread(a, sizeof a, *first_done);
    describe_thread(b, sizeof b, *first_waiting);
    if (g.strict_barriers) {
      fail_fatal(ERR_BARRIER, sched.barrier_line, sched.barrier_file,
                 "%u of %u threads wait at the barrier at %s:%d but %u threads have returned "
                 "(first: thread %s); every thread of a group must reach every barrier "
                 "(strict barriers)",
                 sched.n_barrier, sched.n, sched.barrier_file, sched.barrier_line, skipped, a);
    } else {
      fail_fatal(ERR_BARRIER, sched.barrier_line, sched.barrier_file,
                 "%u of %u threads wait at the barrier at %s:%d but %u threads have returned "
                 "(first: thread %s) at the end of the kernel without reaching it: live threads "
                 "skipped the barrier (threads that left through an early `return` count as "
                 "arrived, as on the GPU)",
                 sched.n_barrier, sched.n, sched.barrier_file, sched.barrier_line, skipped, a);
    }
  }
}

CN_NOTSAN void coop_yield();
CN_NOTSAN void fail_grid_mix();

CN_NOTSAN inline void run_group_fibers(ThreadInfo* infos, uint32_t n, Rng* rng) {
  ensure_fibers(n);
  sched.n = n;
  sched.n_done = sched.n_barrier = sched.n_lanes = sched.n_grid = 0;
  sched.barrier_mismatch = false;
  uint32_t w = infos[0].width;
  for (uint32_t i = 0; i < n; ++i) {
    Fiber* f = &sched.fibers[i];
    f->info = infos[i];
    f->lane = i % w;
    f->subgroup = i / w;
    fiber_start(f);
    sched.order[i] = i;
  }
  if (rng) shuffle(sched.order, n, *rng);
  uint32_t nsub = (n + w - 1) / w;
  for (;;) {
    run_pass();
    g.cur = nullptr;
    if (g.abort) return;
    if (sched.n_done == n) return;
    if (sched.n_lanes) {
      bool any = false;
      for (uint32_t s = 0; s < nsub; ++s) any |= resolve_lanes(s, true);
      if (!any) {
        for (uint32_t s = 0; s < nsub; ++s) any |= resolve_lanes(s, false);
      }
      if (any) continue;
    }
    if (sched.n_grid) {
      // The block's live threads all wait at a grid-wide barrier: the block waits for the
      // others (cn_coop.h), then they go on together.
      if (sched.n_barrier) { fail_grid_mix(); return; }
      coop_yield();
      if (g.abort) return;
      for (uint32_t i = 0; i < n; ++i) {
        if (sched.fibers[i].state == F_GRID) sched.fibers[i].state = F_RUN;
      }
      sched.n_grid = 0;
      continue;
    }
    // Everything left waits at a barrier. Threads that returned count as arrived (as on the
    // hardware), unless strict barriers were asked for.
    bool skipped = false;
    if (sched.n_done != 0) {
      for (uint32_t i = 0; i < n && !skipped; ++i) {
        const Fiber& f = sched.fibers[i];
        skipped = f.state == F_DONE && (g.strict_barriers || !f.returned);
      }
    }
    if (sched.barrier_mismatch || skipped) {
      if (sched.barrier_mismatch) {
        for (uint32_t i = 0; i < n; ++i) {
          if (sched.fibers[i].state == F_BARRIER && sched.fibers[i].line == sched.barrier_line &&
              std::strcmp(sched.fibers[i].file, sched.barrier_file) == 0) {
            sched.mismatch_a = i;
            break;
          }
        }
      }
      fail_divergence();
      return;
    }
    sched.n_barrier = 0;
    race::barrier(sched.barrier_flags);
    for (uint32_t i = 0; i < n; ++i) {
      if (sched.fibers[i].state == F_BARRIER) sched.fibers[i].state = F_RUN;
    }
  }
}

}  // namespace cn

#include "cn_coop.h"

namespace cn {

// ---------------------------------------------------------------------------------------------
// The grid walk
// ---------------------------------------------------------------------------------------------

inline uint32_t ceil_div(uint32_t a, uint32_t b) { return b ? (a + b - 1) / b : 0; }

// Remembers the failures found so far after a group that had one (cn_failures_upto).
CN_NOTSAN __attribute__((noinline, cold)) inline void log_failures(int64_t pos, int64_t count) {
  if (g.nlog + 2 > g.caplog) {
    size_t cap = g.caplog ? g.caplog * 2 : 64;
    int64_t* m = static_cast<int64_t*>(std::realloc(g.log, cap * sizeof(int64_t)));
    if (!m) return;  // the count then ends earlier (a lower bound)
    g.log = m;
    g.caplog = cap;
  }
  g.log[g.nlog++] = pos;
  g.log[g.nlog++] = count;
}

// The SIGINT handler of a launch on the main thread (LAUNCH_SIGINT): the launch stops before its
// next group, and the Python side raises KeyboardInterrupt.
inline volatile int32_t* sigint_flag = nullptr;
CN_NOTSAN inline void on_sigint(int) {
  if (volatile int32_t* f = sigint_flag) *f = 1;
}

struct SigintScope {
  bool on = false;
  struct sigaction old;
  SigintScope(const LaunchDesc* d) {
    if (!(d->flags & LAUNCH_SIGINT) || !d->cancel) return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = &on_sigint;
    sigemptyset(&sa.sa_mask);
    sigint_flag = d->cancel;
    if (sigaction(SIGINT, &sa, &old) != 0) return;
    on = true;
    if (old.sa_handler == SIG_IGN) { sigaction(SIGINT, &old, nullptr); on = false; }
  }
  ~SigintScope() {
    if (on) sigaction(SIGINT, &old, nullptr);
    sigint_flag = nullptr;
  }
};

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The threads of one group as a plain loop (no fibers, no shuffled order). The thread the
// builtins and failure reports read (g.cur) is one ThreadInfo updated in place: only its position
// in the group, one store per thread (nothing reads its grid position, and its linear index is
// computed where needed: cn::linear_index). The kernel gets a local copy that never escapes, so
// that the compiler keeps it in registers (stores through buffer pointers cannot touch it), and
// its captured arguments likewise (a local copy of the functor). In race-checking builds this
// loop is instrumented like the kernel (CN_WALK), so that the kernel is folded into it rather than
// called once per thread (a sanitized function is not inlined into an unsanitized one): the
// loop's own loads and stores, of untracked memory, cost a quick address test each.
#if CN_RACES
#define CN_WALK __attribute__((noinline))
#define CN_WALK_THUNK
#else
#define CN_WALK CN_NOTSAN __attribute__((always_inline))
#define CN_WALK_THUNK CN_NOTSAN
#endif
//
// One thread of a lane loop: its ThreadInfo is made here, in an inlined callee, rather than in
// the loop body, where the OpenMP SIMD lowering would give every lane a copy in memory (an
// "omp simd array") that keeps the loop from being vectorised.
struct NoLanes {
  void operator()(const ThreadInfo&) const {}
};
template <class F>
CN_WALK inline void run_lane(F& k, const ThreadInfo& row, uint32_t x, uint32_t pos, uint32_t lin) {
  ThreadInfo v = row;
  v.tid[0] = x;
  v.pos[0] = pos;
  v.lin = lin;
  k(static_cast<const ThreadInfo&>(v));
}
template <class G>
CN_WALK inline bool run_guard(G& k, const ThreadInfo& row, uint32_t x, uint32_t pos, uint32_t lin) {
  ThreadInfo v = row;
  v.tid[0] = x;
  v.pos[0] = pos;
  v.lin = lin;
  return k(static_cast<const ThreadInfo&>(v));
}
// A lane copy whose threads index with an unsigned position (Metal's `uint i =
// thread_position_in_grid.x`): its rows run with an unsigned induction variable, which keeps the
// zero-extended index affine for the vectoriser (CUDA's `int i` needs a signed one).
template <class F>
struct UnsignedIndex {
  F f;
  __attribute__((always_inline)) void operator()(const ThreadInfo& t) const { f(t); }
};
template <class F>
inline UnsignedIndex<F> unsigned_index(F f) { return UnsignedIndex<F>{f}; }
template <class L> struct is_unsigned_index : std::false_type {};
template <class F> struct is_unsigned_index<UnsignedIndex<F>> : std::true_type {};

template <bool Current, class F, class L = NoLanes, class G = NoLanes>
CN_WALK inline void walk_group(ThreadInfo& t, const uint32_t* base, F& kernel,
                               const L* lanes = nullptr, const G* guard = nullptr) {
  (void)lanes;
  (void)guard;
  ThreadInfo* cur = &t;
  quiet_store(&g.cur, static_cast<const ThreadInfo*>(cur));
  ThreadInfo u = t;
  auto k = kernel;
  uint32_t i = 0;
  const uint32_t nx = u.gsize[0], ny = u.gsize[1], nz = u.gsize[2];
  const uint32_t b0 = base[0], b1 = base[1], b2 = base[2];
  for (uint32_t z = 0; z < nz; ++z) {
    u.tid[2] = z;
    u.pos[2] = b2 + z;
    if (Current) quiet_store(&cur->tid[2], z);
    for (uint32_t y = 0; y < ny; ++y) {
      u.tid[1] = y;
      u.pos[1] = b1 + y;
      if (Current) quiet_store(&cur->tid[1], y);
#if CN_LANES
      // Lanes: the row's threads as an OpenMP SIMD loop. A kernel whose every thread must
      // keep g.cur up to date (Current) runs here only through its lane copy (`lanes`, made by
      // cunumpy/emulation/_lanes.py: no calls, nothing that reads g.cur), and only for rows where
      // no thread takes the kernel's leading early return (`guard`, evaluated for the whole row
      // first, itself a SIMD loop); other rows run the kernel itself, one thread at a time.
      if (!Current || lanes) {
        const ThreadInfo row = u;
        // The grid position is the induction variable (it does not wrap: the loop stops before
        // c + nx <= grid), so that an index computed from it is affine for the vectoriser.
        const uint32_t c = row.gid[0] * row.dsize[0], e = c + nx, l0 = i - c;
        // One loop per functor, so that the body is vectorised once: a signed induction
        // variable (CUDA's `int i = blockIdx.x * blockDim.x + threadIdx.x` is then affine; a
        // row past INT32_MAX runs one thread at a time), or an unsigned one for a lane copy
        // that indexes with an unsigned position (Metal, UnsignedIndex).
        constexpr bool unsig = is_unsigned_index<L>::value;
        const bool fits = unsig || e <= uint32_t(INT32_MAX);
        const int32_t sc = int32_t(c), se = int32_t(e);
        int any = 0;
        if constexpr (!std::is_same<G, NoLanes>::value) {
          if (guard) {
            auto gk = *guard;
            if (!fits) {
              any = 1;
            } else if constexpr (unsig) {
#pragma omp simd reduction(| : any)
              for (uint32_t p = c; p < e; ++p) any |= int(run_guard(gk, row, p - c, p, l0 + p));
            } else {
#pragma omp simd reduction(| : any)
              for (int32_t q = sc; q < se; ++q) {
                const uint32_t p = uint32_t(q);
                any |= int(run_guard(gk, row, p - c, p, l0 + p));
              }
            }
          }
        }
        if (!any) {
          if constexpr (!std::is_same<L, NoLanes>::value) {
            if (lanes && fits) {
              auto lk = *lanes;
              if constexpr (unsig) {
#pragma omp simd
                for (uint32_t p = c; p < e; ++p) run_lane(lk, row, p - c, p, l0 + p);
              } else {
#pragma omp simd
                for (int32_t q = sc; q < se; ++q) {
                  const uint32_t p = uint32_t(q);
                  run_lane(lk, row, p - c, p, l0 + p);
                }
              }
              i += nx;
              continue;
            }
          }
          if (!Current) {
#pragma omp simd
            for (uint32_t p = c; p < e; ++p) run_lane(k, row, p - c, p, l0 + p);
            i += nx;
            continue;
          }
        }
      }
#endif
      for (uint32_t x = 0; x < nx; ++x, ++i) {
        u.tid[0] = x;
        u.pos[0] = b0 + x;
        u.lin = i;
        if (Current) {
          quiet_store(&cur->tid[0], x);
          if (CN_RACES) quiet_store(&cur->lin, i);  // the race checker reads it; others: linear_index()
        }
        k(static_cast<const ThreadInfo&>(u));
#if CN_RACES
        if (quiet_load(&race::st.npending)) race::flush_pending();
#endif
      }
    }
  }
}

// How the runtime's grid walk (run_launch) calls the kernel: `walk` runs the threads of one group
// in order (loop mode), `thread` runs one thread (fibers, random order); `ctx` is their argument.
// Both are made by run_grid in the kernel's own translation unit, where the kernel is inlined.
struct GridCalls {
  void (*walk)(void* ctx, ThreadInfo& t, const uint32_t* base);
  void (*thread)(void* ctx, const ThreadInfo& t);
  void* ctx;
};

// Runs the descriptor's share of the grid through `calls`. `fibers`: threads of a group run as
// fibers (the kernel synchronises); otherwise as a plain loop. `checks`: the kernel is a checked
// build. Returns 0, -1 when the descriptor is unusable, -3 for a random-order launch of a library
// built without it (run_grid's Shuffle).
CN_NOTSAN CN_RT int run_launch(const LaunchDesc* d, int nshared, bool fibers, bool checks,
                               const GridCalls& calls);

template <bool Current, class F, class L, class G>
struct GridWalk {
  F* kernel;
  const L* lanes;
  const G* guard;
  static CN_WALK_THUNK void walk(void* c, ThreadInfo& t, const uint32_t* base) {
    GridWalk* w = static_cast<GridWalk*>(c);
    walk_group<Current>(t, base, *w->kernel, w->lanes, w->guard);
  }
  static void thread(void* c, const ThreadInfo& t) { (*static_cast<GridWalk*>(c)->kernel)(t); }
};

// Runs `kernel(ThreadInfo)` for every thread of the descriptor's share of the grid. `Fibers`:
// threads of a group run as fibers (the kernel synchronises); otherwise as a plain loop.
// `Checks`: the kernel is a checked build. `Current`: keep g.cur's thread position up to date for
// every thread (the CUDA builtins and failure reports read it; an unchecked Metal kernel gets its
// thread attributes as arguments and needs only the group). `lanes` and `guard` (loop mode only):
// the kernel's lane copy and its early-return guard (walk_group). Returns 0, or -1 when the
// descriptor is unusable. Only the calls into the kernel are made here; the walk over groups is
// the runtime's (run_launch). `Shuffle`: the library can run the random-order option (in loop
// mode that takes a second copy of the kernel, one thread per call, which launches in order do
// not pay for in compile time; run_launch refuses a random-order launch without it).
template <bool Fibers, bool Checks, bool Current = true, bool Shuffle = true, class F,
          class L = NoLanes, class G = NoLanes>
CN_NOTSAN inline int run_grid(const LaunchDesc* d, int nshared, F&& kernel,
                              const L* lanes = nullptr, const G* guard = nullptr) {
  using W = GridWalk<Current, std::remove_reference_t<F>, L, G>;
  W w{&kernel, lanes, guard};
  GridCalls calls{nullptr, nullptr, &w};
  if constexpr (Fibers || Shuffle) calls.thread = &W::thread;
  if constexpr (!Fibers) calls.walk = &W::walk;
  return run_launch(d, nshared, Fibers, Checks, calls);
}

#if CN_RUNTIME_BODIES
CN_NOTSAN CN_RT int run_launch(const LaunchDesc* d, int nshared, bool fibers, bool checks,
                               const GridCalls& calls) {
  const bool Fibers = fibers;
  if (d->abi != CN_ABI_VERSION) return -1;
  if (d->random_order && !calls.thread) return -3;
  g.report = d->report;
  g.checks = checks;
  g.abort = false;
  g.cur = nullptr;
  g.fiber = nullptr;
  g.shared_limit = d->shared_limit;
  g.strict_barriers = (d->flags & LAUNCH_STRICT_BARRIERS) != 0;
  g.parallel = (d->flags & LAUNCH_PARALLEL) != 0;
  g.stop = d->stop;
  g.pos = 0;
  g.nlog = 0;
  ThreadInfo t{};
  uint32_t width = d->simd_width ? uint32_t(d->simd_width) : 32u;
  for (int k = 0; k < 3; ++k) {
    t.grid[k] = d->grid[k];
    t.dsize[k] = d->group[k] ? d->group[k] : 1;
    t.ngroups[k] = ceil_div(d->grid[k], t.dsize[k]);
  }
  t.width = width;
  int64_t ngroups = int64_t(t.ngroups[0]) * t.ngroups[1] * t.ngroups[2];
  int64_t first = d->first > 0 ? d->first : 0;
  int64_t last = d->last <= 0 || d->last > ngroups ? ngroups : d->last;
  if (first >= last) return 0;
  SigintScope sigint(d);
  uint32_t* perm = nullptr;
  if (d->random_order) {
    // Every worker draws the same permutation from the seed; each group's threads are shuffled
    // by a generator of its own, so the order does not depend on how groups were shared out.
    Rng rng{d->seed};
    perm = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * size_t(ngroups)));
    if (!perm) return -1;
    for (int64_t i = 0; i < ngroups; ++i) perm[i] = uint32_t(i);
    shuffle(perm, uint32_t(ngroups), rng);
  }
  uint32_t max_threads = t.dsize[0] * t.dsize[1] * t.dsize[2];
  race::begin_launch(d, uint64_t(ngroups), max_threads);
  ThreadInfo* infos = nullptr;
  uint32_t* torder = nullptr;
  if (Fibers || d->random_order) {
    infos = static_cast<ThreadInfo*>(std::malloc(sizeof(ThreadInfo) * max_threads));
    torder = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * max_threads));
    if (!infos || !torder) {
      std::free(perm); std::free(infos); std::free(torder); race::end_launch(); return -1;
    }
  }
  if (Fibers) {
    sched.call = calls.thread;
    sched.functor = calls.ctx;
  }
  auto run_group = [&](int64_t q) CN_NOTSAN {
    g.pos = q;
    int64_t failures = d->report->count;
    uint64_t lin = perm ? perm[q] : uint64_t(q);
    if (t.ngroups[1] == 1 && t.ngroups[2] == 1) {  // a 1-D grid: no divisions per group
      t.gid[0] = uint32_t(lin);
      t.gid[1] = t.gid[2] = 0;
    } else {
      uint64_t row = lin / t.ngroups[0];
      t.gid[0] = uint32_t(lin - row * t.ngroups[0]);
      t.gid[1] = uint32_t(row % t.ngroups[1]);
      t.gid[2] = uint32_t(row / t.ngroups[1]);
    }
    uint32_t base[3];
    for (int k = 0; k < 3; ++k) {
      base[k] = t.gid[k] * t.dsize[k];
      uint32_t left = t.grid[k] - base[k];
      t.gsize[k] = left < t.dsize[k] ? left : t.dsize[k];
    }
    t.nthreads = t.gsize[0] * t.gsize[1] * t.gsize[2];
    if (nshared) arena_begin_group(nshared);
    race::begin_group(uint32_t(lin), max_threads, t.nthreads, width, Fibers);
    if (Fibers || d->random_order) {
      Rng grng{mix64(d->seed ^ (lin * 0x9E3779B97F4A7C15ull))};
      uint32_t i = 0;
      for (uint32_t z = 0; z < t.gsize[2]; ++z)
        for (uint32_t y = 0; y < t.gsize[1]; ++y)
          for (uint32_t x = 0; x < t.gsize[0]; ++x, ++i) {
            ThreadInfo& u = infos[i];
            u = t;
            u.tid[0] = x; u.tid[1] = y; u.tid[2] = z;
            u.pos[0] = base[0] + x; u.pos[1] = base[1] + y; u.pos[2] = base[2] + z;
            u.lin = i;
          }
      if (Fibers) {
        run_group_fibers(infos, t.nthreads, d->random_order ? &grng : nullptr);
      } else {
        for (uint32_t k = 0; k < t.nthreads; ++k) torder[k] = k;
        shuffle(torder, t.nthreads, grng);
        for (uint32_t k = 0; k < t.nthreads; ++k) {
          const ThreadInfo& u = infos[torder[k]];
          g.cur = &u;
          calls.thread(calls.ctx, u);
#if CN_RACES
          if (race::st.npending) race::flush_pending();
#endif
        }
      }
    } else {
      calls.walk(calls.ctx, t, base);
    }
    if (__builtin_expect(d->report->count != failures, 0)) log_failures(q, d->report->count);
  };
  volatile int32_t* cancel = d->cancel;
  int64_t* stop = d->stop;
  auto halted = [&](int64_t q) CN_NOTSAN {
    return g.abort || (cancel && *cancel) || (stop && q > __atomic_load_n(stop, __ATOMIC_RELAXED));
  };
  if (Fibers && (d->flags & LAUNCH_COOPERATIVE)) {
    run_cooperative(first, last, run_group);
  } else if (!d->next) {
    for (int64_t q = first; q < last && !halted(q); ++q) {
      run_group(q);
      if (d->done) __atomic_store_n(d->done, q + 1 - first, __ATOMIC_RELAXED);
    }
  } else {
    int64_t batch = d->batch > 0 ? d->batch : 1;
    for (bool go = true; go;) {
      int64_t b = __atomic_fetch_add(d->next, batch, __ATOMIC_RELAXED);
      if (b >= last) break;
      int64_t e = b + batch < last ? b + batch : last;
      for (int64_t q = b; q < e; ++q) {
        if (halted(q)) { go = false; break; }
        run_group(q);
      }
      if (d->done) __atomic_fetch_add(d->done, e - b, __ATOMIC_RELAXED);
    }
  }
  g.cur = nullptr;
  race::end_launch();
  std::free(perm);
  std::free(infos);
  std::free(torder);
  return 0;
}

#endif  // CN_RUNTIME_BODIES

}  // namespace cn

// Output poisoning (cunumpy/emulation/_poison.py): fill n elements of `elem` bytes with a
// pattern, and count the elements that still hold it after the launch. Written in blocks of a
// fixed length so that the compiler vectorises them at -O2; no runtime state is touched, so
// several threads may run them on parts of one array.
template <class U>
CN_NOTSAN inline void cn_fill_pattern(U* p, int64_t n, U v) {
  int64_t i = 0;
#if defined(__SSE2__)
  // Outputs larger than the caches are filled with streaming stores: the lines are not read
  // first, which saves a third of the pass's memory traffic.
  if (int64_t(sizeof(U)) * n >= (int64_t(1) << 20)) {
    for (; i < n && (reinterpret_cast<uintptr_t>(p + i) & 15); ++i) p[i] = v;
    U lanes[16 / sizeof(U)];
    for (size_t k = 0; k < 16 / sizeof(U); ++k) lanes[k] = v;
    __m128i x;
    std::memcpy(&x, lanes, 16);
    constexpr int64_t per = int64_t(16 / sizeof(U));
    for (; i + 4 * per <= n; i += 4 * per) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(p + i), x);
      _mm_stream_si128(reinterpret_cast<__m128i*>(p + i + per), x);
      _mm_stream_si128(reinterpret_cast<__m128i*>(p + i + 2 * per), x);
      _mm_stream_si128(reinterpret_cast<__m128i*>(p + i + 3 * per), x);
    }
    _mm_sfence();
  }
#endif
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) p[i + k] = v;
  for (; i < n; ++i) p[i] = v;
}

template <class U>
CN_NOTSAN inline int64_t cn_count_pattern(const U* p, int64_t n, U v) {
  int64_t count = 0, i = 0;
  for (; i + 64 <= n; i += 64) {
    U hits = 0;
    for (int k = 0; k < 64; ++k) hits += U(p[i + k] == v);
    count += int64_t(hits);
  }
  for (; i < n; ++i) count += p[i] == v;
  return count;
}

#if CN_RUNTIME_BODIES
CN_EXPORT void cn_fill(void* p, int64_t n, int32_t elem, uint64_t pattern) {
  switch (elem) {
    case 1: cn_fill_pattern(static_cast<uint8_t*>(p), n, uint8_t(pattern)); break;
    case 2: cn_fill_pattern(static_cast<uint16_t*>(p), n, uint16_t(pattern)); break;
    case 4: cn_fill_pattern(static_cast<uint32_t*>(p), n, uint32_t(pattern)); break;
    case 8: cn_fill_pattern(static_cast<uint64_t*>(p), n, pattern); break;
    default: break;
  }
}

CN_EXPORT int64_t cn_count(const void* p, int64_t n, int32_t elem, uint64_t pattern) {
  switch (elem) {
    case 1: return cn_count_pattern(static_cast<const uint8_t*>(p), n, uint8_t(pattern));
    case 2: return cn_count_pattern(static_cast<const uint16_t*>(p), n, uint16_t(pattern));
    case 4: return cn_count_pattern(static_cast<const uint32_t*>(p), n, uint32_t(pattern));
    case 8: return cn_count_pattern(static_cast<const uint64_t*>(p), n, pattern);
    default: return -1;
  }
}

// Failures this library's last launch found in the groups at positions <= pos of the order (the
// count of a launch that a fatal failure at `pos` stopped, whichever worker ran what).
CN_EXPORT int64_t cn_failures_upto(int64_t pos) {
  int64_t n = 0;
  for (size_t k = 0; k + 1 < cn::g.nlog && cn::g.log[k] <= pos; k += 2) n = cn::g.log[k + 1];
  return n;
}
#endif  // CN_RUNTIME_BODIES

#endif  // CN_CORE_H
