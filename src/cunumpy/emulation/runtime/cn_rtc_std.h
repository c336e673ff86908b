// cn_rtc_std.h: the few standard-library names the Metal runtime uses, for NVRTC.
//
// NVRTC has no C++ standard library. When a runtime header is compiled for the device by NVRTC
// (__CUDACC_RTC__), this header stands in for <type_traits>, <limits>, <cstdint>, <cstddef>,
// <utility> and <cfloat>: it takes them from CCCL's libcu++ (<cuda/std/...>, shipped with NVRTC)
// and makes them visible as std::, so the same runtime text compiles for the host (g++) and the
// device. Host compilers never include it.
#ifndef CN_RTC_STD_H
#define CN_RTC_STD_H
#ifdef __CUDACC_RTC__
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/utility>
#include <cuda/std/cfloat>
namespace std {
using namespace ::cuda::std;  // std::is_same, std::numeric_limits, std::int32_t, ...
}  // namespace std
// GCC builtins the runtime uses, onto CUDA's device functions.
#define __builtin_memcpy(d, s, n) memcpy(d, s, n)
#define __builtin_clzll(x) __clzll(static_cast<long long>(x))
#define __builtin_ctzll(x) (__ffsll(static_cast<long long>(x)) - 1)
#endif
#endif  // CN_RTC_STD_H
