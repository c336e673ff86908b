#include "cn_cuda.h"
#line 1 "warp_sum.cu"

__device__ float load_or_zero( cn::ptr<const float> p, int i, int n) { return i < n ? ::cn::cuda::at_site(p, __LINE__, __FILE__)[i] : 0.0f; }

extern "C++" __global__ void warp_sum(const ::cn::ThreadInfo& cn_this_thread, int n, cn::ptr<const float> x, cn::ptr<float> out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = load_or_zero(x, i, n);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

#line 1 "cn-launch"
CN_EXPORT int cn_launch(const cn::LaunchDesc* cn_d) {
  if (cn_d->abi != CN_ABI_VERSION || cn_d->nbuffers != 4) return -2;
  const long long* cn_meta = static_cast<const long long*>(cn_d->buffers[3].data);
  ::cn::cuda::dynamic_shared_bytes = cn_meta[0];
  ::cn::cuda::ub_mode = cn_d->buffers[3].extent >= 24 ? cn_meta[1] : 0;
  ::cn::cuda::ub_report = cn_d->buffers[3].extent >= 24 ? reinterpret_cast<::cn::cuda::UbReport*>(cn_meta[2]) : nullptr;
  if (cn_d->buffers[0].extent != sizeof(int)) return -2;
  int cn_a0;
  std::memcpy(&cn_a0, cn_d->buffers[0].data, sizeof cn_a0);
  const ::cn::cuda::PtrArg cn_a1{cn_d->buffers[1].data, cn_d->buffers[1].extent, 1};
  const ::cn::cuda::PtrArg cn_a2{cn_d->buffers[2].data, cn_d->buffers[2].extent, 2};
  auto cn_fn = [=](const cn::ThreadInfo& cn_t) CN_THREAD_FN {
    CN_RACE_TRY warp_sum(cn_t, cn_a0, cn_a1, cn_a2); CN_RACE_CATCH
  };
  int cn_rc = cn::run_grid<true, true>(cn_d, 0, cn_fn);
  std::fflush(stdout);
  return cn_rc;
}
