// cunumpy: a stand-in for <assert.h> on the cupy engine (NVRTC has no C library headers).
// The assert macro from CCCL (device code: the failing thread stops the kernel).
#pragma once
#include <cuda/std/cassert>
