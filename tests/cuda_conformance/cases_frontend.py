"""Conformance cases for what the CudaKernel front end reads: namespaces, template arguments in
names, preprocessor branches, null pointers, vector/complex/half/typedef/struct parameters,
host-API includes and declared outputs. Same :class:`~cases.Case` shape as ``cases.py``; run on
every CUDA engine by ``test_frontend_cases.py``.
"""

from __future__ import annotations

import numpy as np

from cunumpy.kernels import cuda_dtype

from .cases import Args, Case

CASES: list[Case] = []


def case(**kwargs) -> None:
    CASES.append(Case(**kwargs))


def _f32(rng: np.random.Generator, n, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, n).astype(np.float32)


# 1. nested namespaces ------------------------------------------------------------------------
case(
    id="namespace_nested",
    name="phys::kernels::damp",
    source=r"""
namespace phys {
__device__ inline float factor(float g) { return 1.0f - g; }
namespace kernels {
__global__ void damp(float* v, float gamma, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= factor(gamma);
}
}  // namespace kernels
}  // namespace phys
""",
    inputs=lambda rng: [_f32(rng, 1000), 0.25, 1000],
    reference=lambda a: {0: a[0] * np.float32(0.75)},
    features=("namespace",),
)

# 2. a template in a namespace, instantiated with a vector type written in the name ----------
_BINS = 16


def _hist_inputs(rng: np.random.Generator) -> Args:
    px = np.zeros(3000, cuda_dtype("float4"))
    for lane in "xyzw":
        px[lane] = rng.uniform(0.0, 1.0, 3000).astype(np.float32)
    return [px, 3000, np.zeros(3 * _BINS, np.uint32)]


def _hist_reference(a: Args) -> dict[int, np.ndarray]:
    out = []
    for lane in "xyz":
        b = np.minimum((a[0][lane] * _BINS).astype(np.int64), _BINS - 1)
        out.append(np.bincount(b, minlength=_BINS))
    return {2: np.concatenate(out).astype(np.uint32)}


case(
    id="namespace_template_vector_in_name",
    name=f"img::hist<{_BINS}, 3, float4>",
    source=r"""
namespace img {
template <int BINS, int CH, typename V>
__global__ void hist(const V* __restrict__ px, int n, unsigned int* counts) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    V p = px[i];
    float c[4] = {p.x, p.y, p.z, p.w};
    for (int ch = 0; ch < CH; ++ch) {
        int b = min(int(c[ch] * BINS), BINS - 1);
        atomicAdd(&counts[ch * BINS + b], 1u);
    }
}
}
""",
    inputs=_hist_inputs,
    reference=_hist_reference,
    features=("namespace", "template-in-name", "vector-pointer"),
)

# 3. template arguments in the name, no namespace --------------------------------------------
case(
    id="template_args_in_name",
    name="k_scale<4>",
    source=r"""
template <int K>
__global__ void k_scale(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = K * x[i];
}
""",
    inputs=lambda rng: [np.zeros(500, np.float32), _f32(rng, 500), 500],
    reference=lambda a: {0: np.float32(4) * a[1]},
    features=("template-in-name",),
)

# 4. preprocessor: an inactive bfloat16 branch, digit separators, -D selecting a typedef -----
_PP = r"""
#if defined(ENABLE_BF16)
#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;
#elif defined(USE_DOUBLE)
typedef double floatX;
#else
typedef float floatX;
#endif
constexpr int SCALE = 1'000;  // a digit separator on the kernel's line
__global__ void scaled(const floatX* x, floatX* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * SCALE; }
"""
case(
    id="preprocessor_inactive_bf16_branch",
    name="scaled",
    source=_PP,
    inputs=lambda rng: [_f32(rng, 700), np.zeros(700, np.float32), 700],
    reference=lambda a: {1: a[0] * np.float32(1000)},
    features=("preprocessor", "typedef"),
)
case(
    id="preprocessor_define_selects_double",
    name="scaled",
    source=_PP,
    kernel_kwargs={"options": ("-DUSE_DOUBLE=1",)},
    inputs=lambda rng: [rng.uniform(-1, 1, 700), np.zeros(700), 700],
    reference=lambda a: {1: a[0] * 1000.0},
    rtol=1e-12,
    features=("preprocessor", "typedef", "options"),
)


# 5. a null pointer for an optional output ---------------------------------------------------
_OPTIONAL = r"""
__global__ void sum_sq(const float* x, int n, float* y, float* partial = NULL) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = x[i] * x[i];
    if (partial != NULL && threadIdx.x == 0) partial[blockIdx.x] = -1.0f;
}
"""
case(
    id="null_pointer_argument",
    name="sum_sq",
    source=_OPTIONAL,
    inputs=lambda rng: [_f32(rng, 300), 300, np.zeros(300, np.float32), None],
    reference=lambda a: {2: a[0] * a[0]},
    features=("null-pointer", "default-argument"),
)
case(
    id="null_pointer_parameter_given_an_array",
    name="sum_sq",
    source=_OPTIONAL,
    inputs=lambda rng: [_f32(rng, 300), 300, np.zeros(300, np.float32), np.zeros(3, np.float32)],
    reference=lambda a: {2: a[0] * a[0], 3: np.full(3, -1.0, np.float32)},
    features=("null-pointer",),
)


