[[kernel]] void custom_kernel_all_attributes_float_float(
  const device float* x [[buffer(0)]],
  device float* y [[buffer(1)]],
  uint dispatch_quadgroups_per_threadgroup [[dispatch_quadgroups_per_threadgroup]],
  uint dispatch_simdgroups_per_threadgroup [[dispatch_simdgroups_per_threadgroup]],
  uint3 dispatch_threads_per_threadgroup [[dispatch_threads_per_threadgroup]],
  uint3 grid_origin [[grid_origin]],
  uint3 grid_size [[grid_size]],
  uint quadgroup_index_in_threadgroup [[quadgroup_index_in_threadgroup]],
  uint quadgroups_per_threadgroup [[quadgroups_per_threadgroup]],
  uint simdgroup_index_in_threadgroup [[simdgroup_index_in_threadgroup]],
  uint simdgroups_per_threadgroup [[simdgroups_per_threadgroup]],
  uint thread_execution_width [[thread_execution_width]],
  uint thread_index_in_quadgroup [[thread_index_in_quadgroup]],
  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]],
  uint thread_index_in_threadgroup [[thread_index_in_threadgroup]],
  uint3 thread_position_in_grid [[thread_position_in_grid]],
  uint3 thread_position_in_threadgroup [[thread_position_in_threadgroup]],
  uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]],
  uint3 threadgroups_per_grid [[threadgroups_per_grid]],
  uint3 threads_per_grid [[threads_per_grid]],
  uint threads_per_simdgroup [[threads_per_simdgroup]],
  uint3 threads_per_threadgroup [[threads_per_threadgroup]]) {
(void)dispatch_quadgroups_per_threadgroup;
(void)dispatch_simdgroups_per_threadgroup;
(void)dispatch_threads_per_threadgroup;
(void)grid_origin;
(void)grid_size;
(void)quadgroup_index_in_threadgroup;
(void)quadgroups_per_threadgroup;
(void)simdgroup_index_in_threadgroup;
(void)simdgroups_per_threadgroup;
(void)thread_execution_width;
(void)thread_index_in_quadgroup;
(void)thread_index_in_simdgroup;
(void)thread_index_in_threadgroup;
(void)thread_position_in_grid;
(void)thread_position_in_threadgroup;
(void)threadgroup_position_in_grid;
(void)threadgroups_per_grid;
(void)threads_per_grid;
(void)threads_per_simdgroup;
(void)threads_per_threadgroup;
y[0] = x[0];
}
