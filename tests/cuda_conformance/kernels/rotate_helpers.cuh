// Found beside rotate.cu (the file's own folder is searched first for quoted includes).
#pragma once

__device__ inline float rot_x(float x, float y, float c, float s) { return c * x - s * y; }
__device__ inline float rot_y(float x, float y, float c, float s) { return s * x + c * y; }
