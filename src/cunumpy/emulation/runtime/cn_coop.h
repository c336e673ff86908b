// cunumpy CPU emulation: cooperative launches (grid-wide barriers, cg::this_grid().sync()).
//
// A cooperative launch needs every block of the grid resident at once, as the GPU guarantees for
// cudaLaunchCooperativeKernel. Here each group runs in a fiber of its own ("block fiber") with its
// own scheduler of thread fibers (a copy of cn::sched) and its own shared-memory arena. The grid
// scheduler runs the block fibers in order; a block fiber runs its threads as usual until all of
// its live threads wait at the grid barrier (F_GRID), then yields. When every block waits there,
// all go on; a block that finished while others wait at the barrier is an error (on the GPU the
// others would wait for it forever). Included by cn_core.h, which it is part of.
#ifndef CN_COOP_H
#define CN_COOP_H

namespace cn {

struct CoopBlock {
#if CN_FIBER_ASM
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
  Scheduler s;
  Arena arena;
  unsigned char* stack = nullptr;
  int64_t q = 0;
  int32_t state = 0;  // 0 to start, 1 waiting at the grid barrier, 2 finished
  int32_t line = 0;
  const char* file = nullptr;
};

struct Coop {
#if CN_FIBER_ASM
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
  CoopBlock* cur = nullptr;
  void (*run)(void* fn, int64_t q) = nullptr;
  void* fn = nullptr;
};

inline Coop coop;

constexpr size_t kCoopArenaBytes = size_t(1) << 20;  // a block's shared memory (virtual)

// Grid-wide barrier of a cooperative launch: the thread waits until every thread of the grid
// that has not exited arrives.
CN_NOTSAN __attribute__((noinline)) inline void grid_barrier(int line, const char* file) {
  Fiber* f = g.fiber;
  if (!f || !coop.cur) {
    fail_fatal(ERR_INTERNAL, line, file,
               "grid.sync() outside a cooperative launch (the emulator launches a kernel "
               "cooperatively when its source synchronises the grid); please report this kernel");
    return;
  }
  f->state = F_GRID;
  f->line = line;
  f->file = file;
  coop.cur->line = line;
  coop.cur->file = file;
  ++sched.n_grid;
  leave(f);
}

CN_NOTSAN inline void fail_grid_mix() {
  fail_fatal(ERR_BARRIER, sched.barrier_line, sched.barrier_file,
             "threads of one block wait at a grid-wide barrier (grid.sync() at %s:%d) and at a "
             "block barrier (%s:%d) at once",
             coop.cur && coop.cur->file ? coop.cur->file : "?", coop.cur ? coop.cur->line : 0,
             sched.barrier_file ? sched.barrier_file : "?", sched.barrier_line);
}

// Called by run_group_fibers of a block fiber whose live threads all wait at the grid barrier.
CN_NOTSAN inline void coop_yield() {
  CoopBlock* b = coop.cur;
  b->state = 1;
#if CN_FIBER_ASM
  fiber_switch(&b->sp, coop.sp);
#else
  swapcontext(&b->ctx, &coop.ctx);
#endif
}

CN_NOTSAN inline void coop_block_main(void* arg) {
  CoopBlock* b = static_cast<CoopBlock*>(arg);
  coop.run(coop.fn, b->q);
  b->state = 2;
#if CN_FIBER_ASM
  fiber_switch(&b->sp, coop.sp);
#else
  swapcontext(&b->ctx, &coop.ctx);
#endif
  __builtin_unreachable();
}

#if !CN_FIBER_ASM
CN_NOTSAN inline void coop_block_main_uc(unsigned hi, unsigned lo) {
  coop_block_main(reinterpret_cast<void*>((uintptr_t(hi) << 32) | uintptr_t(lo)));
}
#endif

template <class R>
CN_NOTSAN inline void coop_call(void* fn, int64_t q) { (*static_cast<R*>(fn))(q); }

CN_NOTSAN inline void coop_enter(CoopBlock* b) {
  sched = b->s;
  g.arena = b->arena;
  g.pos = b->q;
  coop.cur = b;
#if CN_FIBER_ASM
  fiber_switch(&coop.sp, b->sp);
#else
  swapcontext(&coop.ctx, &b->ctx);
#endif
  b->s = sched;
  b->arena = g.arena;
  coop.cur = nullptr;
}

CN_NOTSAN inline void coop_free(CoopBlock& b, size_t page) {
  for (uint32_t i = 0; i < b.s.capacity; ++i) {
    if (b.s.fibers[i].stack) munmap(b.s.fibers[i].stack - page, kStackBytes + page);
  }
  std::free(b.s.fibers);
  std::free(b.s.order);
  if (b.arena.mem) munmap(b.arena.mem, b.arena.cap);
  if (b.stack) munmap(b.stack - page, kStackBytes + page);
}

// Runs groups first..last-1 of a cooperative launch, all resident at once.
template <class R>
CN_NOTSAN inline void run_cooperative(int64_t first, int64_t last, R& run_group) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const int64_t n = last - first;
  CoopBlock* blocks = new CoopBlock[size_t(n)];
  Scheduler saved = sched;
  Arena saved_arena = g.arena;
  coop.run = &coop_call<R>;
  coop.fn = static_cast<void*>(&run_group);
  for (int64_t k = 0; k < n; ++k) {
    CoopBlock& b = blocks[k];
    b.q = first + k;
    b.s.call = saved.call;
    b.s.functor = saved.functor;
    void* m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) std::abort();
    mprotect(m, page, PROT_NONE);
    b.stack = static_cast<unsigned char*>(m) + page;
    void* am = mmap(nullptr, kCoopArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
    if (am == MAP_FAILED) std::abort();
    b.arena.mem = static_cast<unsigned char*>(am);
    b.arena.cap = kCoopArenaBytes;
#if CN_FIBER_ASM
    uintptr_t top = (reinterpret_cast<uintptr_t>(b.stack) + kStackBytes) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top - 72);
    sp[0] = nullptr;
    sp[1] = nullptr;
    sp[2] = reinterpret_cast<void*>(&coop_block_main);
    sp[3] = &b;
    sp[4] = nullptr;
    sp[5] = nullptr;
    sp[6] = reinterpret_cast<void*>(&fiber_entry);
    b.sp = sp;
#else
    getcontext(&b.ctx);
    b.ctx.uc_stack.ss_sp = b.stack;
    b.ctx.uc_stack.ss_size = kStackBytes;
    b.ctx.uc_link = nullptr;
    uintptr_t a = reinterpret_cast<uintptr_t>(&b);
    makecontext(&b.ctx, reinterpret_cast<void (*)()>(&coop_block_main_uc), 2, unsigned(a >> 32),
                unsigned(a & 0xffffffffu));
#endif
  }
  for (;;) {
    for (int64_t k = 0; k < n && !g.abort; ++k) {
      if (blocks[k].state != 2) coop_enter(&blocks[k]);
    }
    if (g.abort) break;
    int64_t done = 0, waiting = -1, finished = -1;
    for (int64_t k = 0; k < n; ++k) {
      if (blocks[k].state == 2) { ++done; if (finished < 0) finished = k; }
      else if (waiting < 0) waiting = k;
    }
    if (done == n) break;
    if (done) {
      CoopBlock& w = blocks[waiting];
      g.cur = w.s.fibers ? &w.s.fibers[0].info : nullptr;
      g.pos = w.q;
      fail_fatal(ERR_BARRIER, w.line, w.file,
                 "blocks wait at the grid-wide barrier (grid.sync() at %s:%d) but block %lld of "
                 "the launch order finished without reaching it: every block of a cooperative "
                 "launch must reach every grid.sync() (on the GPU the others would wait forever)",
                 w.file ? w.file : "?", w.line, (long long)blocks[finished].q);
      break;
    }
    for (int64_t k = 0; k < n; ++k) blocks[k].state = 0;  // all arrived: go on together
  }
  for (int64_t k = 0; k < n; ++k) coop_free(blocks[k], page);
  delete[] blocks;
  sched = saved;
  g.arena = saved_arena;
}

}  // namespace cn

#endif  // CN_COOP_H
