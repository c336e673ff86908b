// cunumpy: a stand-in for <math.h> on the cupy engine (NVRTC has no C library headers).
// NVRTC provides the CUDA math functions (sqrtf, expf, fabs, ...) without a header.
#pragma once
