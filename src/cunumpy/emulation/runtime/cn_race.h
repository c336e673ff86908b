// cunumpy CPU emulation: data-race detection (included by cn_core.h).
//
// How accesses are seen. A race-checking build compiles the kernel with GCC/Clang's thread
// sanitizer instrumentation (`-fsanitize=thread`) but links none of its runtime: the compiler
// calls __tsan_read4(addr), __tsan_write8(addr), ... before every load and store the optimiser
// keeps, and this header defines those functions. So reads and writes are told apart exactly,
// through raw pointers, casts (`(uint*)shared_bytes`, `reinterpret_cast<float4*>(x)`), derived
// pointers, struct members and helpers alike; an access counts when its address falls in a
// tracked region: a writable buffer argument of the launch or a shared (threadgroup) array.
// Thread-private memory (locals, the fibers' stacks) and read-only inputs are not tracked.
//
// Memory model (what orders two accesses of different threads of one launch):
//   * same group, shared memory: a barrier that orders threadgroup memory (__syncthreads, or
//     threadgroup_barrier with mem_threadgroup) between them; device memory: a barrier that
//     orders device memory (__syncthreads, threadgroup_barrier with mem_device);
//   * same SIMD group / warp: a lane exchange both lanes took part in (__syncwarp, shuffles,
//     votes, simdgroup_barrier, simd_* functions), tracked with a vector clock per lane;
//   * different groups: nothing, except atomics against atomics (never a race) and a group
//     that published its writes with a device fence followed by an atomic, read by a thread
//     that has done an atomic itself (the "last block" pattern of fence-based reductions).
//   * locks: accesses made by two threads that both hold a lock (taken by a compare-and-swap or
//     exchange that turns 0 into another value, released by storing 0 there) are ordered;
//   * simdgroup_barrier(mem_none) meets but orders no memory.
// Two writes of the same bytes by two threads are tolerated (as GPUVerify does by default);
// a read against such a write is not. Accesses to different bytes of one granule never race.
//
// Tracked memory: writable buffer arguments, shared arrays, `__device__` variables (registered
// by DeviceVar objects the CUDA rewriter appends to their declarations); the kernel's memcpy,
// memmove and memset calls reach cn_race_memcpy & co (cn_cuda.h renames them in user code).
//
// Shadow state: one Entry per granule (the last write and the last two reads, 12 bytes each: 36
// bytes): 4 bytes of a buffer (its element size when smaller), the element size of a shared
// array (up to 4 bytes). Records name
// their thread, the barrier epoch of its group, its lane's clock, the bytes of the granule
// touched, whether the thread held a lock, and the access's code address (turned into file:line
// by the Python side). Nothing is cleared between groups or barriers: records carry the group
// (through the thread number) and the epoch, so a shared-memory record of an earlier group is
// stale and one of an earlier epoch is ordered. Buffers also have a compact word per granule
// (8 bytes): in a launch that runs its threads as a loop (no barriers, no lane clocks), a
// granule that one thread alone has touched, with whole-granule plain accesses, is recorded
// there only (the thread, its last access's code address, whether it wrote); the first access
// that needs more moves it into the Entry. Per access, the fast paths (access_compact,
// access_hot) are a test of the address against the region of the last access and, for tracked
// memory, one load and compare of the compact word (or of the Entry's records) and one to three
// stores.
#ifndef CN_RACE_H
#define CN_RACE_H

// CN_RACES, CN_NOTSAN and CN_BUILTIN are defined at the top of cn_core.h.

