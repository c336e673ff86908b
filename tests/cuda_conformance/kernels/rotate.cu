// Loaded with CudaKernel.from_file: the only __global__ function in the file is picked.
#include "rotate_helpers.cuh"

extern "C" __global__ void rotate2(int n, float angle, const float* xy, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float c = cosf(angle);
    float s = sinf(angle);
    out[2 * i] = rot_x(xy[2 * i], xy[2 * i + 1], c, s);
    out[2 * i + 1] = rot_y(xy[2 * i], xy[2 * i + 1], c, s);
}
