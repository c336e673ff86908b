// cunumpy CPU emulation: what raw kernels get from CuPy's <cupy/carray.cuh> (the complex and
// float16 types and the math constants). CArray and CIndexer, the array views of code that
// ElementwiseKernel and ReductionKernel generate, are refused by name before compiling.
#ifndef CN_CUPY_CARRAY_H
#define CN_CUPY_CARRAY_H

#include "cn_cuda_std.h"
#include "cn_cupy_complex.h"
#include "cn_cupy_float16.h"

#endif  // CN_CUPY_CARRAY_H
