// cunumpy CPU emulation: CUDA cooperative groups (<cooperative_groups.h> and its reduce/scan
// headers) on top of cn_cuda.h.
//
// The emulator replaces `#include <cooperative_groups.h>` (and `<cooperative_groups/reduce.h>`,
// `<cooperative_groups/scan.h>`, `<cooperative_groups/memcpy_async.h>`) by this header. Every
// group operation is spelled with the warp and block primitives of cn_cuda.h (__syncthreads,
// __syncwarp, __shfl_*_sync, __ballot_sync, ...), called with the user's source line, so a group
// operation runs in the same lockstep and gets the same checks as the intrinsic it stands for.
//
// Supported: this_thread_block() (sync, thread_rank, size/num_threads, group_index,
// thread_index, group_dim/dim_threads), tiled_partition<N>(g) and tiled_partition(g, n) of a
// block or a tile (N a power of two up to 32), thread_block_tile<N> (shfl, shfl_down, shfl_up,
// shfl_xor, any, all, ballot, match_any, match_all, sync, thread_rank, meta_group_rank,
// meta_group_size, size/num_threads), coalesced_threads(), the type-erased thread_group, sync(g),
// reduce(g, v, op) with plus/less/greater/bit_and/bit_or/bit_xor (or any callable),
// inclusive_scan/exclusive_scan, memcpy_async + wait. Grid and cluster groups exist so that a
// kernel naming them compiles; their sync() stops the launch (the emulator runs one block at a
// time; the Python side refuses kernels that call it before they run).
#ifndef CN_CUDA_CG_H
#define CN_CUDA_CG_H

#include "cn_cuda.h"

#define CN_CG_SITE int cn_line = __builtin_LINE(), const char* cn_file = __builtin_FILE()

namespace cooperative_groups {

namespace cn_detail {

enum Kind : int { K_BLOCK = 0, K_TILE = 1, K_COALESCED = 2, K_GRID = 3 };

__attribute__((always_inline)) inline unsigned block_rank() { return ::cn::linear_index(::cn::g.cur); }
__attribute__((always_inline)) inline unsigned block_threads() {
  const ::cn::ThreadInfo* t = ::cn::g.cur;
  return t->dsize[0] * t->dsize[1] * t->dsize[2];
}
__attribute__((always_inline)) inline unsigned lane() { return ::cn::linear_index(::cn::g.cur) & 31u; }

// Lanes (bits of the warp) of the tile of `n` threads that holds the calling thread.
__attribute__((always_inline)) inline unsigned tile_mask(unsigned n) {
  if (n >= 32) return 0xffffffffu;
  return ((1u << n) - 1u) << (lane() & ~(n - 1u));
}

__attribute__((noinline, cold)) inline void bad_tile(unsigned n, int line, const char* file) {
  ::cn::fail_fatal(::cn::ERR_INTERNAL, line, file,
                   "tiled_partition with %u threads: the CUDA emulator (emu-cuda) supports tiles "
                   "of 1, 2, 4, 8, 16 or 32 threads, and powers of two up to 1024 for "
                   "thread_group tiles", n);
}

// Grid-wide barrier: the launch is cooperative (every block resident, cn_coop.h).
inline void grid_sync(int line, const char* file) { ::cn::grid_barrier(line, file); }

// Warp lane of the member of rank `r` of a coalesced group with lanes `mask`.
inline unsigned nth_lane(unsigned mask, unsigned r) {
  for (unsigned k = 0; k < r; ++k) mask &= mask - 1u;
  return mask ? unsigned(__builtin_ctz(mask)) : 32u;
}

// Gathers the bits of `bits` at the lanes of `mask` into consecutive low bits (rank order).
inline unsigned compact(unsigned bits, unsigned mask) {
  unsigned out = 0, k = 0;
  for (unsigned j = 0; j < 32; ++j) {
    if (!(mask >> j & 1u)) continue;
    if (bits >> j & 1u) out |= 1u << k;
    ++k;
  }
  return out;
}

}  // namespace cn_detail

// ---------------------------------------------------------------------------------------------
// The type-erased group (a block, a tile, or a coalesced group).
// ---------------------------------------------------------------------------------------------

class thread_group {
 public:
  int cn_kind;
  unsigned cn_size;   // tile threads (K_TILE)
  unsigned cn_mask;   // warp lanes (K_TILE, K_COALESCED)

  thread_group(int kind, unsigned size, unsigned mask) : cn_kind(kind), cn_size(size), cn_mask(mask) {}

