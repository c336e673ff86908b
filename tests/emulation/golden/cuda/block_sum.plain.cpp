#include "cn_cuda.h"
#line 1 "block_sum.cu"

// a static shared array and barriers: the kernel runs as fibers
extern "C++" __global__ void block_sum(const ::cn::ThreadInfo& cn_this_thread, int n, const float* x, float* partial) {
    auto& s = ::cn::tg_alloc<float[128]>(0);
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
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
    CN_RACE_TRY block_sum(cn_t, cn_a0, cn_a1, cn_a2); CN_RACE_CATCH
  };
  int cn_rc = cn::run_grid<true, false>(cn_d, 1, cn_fn);
  std::fflush(stdout);
  return cn_rc;
}
