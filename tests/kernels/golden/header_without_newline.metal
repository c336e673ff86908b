#define SCALE 3.0ftemplate <int N>
[[kernel]] void custom_kernel_header_without_newline__1_float_float(
  const device float* x [[buffer(0)]],
  device float* y [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
y[i] = x[i] * SCALE;
}

template [[host_name("custom_kernel_header_without_newline__1_float_float")]] [[kernel]] decltype(custom_kernel_header_without_newline__1_float_float<1>) custom_kernel_header_without_newline__1_float_float<1>;
