// cunumpy CPU emulation: CUB's block- and warp-level collectives (<cub/cub.cuh>,
// <cub/block/block_reduce.cuh>, <cub/block/block_scan.cuh>, <cub/warp/warp_reduce.cuh>,
// <cub/warp/warp_scan.cuh>), for kernels that call them from device code.
//
// BlockReduce and BlockScan gather the block's values in their TempStorage (declared __shared__
// by the kernel, as with CUB) behind a __syncthreads and combine them in rank order; WarpReduce
// and WarpScan shuffle within the logical warp. Results follow CUB's contract: a block or warp
// reduction's aggregate is valid in the first thread only; scans give every thread its prefix.
// Floating-point results may differ from CUB's in the last bits (another order of operations).
// Device-wide algorithms (cub::DeviceReduce, ...) and the other block primitives are refused
// before compiling.
#ifndef CN_CUB_H
#define CN_CUB_H

#include "cn_cuda_std.h"  // CUB code names cuda::std::plus<> and friends

namespace cub {

// The caller's source line (a struct, so that it never competes with the collectives' own int
// and reference parameters in overload resolution).
struct cn_site {
  int line;
  const char* file;
  explicit constexpr cn_site(int l = __builtin_LINE(), const char* f = __builtin_FILE())
      : line(l), file(f) {}
};
#define CN_CUB_SITE ::cub::cn_site cn_s = ::cub::cn_site()

struct Sum {
  template <class T> T operator()(const T& a, const T& b) const { return a + b; }
};
struct Max {
  template <class T> T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
struct Min {
  template <class T> T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};

enum BlockReduceAlgorithm {
  BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS,
};
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

namespace cn_detail {
template <int X, int Y, int Z>
__attribute__((always_inline)) inline int rank() {
  return int(threadIdx.x + X * (threadIdx.y + Y * threadIdx.z));
}
}  // namespace cn_detail

template <class T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce {
  static constexpr int N = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

 public:
  struct TempStorage { T items[N]; };

  explicit BlockReduce(TempStorage& t) : t_(t) {}

  template <class Op>
  T Reduce(T v, Op op, CN_CUB_SITE) { return Reduce(v, op, N, cn_s); }
  template <class Op>
  T Reduce(T v, Op op, int num_valid, CN_CUB_SITE) {
    int r = cn_detail::rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>();
    t_.items[r] = v;
    __syncthreads(cn_s.line, cn_s.file);
    T acc = v;
    if (r == 0) {
      acc = t_.items[0];
      for (int k = 1; k < num_valid && k < N; ++k) acc = op(acc, t_.items[k]);
    }
    __syncthreads(cn_s.line, cn_s.file);
    return acc;
  }
  template <int ITEMS, class Op>
  T Reduce(T (&items)[ITEMS], Op op, CN_CUB_SITE) {
    T v = items[0];
    for (int k = 1; k < ITEMS; ++k) v = op(v, items[k]);
    return Reduce(v, op, N, cn_s);
  }
  T Sum(T v, CN_CUB_SITE) { return Reduce(v, cub::Sum(), N, cn_s); }
  T Sum(T v, int num_valid, CN_CUB_SITE) { return Reduce(v, cub::Sum(), num_valid, cn_s); }
  template <int ITEMS>
  T Sum(T (&items)[ITEMS], CN_CUB_SITE) { return Reduce(items, cub::Sum(), cn_s); }

 private:
  TempStorage& t_;
};

template <class T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockScan {
  static constexpr int N = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

 public:
  struct TempStorage { T items[N]; };

  explicit BlockScan(TempStorage& t) : t_(t) {}

  // Every thread's inclusive and exclusive prefix and the block's aggregate; `init` starts the
  // exclusive scan (rank 0 gets it).
  template <class Op>
  void scan(T v, T& inclusive, T& exclusive, T& aggregate, Op op, const T* init, cn_site at) {
    int r = cn_detail::rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>();
    t_.items[r] = v;
    __syncthreads(at.line, at.file);
    T acc = init ? *init : t_.items[0];
    int first = init ? 0 : 1;
    exclusive = init ? *init : T{};
    for (int k = first; k < N; ++k) {
      if (k == r) exclusive = acc;
      acc = op(acc, t_.items[k]);
      if (k == r) inclusive = acc;
    }
    if (!init && r == 0) inclusive = t_.items[0];
    aggregate = acc;
    __syncthreads(at.line, at.file);
  }

  void InclusiveSum(T v, T& out, CN_CUB_SITE) {
    T e, a;
    scan(v, out, e, a, cub::Sum(), nullptr, cn_s);
  }
  void InclusiveSum(T v, T& out, T& aggregate, CN_CUB_SITE) {
    T e;
    scan(v, out, e, aggregate, cub::Sum(), nullptr, cn_s);
  }
  void ExclusiveSum(T v, T& out, CN_CUB_SITE) {
    T i, a, zero{};
    scan(v, i, out, a, cub::Sum(), &zero, cn_s);
  }
  void ExclusiveSum(T v, T& out, T& aggregate, CN_CUB_SITE) {
    T i, zero{};
    scan(v, i, out, aggregate, cub::Sum(), &zero, cn_s);
  }
  template <class Op>
  void InclusiveScan(T v, T& out, Op op, CN_CUB_SITE) {
    T e, a;
    scan(v, out, e, a, op, nullptr, cn_s);
  }
  template <class Op>
  void InclusiveScan(T v, T& out, Op op, T& aggregate, CN_CUB_SITE) {
    T e;
    scan(v, out, e, aggregate, op, nullptr, cn_s);
  }
  template <class Op>
  void ExclusiveScan(T v, T& out, T init, Op op, CN_CUB_SITE) {
    T i, a;
    scan(v, i, out, a, op, &init, cn_s);
  }
  template <class Op>
  void ExclusiveScan(T v, T& out, T init, Op op, T& aggregate, CN_CUB_SITE) {
    T i;
    scan(v, i, out, aggregate, op, &init, cn_s);
  }

 private:
  TempStorage& t_;
};

// Logical warps of LOGICAL_WARP_THREADS lanes (a power of two up to 32).
template <class T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpReduce {
  static_assert(LOGICAL_WARP_THREADS >= 1 && LOGICAL_WARP_THREADS <= 32 &&
                    (LOGICAL_WARP_THREADS & (LOGICAL_WARP_THREADS - 1)) == 0,
                "the CUDA emulator (emu-cuda) supports cub::WarpReduce with a power-of-two "
                "logical warp of at most 32 threads");
  static constexpr unsigned W = LOGICAL_WARP_THREADS;

 public:
  struct TempStorage { unsigned char cn_unused[4]; };
  explicit WarpReduce(TempStorage&) {}

  template <class Op>
  T Reduce(T v, Op op, CN_CUB_SITE) { return Reduce(v, op, int(W), cn_s); }
  // Lanes at or past `valid_items` (counted from the logical warp's first lane) do not count.
  template <class Op>
  T Reduce(T v, Op op, int valid_items, CN_CUB_SITE) {
    unsigned lane = ::cn::linear_index(::cn::g.cur) & 31u;
    unsigned mask = W >= 32 ? 0xffffffffu : ((1u << W) - 1u) << (lane & ~(W - 1u));
    unsigned self = lane & (W - 1u);
    for (unsigned off = 1; off < W; off *= 2u) {
      // Tree order: lane k combines lane k + off when k is a multiple of 2 * off; a lane whose
      // partner is past valid_items reads itself (no read of lanes that do not count).
      bool use = (self & (2u * off - 1u)) == 0 && self + off < W && int(self + off) < valid_items;
      T o = __shfl_sync(mask, v, int(use ? self + off : self), int(W), cn_s.line, cn_s.file);
      if (use) v = op(v, o);
    }
    return v;
  }
  T Sum(T v, CN_CUB_SITE) { return Reduce(v, cub::Sum(), int(W), cn_s); }
  T Sum(T v, int valid_items, CN_CUB_SITE) { return Reduce(v, cub::Sum(), valid_items, cn_s); }
};

template <class T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpScan {
  static_assert(LOGICAL_WARP_THREADS >= 1 && LOGICAL_WARP_THREADS <= 32 &&
                    (LOGICAL_WARP_THREADS & (LOGICAL_WARP_THREADS - 1)) == 0,
                "the CUDA emulator (emu-cuda) supports cub::WarpScan with a power-of-two "
                "logical warp of at most 32 threads");
  static constexpr unsigned W = LOGICAL_WARP_THREADS;

 public:
  struct TempStorage { unsigned char cn_unused[4]; };
  explicit WarpScan(TempStorage&) {}

  template <class Op>
  void InclusiveScan(T v, T& out, Op op, CN_CUB_SITE) {
    unsigned lane = ::cn::linear_index(::cn::g.cur) & 31u;
    unsigned mask = W >= 32 ? 0xffffffffu : ((1u << W) - 1u) << (lane & ~(W - 1u));
    unsigned self = lane & (W - 1u);
    for (unsigned d = 1; d < W; d *= 2u) {
      T o = __shfl_up_sync(mask, v, d, int(W), cn_s.line, cn_s.file);
      if (self >= d) v = op(o, v);
    }
    out = v;
  }
  void InclusiveSum(T v, T& out, CN_CUB_SITE) { InclusiveScan(v, out, cub::Sum(), cn_s); }
  template <class Op>
  void ExclusiveScan(T v, T& out, T init, Op op, CN_CUB_SITE) {
    unsigned lane = ::cn::linear_index(::cn::g.cur) & 31u;
    unsigned mask = W >= 32 ? 0xffffffffu : ((1u << W) - 1u) << (lane & ~(W - 1u));
    T inc;
    InclusiveScan(v, inc, op, cn_s);
    T prev = __shfl_up_sync(mask, inc, 1, int(W), cn_s.line, cn_s.file);
    out = (lane & (W - 1u)) == 0 ? init : op(init, prev);
  }
  void ExclusiveSum(T v, T& out, CN_CUB_SITE) {
    ExclusiveScan(v, out, T{}, cub::Sum(), cn_s);
  }
};

}  // namespace cub

#undef CN_CUB_SITE

#endif  // CN_CUB_H
