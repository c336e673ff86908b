#include "cn_cuda.h"
#line 1 "saxpy.cu"

extern "C++" __global__ void saxpy(const ::cn::ThreadInfo& cn_this_thread, int n, float a, cn::ptr<const float> x, cn::ptr<float> y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ::cn::cuda::at_site(y, __LINE__, __FILE__)[i] = a * ::cn::cuda::at_site(x, __LINE__, __FILE__)[i] + ::cn::cuda::at_site(y, __LINE__, __FILE__)[i];
}

#line 1 "cn-lanes"
static inline __attribute__((always_inline)) void saxpy__cn_lanes(const ::cn::ThreadInfo& cn_this_thread, int n, float a, cn::ptr<const float> x, cn::ptr<float> y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y.p[i] = a * x.p[i] + y.p[i];
}
static inline __attribute__((always_inline)) bool saxpy__cn_guard(const ::cn::ThreadInfo& cn_this_thread, int n, float a, cn::ptr<const float> x, cn::ptr<float> y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
  return !(::cn::lane_in_bounds(y, i) && ::cn::lane_in_bounds(x, i));
}

#line 1 "cn-launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* cn_d) {
  if (cn_d->abi != CN_ABI_VERSION || cn_d->nbuffers != 5) return -2;
  const long long* cn_meta = static_cast<const long long*>(cn_d->buffers[4].data);
  ::cn::cuda::dynamic_shared_bytes = cn_meta[0];
  ::cn::cuda::ub_mode = cn_d->buffers[4].extent >= 24 ? cn_meta[1] : 0;
  ::cn::cuda::ub_report = cn_d->buffers[4].extent >= 24 ? reinterpret_cast<::cn::cuda::UbReport*>(cn_meta[2]) : nullptr;
  if (cn_d->buffers[0].extent != sizeof(int)) return -2;
  int cn_a0;
  std::memcpy(&cn_a0, cn_d->buffers[0].data, sizeof cn_a0);
  if (cn_d->buffers[1].extent != sizeof(float)) return -2;
  float cn_a1;
  std::memcpy(&cn_a1, cn_d->buffers[1].data, sizeof cn_a1);
  const ::cn::cuda::PtrArg cn_a2{cn_d->buffers[2].data, cn_d->buffers[2].extent, 2};
  const ::cn::cuda::PtrArg cn_a3{cn_d->buffers[3].data, cn_d->buffers[3].extent, 3};
  auto cn_fn = [=](const cn::ThreadInfo& cn_t) CN_THREAD_FN {
    CN_RACE_TRY saxpy(cn_t, cn_a0, cn_a1, cn_a2, cn_a3); CN_RACE_CATCH
  };
  auto cn_lanes = [=](const cn::ThreadInfo& cn_t) CN_THREAD_FN {
    saxpy__cn_lanes(cn_t, cn_a0, cn_a1, cn_a2, cn_a3);
  };
  auto cn_guard = [=](const cn::ThreadInfo& cn_t) CN_THREAD_FN {
    return saxpy__cn_guard(cn_t, cn_a0, cn_a1, cn_a2, cn_a3);
  };
  int cn_rc = cn::run_grid<false, true>(cn_d, 0, cn_fn, &cn_lanes, &cn_guard);
  std::fflush(stdout);
  return cn_rc;
}
