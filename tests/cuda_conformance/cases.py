"""CUDA conformance kernels, each with its inputs and a NumPy reference.

A :class:`Case` is engine-neutral: inputs are NumPy arrays and Python numbers in parameter order,
the reference is computed from copies of them on the host, and :func:`run_case` (in
``harness.py``) moves arrays to whatever the engine takes. The same cases run on the GPU through
CuPy and, once it exists, on the CPU CUDA emulator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"
KERNEL_DIR = HERE / "kernels"

Args = list[Any]


@dataclass(frozen=True)
class Case:
    """One kernel, one launch, one reference.

    Attributes
    ----------
    id : str
        Test id.
    name : str
        Kernel name (``None`` for :meth:`CudaKernel.from_file` with the file's only kernel).
    inputs : callable
        ``rng -> list`` of arguments in parameter order (NumPy arrays, Python numbers).
    reference : callable
        ``args -> {argument index: expected array}`` computed on host copies of the inputs.
    source : str
        CUDA source; empty when ``file`` is given.
    file : Path, optional
        A ``.cu`` file loaded with :meth:`CudaKernel.from_file`.
    launch : callable
        ``args -> dict`` of launch keywords (``n_threads``, ``grid``, ``block``, ``shared_mem``).
    kernel_kwargs : dict
        Extra :class:`CudaKernel` keywords (``template_args``, ``include_dirs``, ...).
    rtol, atol : float
        Tolerances for floating-point outputs; integer outputs must match exactly.
    features : tuple of str
        CUDA features exercised (for engines that must skip some: xfail lists use these).
    """

    id: str
    name: str | None
    inputs: Callable[[np.random.Generator], Args]
    reference: Callable[[Args], dict[int, np.ndarray]]
    source: str = ""
    file: Path | None = None
    launch: Callable[[Args], dict[str, Any]] = field(default=lambda args: {})
    kernel_kwargs: dict[str, Any] = field(default_factory=dict)
    rtol: float = 1e-6
    atol: float = 0.0
    features: tuple[str, ...] = ()


CASES: list[Case] = []


def case(**kwargs: Any) -> None:
    CASES.append(Case(**kwargs))


def _f32(rng: np.random.Generator, n: Any, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, n).astype(np.float32)


def _blocks(x: np.ndarray, width: int) -> np.ndarray:
    """Pad a 1-D array with zeros to a multiple of ``width`` and reshape to (-1, width)."""
    n = -(-x.size // width) * width
    padded = np.zeros(n, dtype=x.dtype)
    padded[: x.size] = x
    return padded.reshape(-1, width)


# 1. elementwise -----------------------------------------------------------------------------
case(
    id="saxpy",
    name="saxpy",
    source=r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x,
                                 float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
""",
    inputs=lambda rng: [10_000, 2.5, _f32(rng, 10_000), _f32(rng, 10_000)],
    reference=lambda a: {3: np.float32(a[1]) * a[2] + a[3]},
    rtol=1e-6,
    atol=1e-6,
    features=("elementwise", "inferred-launch"),
)

# 2. 2-D launch ------------------------------------------------------------------------------
case(
    id="add2d",
    name="add2d",
    source=r"""
extern "C" __global__ void add2d(int nx, int ny, const float* a, const float* b, float* c) {
    int ix = blockIdx.x * blockDim.x + threadIdx.x;
    int iy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix < nx && iy < ny) {
        int k = iy * nx + ix;
        c[k] = a[k] + 2.0f * b[k];
    }
}
""",
    inputs=lambda rng: [
        75,
        37,
        _f32(rng, (37, 75)),
        _f32(rng, (37, 75)),
        np.zeros((37, 75), np.float32),
    ],
    reference=lambda a: {4: a[2] + np.float32(2.0) * a[3]},
    launch=lambda a: {"n_threads": (a[0], a[1])},
    atol=1e-6,
    features=("2d-launch",),
)

# 3. shared-memory tree reduction -----------------------------------------------------------
case(
    id="block_sum_shared_tree",
    name="block_sum",
    source=r"""
extern "C" __global__ void block_sum(int n, const float* x, float* partial) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}
""",
    inputs=lambda rng: [5000, _f32(rng, 5000), np.zeros(20, np.float32)],
    reference=lambda a: {2: _blocks(a[1].astype(np.float64), 256).sum(axis=1)},
    launch=lambda a: {"n_threads": a[0], "block": 256},
    rtol=1e-5,
    atol=1e-5,
    features=("shared", "syncthreads"),
)

