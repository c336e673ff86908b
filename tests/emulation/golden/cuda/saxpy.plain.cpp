#include "cn_cuda.h"
#line 1 "saxpy.cu"

extern "C++" __global__ void saxpy(const ::cn::ThreadInfo& cn_this_thread, int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

#line 1 "cn-lanes"
static inline __attribute__((always_inline)) void saxpy__cn_lanes(const ::cn::ThreadInfo& cn_this_thread, int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

#line 1 "cn-launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {
  if (d->abi != CN_ABI_VERSION || d->nbuffers != 5) return -2;
  const long long* cn_meta = static_cast<const long long*>(d->buffers[4].data);
  ::cn::cuda::dynamic_shared_bytes = cn_meta[0];
  ::cn::cuda::ub_mode = d->buffers[4].extent >= 24 ? cn_meta[1] : 0;
  ::cn::cuda::ub_report = d->buffers[4].extent >= 24 ? reinterpret_cast<::cn::cuda::UbReport*>(cn_meta[2]) : nullptr;
  if (d->buffers[0].extent != sizeof(int)) return -2;
  int a0;
  std::memcpy(&a0, d->buffers[0].data, sizeof a0);
  if (d->buffers[1].extent != sizeof(float)) return -2;
  float a1;
  std::memcpy(&a1, d->buffers[1].data, sizeof a1);
  const ::cn::cuda::PtrArg a2{d->buffers[2].data, d->buffers[2].extent, 2};
  const ::cn::cuda::PtrArg a3{d->buffers[3].data, d->buffers[3].extent, 3};
  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    CN_RACE_TRY saxpy(t, a0, a1, a2, a3); CN_RACE_CATCH
  };
  auto cn_lanes = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    saxpy__cn_lanes(t, a0, a1, a2, a3);
  };
  int rc = cn::run_grid<false, false>(d, 0, cn_fn, &cn_lanes);
  std::fflush(stdout);
  return rc;
}
