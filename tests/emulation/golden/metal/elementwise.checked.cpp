#include "cn_metal.h"
#line 1 "header"

#line 1 "wrapper"
static inline void custom_kernel_elementwise(
    cn::ptr<const float> x,
    cn::ptr<float> y,
    uint3 thread_position_in_grid) {
#line 1 "body"

    uint i = thread_position_in_grid.x;
    y[i] = metal::exp(x[i]) * 2.0f;
}
#line 1 "cn-lanes"
static inline __attribute__((always_inline)) void custom_kernel_elementwise__cn_lanes(
    cn::ptr<const float> x,
    cn::ptr<float> y,
    uint3 thread_position_in_grid) {

  auto* __restrict__ x__cn_r = x.p;
  auto* __restrict__ y__cn_r = y.p;
    uint i = thread_position_in_grid.x;
    y__cn_r[i] = metal::exp(x__cn_r[i]) * 2.0f;

}
static inline __attribute__((always_inline)) bool custom_kernel_elementwise__cn_guard(
    cn::ptr<const float> x,
    cn::ptr<float> y,
    uint3 thread_position_in_grid) {

    uint i = thread_position_in_grid.x;
  return !(::cn::lane_in_bounds(y, i) && ::cn::lane_in_bounds(x, i));
}

#line 1 "launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {
  if (d->abi != CN_ABI_VERSION || d->nbuffers != 2) return -2;
  auto b0 = cn::make_ptr<const float>(d, 0);
  auto b1 = cn::make_ptr<float>(d, 1);
  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    CN_RACE_TRY custom_kernel_elementwise(b0, b1, cn::msl::thread_position_in_grid(t)); CN_RACE_CATCH
  };
  (void)cn_fn;
  auto cn_lanes = cn::unsigned_index([=](const cn::ThreadInfo& t) CN_THREAD_FN {
    custom_kernel_elementwise__cn_lanes(b0, b1, cn::msl::thread_position_in_grid(t));
  });
  auto cn_guard = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    return custom_kernel_elementwise__cn_guard(b0, b1, cn::msl::thread_position_in_grid(t));
  };
  return cn::run_grid<false, true, true>(d, 0, cn_fn, &cn_lanes, &cn_guard);
}
