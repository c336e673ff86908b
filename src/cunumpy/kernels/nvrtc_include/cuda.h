// cunumpy: an empty stand-in for <cuda.h> on the cupy engine. NVRTC compiles device code only
// and provides the CUDA built-ins itself; the toolkit's cuda.h declares the host API and pulls
// in the C library (stdlib.h), which NVRTC cannot open. This folder is searched before the
// toolkit's include folder.
#pragma once
// The toolkit's version, as its cuda.h defines it (NVRTC defines CUDART_VERSION itself).
#ifndef CUDA_VERSION
#define CUDA_VERSION CUDART_VERSION
#endif
