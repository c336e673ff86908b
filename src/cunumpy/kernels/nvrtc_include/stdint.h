// cunumpy: a stand-in for <stdint.h> on the cupy engine (NVRTC has no C library headers).
// The fixed-width integer types and their limits come from CCCL (on CuPy's include path).
#pragma once
#include <cuda/std/cstdint>
