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
CN_EXPORT int cn_launch(const cn::LaunchDesc* d) {
  if (d->abi != CN_ABI_VERSION || d->nbuffers != 4) return -2;
  const long long* cn_meta = static_cast<const long long*>(d->buffers[3].data);
  ::cn::cuda::dynamic_shared_bytes = cn_meta[0];
  ::cn::cuda::ub_mode = d->buffers[3].extent >= 24 ? cn_meta[1] : 0;
  ::cn::cuda::ub_report = d->buffers[3].extent >= 24 ? reinterpret_cast<::cn::cuda::UbReport*>(cn_meta[2]) : nullptr;
  if (d->buffers[0].extent != sizeof(int)) return -2;
  int a0;
  std::memcpy(&a0, d->buffers[0].data, sizeof a0);
  const ::cn::cuda::PtrArg a1{d->buffers[1].data, d->buffers[1].extent, 1};
  const ::cn::cuda::PtrArg a2{d->buffers[2].data, d->buffers[2].extent, 2};
  auto cn_fn = [=](const cn::ThreadInfo& t) CN_THREAD_FN {
    CN_RACE_TRY block_sum(t, a0, a1, a2); CN_RACE_CATCH
  };
  int rc = cn::run_grid<true, false>(d, 1, cn_fn);
  std::fflush(stdout);
  return rc;
}