# 4. warp-shuffle reduction -----------------------------------------------------------------
case(
    id="warp_sum_shfl_down",
    name="warp_sum",
    source=r"""
extern "C" __global__ void warp_sum(int n, const float* x, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? x[i] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}
""",
    inputs=lambda rng: [4000, _f32(rng, 4000), np.zeros(128, np.float32)],
    # 4000 threads round up to 32 blocks of 128: 128 warps, the last three past n (sum 0).
    reference=lambda a: {2: _blocks(_blocks(a[1].astype(np.float64), 4096).reshape(-1), 32).sum(1)},
    launch=lambda a: {"n_threads": a[0]},
    rtol=1e-5,
    atol=1e-5,
    features=("warp-shuffle",),
)


# 5. warp votes -----------------------------------------------------------------------------
def _vote_inputs(rng: np.random.Generator) -> Args:
    x = rng.integers(-3, 4, 1000).astype(np.int32)
    x[0:32] = 5  # a warp where every lane votes yes
    x[64:96] = -1  # a warp where no lane does
    return [1000, x, np.zeros(32, np.uint32), np.zeros(32, np.int32), np.zeros(32, np.int32)]


def _vote_reference(a: Args) -> dict[int, np.ndarray]:
    pred = _blocks(a[1] > 0, 32)  # lanes past n vote no
    weights = (np.uint64(1) << np.arange(32, dtype=np.uint64)).astype(np.uint64)
    ballots = (pred.astype(np.uint64) * weights).sum(axis=1).astype(np.uint32)
    return {2: ballots, 3: pred.any(axis=1).astype(np.int32), 4: pred.all(axis=1).astype(np.int32)}


case(
    id="warp_vote_ballot_any_all",
    name="vote",
    source=r"""
extern "C" __global__ void vote(int n, const int* x, unsigned int* ballots, int* any_out,
                                int* all_out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int pred = (i < n) && (x[i] > 0);
    unsigned int b = __ballot_sync(0xffffffffu, pred);
    int a = __any_sync(0xffffffffu, pred);
    int l = __all_sync(0xffffffffu, pred);
    if ((threadIdx.x & 31) == 0) {
        int w = i / 32;
        ballots[w] = b;
        any_out[w] = a ? 1 : 0;
        all_out[w] = l ? 1 : 0;
    }
}
""",
    inputs=_vote_inputs,
    reference=_vote_reference,
    launch=lambda a: {"n_threads": a[0]},
    features=("warp-vote",),
)

# 6. global atomic histogram ----------------------------------------------------------------
case(
    id="histogram_atomicadd",
    name="histogram",
    source=r"""
extern "C" __global__ void histogram(int n, int nbins, const int* values, unsigned int* counts) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = values[i];
        if (b >= 0 && b < nbins) atomicAdd(&counts[b], 1u);
    }
}
""",
    inputs=lambda rng: [
        20_000,
        50,
        rng.integers(-5, 55, 20_000).astype(np.int32),
        np.zeros(50, np.uint32),
    ],
    reference=lambda a: {
        3: np.bincount(a[2][(a[2] >= 0) & (a[2] < 50)], minlength=50).astype(np.uint32)
    },
    features=("atomics",),
)

# 7. shared-memory privatised histogram, grid-stride, uint8 input ---------------------------
case(
    id="histogram_shared_uint8",
    name="histogram_shared",
    source=r"""
extern "C" __global__ void histogram_shared(int n, const unsigned char* values,
                                            unsigned int* counts) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[values[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&counts[b], local[b]);
}
""",
    inputs=lambda rng: [
        50_000,
        rng.integers(0, 256, 50_000).astype(np.uint8),
        np.zeros(256, np.uint32),
    ],
    reference=lambda a: {2: np.bincount(a[1], minlength=256).astype(np.uint32)},
    launch=lambda a: {"grid": 16, "block": 256},
    features=("shared", "atomics", "grid-stride"),
)

