#include "cn_metal.h"
#line 1 "header"

template <typename U>
U twice(cn::ptr<const U> p, uint i) { return p[i] + p[i]; }

#line 1 "wrapper"
template <typename T, int N>
static inline void custom_kernel_template_and_header(
    cn::ptr<const float> x,
    cn::ptr<float> y,
    uint3 thread_position_in_grid) {
#line 1 "body"

    uint i = thread_position_in_grid.x;
    T acc = 0;
    for (int k = 0; k < N; ++k) acc += twice(x, i);
    y[i] = acc;
}
#line 1 "launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {
  if (d->abi != CN_ABI_VERSION || d->nbuffers != 2) return -2;
  auto b0 = cn::make_ptr<const float>(d, 0);
  auto b1 = cn::make_ptr<float>(d, 1);
  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    CN_RACE_TRY custom_kernel_template_and_header<float, 4>(b0, b1, cn::msl::thread_position_in_grid(t)); CN_RACE_CATCH
  };
  (void)cn_fn;
  return cn::run_grid<false, true, true>(d, 0, cn_fn);
}
