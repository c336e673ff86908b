// cunumpy Metal runtime: the barrier memory flags and thread scopes, one definition shared by
// the CPU emulator (cn_metal.h) and the CUDA engine (cn_metal_cuda.h). Plain C++ that g++ and
// NVRTC both compile.
#pragma once

namespace metal {

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}
constexpr mem_flags operator&(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) & unsigned(b));
}

enum class thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup,
                          thread_scope_device };

}  // namespace metal