namespace cn {
namespace race {

constexpr int kMaxRegions = 64 + 256;
constexpr uint32_t kMaxWidth = 64;
constexpr uint16_t kAtomicBit = 0x8000;
constexpr uint16_t kCasBit = 0x4000;     // a compare-and-swap (tolerates plain reads)
constexpr uint16_t kEpochMask = 0x3FFF;

enum Access : int32_t { A_READ = 1, A_WRITE = 2, A_ATOMIC_READ = 3, A_ATOMIC_WRITE = 4 };

struct Rec {
  uint32_t thread = 0;  // 1 + linear thread number in the launch (group * threads per group + lin)
  uint32_t pc = 0;      // code offset of the access in the library (low 24 bits), launch (high 8)
  uint16_t epoch = 0;   // barrier epoch of the group (bit 15: atomic, bit 14: compare-and-swap)
  uint16_t clock = 0;   // the lane's clock, relative to the group's base (low 12 bits), and
                        // which bytes of the granule the access touched (high 4 bits)
};
constexpr uint32_t kClockMax = 0x0FFF;
constexpr uint32_t kPcMask = 0x1FFFFF;     // Rec::pc: code offset
constexpr uint32_t kLateBit = 0x200000;    // Rec::pc: device memory, after its group published its
                                           // writes (fence + atomic) in the same epoch
constexpr uint32_t kNarrowBit = 0x400000;  // Rec::pc: a block-scoped atomic, or made holding a
                                           // lock taken by one: orders nothing across groups
constexpr uint32_t kLockedBit = 0x800000;  // Rec::pc: made while holding a lock

// Bytes [lo, hi) of a granule (of at most 4 bytes) as the high 4 bits of Rec::clock.
CN_NOTSAN __attribute__((always_inline)) inline uint16_t byte_mask(uint32_t lo, uint32_t hi) {
  return uint16_t((((1u << (hi - lo)) - 1u) << lo) << 12);
}

struct Entry {
  Rec w, r1, r2;
};
static_assert(sizeof(Entry) == 36, "Entry: 36 bytes of shadow per granule");

// A compact word: the shadow of a buffer granule in a launch that runs its threads as a loop (no
// fibers, so no barrier epoch and no lane clock), while one thread only has touched it. Low 32
// bits: 1 + the thread's linear number; high 32 bits: its last access's code offset (kPcMask),
// whether it wrote (bit 23) and the launch number (top 8 bits), as in Rec::pc. Thread 0 with the
// running launch's number: the granule's Entry holds its records (two threads touched it, or an
// atomic, a lock or a partial access did). Any other launch number: untouched in this launch.
constexpr uint32_t kWroteBit = 0x800000;
CN_NOTSAN __attribute__((always_inline)) inline uint64_t compact_full(uint32_t gen) {
  return uint64_t(gen << 24) << 32;
}


struct Region {
  uintptr_t lo = 0, hi = 0;
  Entry* shadow = nullptr;
  uint64_t* compact = nullptr;  // buffers: compact words (loop-mode launches)
  int32_t id = 0;      // buffer slot, or -1 - k for shared slot k
  uint8_t shift = 0;   // log2 of the granule
  uint8_t shared = 0;  // shared (threadgroup) memory
  uint32_t elem = 0;   // element size of its declared type (reports name the element)
};

struct Pending {  // a write-write conflict kept until the writer's segment ends
  Entry* entry = nullptr;
  Rec prior = {};
  Region* region = nullptr;
  uintptr_t addr = 0;
  uint32_t bytes = 0;
  uint32_t pc = 0;
  unsigned char before[8] = {};
};

// Shadow memory kept mapped from one launch to the next (records of earlier launches are told
// apart by their launch number), so that a launch does not pay the page faults of fresh memory.
struct Shadow {
  void* mem = nullptr;
  size_t bytes = 0;
  bool used = false;
  bool compact = false;  // holds compact words (else entries): reused only as the same
};
constexpr int kPool = 160;
constexpr size_t kKeepBytes = size_t(64) << 20;  // larger shadows are unmapped after the launch

inline Region no_region;  // matches no address

struct Gap {  // [lo, hi): no tracked byte
  uintptr_t lo = 0, hi = 0;
};

// `__device__` variables of the kernel's source (registered by the static DeviceVar objects the
// CUDA rewriter appends to their declarations): tracked like buffers, reported by name.
constexpr int kMaxDeviceVars = 64;
constexpr int32_t kDeviceVarId = 1 << 20;  // Region::id of device variable j: kDeviceVarId + j
struct DeviceVarInfo {
  uintptr_t at = 0;
  size_t bytes = 0;
  size_t elem = 0;
  const char* name = nullptr;
};
inline DeviceVarInfo device_vars[kMaxDeviceVars];
inline int ndevice_vars = 0;

template <class T>
using element_of = std::remove_cv_t<std::remove_all_extents_t<T>>;

struct DeviceVar {
  CN_NOTSAN DeviceVar(const volatile void* at, size_t bytes, size_t elem, const char* name) {
    if (ndevice_vars >= kMaxDeviceVars) return;
    DeviceVarInfo& v = device_vars[ndevice_vars++];
    v.at = uintptr_t(at);
    v.bytes = bytes;
    v.elem = elem;
    v.name = name;
  }
};

struct State {
  // What every access reads first, in one cache line: the region of the last tracked access
  // (copied, so that the address test loads no pointer first), untracked ranges.
  uintptr_t hot_lo = 0, hot_len = 0;  // its bytes [hot_lo, hot_lo + hot_len); 0: none
  Entry* hot_shadow = nullptr;
  uint64_t* hot_compact = nullptr;  // its compact words in a loop-mode launch, else null
  uint8_t hot_shift = 0;
  uint8_t hot_shared = 0;
  uint32_t hot_gsize = 0;  // its granule's bytes
  bool compact_launch = false;  // the launch runs its threads as a loop (no fibers)
  bool compact_on = false;      // compact records for this group: a loop, no barrier yet
  Region* last = &no_region;  // the region of the last tracked access
  Gap gaps[8] = {};           // untracked address ranges, by 4 KiB page % 8 of an access in them
  int nregions = 0;           // buffers first, then shared slots
  uint32_t gen = 0;           // launch number (8 bits) in Rec::pc
  uint32_t gfirst = 0;        // linear number of the running group's first thread
  int atomic_depth = 0;
  uintptr_t base = 0;         // load address of this library
  uint16_t ep_tg = 0, ep_dev = 0;  // barrier epochs of the running group
  int32_t published = 0;  // the running group published its writes in this device epoch
  uint16_t* thread_pub = nullptr;  // per thread of the group: 1 + the device epoch it published in
  bool lanes = false;
  bool on = false;
  uint32_t held = 0;  // locks held by threads of the running group
  bool unordered_sync = false;  // the lane exchange being resolved orders no memory
  int cas_depth = 0;
  uint32_t width = 32;
  uint32_t* vc = nullptr;  // lane clocks: vc[lin * width + lane] (fiber mode only)
  uint32_t clk_base = 0, clk_max = 0;
  // The rest.
  Shadow pool[kPool];
  Region regions[kMaxRegions];
  int nbuffers = 0;
  uint32_t dsz = 1;     // threads per group at dispatch
  uint32_t glin = 0;
  uint32_t vc_cap = 0;
  // Fence-and-atomic publication between groups.
  uint8_t* fenced = nullptr;    // per thread of the group: fence since its last atomic (1 block, 2 device)
  uint8_t* acquired = nullptr;  // per thread: has done an atomic (1 group-scoped, 2 device-scoped)
  uint16_t* released = nullptr;  // per group: 1 + last device epoch published (0: none)
  uint64_t ngroups = 0;
  uint32_t thread_cap = 0;
  // Locks (atomicCAS(l, 0, v) / atomicExch(l, v) seeing 0 acquires, storing 0 releases), per
  // thread of the group: the lock held and how many times.
  uintptr_t* lock_at = nullptr;
  uint32_t* lock_depth = nullptr;
  uint8_t* lock_scope = nullptr;  // per thread: its lock's scope (1 block, 2 device: the atomic's)
  int32_t block_depth = 0;         // inside a block-scoped atomic
  // Fences of a critical section, per thread, as levels (0 none, 1 block, 2 device): since the
  // lock was taken, since the thread's last access under it, and the level of the release that
  // handed the lock over (lock_released). An access under a lock is protected at the lowest of
  // the lock's scope and these: unprotected (0), within the group (1) or everywhere (2).
  uint8_t* cs_acquire = nullptr;
  uint8_t* cs_since = nullptr;
  uint8_t* cs_handed = nullptr;
  static constexpr int kLockSlots = 16;
  uintptr_t lock_addr[kLockSlots] = {};
  uint8_t lock_level[kLockSlots] = {};
  int nlocks = 0;
  // Spin-wait guard: atomics of the running thread on one address that keep seeing one value.
  uintptr_t spin_at = 0;
  uint64_t spin_old = 0;
  uint32_t spin_thread = 0;
  uint32_t spin_count = 0;
  Pending pending[64];
  int npending = 0;
  Entry* shared_shadow[256] = {};
  size_t shared_cap[256] = {};
};

// Constant-initialised (checked here): the hooks run from static initialisers of instrumented
// code too, before any dynamic initialisation of this header's state could have run.
constexpr State kStateInit{};
inline State st;

CN_NOTSAN inline void clear_misses() {
  for (Gap& m : st.gaps) m = Gap{};
}

// The region that the next access tests first.
CN_NOTSAN inline void set_last(Region* r) {
  State& s = st;
  s.last = r;
  s.hot_lo = r->lo;
  s.hot_len = r->hi - r->lo;
  s.hot_shadow = r->shadow;
  s.hot_compact = s.compact_launch ? r->compact : nullptr;
  s.hot_shift = r->shift;
  s.hot_gsize = 1u << r->shift;
  s.hot_shared = r->shared;
}

struct AtomicScope {
  CN_NOTSAN AtomicScope() { ++st.atomic_depth; }
  CN_NOTSAN ~AtomicScope() { --st.atomic_depth; }
};

// A compare-and-swap. The loop that reads the old value plainly and retries with atomicCAS (the
// CUDA programming guide's way to build atomics on other types) is not reported: plain reads
// never race with a compare-and-swap (they still race with every other atomic and write).
struct CasScope {
  CN_NOTSAN CasScope() { ++st.atomic_depth; ++st.cas_depth; }
  CN_NOTSAN ~CasScope() { --st.atomic_depth; --st.cas_depth; }
};

// A block-scoped atomic (atomicAdd_block, ...): atomic only for the threads of its own group.
// Against an access of another group it is a plain access, and a lock it takes does not order
// the accesses of two groups.
struct BlockScope {
  CN_NOTSAN BlockScope() { ++st.block_depth; }
  CN_NOTSAN ~BlockScope() { --st.block_depth; }
};

CN_NOTSAN inline void* map_zero(size_t bytes) {
  if (!bytes) return nullptr;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return m == MAP_FAILED ? nullptr : m;
}

CN_NOTSAN inline uint8_t granule_shift(size_t elem) {
  uint8_t s = 0;
  while (s < 2 && elem % (size_t(2) << s) == 0) ++s;
  return s;
}

// Zeroed (or reused, of the same kind) shadow for `bytes` of memory in granules of 1 << shift:
// entries, or compact words (`compact`).
CN_NOTSAN inline void* region_shadow(size_t bytes, uint8_t shift, bool compact) {
  State& s = st;
  size_t need = ((bytes + (size_t(1) << shift) - 1) >> shift) *
                (compact ? sizeof(uint64_t) : sizeof(Entry));
  Shadow* best = nullptr;
  for (Shadow& q : s.pool)
    if (!q.used && q.mem && q.compact == compact && q.bytes >= need &&
        (!best || q.bytes < best->bytes))
      best = &q;
  if (!best) {
    for (Shadow& q : s.pool) if (!q.mem) { best = &q; break; }
    if (!best) return nullptr;
    best->mem = map_zero(need);
    best->bytes = best->mem ? need : 0;
    best->compact = compact;
    if (!best->mem) return nullptr;
  }
  best->used = true;
  return best->mem;
}

// A buffer's shadow: entries and compact words (false when out of memory).
CN_NOTSAN inline bool buffer_shadow(Region& r, size_t bytes) {
  r.shadow = static_cast<Entry*>(region_shadow(bytes, r.shift, false));
  r.compact = static_cast<uint64_t*>(region_shadow(bytes, r.shift, true));
  return r.shadow && r.compact;
}

CN_NOTSAN inline void drop_pool(bool all) {
  for (Shadow& q : st.pool) {
    q.used = false;
    if (q.mem && (all || q.bytes > kKeepBytes)) {
      munmap(q.mem, q.bytes);
      q.mem = nullptr;
      q.bytes = 0;
    }
  }
}

// Launch start: tracked buffers (writable arguments), the library's load address.
CN_NOTSAN inline void begin_launch(const LaunchDesc* d, uint64_t ngroups, uint32_t threads_per_group) {
  State& s = st;
  s.on = CN_RACES && (d->flags & LAUNCH_RACES) != 0;
  s.nregions = s.nbuffers = 0;
  set_last(&no_region);
  clear_misses();
  s.npending = 0;
  s.atomic_depth = 0;
  s.block_depth = 0;
  s.nlocks = 0;
  s.clk_base = s.clk_max = 0;
  s.lanes = false;
  if (!CN_RACES || !s.on) return;
  s.gen = (s.gen + 1) & 0xFF;
  if (s.gen == 0) {  // launch numbers wrap: start from zeroed shadow memory
    drop_pool(true);
    for (int k = 0; k < 256; ++k) {
      if (s.shared_shadow[k]) munmap(s.shared_shadow[k], s.shared_cap[k]);
      s.shared_shadow[k] = nullptr;
      s.shared_cap[k] = 0;
    }
    s.gen = 1;
  }
  Dl_info info;
  s.base = dladdr(reinterpret_cast<void*>(&begin_launch), &info) ? uintptr_t(info.dli_fbase) : 0;
  for (int k = 0; k < d->nbuffers && s.nregions < 64; ++k) {
    const Buffer& b = d->buffers[k];
    if (!b.track || !b.data || b.bytes <= 0) continue;
    Region& r = s.regions[s.nregions];
    r.lo = uintptr_t(b.data);
    r.hi = r.lo + uintptr_t(b.bytes);
    r.shift = granule_shift(size_t(b.elem > 0 ? b.elem : 4));
    const bool ok = buffer_shadow(r, size_t(b.bytes));
    r.id = k;
    r.shared = 0;
    r.elem = uint32_t(b.elem > 0 ? b.elem : 0);
    if (!ok) continue;
    ++s.nregions;
  }
  for (int j = 0; j < ndevice_vars && s.nregions < 64; ++j) {
    const DeviceVarInfo& v = device_vars[j];
    Region& r = s.regions[s.nregions];
    r.lo = v.at;
    r.hi = v.at + v.bytes;
    r.shift = granule_shift(v.elem ? v.elem : 4);
    const bool ok = buffer_shadow(r, v.bytes);
    r.id = kDeviceVarId + j;
    r.shared = 0;
    r.elem = uint32_t(v.elem);
    if (ok) ++s.nregions;
  }
  s.nbuffers = s.nregions;
  s.ngroups = ngroups;
  s.released = static_cast<uint16_t*>(map_zero(size_t(ngroups < (1u << 26) ? ngroups : 0) * 2));
  if (threads_per_group > s.thread_cap) {
    std::free(s.fenced);
    std::free(s.acquired);
    std::free(s.lock_at);
    std::free(s.lock_depth);
    std::free(s.lock_scope);
    std::free(s.cs_acquire);
    std::free(s.cs_since);
    std::free(s.cs_handed);
    std::free(s.thread_pub);
    s.lock_at = static_cast<uintptr_t*>(std::calloc(threads_per_group, sizeof(uintptr_t)));
    s.lock_depth = static_cast<uint32_t*>(std::calloc(threads_per_group, sizeof(uint32_t)));
    s.lock_scope = static_cast<uint8_t*>(std::calloc(threads_per_group, 1));
    s.cs_acquire = static_cast<uint8_t*>(std::calloc(threads_per_group, 1));
    s.cs_since = static_cast<uint8_t*>(std::calloc(threads_per_group, 1));
    s.cs_handed = static_cast<uint8_t*>(std::calloc(threads_per_group, 1));
    s.thread_pub = static_cast<uint16_t*>(std::calloc(threads_per_group, sizeof(uint16_t)));
    s.fenced = static_cast<uint8_t*>(std::calloc(threads_per_group, 1));
    s.acquired = static_cast<uint8_t*>(std::calloc(threads_per_group, 1));
    s.thread_cap = threads_per_group;
  }
}

CN_NOTSAN inline void end_launch() {
  State& s = st;
  if (!CN_RACES || !s.on) return;
  drop_pool(false);
  if (s.released) munmap(s.released, size_t(s.ngroups) * 2);
  s.released = nullptr;
  s.nregions = s.nbuffers = 0;
  set_last(&no_region);
  clear_misses();
  s.on = false;
}

// A group starts: fresh epochs, lane clocks above every clock used so far.
CN_NOTSAN inline void begin_group(uint32_t glin, uint32_t dsz, uint32_t nthreads, uint32_t width,
                                  bool fibers) {
  State& s = st;
  if (!CN_RACES || !s.on) return;
  s.glin = glin;
  s.dsz = dsz;
  s.gfirst = glin * dsz;
  s.width = width < kMaxWidth ? width : kMaxWidth;
  s.ep_tg = s.ep_dev = 0;
  s.compact_launch = s.compact_on = !fibers;
  s.published = 0;
  s.nregions = s.nbuffers;  // shared slots register again as they are allocated
  set_last(&no_region);
  clear_misses();
  std::memset(s.fenced, 0, nthreads);
  std::memset(s.lock_at, 0, nthreads * sizeof(uintptr_t));
  std::memset(s.lock_depth, 0, nthreads * sizeof(uint32_t));
  std::memset(s.lock_scope, 0, nthreads);
  std::memset(s.cs_acquire, 0, nthreads);
  std::memset(s.cs_since, 0, nthreads);
  std::memset(s.cs_handed, 0, nthreads);
  std::memset(s.thread_pub, 0, nthreads * sizeof(uint16_t));
  s.held = 0;
  s.spin_count = 0;
  std::memset(s.acquired, 0, nthreads);
  s.lanes = fibers;
  if (!fibers) return;
  uint32_t need = nthreads * s.width;
  if (need > s.vc_cap) {
    std::free(s.vc);
    s.vc = static_cast<uint32_t*>(std::calloc(need, sizeof(uint32_t)));
    s.vc_cap = need;
  }
  s.clk_base = s.clk_max + 1;
  s.clk_max = s.clk_base;
  for (uint32_t i = 0; i < nthreads; ++i) s.vc[i * s.width + i % s.width] = s.clk_base;
}

// How an access of thread `t` is protected by the lock it holds: kLockedBit when fences make the
// critical section order it (see State::cs_acquire), with kNarrowBit when only within its group
// (a block-scoped lock or block fences); 0 when it holds no lock or the fences are missing.
// A plain access (`plain`) then needs a fence before the release.
CN_NOTSAN __attribute__((always_inline)) inline uint32_t locked_bit(const ThreadInfo* t,
                                                                    bool plain) {
  if (!st.held || !st.lock_depth[t->lin]) return 0;
  uint32_t lin = t->lin;
  uint32_t level = st.lock_scope[lin];
  level = st.cs_acquire[lin] < level ? st.cs_acquire[lin] : level;
  level = st.cs_handed[lin] < level ? st.cs_handed[lin] : level;
  if (plain) st.cs_since[lin] = 0;
  // kNarrowBit alone: inside a critical section without the fences (see unfenced()).
  return level == 0 ? kNarrowBit : level == 1 ? kLockedBit | kNarrowBit : kLockedBit;
}

// The level of the release that last handed over the lock at `at` (2 for a lock not seen yet).
CN_NOTSAN inline uint8_t& lock_slot(uintptr_t at) {
  State& s = st;
  for (int k = 0; k < s.nlocks; ++k) {
    if (s.lock_addr[k] == at) return s.lock_level[k];
  }
  int k = s.nlocks < State::kLockSlots ? s.nlocks++ : State::kLockSlots - 1;
  s.lock_addr[k] = at;
  s.lock_level[k] = 2;
  return s.lock_level[k];
}

// The running thread releases its lock at `at`: the next holder's accesses are ordered after its
// own only as far as a fence after its last access under the lock reaches.
CN_NOTSAN inline void lock_released(uintptr_t at, uint32_t lin) {
  State& s = st;
  lock_slot(at) = s.cs_since[lin] < s.lock_scope[lin] ? s.cs_since[lin] : s.lock_scope[lin];
}

// A shared slot was placed for this group.
CN_NOTSAN inline void shared_slot(int k, void* at, size_t size, size_t elem) {
  State& s = st;
  if (!CN_RACES || !s.on || s.nregions >= kMaxRegions || k < 0 || k >= 256) return;
  uint8_t shift = granule_shift(elem ? elem : 1);
  size_t n = (size + (size_t(1) << shift) - 1) >> shift;
  size_t bytes = n * sizeof(Entry);
  if (bytes > s.shared_cap[k]) {
    if (s.shared_shadow[k]) munmap(s.shared_shadow[k], s.shared_cap[k]);
    s.shared_shadow[k] = static_cast<Entry*>(map_zero(bytes));
    s.shared_cap[k] = s.shared_shadow[k] ? bytes : 0;
  }
  if (!s.shared_shadow[k]) return;
  Region& r = s.regions[s.nregions++];
  clear_misses();
  r.lo = uintptr_t(at);
  r.hi = r.lo + size;
  r.shadow = s.shared_shadow[k];
  r.compact = nullptr;
  r.id = -1 - k;
  r.shift = shift;
  r.shared = 1;
  r.elem = uint32_t(elem);
}

// A barrier released the group: `flags` says which memory it orders.
CN_NOTSAN inline void barrier(int flags) {
  State& s = st;
  if (!CN_RACES || !s.on) return;
  s.compact_on = false;  // compact records carry no epoch: from here on, entries only
  if (flags & BARRIER_SHARED) s.ep_tg = uint16_t((s.ep_tg + 1) & kEpochMask);
  if (flags & BARRIER_DEVICE) {
    s.ep_dev = uint16_t((s.ep_dev + 1) & kEpochMask);
    s.published = 0;
  }
}

// The lanes of SIMD group `sub` in `lanes` (non-null) took part in one exchange.
CN_NOTSAN inline void lanes_synced(Fiber** lanes, uint32_t w, uint32_t sub, uint32_t nthreads) {
  State& s = st;
  if (s.unordered_sync) {
    s.unordered_sync = false;
    return;
  }
  if (!CN_RACES || !s.on || !s.lanes) return;
  const uint32_t W = s.width;
  uint32_t join[kMaxWidth] = {};
  uint32_t lo = sub * w;
  for (uint32_t i = 0; i < w && i < W; ++i) {
    if (!lanes[i] || lo + i >= nthreads) continue;
    uint32_t* v = s.vc + (lo + i) * W;
    uint32_t own = ++v[i];
    if (own > s.clk_max) s.clk_max = own;
    for (uint32_t j = 0; j < W; ++j) join[j] = v[j] > join[j] ? v[j] : join[j];
  }
  for (uint32_t i = 0; i < w && i < W; ++i) {
    if (!lanes[i] || lo + i >= nthreads) continue;
    std::memcpy(s.vc + (lo + i) * W, join, W * sizeof(uint32_t));
  }
}

// A device-memory fence by the running thread (__threadfence, atomic_thread_fence(mem_device)).
CN_NOTSAN inline void fence() {
  State& s = st;
  if (!CN_RACES || !s.on || !g.cur) return;
  uint32_t lin = g.cur->lin;
  s.fenced[lin] = 2;
  if (s.cs_acquire) s.cs_acquire[lin] = s.cs_since[lin] = 2;
}

// A fence that orders memory for the running thread's group only (__threadfence_block).
CN_NOTSAN inline void fence_block() {
  State& s = st;
  if (!CN_RACES || !s.on || !g.cur || !s.cs_acquire) return;
  uint32_t lin = g.cur->lin;
  if (s.fenced[lin] < 1) s.fenced[lin] = 1;
  if (s.cs_acquire[lin] < 1) s.cs_acquire[lin] = 1;
  if (s.cs_since[lin] < 1) s.cs_since[lin] = 1;
}

// Thrown out of a thread that spins on an atomic nothing changes (caught by the launch glue).
struct Stuck {};
constexpr uint32_t kSpinLimit = 1u << 24;

__attribute__((noinline, cold)) CN_NOTSAN inline void stuck(uintptr_t at) {
  int k = -1;
  State& s = st;
  for (int j = 0; j < s.nregions; ++j)
    if (at - s.regions[j].lo < s.regions[j].hi - s.regions[j].lo) k = j;
  fail_fatal(ERR_INTERNAL, 0, nullptr,
             "a thread repeated an atomic operation %u times on %s%s and saw the same value every "
             "time: it waits for another thread, but the emulator runs the threads of a group "
             "one after another between barriers (and the groups one after another), so the "
             "thread it waits for cannot run; wait at a barrier instead, or split the kernel in "
             "two launches",
             kSpinLimit, k >= 0 && s.regions[k].shared ? "shared memory" : "device memory",
             k >= 0 ? "" : " (untracked)");
  throw Stuck{};
}

// The bits of an atomic's value (up to 8 bytes; larger ones compare as 1).
template <class T>
CN_NOTSAN __attribute__((always_inline)) inline uint64_t bits(const T& v) {
  uint64_t b = 0;
  if constexpr (sizeof(T) <= 8) {
    __builtin_memcpy(&b, &v, sizeof(T));
  } else {
    b = 1;
  }
  return b;
}

// An atomic by the running thread at `at` that found `old` and left `now` (`wrote`: it stored).
// Takes and releases locks (a compare-and-swap or exchange turning 0 into another value takes
// one; storing 0 where the thread holds one releases it) and stops spin-waits that cannot end.
CN_NOTSAN inline void sync_op(const volatile void* p, uint64_t old, uint64_t now, bool wrote,
                              bool lock_like) {
  State& s = st;
  const ThreadInfo* t = g.cur;
  if (!CN_RACES || !s.on || !t || !s.lock_at) return;
  const uintptr_t at = uintptr_t(p);
  const uint32_t th = s.gfirst + t->lin + 1;
  if (at == s.spin_at && th == s.spin_thread && old == s.spin_old) {
    if (++s.spin_count >= kSpinLimit) stuck(at);
  } else {
    s.spin_at = at;
    s.spin_thread = th;
    s.spin_old = old;
    s.spin_count = 0;
  }
  if (!wrote) return;
  uint32_t& depth = s.lock_depth[t->lin];
  if (lock_like && old == 0 && now != 0 && (depth == 0 || s.lock_at[t->lin] == at)) {
    s.lock_at[t->lin] = at;
    if (depth == 0) {
      s.lock_scope[t->lin] = s.block_depth > 0 ? 1 : 2;
      s.cs_acquire[t->lin] = 0;
      s.cs_since[t->lin] = 2;
      s.cs_handed[t->lin] = lock_slot(at);
    }
    ++depth;
    ++s.held;
  } else if (now == 0 && depth && s.lock_at[t->lin] == at) {
    if (depth == 1) lock_released(at, t->lin);
    --depth;
    --s.held;
  }
}

// The running thread's plain store of zero at `at` releases a lock it holds there.
CN_NOTSAN inline bool plain_release(uintptr_t at, const ThreadInfo* t) {
  State& s = st;
  if (!s.held || !s.lock_depth[t->lin] || s.lock_at[t->lin] != at) return false;
  return true;
}

CN_NOTSAN inline void decompose(uint32_t lin, const uint32_t* size, uint32_t* out) {
  uint32_t sx = size[0] ? size[0] : 1, sy = size[1] ? size[1] : 1;
  out[0] = lin % sx;
  out[1] = (lin / sx) % sy;
  out[2] = lin / (sx * sy);
}

CN_NOTSAN inline int32_t kind_of(const Rec& r, bool write) {
  bool atomic = (r.epoch & kAtomicBit) != 0;
  return write ? (atomic ? A_ATOMIC_WRITE : A_WRITE) : (atomic ? A_ATOMIC_READ : A_READ);
}

__attribute__((noinline, cold)) CN_NOTSAN inline void report(const Region& r, uintptr_t addr,
                                                             int32_t kind, uint32_t pc,
                                                             const Rec& prior, int32_t prior_kind) {
  Report* rep = begin_failure(ERR_RACE);
  if (!rep) return;
  const ThreadInfo* t = g.cur;
  rep->buffer = r.id;
  const bool var = r.id >= kDeviceVarId && r.id - kDeviceVarId < ndevice_vars;
  std::snprintf(rep->detail, sizeof(rep->detail), "%s:%u",
                var ? device_vars[r.id - kDeviceVarId].name : "", r.elem);
  rep->index = int64_t(addr - r.lo);
  rep->extent = int64_t(r.hi - r.lo);
  rep->access[0] = kind;
  rep->access[1] = prior_kind;
  rep->pc[0] = pc & kPcMask;
  rep->pc[1] = prior.pc & kPcMask;
  if (!t) return;
  uint32_t pt = prior.thread - 1;
  uint32_t pg = pt / (st.dsz ? st.dsz : 1), plin = pt % (st.dsz ? st.dsz : 1);
  rep->lane = (pt - st.gfirst < st.dsz && plin / st.width == t->lin / st.width) ? 1 : 0;
  uint32_t gid[3], gsize[3];
  decompose(pg, t->ngroups, gid);
  for (int d = 0; d < 3; ++d) {
    uint32_t left = t->grid[d] - gid[d] * t->dsize[d];
    gsize[d] = left < t->dsize[d] ? left : t->dsize[d];
    rep->group2[d] = gid[d];
  }
  decompose(plin, gsize, rep->thread2);
}

// Whether the earlier access `p` is ordered before the running thread's access (or does not
// matter: a shared-memory record of an earlier group).
CN_NOTSAN __attribute__((always_inline)) inline bool live(const Rec& r) {
  return r.thread && (r.pc >> 24) == st.gen;
}

// A plain access made inside a critical section whose fences are missing (locked_bit): it may
// move out of the section, so no publication orders it.
CN_NOTSAN __attribute__((always_inline)) inline bool unfenced(const Rec& r) {
  return (r.pc & (kNarrowBit | kLockedBit)) == kNarrowBit && !(r.epoch & kAtomicBit);
}

// `publish`: publications (fence + atomic) may order the two accesses.
CN_NOTSAN inline bool ordered(const Rec& p, bool shared, uint16_t epoch, const ThreadInfo* t,
                              bool publish = true) {
  State& s = st;
  uint32_t pt = p.thread - 1;
  uint32_t plin = pt - s.gfirst;
  publish = publish && !unfenced(p);
  if (plin >= s.dsz) {
    if (shared) return true;  // another group's instance of the array
    if (!publish || !s.released || s.acquired[t->lin] < 2 || (p.pc & kLateBit)) return false;
    uint64_t pg = pt / s.dsz;
    return pg < s.ngroups && s.released[pg] > (p.epoch & kEpochMask);
  }
  if ((p.epoch & kEpochMask) != epoch) return true;
  // Message passing inside the group: a device write made before the group's first publication
  // (fence + atomic) in this interval, by a thread that published, is ordered before an access
  // of a thread that has done an atomic since (a flag raised with atomicExch and waited for).
  if (publish && !shared && s.acquired[t->lin] && !(p.pc & kLateBit) &&
      s.thread_pub[plin] == uint16_t(epoch + 1)) {
    return true;
  }
  if (!s.lanes) return false;
  const uint32_t W = s.width;
  if (plin / W != t->lin / W) return false;
  return s.vc[t->lin * W + plin % W] > s.clk_base + (p.clock & kClockMax);
}

CN_NOTSAN inline void flush_pending() {
  State& s = st;
  for (int k = 0; k < s.npending; ++k) {
    Pending& q = s.pending[k];
    if (std::memcmp(reinterpret_cast<const void*>(q.addr), q.before, q.bytes) == 0) continue;
    report(*q.region, q.addr, A_WRITE, q.pc, q.prior, kind_of(q.prior, true));
  }
  s.npending = 0;
}

// Whether the earlier record `q` (a write record when `q_write`) conflicts with the running
// thread's access described by the rest.
CN_NOTSAN __attribute__((always_inline)) inline bool conflicts(const Rec& q, bool q_write,
                                                              const Rec& me, bool write,
                                                              bool atomic, bool cas, bool shared,
                                                              uint16_t epoch, const ThreadInfo* t) {
  if (!live(q) || q.thread == me.thread) return false;
  if ((q.clock & me.clock & 0xF000) == 0) return false;  // different bytes of the granule
  // Block scope (a block-scoped atomic or lock) orders nothing between threads of two groups.
  const bool narrow = ((q.pc | me.pc) & kNarrowBit) && uint32_t(q.thread - 1 - st.gfirst) >= st.dsz;
  if ((q.pc & me.pc & kLockedBit) && !narrow) return false;  // both inside critical sections
  if (atomic && (q.epoch & kAtomicBit) && !narrow) return false;
  if (cas && !q_write && !(q.epoch & kAtomicBit)) return false;          // CAS vs plain read
  if (!write && !atomic && q_write && (q.epoch & kCasBit)) return false;  // plain read vs CAS
  return !ordered(q, shared, epoch, t, !unfenced(me));
}

// A granule's compact word moved into its Entry, which holds its records from here on: the record
// of a thread's whole-granule accesses, made with no lock held, no atomic, at epoch 0 (a loop has
// no barriers) and lane clock 0.
CN_NOTSAN inline void to_entry(uint64_t& c, Entry& e, uint8_t shift) {
  const uint32_t gen = st.gen;
  const uint32_t hi = uint32_t(c >> 32);
  if ((hi >> 24) == gen && uint32_t(c) == 0) return;  // already moved
  if ((hi >> 24) == gen) {
    Rec q;
    q.thread = uint32_t(c);
    q.pc = hi & ~kWroteBit;
    q.epoch = 0;
    q.clock = byte_mask(0, 1u << shift);
    e.w = (hi & kWroteBit) ? q : Rec{};
    e.r1 = (hi & kWroteBit) ? Rec{} : q;
    e.r2 = Rec{};
  }
  // Not touched in this launch: the Entry's records are of earlier launches (never live).
  c = compact_full(gen);
}

// The running thread's access of `size` bytes at `a` in region `r`, from code address `ret`.
__attribute__((noinline)) CN_NOTSAN inline void access_in(Region* r, uintptr_t a, uint32_t size,
                                                          bool write, void* ret) {
  State& s = st;
  const ThreadInfo* t = g.cur;
  if (!t) return;
  bool atomic = s.atomic_depth > 0;
  if (!atomic && write && s.held && plain_release(a, t)) {
    // `lock = 0` by the thread holding the lock: a release, ordered like an atomic.
    atomic = true;
    if (s.lock_depth[t->lin] == 1) lock_released(a, t->lin);
    --s.lock_depth[t->lin];
    --s.held;
  }
  const bool shared = r->shared != 0;
  const uint16_t epoch = shared ? s.ep_tg : s.ep_dev;
  Rec me;
  me.thread = s.gfirst + t->lin + 1;
  me.pc = (uint32_t(uintptr_t(ret) - s.base - 1) & kPcMask) | (s.gen << 24) |
          locked_bit(t, !atomic);
  if (atomic) me.pc = (me.pc & ~kNarrowBit) | (s.block_depth > 0 ? kNarrowBit : 0);
  const bool cas = s.cas_depth > 0;
  me.epoch = uint16_t(epoch | (atomic ? kAtomicBit : 0) | (cas ? kCasBit : 0));
  uint32_t clock = 0;
  if (s.lanes) {
    uint32_t own = s.vc[t->lin * s.width + t->lin % s.width] - s.clk_base;
    clock = own < kClockMax ? own : kClockMax;
  }
  if (!atomic && write && !shared && s.held && s.lock_depth[t->lin]) {
    s.fenced[t->lin] = 0;  // a write inside a critical section after its fence: not published
  }
  if (!atomic && !shared && s.published) me.pc |= kLateBit;
  if (atomic) {
    // A fence then an atomic publishes the thread's earlier device writes: to the other groups
    // when both are device-scoped and the atomic is on device memory, to its own group always.
    // An atomic acquires likewise (acquired: 2 device-wide, 1 in the group).
    const bool wide = !shared && s.block_depth == 0;
    const uint8_t f = s.fenced[t->lin];
    if (f) {
      uint16_t v = uint16_t(s.ep_dev + 1);
      if (wide && f >= 2 && s.released && s.glin < s.ngroups && v > s.released[s.glin]) {
        s.released[s.glin] = v;
      }
      s.published = 1;
      s.thread_pub[t->lin] = v;
      s.fenced[t->lin] = 0;
    }
    if (wide) s.acquired[t->lin] = 2;
    else if (!s.acquired[t->lin]) s.acquired[t->lin] = 1;
  }
  uintptr_t off = a - r->lo;
  uintptr_t end = off + (size ? size : 1);
  if (end > r->hi - r->lo) end = r->hi - r->lo;
  const uintptr_t first = off >> r->shift, last = (end - 1) >> r->shift;
  bool reported = false;
#define CN_CONFLICTS(Q, QW) conflicts(Q, QW, me, write, atomic, cas, shared, epoch, t)
  const uintptr_t gbytes = uintptr_t(1) << r->shift;
  for (uintptr_t k = first; k <= last; ++k) {
    Entry& e = r->shadow[k];
    if (s.compact_launch && r->compact) to_entry(r->compact[k], e, r->shift);
    const uintptr_t g0 = k << r->shift;  // the granule's offset
    me.clock = uint16_t(clock | byte_mask(uint32_t((off > g0 ? off : g0) - g0),
                                          uint32_t((end < g0 + gbytes ? end : g0 + gbytes) - g0)));
    const uintptr_t at = r->lo + (off > g0 ? off : g0);  // the first byte of this granule accessed
    if (write) {
      if (!reported && CN_CONFLICTS(e.w, true)) {
        uintptr_t ga = r->lo + (k << r->shift);
        uint32_t gb = uint32_t(size_t(1) << r->shift);
        if (!atomic && !(e.w.epoch & kAtomicBit) && gb <= 8) {
          // Tolerated when this write stores the bytes already there: decided when the thread
          // leaves its segment (or here, for the earlier ones, whose stores are done by now).
          if (s.npending == 64) flush_pending();
          Pending& q = s.pending[s.npending++];
          q.entry = &e;
          q.prior = e.w;
          q.region = r;
          q.addr = ga;
          q.bytes = gb;
          q.pc = me.pc;
          std::memcpy(q.before, reinterpret_cast<const void*>(ga), gb);
        } else {
          report(*r, at, atomic ? A_ATOMIC_WRITE : A_WRITE, me.pc, e.w, kind_of(e.w, true));
        }
        reported = true;
      }
      if (!reported && CN_CONFLICTS(e.r1, false)) {
        report(*r, at, atomic ? A_ATOMIC_WRITE : A_WRITE, me.pc, e.r1, kind_of(e.r1, false));
        reported = true;
      } else if (!reported && CN_CONFLICTS(e.r2, false)) {
        report(*r, at, atomic ? A_ATOMIC_WRITE : A_WRITE, me.pc, e.r2, kind_of(e.r2, false));
        reported = true;
      }
      e.w = me;
      e.r1 = Rec{};
      e.r2 = Rec{};
    } else {
      if (!reported && CN_CONFLICTS(e.w, true)) {
        report(*r, at, atomic ? A_ATOMIC_READ : A_READ, me.pc, e.w, kind_of(e.w, true));
        reported = true;
      }
      if (!live(e.r1) || e.r1.thread == me.thread || ordered(e.r1, shared, epoch, t)) {
        e.r1 = me;
      } else {
        e.r2 = me;
      }
    }
  }
#undef CN_CONFLICTS
}

// The region holding `a` other than the last one used, or null (untracked memory). The range
// of untracked addresses around `a` is remembered, so that the next untracked accesses to it
// (the rest of a read-only input, mostly) return at once.
CN_NOTSAN __attribute__((noinline)) inline Region* find_other(uintptr_t a) {
  State& s = st;
  uintptr_t lo = 0, hi = ~uintptr_t(0);
  for (int k = 0; k < s.nregions; ++k) {
    Region& q = s.regions[k];
    if (a - q.lo < q.hi - q.lo) {
      set_last(&q);
      return &q;
    }
    if (q.hi <= a && q.hi > lo) lo = q.hi;
    if (q.lo > a && q.lo < hi) hi = q.lo;
  }
  s.gaps[(a >> 12) & 7] = Gap{lo, hi};
  return nullptr;
}

// A tracked access in a loop-mode launch (no lane clocks, no barrier epochs) to a buffer: the
// compact word, while the granule is this thread's alone and the access covers it whole,
// outside atomics and locks; else the granule's Entry (access_in moves the compact word there).
CN_NOTSAN __attribute__((always_inline)) inline void access_compact(uintptr_t a, uint32_t size,
                                                                   bool write, void* ret) {
  State& s = st;
  const uintptr_t off = a - s.hot_lo;
  const uint32_t n = size ? size : 1;
  const ThreadInfo* t = g.cur;
  if (__builtin_expect(s.compact_on && (s.atomic_depth | int(s.held) | s.published) == 0 &&
                           t != nullptr && n == s.hot_gsize && (off & (n - 1)) == 0 &&
                           off + n <= s.hot_len,
                       1)) {
    const uint32_t th = s.gfirst + t->lin + 1;
    const uint32_t gen = s.gen;
    uint64_t& c = s.hot_compact[off >> s.hot_shift];
    const uint64_t cur = c;
    const uint32_t hi = uint32_t(cur >> 32);
    const uint32_t mine = (uint32_t(uintptr_t(ret) - s.base - 1) & kPcMask) |
                          (write ? kWroteBit : 0) | (gen << 24);
    if ((hi >> 24) != gen) {  // untouched in this launch
      c = uint64_t(th) | (uint64_t(mine) << 32);
      return;
    }
    if (uint32_t(cur) == th) {  // this thread's: a write, or a read after a read, replaces it
      if (write || !(hi & kWroteBit)) c = uint64_t(th) | (uint64_t(mine) << 32);
      return;
    }
  }
  access_in(s.last, a, size, write, ret);
}

// A tracked access (`a` in the hot region: the region of the last tracked access, its bounds and
// shadow copied into State): a fast path for the common case of a granule that no other thread
// has touched in this launch (or only this thread), outside atomics and locks, which needs no
// ordering test; the rest in access_in.
CN_NOTSAN inline void access_hot_lanes(uintptr_t a, uint32_t size, bool write, void* ret);

template <bool Lanes>
CN_NOTSAN __attribute__((always_inline)) inline void access_hot(uintptr_t a, uint32_t size,
                                                               bool write, void* ret) {
  State& s = st;
  const uintptr_t off = a - s.hot_lo;
  const uint32_t n = size ? size : 1;
  if (!Lanes && s.hot_compact) return access_compact(a, size, write, ret);
  const ThreadInfo* t = g.cur;
  const uint32_t shift = s.hot_shift;
  if (__builtin_expect(t != nullptr && (s.atomic_depth | int(s.held) | s.published) == 0 &&
                           ((off ^ (off + n - 1)) >> shift) == 0 && off + n <= s.hot_len,
                       1)) {
    if (!Lanes && s.lanes) return access_hot_lanes(a, size, write, ret);
    const uint32_t th = s.gfirst + t->lin + 1;
    const uint32_t gen = s.gen;
    Entry& e = s.hot_shadow[off >> shift];
#define CN_QUIET(Q) ((Q).thread == th || ((Q).pc >> 24) != gen)
    if (write ? (CN_QUIET(e.w) && CN_QUIET(e.r1) && CN_QUIET(e.r2)) : (CN_QUIET(e.w) && CN_QUIET(e.r1))) {
      Rec me;
      me.thread = th;
      // No lock is held (s.held is 0): no kLockedBit.
      me.pc = (uint32_t(uintptr_t(ret) - s.base - 1) & kPcMask) | (gen << 24);
      me.epoch = s.hot_shared ? s.ep_tg : s.ep_dev;
      uint32_t clock = 0;
      if (Lanes) {
        uint32_t own = s.vc[t->lin * s.width + t->lin % s.width] - s.clk_base;
        clock = own < kClockMax ? own : kClockMax;
      }
      const uint32_t in = uint32_t(off & ((uintptr_t(1) << shift) - 1));
      // A whole granule (the common case) touches its bytes 0 to n - 1.
      const uint16_t bytes = n == (1u << shift) ? byte_mask(0, n) : byte_mask(in, in + n);
      me.clock = uint16_t(clock | bytes);
      if (write) {
        e.w = me;
        e.r1 = Rec{};
        e.r2 = Rec{};
      } else {
        e.r1 = me;
      }
      return;
    }
#undef CN_QUIET
  }
  access_in(s.last, a, size, write, ret);
}

// The tracked path apart from the address tests, so that an untracked access returns without
// saving a register: one copy per access size and kind (the hooks), one for any (the rest), one
// for lane clocks (fibers).
template <uint32_t N, bool W>
CN_NOTSAN __attribute__((noinline)) void access_hot_n(uintptr_t a, void* ret) {
  access_hot<false>(a, N, W, ret);
}
template <uint32_t N, bool W>
CN_NOTSAN __attribute__((noinline)) void access_compact_n(uintptr_t a, void* ret) {
  access_compact(a, N, W, ret);
}
CN_NOTSAN __attribute__((noinline)) inline void access_hot_any(uintptr_t a, uint32_t size,
                                                              bool write, void* ret) {
  access_hot<false>(a, size, write, ret);
}
CN_NOTSAN __attribute__((noinline)) inline void access_hot_lanes(uintptr_t a, uint32_t size,
                                                                bool write, void* ret) {
  access_hot<true>(a, size, write, ret);
}

// An access outside the hot region and outside the untracked ranges remembered: another region,
// or untracked memory not seen yet.
template <uint32_t N, bool W>
CN_NOTSAN __attribute__((noinline)) void access_miss_n(uintptr_t a, void* ret) {
  if (find_other(a)) access_hot<false>(a, N, W, ret);
}
CN_NOTSAN __attribute__((noinline)) inline void access_miss_any(uintptr_t a, uint32_t size,
                                                               bool write, void* ret) {
  if (find_other(a)) access_hot<false>(a, size, write, ret);
}

// Whether `a` is outside the hot region (0), in it (1), or in an untracked range remembered (2).
CN_NOTSAN __attribute__((always_inline)) inline int where(uintptr_t a) {
  const State& s = st;
  if (a - s.hot_lo < s.hot_len) return 1;
  const Gap& gap = s.gaps[(a >> 12) & 7];
  return a - gap.lo < gap.hi - gap.lo ? 2 : 0;
}

// Every instrumented access of N bytes (W: a write), from code address `ret`: a quick test of the
// address (hot region, untracked ranges), then the tracked path.
template <uint32_t N, bool W>
CN_NOTSAN __attribute__((always_inline)) inline void access_n(const void* p, void* ret) {
  const uintptr_t a = uintptr_t(p);
  const int w = where(a);
  if (w == 1) {
    if (st.hot_compact) return access_compact_n<N, W>(a, ret);
    return access_hot_n<N, W>(a, ret);
  }
  if (w == 0) access_miss_n<N, W>(a, ret);
}

// The same for an access of `size` bytes known at run time (ranges, memcpy, atomics).
CN_NOTSAN __attribute__((always_inline)) inline void access(const void* p, uint32_t size,
                                                           bool write, void* ret) {
  const uintptr_t a = uintptr_t(p);
  const int w = where(a);
  if (w == 1) return access_hot_any(a, size, write, ret);
  if (w == 0) access_miss_any(a, size, write, ret);
}

}  // namespace race
}  // namespace cn

