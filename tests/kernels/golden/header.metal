#include <metal_stdlib>

inline float twice(float v) { return 2.0f * v; }
[[kernel]] void custom_kernel_header_float_float(
  const device float* x [[buffer(0)]],
  device float* y [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
y[i] = twice(x[i]);
}