  void sync(CN_CG_SITE) const {
    if (cn_kind == cn_detail::K_BLOCK || (cn_kind == cn_detail::K_TILE && cn_size > 32))
      __syncthreads(cn_line, cn_file);
    else if (cn_kind == cn_detail::K_GRID) cn_detail::grid_sync(cn_line, cn_file);
    else __syncwarp(cn_mask, cn_line, cn_file);
  }
  unsigned long long size() const { return num_threads(); }
  unsigned long long num_threads() const {
    if (cn_kind == cn_detail::K_BLOCK) return cn_detail::block_threads();
    if (cn_kind == cn_detail::K_TILE) return cn_size;
    if (cn_kind == cn_detail::K_COALESCED) return unsigned(__builtin_popcount(cn_mask));
    const ::cn::ThreadInfo* t = ::cn::g.cur;
    return (unsigned long long)t->dsize[0] * t->dsize[1] * t->dsize[2] * t->ngroups[0] *
           t->ngroups[1] * t->ngroups[2];
  }
  unsigned long long thread_rank() const {
    if (cn_kind == cn_detail::K_BLOCK) return cn_detail::block_rank();
    if (cn_kind == cn_detail::K_TILE) return cn_detail::block_rank() & (cn_size - 1u);
    if (cn_kind == cn_detail::K_COALESCED)
      return unsigned(__builtin_popcount(cn_mask & ((1u << cn_detail::lane()) - 1u)));
    const ::cn::ThreadInfo* t = ::cn::g.cur;
    unsigned long long b = t->gid[0] + (unsigned long long)t->ngroups[0] *
                                           (t->gid[1] + (unsigned long long)t->ngroups[1] * t->gid[2]);
    return b * cn_detail::block_threads() + cn_detail::block_rank();
  }
  bool is_valid() const { return true; }
};

// ---------------------------------------------------------------------------------------------
// thread_block
// ---------------------------------------------------------------------------------------------

class thread_block : public thread_group {
 public:
  thread_block() : thread_group(cn_detail::K_BLOCK, 0, 0xffffffffu) {}
  static void sync(CN_CG_SITE) { __syncthreads(cn_line, cn_file); }
  static void barrier_wait(CN_CG_SITE) { __syncthreads(cn_line, cn_file); }
  static unsigned int thread_rank() { return cn_detail::block_rank(); }
  static unsigned int size() { return cn_detail::block_threads(); }
  static unsigned int num_threads() { return cn_detail::block_threads(); }
  static dim3 group_index() { return dim3(blockIdx); }
  static dim3 thread_index() { return dim3(threadIdx); }
  static dim3 group_dim() { return blockDim; }
  static dim3 dim_threads() { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

// Scratch that CUDA needs for tiles of more than 32 threads; the emulator needs none.
template <unsigned int MaxBlockSize = 1024, unsigned int TileCommunicationSize = 8,
          unsigned int MaxWarps = MaxBlockSize / 32>
struct block_tile_memory {
  unsigned char cn_unused[4];
};
template <class M>
inline thread_block this_thread_block(M&) { return thread_block(); }

// ---------------------------------------------------------------------------------------------
// Grid and cluster groups: ranks and sizes only (their sync stops the launch).
// ---------------------------------------------------------------------------------------------

class grid_group : public thread_group {
 public:
  grid_group() : thread_group(cn_detail::K_GRID, 0, 0xffffffffu) {}
  void sync(CN_CG_SITE) const { cn_detail::grid_sync(cn_line, cn_file); }
  bool is_valid() const { return true; }
  static dim3 group_dim() { return blockDim; }
  static dim3 dim_blocks() { return gridDim; }
  static dim3 block_index() { return dim3(blockIdx); }
  static unsigned long long num_blocks() {
    return (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
  }
  static unsigned long long block_rank() {
    return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
  }
  static dim3 dim_threads() {
    return dim3(blockDim.x * gridDim.x, blockDim.y * gridDim.y, blockDim.z * gridDim.z);
  }
  static dim3 thread_index() {
    return dim3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                blockIdx.z * blockDim.z + threadIdx.z);
  }
};

inline grid_group this_grid() { return grid_group(); }

// ---------------------------------------------------------------------------------------------
// Warp-sized groups: static tiles, dynamic tiles and coalesced groups share these operations,
// written in terms of the lanes of the warp (`mask`) and the first lane (`base`).
// ---------------------------------------------------------------------------------------------

namespace cn_detail {

template <class G>
struct warp_ops {
  const G& self() const { return *static_cast<const G*>(this); }

  void sync(CN_CG_SITE) const { __syncwarp(self().cn_mask, cn_line, cn_file); }

  template <class T>
  T shfl(T var, int src, CN_CG_SITE) const {
    const G& s = self();
    if (s.cn_kind == K_COALESCED) {
      unsigned r = unsigned(src) % s.cn_count();
      return __shfl_sync(s.cn_mask, var, int(nth_lane(s.cn_mask, r)), 32, cn_line, cn_file);
    }
    return __shfl_sync(s.cn_mask, var, src, int(s.cn_size), cn_line, cn_file);
  }
  template <class T>
  T shfl_down(T var, unsigned delta, CN_CG_SITE) const {
    const G& s = self();
    if (s.cn_kind == K_COALESCED) {
      unsigned r = s.cn_rank() + delta;
      int src = r < s.cn_count() ? int(nth_lane(s.cn_mask, r)) : int(lane());
      return __shfl_sync(s.cn_mask, var, src, 32, cn_line, cn_file);
    }
    return __shfl_down_sync(s.cn_mask, var, delta, int(s.cn_size), cn_line, cn_file);
  }
  template <class T>
  T shfl_up(T var, unsigned delta, CN_CG_SITE) const {
    const G& s = self();
    if (s.cn_kind == K_COALESCED) {
      unsigned r = s.cn_rank();
      int src = r >= delta ? int(nth_lane(s.cn_mask, r - delta)) : int(lane());
      return __shfl_sync(s.cn_mask, var, src, 32, cn_line, cn_file);
    }
    return __shfl_up_sync(s.cn_mask, var, delta, int(s.cn_size), cn_line, cn_file);
  }
  template <class T>
  T shfl_xor(T var, unsigned lane_mask, CN_CG_SITE) const {
    const G& s = self();
    if (s.cn_kind == K_COALESCED) {
      unsigned r = s.cn_rank() ^ lane_mask;
      int src = r < s.cn_count() ? int(nth_lane(s.cn_mask, r)) : int(lane());
      return __shfl_sync(s.cn_mask, var, src, 32, cn_line, cn_file);
    }
    return __shfl_xor_sync(s.cn_mask, var, int(lane_mask), int(s.cn_size), cn_line, cn_file);
  }
  int any(int pred, CN_CG_SITE) const { return __any_sync(self().cn_mask, pred, cn_line, cn_file); }
  int all(int pred, CN_CG_SITE) const { return __all_sync(self().cn_mask, pred, cn_line, cn_file); }
  unsigned ballot(int pred, CN_CG_SITE) const {
    const G& s = self();
    unsigned bits = __ballot_sync(s.cn_mask, pred, cn_line, cn_file);
    return compact(bits, s.cn_mask);
  }
  template <class T>
  unsigned match_any(T value, CN_CG_SITE) const {
    const G& s = self();
    return compact(__match_any_sync(s.cn_mask, value, cn_line, cn_file), s.cn_mask);
  }
  template <class T>
  unsigned match_all(T value, int& pred, CN_CG_SITE) const {
    const G& s = self();
    return compact(__match_all_sync(s.cn_mask, value, &pred, cn_line, cn_file), s.cn_mask);
  }
};

}  // namespace cn_detail

// A tile made at run time (tiled_partition(g, n)) or a static tile (thread_block_tile<N>).
class thread_block_tile_dynamic : public thread_group,
                                  public cn_detail::warp_ops<thread_block_tile_dynamic> {
 public:
  unsigned cn_parent;  // threads of the parent group
  thread_block_tile_dynamic(unsigned n, unsigned parent)
      : thread_group(cn_detail::K_TILE, n, cn_detail::tile_mask(n)), cn_parent(parent) {}
  using cn_detail::warp_ops<thread_block_tile_dynamic>::sync;
  unsigned cn_rank() const { return cn_detail::block_rank() & (cn_size - 1u); }
  unsigned cn_count() const { return cn_size; }
  unsigned int thread_rank() const { return cn_rank(); }
  unsigned int size() const { return cn_size; }
  unsigned int num_threads() const { return cn_size; }
  unsigned int meta_group_rank() const { return (cn_detail::block_rank() % cn_parent) / cn_size; }
  unsigned int meta_group_size() const { return (cn_parent + cn_size - 1u) / cn_size; }
};

namespace cn_detail {

// A tile of more than 32 threads (a power of two up to 1024, inside one block). The emulator
// synchronises it with a block barrier, so every tile of the block must reach the same sync
// (true of kernels that partition a block and use each tile the same way).
class large_tile : public thread_group {
 public:
  unsigned cn_parent;
  large_tile(unsigned n, unsigned parent) : thread_group(K_TILE, n, 0xffffffffu), cn_parent(parent) {}
  void sync(CN_CG_SITE) const { __syncthreads(cn_line, cn_file); }
  unsigned cn_rank() const { return block_rank() & (cn_size - 1u); }
  unsigned cn_count() const { return cn_size; }
  unsigned int meta_group_rank() const { return (block_rank() % cn_parent) / cn_size; }
  unsigned int meta_group_size() const { return (cn_parent + cn_size - 1u) / cn_size; }
};

// Per-thread scratch for reductions over large tiles: one slot per warp of the block.
template <class T>
inline T* warp_slots() {
  alignas(16) static thread_local unsigned char slots[32][sizeof(T) < 16 ? 16 : sizeof(T)];
  return reinterpret_cast<T*>(&slots[0][0]);
}

}  // namespace cn_detail

template <unsigned int N, class Parent = void>
class thread_block_tile
    : public std::conditional_t<(N <= 32), thread_block_tile_dynamic, cn_detail::large_tile> {
  static_assert(N >= 1 && N <= 1024 && (N & (N - 1)) == 0,
                "the CUDA emulator (emu-cuda) supports thread_block_tile<N> with N a power of two "
                "up to 1024");
  using base = std::conditional_t<(N <= 32), thread_block_tile_dynamic, cn_detail::large_tile>;

 public:
  explicit thread_block_tile(unsigned parent = cn_detail::block_threads()) : base(N, parent) {}
  template <class P>
  thread_block_tile(const thread_block_tile<N, P>& o) : base(N, o.cn_parent) {}
  static constexpr unsigned int size() { return N; }
  static constexpr unsigned int num_threads() { return N; }
  static unsigned int thread_rank() { return cn_detail::block_rank() & (N - 1u); }
};

template <unsigned int N, class P>
inline thread_block_tile<N, P> tiled_partition(const P& parent) {
  unsigned n = unsigned(parent.num_threads());
  return thread_block_tile<N, P>(n);
}
template <unsigned int N>
inline thread_block_tile<N, thread_block> tiled_partition(const thread_block&) {
  return thread_block_tile<N, thread_block>(cn_detail::block_threads());
}

inline thread_group tiled_partition(const thread_group& parent, unsigned n, CN_CG_SITE) {
  bool ok = n >= 1 && n <= 1024 && (n & (n - 1u)) == 0;
  if (!ok) cn_detail::bad_tile(n, cn_line, cn_file);
  unsigned m = ok ? n : 32u;
  if (m > 32) return cn_detail::large_tile(m, unsigned(parent.num_threads()));
  return thread_block_tile_dynamic(m, unsigned(parent.num_threads()));
}

class coalesced_group : public thread_group, public cn_detail::warp_ops<coalesced_group> {
 public:
  explicit coalesced_group(unsigned mask) : thread_group(cn_detail::K_COALESCED, 0, mask) {}
  using cn_detail::warp_ops<coalesced_group>::sync;
  unsigned cn_rank() const {
    return unsigned(__builtin_popcount(cn_mask & ((1u << cn_detail::lane()) - 1u)));
  }
  unsigned cn_count() const { return unsigned(__builtin_popcount(cn_mask)); }
  unsigned int thread_rank() const { return cn_rank(); }
  unsigned int size() const { return cn_count(); }
  unsigned int num_threads() const { return cn_count(); }
  unsigned int meta_group_rank() const { return 0; }
  unsigned int meta_group_size() const { return 1; }
};

inline coalesced_group coalesced_threads(CN_CG_SITE) {
  return coalesced_group(__activemask(cn_line, cn_file));
}

// The members of a warp-sized group that share a label (labeled_partition) or a predicate
// (binary_partition), as a coalesced group.
template <class G, class L>
inline coalesced_group labeled_partition(const G& parent, L label, CN_CG_SITE) {
  static_assert(std::is_base_of<thread_block_tile_dynamic, G>::value ||
                    std::is_base_of<coalesced_group, G>::value,
                "labeled_partition takes a tile of at most 32 threads or a coalesced group");
  return coalesced_group(__match_any_sync(parent.cn_mask, label, cn_line, cn_file));
}
template <class G>
inline coalesced_group binary_partition(const G& parent, bool pred, CN_CG_SITE) {
  return labeled_partition(parent, int(pred), cn_line, cn_file);
}

template <class G>
inline void sync(const G& g, CN_CG_SITE) { g.sync(cn_line, cn_file); }

template <class G>
inline unsigned long long thread_rank(const G& g) { return g.thread_rank(); }
template <class G>
inline unsigned long long group_size(const G& g) { return g.num_threads(); }

// ---------------------------------------------------------------------------------------------
// <cooperative_groups/reduce.h> and <cooperative_groups/scan.h>
// ---------------------------------------------------------------------------------------------

template <class T = void> struct plus { T operator()(const T& a, const T& b) const { return a + b; } };
template <class T = void> struct less { T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T = void> struct greater { T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T = void> struct bit_and { T operator()(const T& a, const T& b) const { return a & b; } };
template <class T = void> struct bit_or { T operator()(const T& a, const T& b) const { return a | b; } };
template <class T = void> struct bit_xor { T operator()(const T& a, const T& b) const { return a ^ b; } };

// Every member gets the reduction of the values of all members (a butterfly over the tile; for
// a coalesced group, every member combines the values in rank order).
template <class G, class T, class Op>
inline T reduce(const G& g, T value, Op op, CN_CG_SITE) {
  if constexpr (std::is_base_of<thread_block_tile_dynamic, G>::value ||
                std::is_base_of<coalesced_group, G>::value) {
    if (g.cn_kind == cn_detail::K_COALESCED) {
      unsigned n = g.cn_count();
      T acc = g.shfl(value, 0, cn_line, cn_file);
      for (unsigned r = 1; r < n; ++r) acc = op(acc, g.shfl(value, int(r), cn_line, cn_file));
      return acc;
    }
    for (unsigned off = g.cn_size / 2u; off > 0; off /= 2u)
      value = op(value, g.shfl_xor(value, off, cn_line, cn_file));
    return value;
  } else if constexpr (std::is_base_of<cn_detail::large_tile, G>::value) {
    // Each warp reduces its 32 lanes, lane 0 publishes the result, every lane combines the
    // results of the warps of its tile in order.
    unsigned full = 0xffffffffu;
    for (unsigned off = 16; off > 0; off /= 2)
      value = op(value, __shfl_xor_sync(full, value, int(off), 32, cn_line, cn_file));
    T* slots = cn_detail::warp_slots<T>();
    unsigned warp = cn_detail::block_rank() / 32u;
    if (cn_detail::lane() == 0) slots[warp] = value;
    __syncthreads(cn_line, cn_file);
    unsigned first = (cn_detail::block_rank() & ~(g.cn_size - 1u)) / 32u;
    T acc = slots[first];
    for (unsigned k = 1; k < g.cn_size / 32u; ++k) acc = op(acc, slots[first + k]);
    __syncthreads(cn_line, cn_file);
    return acc;
  } else {
    static_assert(sizeof(G) == 0, "cooperative_groups::reduce takes a tile or a coalesced group");
    return value;
  }
}

template <class G, class T, class Op>
inline T inclusive_scan(const G& g, T value, Op op, CN_CG_SITE) {
  unsigned n = g.cn_count(), r = g.cn_rank();
  for (unsigned d = 1; d < n; d *= 2u) {
    T other = g.shfl_up(value, d, cn_line, cn_file);
    if (r >= d) value = op(other, value);
  }
  return value;
}
template <class G, class T>
inline T inclusive_scan(const G& g, T value, CN_CG_SITE) {
  return inclusive_scan(g, value, plus<T>(), cn_line, cn_file);
}
template <class G, class T, class Op>
inline T exclusive_scan(const G& g, T value, Op op, CN_CG_SITE) {
  T inc = inclusive_scan(g, value, op, cn_line, cn_file);
  T prev = g.shfl_up(inc, 1, cn_line, cn_file);
  return g.cn_rank() == 0 ? T{} : prev;
}
template <class G, class T>
inline T exclusive_scan(const G& g, T value, CN_CG_SITE) {
  return exclusive_scan(g, value, plus<T>(), cn_line, cn_file);
}

// ---------------------------------------------------------------------------------------------
// <cooperative_groups/memcpy_async.h>: each member copies its share; wait() syncs the group.
// ---------------------------------------------------------------------------------------------

// Race checking sees the copy: each member's bytes are its own (races are checked per byte within
// a granule), and wait() orders what follows.
template <class G, class D, class S>
inline void memcpy_async(const G& g, D&& dst, S&& src, size_t bytes) {
  unsigned long long n = g.num_threads(), r = g.thread_rank();
  unsigned char* d = ::cn::cuda::cast<unsigned char*>(dst);
  const unsigned char* s = ::cn::cuda::cast<const unsigned char*>(src);
  for (size_t k = size_t(r); k < bytes; k += size_t(n)) d[k] = s[k];
}
template <class G>
inline void wait(const G& g, CN_CG_SITE) { g.sync(cn_line, cn_file); }
template <class G>
inline void wait_prior(const G& g, CN_CG_SITE) { g.sync(cn_line, cn_file); }

}  // namespace cooperative_groups

#undef CN_CG_SITE

#endif  // CN_CUDA_CG_H