# 8. atomicCAS float max --------------------------------------------------------------------
case(
    id="atomiccas_float_max",
    name="max_reduce",
    source=r"""
__device__ float atomic_max_float(float* addr, float value) {
    int* a = reinterpret_cast<int*>(addr);
    int old = *a;
    int assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(a, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

extern "C" __global__ void max_reduce(int n, const float* x, float* result) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomic_max_float(result, x[i]);
}
""",
    inputs=lambda rng: [30_000, _f32(rng, 30_000, -100, 100), np.full(1, -np.inf, np.float32)],
    reference=lambda a: {2: np.array([a[1].max()], np.float32)},
    features=("atomics", "atomicCAS"),
)

# 9. Hillis-Steele inclusive scan per block -------------------------------------------------
case(
    id="scan_hillis_steele",
    name="scan_hs",
    source=r"""
extern "C" __global__ void scan_hs(int n, const float* x, float* y) {
    __shared__ float buf[2][256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int in = 0;
    buf[0][tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        int out = 1 - in;
        float v = buf[in][tid];
        if (tid >= offset) v += buf[in][tid - offset];
        buf[out][tid] = v;
        __syncthreads();
        in = out;
    }
    if (i < n) y[i] = buf[in][tid];
}
""",
    inputs=lambda rng: [
        1000,
        rng.integers(0, 10, 1000).astype(np.float32),
        np.zeros(1000, np.float32),
    ],
    reference=lambda a: {2: np.cumsum(_blocks(a[1], 256), axis=1).reshape(-1)[:1000]},
    launch=lambda a: {"n_threads": a[0], "block": 256},
    features=("shared", "syncthreads", "scan"),
)


# 10. Blelloch exclusive scan, dynamic shared memory -----------------------------------------
case(
    id="scan_blelloch_dynamic_shared",
    name="scan_blelloch",
    source=r"""
extern "C" __global__ void scan_blelloch(const int* x, int* y, int n) {
    extern __shared__ int temp[];
    int tid = threadIdx.x;
    temp[2 * tid] = x[2 * tid];
    temp[2 * tid + 1] = x[2 * tid + 1];
    int offset = 1;
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    if (tid == 0) temp[n - 1] = 0;
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            int t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    __syncthreads();
    y[2 * tid] = temp[2 * tid];
    y[2 * tid + 1] = temp[2 * tid + 1];
}
""",
    inputs=lambda rng: [
        rng.integers(-50, 50, 512).astype(np.int32),
        np.zeros(512, np.int32),
        512,
    ],
    reference=lambda a: {1: np.concatenate([[0], np.cumsum(a[0])[:-1]]).astype(np.int32)},
    launch=lambda a: {"grid": 1, "block": 256, "shared_mem": 512 * 4},
    features=("dynamic-shared", "syncthreads", "scan"),
)