#if CN_RACES
#define CN_RACE_ATOMIC ::cn::race::AtomicScope cn_atomic_scope_
#define CN_RACE_CAS ::cn::race::CasScope cn_atomic_scope_
#define CN_RACE_BLOCK_SCOPE ::cn::race::BlockScope cn_block_scope_
#define CN_RACE_FENCE() ::cn::race::fence()
#define CN_RACE_FENCE_BLOCK() ::cn::race::fence_block()
// Around each thread's call in the launch glue: a thread stopped in a spin-wait ends there.
#define CN_RACE_TRY try {
#define CN_RACE_CATCH } catch (const ::cn::race::Stuck&) {}
#define CN_RACE_SYNC(P, OLD, NOW, WROTE, LOCK) \
  ::cn::race::sync_op((P), ::cn::race::bits(OLD), ::cn::race::bits(NOW), (WROTE), (LOCK))
extern "C" {
#if CN_RUNTIME_BODIES
#define CN_TSAN_RW(N)                                                                         \
  CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_read##N(void* p) {             \
    ::cn::race::access_n<N, false>(p, __builtin_return_address(0));                          \
  }                                                                                           \
  CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_write##N(void* p) {            \
    ::cn::race::access_n<N, true>(p, __builtin_return_address(0));                           \
  }                                                                                           \
  CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_unaligned_read##N(void* p) {   \
    ::cn::race::access_n<N, false>(p, __builtin_return_address(0));                          \
  }                                                                                           \
  CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_unaligned_write##N(void* p) {  \
    ::cn::race::access_n<N, true>(p, __builtin_return_address(0));                           \
  }                                                                                           \
  CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_volatile_read##N(void* p) {    \
    ::cn::race::access_n<N, false>(p, __builtin_return_address(0));                          \
  }                                                                                           \
  CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_volatile_write##N(void* p) {   \
    ::cn::race::access_n<N, true>(p, __builtin_return_address(0));                           \
  }
