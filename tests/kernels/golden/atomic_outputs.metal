[[kernel]] void custom_kernel_atomic_outputs_float_float_int32_t(
  const device float* x [[buffer(0)]],
  device atomic<float>* h [[buffer(1)]],
  device atomic<int32_t>* n [[buffer(2)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&h[0], x[i], memory_order_relaxed);
atomic_fetch_add_explicit(&n[0], 1, memory_order_relaxed);
}
