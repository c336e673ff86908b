// cunumpy: a stand-in for <stdlib.h> on the cupy engine (NVRTC has no C library headers).
// NVRTC provides the device functions (malloc, free, abs); the rest is host-only.
#pragma once
