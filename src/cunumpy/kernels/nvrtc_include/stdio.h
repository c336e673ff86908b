// cunumpy: a stand-in for <stdio.h> on the cupy engine (NVRTC has no C library headers).
// printf is built into NVRTC; nothing else of stdio.h runs on the device.
#pragma once
