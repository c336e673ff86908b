// cunumpy: a stand-in for <cublas.h> on the cupy engine. The cuBLAS API is host code; what device
// code gets from it under nvcc is the half and bfloat16 types its declarations include.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
