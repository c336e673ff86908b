[[kernel]] void custom_kernel_bug_shape_two_outputs_float_float_float(
  const device float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  device float* y [[buffer(2)]],
  device float* z [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
y[0] = x[0] * x_shape[0];
z[0] = 1.0f;
// cunumpy: thread_position_in_grid is named here so that MLX writes a valid parameter list
}