# 6. vectors: by value, by pointer as structured arrays and as arrays of the base type ------
def _vec_inputs(rng: np.random.Generator) -> Args:
    pos = np.zeros(400, cuda_dtype("float4"))
    for lane in "xyzw":
        pos[lane] = _f32(rng, 400)
    vel = _f32(rng, (400, 3))  # float3* as float32[n, 3]
    shift = np.array((0.5, -1.0, 2.0), cuda_dtype("float3"))[()]
    return [pos, vel, shift, 0.1, np.zeros((400, 4), np.float32), 400]


def _vec_reference(a: Args) -> dict[int, np.ndarray]:
    pos, vel, shift, dt = a[0], a[1], a[2], np.float32(a[3])
    out = np.zeros((400, 4), np.float32)
    for k, lane in enumerate("xyz"):
        out[:, k] = pos[lane] + dt * vel[:, k] + shift[lane]
    out[:, 3] = pos["w"]
    return {4: out}


case(
    id="vector_types_by_value_and_pointer",
    name="push",
    source=r"""
extern "C" __global__ void push(const float4* __restrict__ pos, const float3* vel, float3 shift,
                                float dt, float4* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 p = pos[i];
    float3 v = vel[i];
    out[i] = make_float4(p.x + dt * v.x + shift.x, p.y + dt * v.y + shift.y,
                         p.z + dt * v.z + shift.z, p.w);
}
""",
    inputs=_vec_inputs,
    reference=_vec_reference,
    atol=1e-6,
    features=("vector-value", "vector-pointer", "vector-base-array"),
)


def _int2_inputs(rng: np.random.Generator) -> Args:
    pairs = rng.integers(-50, 50, (256, 2)).astype(np.int32)
    d2 = np.zeros(256, cuda_dtype("double2"))
    d2["x"], d2["y"] = rng.uniform(-1, 1, 256), rng.uniform(-1, 1, 256)
    return [pairs, d2, np.zeros(256, np.int64), np.zeros(256), 256]


case(
    id="int2_and_double2_pointers",
    name="combine",
    source=r"""
extern "C" __global__ void combine(const int2* ab, const double2* uv, long long* prod,
                                   double* dot, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    prod[i] = (long long)ab[i].x * ab[i].y;
    dot[i] = uv[i].x * ab[i].x + uv[i].y * ab[i].y;
}
""",
    inputs=_int2_inputs,
    reference=lambda a: {
        2: a[0][:, 0].astype(np.int64) * a[0][:, 1],
        3: a[1]["x"] * a[0][:, 0] + a[1]["y"] * a[0][:, 1],
    },
    rtol=1e-12,
    features=("vector-pointer", "vector-base-array"),
)

# 7. structs by value and by pointer ----------------------------------------------------------
_STRUCTS = r"""
struct __align__(8) Params {
    float a;
    int b;
    double c;
    float3 d;      // offset 16, 12 bytes: sizeof(Params) is 32
};
typedef struct {
    float3 pos;
    float mass;
} Particle;
using real = double;

__global__ void apply(Params p, const Particle* parts, real* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle q = parts[i];
    out[i] = p.a * q.mass + p.b + p.c * q.pos.x + p.d.y * q.pos.z;
}
"""


def _struct_inputs(rng: np.random.Generator) -> Args:
    particle = np.dtype([("pos", cuda_dtype("float3")), ("mass", np.float32)])
    parts = np.zeros(333, particle)
    parts["mass"] = _f32(rng, 333, 0.5, 2.0)
    for lane in "xyz":
        parts["pos"][lane] = _f32(rng, 333)
    return [(1.5, 3, -0.25, (0.0, 2.0, 0.0)), parts, np.zeros(333), 333]


def _struct_reference(a: Args) -> dict[int, np.ndarray]:
    (pa, pb, pc, pd), parts = a[0], a[1]
    pos = parts["pos"]
    m = parts["mass"].astype(np.float32)
    out = (np.float32(pa) * m).astype(np.float64) + pb + pc * pos["x"].astype(np.float64) + (
        (np.float32(pd[1]) * pos["z"]).astype(np.float64)
    )
    return {2: out}


case(
    id="struct_by_value_and_by_pointer",
    name="apply",
    source=_STRUCTS,
    inputs=_struct_inputs,
    reference=_struct_reference,
    rtol=1e-6,
    features=("struct-value", "struct-pointer", "typedef", "using"),
)

