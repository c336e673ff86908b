#include "cn_metal.h"
#line 1 "header"

#line 1 "wrapper"
static inline void custom_kernel_simd_and_local_pointer(
    const float* x,
    float* __restrict__ y,
    uint3 thread_position_in_grid) {
#line 1 "body"

    uint i = thread_position_in_grid.x;
    const device float* p = x + i;
    float v = simd_sum(*p);
    y[i] = v - simd_broadcast_first(v);
}
#line 1 "launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {
  if (d->abi != CN_ABI_VERSION || d->nbuffers != 2) return -2;
  const float* b0 = static_cast<const float*>(d->buffers[0].data);
  float* __restrict__ b1 = static_cast<float*>(d->buffers[1].data);
  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    CN_RACE_TRY custom_kernel_simd_and_local_pointer(b0, b1, cn::msl::thread_position_in_grid(t)); CN_RACE_CATCH
  };
  (void)cn_fn;
  return cn::run_grid<true, false, false>(d, 0, cn_fn);
}
