#include "cn_metal.h"
#line 1 "header"

namespace helpers {
struct Scale { float k; float add(cn::ptr<const float> p, uint i) const { return p[i] * k; } };
enum Pick { FIRST = 0, SECOND = 1 };
constant float bias[2] = {0.5f, 1.5f};
}

#line 1 "wrapper"
static inline void custom_kernel_scopes_in_header(
    cn::ptr<const float> x,
    cn::ptr<float> y,
    uint3 thread_position_in_grid,
    uint3 thread_position_in_threadgroup) {
#line 1 "body"

    uint i = thread_position_in_grid.x;
    helpers::Scale s = {2.0f};
    auto& t = cn::tg_alloc<cn::tarr<float, (64), 0>>(0);
    t[thread_position_in_threadgroup.x] = s.add(x, i);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    {
        cn::ptr<const float> q = x + i;
        cn::ptr<float> r = &t[0];
        y[i] = *q + r[thread_position_in_threadgroup.x] + helpers::bias[helpers::SECOND];
    }
}
#line 1 "launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {
  if (d->abi != CN_ABI_VERSION || d->nbuffers != 2) return -2;
  auto b0 = cn::make_ptr<const float>(d, 0);
  auto b1 = cn::make_ptr<float>(d, 1);
  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    CN_RACE_TRY custom_kernel_scopes_in_header(b0, b1, cn::msl::thread_position_in_grid(t), cn::msl::thread_position_in_threadgroup(t)); CN_RACE_CATCH
  };
  (void)cn_fn;
  return cn::run_grid<true, true, true>(d, 1, cn_fn);
}
