// cunumpy CPU emulation: the runtime of whole Metal libraries (cunumpy.emulation.metal_library).
// The same as cn_metal.h, except that MLX's preamble names (complex64_t, Limits, elem_to_loc,
// ceildiv, ...) stay out of the global namespace, where a library may declare its own.
#ifndef CN_METAL_LIBRARY_H
#define CN_METAL_LIBRARY_H
#define CN_METAL_LIBRARY 1
#include "cn_metal.h"
#endif  // CN_METAL_LIBRARY_H