# 8. __half parameters (cuda_fp16.h) ---------------------------------------------------------
case(
    id="half_parameters",
    name="half_axpy",
    source=r"""
#include <cuda_fp16.h>
extern "C" __global__ void half_axpy(const __half* x, __half a, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __half2float(a) * __half2float(x[i]) + y[i];
}
""",
    inputs=lambda rng: [_f32(rng, 512).astype(np.float16), 0.5, _f32(rng, 512), 512],
    reference=lambda a: {2: np.float32(0.5) * a[0].astype(np.float32) + a[2]},
    atol=1e-6,
    features=("half",),
)

# 9. host-API includes at the top of a copied kernel file ------------------------------------
case(
    id="host_api_includes",
    name="twice",
    source=r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <device_launch_parameters.h>

__global__ void twice(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= 2.0f;
}
""",
    inputs=lambda rng: [_f32(rng, 100), 100],
    reference=lambda a: {0: a[0] * np.float32(2)},
    features=("includes",),
)

# 10. a declared write-only output that is fully written -------------------------------------
case(
    id="declared_output_fully_written",
    name="square",
    source=r"""
__global__ void square(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}
""",
    kernel_kwargs={"outputs": ["y"]},
    inputs=lambda rng: [_f32(rng, 777), np.empty(777, np.float32), 777],
    reference=lambda a: {1: a[0] * a[0]},
    features=("outputs",),
)

# 11. complex parameters through cuComplex.h ---------------------------------------------------
case(
    id="cucomplex_parameters",
    name="cmul",
    source=r"""
#include <cuComplex.h>
extern "C" __global__ void cmul(const cuFloatComplex* a, cuFloatComplex s, cuFloatComplex* out,
                                int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = cuCmulf(a[i], s);
}
""",
    inputs=lambda rng: [
        (_f32(rng, 256) + 1j * _f32(rng, 256)).astype(np.complex64),
        0.5 - 2j,
        np.zeros(256, np.complex64),
        256,
    ],
    reference=lambda a: {2: (a[0] * np.complex64(a[1])).astype(np.complex64)},
    atol=1e-6,
    features=("complex", "cuComplex.h"),
)

# 12. C library headers that copied kernels include (NVRTC has none of them) -----------------
case(
    id="c_library_includes",
    name="clamp_count",
    source=r"""
#include <stdio.h>
#include <stdint.h>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <assert.h>
#include <cstdint>
#include <cmath>

__global__ void clamp_count(const float* x, float* y, uint32_t* big, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    assert(n <= INT_MAX);
    float v = fminf(fmaxf(x[i], -FLT_MAX), FLT_MAX);
    y[i] = sqrtf(fabsf(v)) + (float)std::floor(v);
    if (fabs(v) > 0.5) atomicAdd(big, (std::uint32_t)1);
}
""",
    inputs=lambda rng: [_f32(rng, 1000), np.zeros(1000, np.float32), np.zeros(1, np.uint32),
                        1000],
    reference=lambda a: {
        1: np.sqrt(np.abs(a[0])) + np.floor(a[0]),
        2: np.array([np.count_nonzero(np.abs(a[0]) > 0.5)], np.uint32),
    },
    rtol=1e-6,
    atol=1e-6,
    features=("includes", "c-headers"),
)

# 13. thrust::complex parameters through CuPy's complex header --------------------------------
case(
    id="thrust_complex_parameters",
    name="crot",
    source=r"""
#include <cupy/complex.cuh>
extern "C" __global__ void crot(const complex<double>* z, complex<double> w, complex<double>* out,
                                int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = z[i] * w + complex<double>(1.0, 0.0);
}
""",
    inputs=lambda rng: [
        rng.uniform(-1, 1, 200) + 1j * rng.uniform(-1, 1, 200),
        0.25 + 1j,
        np.zeros(200, np.complex128),
        200,
    ],
    reference=lambda a: {2: a[0] * a[1] + 1.0},
    rtol=1e-12,
    atol=1e-12,
    features=("complex", "cupy/complex.cuh"),
)

# 14. types named by macros, enums and class-template members --------------------------------
case(
    id="macro_enum_and_member_types",
    name="scale_mode<double>",
    source=r"""
#ifndef REAL
#define REAL float
#endif
enum Mode { ADD = 0, MUL = 1 };
template <typename T> struct vec2 { typedef float2 Type; };
template <> struct vec2<double> { typedef double2 Type; };

template <typename T>
__global__ void scale_mode(const typename vec2<T>::Type* uv, REAL* out, Mode mode, REAL s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = mode == MUL ? (REAL)(uv[i].x * uv[i].y) * s : (REAL)(uv[i].x + uv[i].y) + s;
}
""",
    inputs=lambda rng: [rng.uniform(-1, 1, (300, 2)), np.zeros(300, np.float32), 1, 2.0, 300],
    reference=lambda a: {1: (a[0][:, 0] * a[0][:, 1]).astype(np.float32) * np.float32(2)},
    rtol=1e-6,
    atol=1e-6,
    features=("macro-type", "enum", "member-type", "template-in-name"),
)
