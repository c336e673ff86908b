#include "cn_metal.h"
#line 1 "header"

#line 1 "wrapper"
static inline void custom_kernel_threadgroup_reduce(
    const float* x,
    float* __restrict__ out,
    uint3 thread_position_in_grid,
    uint3 thread_position_in_threadgroup,
    uint3 threadgroup_position_in_grid) {
#line 1 "body"

    auto& s = cn::tg_alloc<float[64]>(0);
    uint t = thread_position_in_threadgroup.x;
    s[t] = x[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 32; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) out[threadgroup_position_in_grid.x] = s[0];
}
#line 1 "launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {
  if (d->abi != CN_ABI_VERSION || d->nbuffers != 2) return -2;
  const float* b0 = static_cast<const float*>(d->buffers[0].data);
  float* __restrict__ b1 = static_cast<float*>(d->buffers[1].data);
  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    CN_RACE_TRY custom_kernel_threadgroup_reduce(b0, b1, cn::msl::thread_position_in_grid(t), cn::msl::thread_position_in_threadgroup(t), cn::msl::threadgroup_position_in_grid(t)); CN_RACE_CATCH
  };
  (void)cn_fn;
  return cn::run_grid<true, false, false>(d, 1, cn_fn);
}