CN_TSAN_RW(1)
CN_TSAN_RW(2)
CN_TSAN_RW(4)
CN_TSAN_RW(8)
CN_TSAN_RW(16)
#undef CN_TSAN_RW
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_read_range(void* p, unsigned long n) {
  if (::cn::race::st.on) ::cn::race::access(p, uint32_t(n), false, __builtin_return_address(0));
}
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_write_range(void* p, unsigned long n) {
  if (::cn::race::st.on) ::cn::race::access(p, uint32_t(n), true, __builtin_return_address(0));
}
// Clang's instrumentation calls these for memcpy/memmove/memset.
CN_NOTSAN __attribute__((visibility("hidden"))) void* __tsan_memcpy(void* d, const void* src,
                                                                    unsigned long n) {
  if (::cn::race::st.on) {
    ::cn::race::access(src, uint32_t(n), false, __builtin_return_address(0));
    ::cn::race::access(d, uint32_t(n), true, __builtin_return_address(0));
  }
  return std::memcpy(d, src, n);
}
CN_NOTSAN __attribute__((visibility("hidden"))) void* __tsan_memmove(void* d, const void* src,
                                                                     unsigned long n) {
  if (::cn::race::st.on) {
    ::cn::race::access(src, uint32_t(n), false, __builtin_return_address(0));
    ::cn::race::access(d, uint32_t(n), true, __builtin_return_address(0));
  }
  return std::memmove(d, src, n);
}
CN_NOTSAN __attribute__((visibility("hidden"))) void* __tsan_memset(void* d, int c, unsigned long n) {
  if (::cn::race::st.on) ::cn::race::access(d, uint32_t(n), true, __builtin_return_address(0));
  return std::memset(d, c, n);
}
// The kernel's own memcpy/memmove/memset calls (GCC leaves them to the sanitizer runtime's
// interceptors, which race-checking builds do not link; cn_cuda.h names these instead in the
// kernel's code): a read of the source range, a write of the destination range.
CN_NOTSAN __attribute__((noinline)) void* cn_race_memcpy(void* d, const void* src, size_t n) {
  if (::cn::race::st.on && n) {
    ::cn::race::access(src, uint32_t(n), false, __builtin_return_address(0));
    ::cn::race::access(d, uint32_t(n), true, __builtin_return_address(0));
  }
  return std::memcpy(d, src, n);
}
CN_NOTSAN __attribute__((noinline)) void* cn_race_memmove(void* d, const void* src, size_t n) {
  if (::cn::race::st.on && n) {
    ::cn::race::access(src, uint32_t(n), false, __builtin_return_address(0));
    ::cn::race::access(d, uint32_t(n), true, __builtin_return_address(0));
  }
  return std::memmove(d, src, n);
}
CN_NOTSAN __attribute__((noinline)) void* cn_race_memset(void* d, int c, size_t n) {
  if (::cn::race::st.on && n) ::cn::race::access(d, uint32_t(n), true, __builtin_return_address(0));
  return std::memset(d, c, n);
}
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_init() {}
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_func_entry(void*) {}
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_func_exit() {}
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_vptr_update(void**, void*) {}
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_vptr_read(void**) {}
// The compiler's __atomic builtins (std::atomic in a kernel): performed, and seen as atomics.
#define CN_TSAN_ATOMIC(BITS, T)                                                                \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_load(const volatile T* a, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), false, __builtin_return_address(0)); \
    return *a;                                                                                 \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_atomic##BITS##_store(volatile T* a, T v, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    *a = v;                                                                                    \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_exchange(volatile T* a, T v, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    T o = *a; *a = v; return o;                                                                \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_fetch_add(volatile T* a, T v, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    T o = *a; *a = T(o + v); return o;                                                         \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_fetch_sub(volatile T* a, T v, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    T o = *a; *a = T(o - v); return o;                                                         \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_fetch_and(volatile T* a, T v, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    T o = *a; *a = T(o & v); return o;                                                         \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_fetch_or(volatile T* a, T v, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    T o = *a; *a = T(o | v); return o;                                                         \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_fetch_xor(volatile T* a, T v, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    T o = *a; *a = T(o ^ v); return o;                                                         \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) int __tsan_atomic##BITS##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) { \
    ::cn::race::AtomicScope s_;                                                                \
    if (::cn::race::st.on) ::cn::race::access((const void*)a, sizeof(T), true, __builtin_return_address(0)); \
    if (*a == *c) { *a = v; return 1; }                                                        \
    *c = *a; return 0;                                                                         \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) int __tsan_atomic##BITS##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) { \
    return __tsan_atomic##BITS##_compare_exchange_strong(a, c, v, 0, 0);                       \
  }                                                                                            \
  CN_NOTSAN __attribute__((visibility("hidden"))) T __tsan_atomic##BITS##_compare_exchange_val(volatile T* a, T c, T v, int, int) { \
    T e = c; __tsan_atomic##BITS##_compare_exchange_strong(a, &e, v, 0, 0); return e;          \
  }
CN_TSAN_ATOMIC(8, uint8_t)
CN_TSAN_ATOMIC(16, uint16_t)
CN_TSAN_ATOMIC(32, uint32_t)
CN_TSAN_ATOMIC(64, uint64_t)
#undef CN_TSAN_ATOMIC
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_atomic_thread_fence(int) {
  ::cn::race::fence();
}
CN_NOTSAN __attribute__((visibility("hidden"))) void __tsan_atomic_signal_fence(int) {}
#else
void* cn_race_memcpy(void* d, const void* src, size_t n);
void* cn_race_memmove(void* d, const void* src, size_t n);
void* cn_race_memset(void* d, int c, size_t n);
#endif  // CN_RUNTIME_BODIES
}
#else
#define CN_RACE_ATOMIC (void)0
#define CN_RACE_CAS (void)0
#define CN_RACE_BLOCK_SCOPE (void)0
#define CN_RACE_FENCE() (void)0
#define CN_RACE_FENCE_BLOCK() (void)0
#define CN_RACE_SYNC(P, OLD, NOW, WROTE, LOCK) (void)0
#define CN_RACE_TRY
#define CN_RACE_CATCH
#endif

#endif  // CN_RACE_H
