[[kernel]] void custom_kernel_scale_float_floatc_float(
  const device float* x [[buffer(0)]],
  const constant float* a [[buffer(1)]],
  device float* y [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];
}
