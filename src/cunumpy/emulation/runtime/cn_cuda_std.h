// cunumpy CPU emulation: libcu++'s <cuda/std/...> headers (and CuPy's <cupy/cuda_workaround.h>,
// which brings them into std for NVRTC). The emulator compiles with the host's C++ library, so
// cuda::std is an alias of std.
#ifndef CN_CUDA_STD_H
#define CN_CUDA_STD_H

#include "cn_cuda.h"

#include <array>
#include <cfloat>
#include <climits>
#include <complex>
#include <cstddef>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

namespace cuda {
namespace std = ::std;
}  // namespace cuda

#endif  // CN_CUDA_STD_H
