[[kernel]] void custom_kernel_zero_d_float_floats_int32_ts_float(
  const device float* x [[buffer(0)]],
  const constant float& s [[buffer(1)]],
  const constant int32_t& n [[buffer(2)]],
  device float* y [[buffer(3)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
y[i] = s * x[i] + float(n);
}
