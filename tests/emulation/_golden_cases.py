"""Representative kernels for the rewriter golden tests (``test_rewriter_golden.py``).

Each kernel exercises one construct class of a rewriter: pointer parameters that become checked
pointers, static and dynamic shared memory, barriers (fibers), warp/SIMD functions, templates,
``__device__`` helpers with pointer parameters, local pointers and threadgroup arrays.
"""

from __future__ import annotations

CUDA: dict[str, dict] = {
    "saxpy": dict(name="saxpy", source=r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""),
    "block_sum": dict(name="block_sum", source=r"""
// a static shared array and barriers: the kernel runs as fibers
extern "C" __global__ void block_sum(int n, const float* x, float* partial) {
    __shared__ float s[128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""),
    "dynamic_shared": dict(name="reverse", source=r"""
extern "C" __global__ void reverse(int n, const int* x, int* y) {
    extern __shared__ int buf[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (i < n) buf[t] = x[i];
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - t);
    if (j < n) y[i] = buf[blockDim.x - 1 - t];
}
"""),
    "warp_and_device_helper": dict(name="warp_sum", source=r"""
__device__ float load_or_zero(const float* p, int i, int n) { return i < n ? p[i] : 0.0f; }

extern "C" __global__ void warp_sum(int n, const float* x, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = load_or_zero(x, i, n);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
"""),
    "template": dict(name="scale_pow", template_args=("double", 3), source=r"""
template <typename T, int N>
__global__ void scale_pow(const T* x, T* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    T v = x[i], r = 1;
    for (int k = 0; k < N; ++k) r *= v;
    y[i] = r;
}
"""),
    "scopes_and_host_names": dict(name="apply", source=r"""
// scopes: a namespace, an extern "C" block, a struct, an enum, namespace-scope __constant__
// and __device__ data, and names the host headers declare (gamma, index) declared by the kernel
namespace coeffs {
__constant__ float gamma[4];
struct Pair { float a; float b; };
enum Mode { ADD = 0, MUL = 1 };
}
__device__ int index[2];
static const int table[3] = {1, 2, 3};
extern "C" {
__device__ float combine(const float* p, int i, coeffs::Pair q) { return p[i] * q.a + q.b; }
__global__ void apply(int n, const float* x, float* y) {
    __shared__ float tile[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    coeffs::Pair q = {coeffs::gamma[i & 3], (float)table[i % 3]};
    tile[threadIdx.x] = i < n ? combine(x, i, q) : 0.0f;
    __syncthreads();
    if (i < n) {
        const float* row = &tile[0];
        y[i] = row[threadIdx.x] + index[i & 1];
    }
}
}
"""),
}
"""name -> CudaKernel arguments (``source``, ``name``, optional ``template_args``)."""

METAL: dict[str, dict] = {
    "elementwise": dict(inputs=[("x", "float32", (64,))], outputs=[("y", "float32", (64,))],
                        source="""
    uint i = thread_position_in_grid.x;
    y[i] = metal::exp(x[i]) * 2.0f;
"""),
    "threadgroup_reduce": dict(inputs=[("x", "float32", (256,))],
                               outputs=[("out", "float32", (4,))], source="""
    threadgroup float s[64];
    uint t = thread_position_in_threadgroup.x;
    s[t] = x[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 32; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) out[threadgroup_position_in_grid.x] = s[0];
"""),
    "simd_and_local_pointer": dict(inputs=[("x", "float32", (128,))],
                                   outputs=[("y", "float32", (128,))], source="""
    uint i = thread_position_in_grid.x;
    const device float* p = x + i;
    float v = simd_sum(*p);
    y[i] = v - simd_broadcast_first(v);
"""),
    "template_and_header": dict(inputs=[("x", "float32", (32,))],
                                outputs=[("y", "float32", (32,))],
                                template=[("T", "float32"), ("N", 4)],
                                header="""
template <typename U>
U twice(const device U* p, uint i) { return p[i] + p[i]; }
""", source="""
    uint i = thread_position_in_grid.x;
    T acc = 0;
    for (int k = 0; k < N; ++k) acc += twice(x, i);
    y[i] = acc;
"""),
    "scopes_in_header": dict(inputs=[("x", "float32", (64,))],
                             outputs=[("y", "float32", (64,))],
                             header="""
namespace helpers {
struct Scale { float k; float add(const device float* p, uint i) const { return p[i] * k; } };
enum Pick { FIRST = 0, SECOND = 1 };
constant float bias[2] = {0.5f, 1.5f};
}
""", source="""
    uint i = thread_position_in_grid.x;
    helpers::Scale s = {2.0f};
    threadgroup float t[64];
    t[thread_position_in_threadgroup.x] = s.add(x, i);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    {
        const device float* q = x + i;
        threadgroup float* r = &t[0];
        y[i] = *q + r[thread_position_in_threadgroup.x] + helpers::bias[helpers::SECOND];
    }
"""),
}
"""name -> MLX-style kernel: inputs/outputs as (name, dtype, shape), template, header, body."""