# 11. transpose through a padded shared tile ------------------------------------------------
case(
    id="transpose_shared_tile",
    name="transpose",
    source=r"""
#define TILE 32
#define ROWS 8
extern "C" __global__ void transpose(const float* in, float* out, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
""",
    inputs=lambda rng: [_f32(rng, (70, 45)), np.zeros((45, 70), np.float32), 45, 70],
    reference=lambda a: {1: np.ascontiguousarray(a[0].T)},
    launch=lambda a: {"grid": (-(-a[2] // 32), -(-a[3] // 32)), "block": (32, 8)},
    features=("shared", "2d-launch"),
)

# 12. tiled matmul --------------------------------------------------------------------------
case(
    id="matmul_tiled",
    name="matmul",
    source=r"""
#define T 16
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y;
    int col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + T - 1) / T; ++t) {
        int ka = t * T + threadIdx.x;
        int kb = t * T + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
""",
    inputs=lambda rng: [
        _f32(rng, (50, 70)),
        _f32(rng, (70, 40)),
        np.zeros((50, 40), np.float32),
        50,
        40,
        70,
    ],
    reference=lambda a: {2: a[0].astype(np.float64) @ a[1].astype(np.float64)},
    launch=lambda a: {"n_threads": (a[4], a[3]), "block": (16, 16)},
    rtol=1e-4,
    atol=1e-5,
    features=("shared", "syncthreads", "2d-launch"),
)


# 13. 2-D Jacobi stencil, double ------------------------------------------------------------
def _jacobi_reference(a: Args) -> dict[int, np.ndarray]:
    u = a[2]
    out = u.copy()
    out[1:-1, 1:-1] = 0.25 * (u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1])
    return {3: out}


case(
    id="jacobi2d_double",
    name="jacobi",
    source=r"""
extern "C" __global__ void jacobi(int nx, int ny, const double* u, double* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    int k = j * nx + i;
    if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
        out[k] = u[k];
        return;
    }
    out[k] = 0.25 * (u[k - 1] + u[k + 1] + u[k - nx] + u[k + nx]);
}
""",
    inputs=lambda rng: [47, 33, rng.standard_normal((33, 47)), np.zeros((33, 47))],
    reference=_jacobi_reference,
    launch=lambda a: {"n_threads": (a[0], a[1])},
    rtol=1e-14,
    atol=1e-15,
    features=("stencil", "float64", "2d-launch"),
)


# 14. 1-D stencil with a shared halo --------------------------------------------------------
def _stencil_reference(a: Args) -> dict[int, np.ndarray]:
    x = a[1].astype(np.float64)
    padded = np.concatenate([np.zeros(3), x, np.zeros(3)])
    out = sum(padded[o : o + x.size] for o in range(7))
    return {2: out}


case(
    id="stencil1d_shared_halo",
    name="stencil1d",
    source=r"""
#define R 3
#define B 128
extern "C" __global__ void stencil1d(int n, const float* in, float* out) {
    __shared__ float s[B + 2 * R];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + R;
    s[l] = (g < n) ? in[g] : 0.0f;
    if (threadIdx.x < R) {
        s[l - R] = (g - R >= 0 && g - R < n) ? in[g - R] : 0.0f;
        s[l + B] = (g + B < n) ? in[g + B] : 0.0f;
    }
    __syncthreads();
    if (g < n) {
        float acc = 0.0f;
        for (int o = -R; o <= R; ++o) acc += s[l + o];
        out[g] = acc;
    }
}
""",
    inputs=lambda rng: [3000, _f32(rng, 3000), np.zeros(3000, np.float32)],
    reference=_stencil_reference,
    launch=lambda a: {"n_threads": a[0], "block": 128},
    rtol=1e-5,
    atol=1e-5,
    features=("stencil", "shared"),
)

# 15. particle push (the benchmark's kernel) ------------------------------------------------
PUSH_SOURCE = r"""
extern "C" __global__ void push(int n, float dt, float qm, float L,
                                float* __restrict__ x, float* __restrict__ v,
                                const float* __restrict__ E) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float vi = v[i] + qm * E[i] * dt;
    float xi = x[i] + vi * dt;
    xi = xi - L * floorf(xi / L);
    v[i] = vi;
    x[i] = xi;
}
"""


def _push_inputs(rng: np.random.Generator) -> Args:
    n, dt, qm, L = 20_000, 0.1, -1.0, 10.0
    x = rng.uniform(0, L, n)
    v = rng.uniform(-20, 20, n)
    E = rng.uniform(-5, 5, n)
    # Keep final positions away from the periodic seams, where one rounding flips the wrap.
    for _ in range(10):
        end = x + (v + qm * E * dt) * dt
        frac = np.abs(end / L - np.round(end / L))
        bad = frac < 1e-3
        if not bad.any():
            break
        x[bad] = rng.uniform(0, L, bad.sum())
    return [n, dt, qm, L, x.astype(np.float32), v.astype(np.float32), E.astype(np.float32)]


def _push_reference(a: Args) -> dict[int, np.ndarray]:
    _n, dt, qm, L, x, v, E = a
    dt, qm, L = np.float32(dt), np.float32(qm), np.float32(L)
    vi = v + qm * E * dt
    xi = x + vi * dt
    xi = xi - L * np.floor(xi / L)
    return {4: xi, 5: vi}


case(
    id="particle_push",
    name="push",
    source=PUSH_SOURCE,
    inputs=_push_inputs,
    reference=_push_reference,
    rtol=1e-5,
    atol=1e-5,
    features=("elementwise", "periodic"),
)
