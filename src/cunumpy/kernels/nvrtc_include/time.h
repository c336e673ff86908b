// cunumpy: a stand-in for <time.h> on the cupy engine (NVRTC has no C library headers). Its host
// functions do not run on the device; size_t, ptrdiff_t and NULL are NVRTC built-ins (std::
// names come from cunumpy_nvrtc.h).
#pragma once
