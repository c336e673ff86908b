#define SCALE 2.0f
template <typename T, int N, bool B, typename U>
[[kernel]] void custom_kernel_template_mixed__float_4_1_int32_t_float_floats_float(
  const device float* x [[buffer(0)]],
  const constant float& s [[buffer(1)]],
  device float* y [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
T v = T(x[i]); if (B) { v = v * N; } y[i] = U(v);
}

template [[host_name("custom_kernel_template_mixed__float_4_1_int32_t_float_floats_float")]] [[kernel]] decltype(custom_kernel_template_mixed__float_4_1_int32_t_float_floats_float<float, 4, 1, int32_t>) custom_kernel_template_mixed__float_4_1_int32_t_float_floats_float<float, 4, 1, int32_t>;
