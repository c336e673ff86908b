// cunumpy: a stand-in for <float.h> on the cupy engine (NVRTC has no C library headers).
// FLT_MAX, DBL_EPSILON and friends from CCCL.
#pragma once
#include <cuda/std/cfloat>
