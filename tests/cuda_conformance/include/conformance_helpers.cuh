// Helpers shared by conformance kernels; found through include_dirs= (not the source's folder).
#pragma once

#define CN_SCALE 3.0f

__device__ inline float cn_clamp(float v, float lo, float hi) {
    return fminf(fmaxf(v, lo), hi);
}
