"""Conformance cases for where a kernel reads ``threadIdx``/``blockIdx``/``blockDim``/``gridDim``.

The emulator gives the launched kernel its thread as a hidden parameter, and everything else
(device functions, lambdas that capture nothing by default, classes defined in the body) reads
the thread the runtime keeps current. Each case is one of those places, and the 2-D and 3-D grids
check the group position the grid walk computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cases import Args, Case

CASES: list[Case] = []


def case(**kwargs: Any) -> None:
    CASES.append(Case(**kwargs))


N = 1000


def _index_inputs(rng: np.random.Generator) -> Args:
    return [np.zeros(N, np.int32), N]


def _index_reference(a: Args) -> dict[int, np.ndarray]:
    return {0: np.arange(N, dtype=np.int32) * 3 + 1}


_BODIES = {
    "builtins_in_body": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = 3 * i + 1;""",
    "builtins_in_device_function": """
    int i = global_index();
    if (i < n) out[i] = 3 * i + 1;""",
    "builtins_in_lambda_by_reference": """
    auto index = [&]() { return (int)(blockIdx.x * blockDim.x + threadIdx.x); };
    if (index() < n) out[index()] = 3 * index() + 1;""",
    "builtins_in_lambda_by_copy": """
    auto index = [=]() { return (int)(blockIdx.x * blockDim.x + threadIdx.x); };
    if (index() < n) out[index()] = 3 * index() + 1;""",
    "builtins_in_lambda_without_captures": """
    auto index = []() { return (int)(blockIdx.x * blockDim.x + threadIdx.x); };
    if (index() < n) out[index()] = 3 * index() + 1;""",
    "builtins_in_lambda_with_named_captures": """
    int three = 3;
    auto value = [three](int k) { return three * k + (int)(threadIdx.x - threadIdx.x) + 1; };
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value(i);""",
    "builtins_in_local_struct": """
    struct Where { __device__ int index() const { return blockIdx.x * blockDim.x + threadIdx.x; } };
    int i = Where{}.index();
    if (i < n) out[i] = 3 * i + 1;""",
}

_DEVICE = """
__device__ int global_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
"""

for _id, _body in _BODIES.items():
    case(
        id=_id,
        name="where_am_i",
        source=_DEVICE + 'extern "C" __global__ void where_am_i(int* out, int n) {' + _body + "\n}\n",
        inputs=_index_inputs,
        reference=_index_reference,
        launch=lambda a: {"n_threads": N, "block": 128},
        features=("builtins",),
    )


case(
    id="builtins_declared_then_defined",
    name="where_am_i",
    source=r"""
extern "C" __global__ void where_am_i(int* out, int n);

extern "C" __global__ void where_am_i(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3 * i + 1;
}
""",
    inputs=_index_inputs,
    reference=_index_reference,
    launch=lambda a: {"n_threads": N, "block": 64},
    features=("builtins",),
)


case(
    id="builtins_in_template_kernel",
    name="where_am_i",
    source=r"""
template <int K>
__global__ void where_am_i(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = K * i + 1;
}
""",
    inputs=_index_inputs,
    reference=_index_reference,
    launch=lambda a: {"n_threads": N, "block": 100},
    kernel_kwargs={"template_args": {"K": 3}},
    features=("builtins", "template"),
)


def _grid3_inputs(rng: np.random.Generator) -> Args:
    return [np.zeros((3, 5, 7, 4), np.int32)]


def _grid3_reference(a: Args) -> dict[int, np.ndarray]:
    gz, gy, gx, t = np.meshgrid(np.arange(3), np.arange(5), np.arange(7), np.arange(4),
                                indexing="ij")
    return {0: (gz * 10000 + gy * 100 + gx * 4 + t).astype(np.int32)}


case(
    id="builtins_3d_grid_positions",
    name="where3",
    source=r"""
extern "C" __global__ void where3(int* out) {
    int g = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    out[g * blockDim.x + threadIdx.x] =
        blockIdx.z * 10000 + blockIdx.y * 100 + blockIdx.x * 4 + threadIdx.x;
}
""",
    inputs=_grid3_inputs,
    reference=_grid3_reference,
    launch=lambda a: {"grid": (7, 5, 3), "block": 4},
    features=("builtins",),
)
