// cunumpy: a stand-in for <limits.h> on the cupy engine (NVRTC has no C library headers).
// INT_MAX and friends from CCCL.
#pragma once
#include <cuda/std/climits>
