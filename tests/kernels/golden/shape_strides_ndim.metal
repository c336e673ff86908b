[[kernel]] void custom_kernel_shape_strides_ndim_float_floatc_float(
  const device float* x [[buffer(0)]],
  const constant int* x_shape [[buffer(1)]],
  const constant int64_t* x_strides [[buffer(2)]],
  const constant int& x_ndim [[buffer(3)]],
  const constant float* w [[buffer(4)]],
  const constant int* w_shape [[buffer(5)]],
  device float* y [[buffer(6)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
uint loc = elem_to_loc(i, x_shape, x_strides, x_ndim);
y[i] = x[loc] + w[i % w_shape[1]];
}
