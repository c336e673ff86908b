"""A particle push with a host version, a CUDA port and a Metal port, checked against each other.

Particles move in an anisotropic harmonic trap (angular frequencies 1.0, 1.3 and 0.7 along x, y
and z), advanced by ``nsteps`` steps of symplectic Euler: ``v -= w**2 * x * dt`` then
``x += v * dt``. The host version is NumPy; the CUDA port is a ``CudaKernel`` and the Metal port
a ``MetalKernel``; ``Kernel`` pairs the three and picks one per call, and
``assert_kernels_agree`` runs every port it can here against the host version.

Without a GPU the ports run on the CPU emulators (this script selects them when CuPy or a Metal
GPU is missing), so it runs anywhere with a C++ compiler. On an NVIDIA machine the CUDA port
runs on the GPU through CuPy, on a Mac the Metal port through MLX.

Run it with ``python3 examples/particle_push.py``.
"""

from __future__ import annotations

import os

import numpy as np

import cunumpy as xp
from cunumpy.profiling import count_transfers
from cunumpy.testing import assert_kernels_agree

# The engines are read at each launch: real GPUs where they work, else the CPU emulators.
if not xp.cupy_available():
    os.environ.setdefault("CUNUMPY_CUDA_ENGINE", "emulator")
if not xp.kernels.metal_available():
    os.environ.setdefault("CUNUMPY_METAL_ENGINE", "emulator")

OMEGA2 = np.array([1.0, 1.3, 0.7], dtype=np.float32) ** 2
"""Squared trap frequencies along x, y, z."""


def push(n, dt, nsteps, x, v):
    """Host version: ``n`` particles, positions ``x`` and velocities ``v`` (float32, (n, 3))."""
    dt = np.float32(dt)
    for _ in range(nsteps):
        v -= OMEGA2 * x * dt
        x += v * dt


PUSH_CUDA = r"""
extern "C" __global__ void push(int n, float dt, int nsteps, float* x, float* v)
{
    const float w2[3] = {1.0f, 1.69f, 0.49f};
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int k = 0; k < 3; ++k) {
        float xk = x[3 * i + k], vk = v[3 * i + k];
        for (int s = 0; s < nsteps; ++s) {
            vk -= w2[k] * xk * dt;
            xk += vk * dt;
        }
        x[3 * i + k] = xk;
        v[3 * i + k] = vk;
    }
}
"""

# The Metal port reads x and v and writes new arrays x_out and v_out (Metal outputs are fresh
# buffers); Kernel passes the same host arrays to both, so the call updates them in place.
PUSH_METAL = """
uint i = thread_position_in_grid.x;
const float w2[3] = {1.0f, 1.69f, 0.49f};
for (int k = 0; k < 3; ++k) {
    float xk = x[3 * i + k], vk = v[3 * i + k];
    for (int s = 0; s < nsteps[0]; ++s) {
        vk -= w2[k] * xk * dt[0];
        xk += vk * dt[0];
    }
    x_out[3 * i + k] = xk;
    v_out[3 * i + k] = vk;
}
"""


def energy(x: np.ndarray, v: np.ndarray) -> float:
    x64, v64 = x.astype(np.float64), v.astype(np.float64)
    return float(0.5 * (v64**2 + OMEGA2.astype(np.float64) * x64**2).sum())


def initial(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3), dtype=np.float32)
    v = rng.standard_normal((n, 3), dtype=np.float32) * np.float32(0.5)
    return x, v


def main() -> None:
    n, dt, nsteps = 2000, 0.01, 200
    kernel = xp.kernels.Kernel(
        push,
        cuda=xp.kernels.CudaKernel(PUSH_CUDA),
        metal=xp.kernels.MetalKernel(PUSH_METAL, inputs=["dt", "nsteps", "x", "v"],
                                     outputs=["x_out", "v_out"], name="push"),
    )

    # Each version pushes the same particles; the trap conserves energy to O(dt).
    x0, v0 = initial(n, seed=1)
    e0 = energy(x0, v0)
    for port in ("host", "cuda", "metal"):
        x, v = x0.copy(), v0.copy()
        if port == "cuda" and xp.cupy_available():  # the GPU engine takes device arrays
            dx, dv = xp.to_cupy(x), xp.to_cupy(v)
            kernel.run_port(port, n, dt, nsteps, dx, dv, n_threads=n)
            x, v = xp.to_numpy(dx), xp.to_numpy(dv)
        else:
            kernel.run_port(port, n, dt, nsteps, x, v, n_threads=n)
        drift = abs(energy(x, v) - e0) / e0
        print(f"{port:>5}: energy drift after {nsteps} steps {drift:.2e}")
        assert drift < 1e-2, (port, drift)

    # A plain call dispatches: NumPy arrays go to the Metal port when Metal dispatch is on (a
    # Metal GPU, or CUNUMPY_METAL_ENGINE=emulator), else to the host version.
    # (On the CuPy backend every call would go to the CUDA port, so use the NumPy one here.)
    x, v = x0.copy(), v0.copy()
    with xp.use_backend("numpy"), count_transfers() as copies:
        chosen = kernel.which(n, dt, nsteps, x, v)
        kernel(n, dt, nsteps, x, v, n_threads=n)
    print(f"kernel(...) ran the {chosen} port; copies it made:\n{copies.report()}")
    if chosen == "metal":
        assert copies.to_device == 4 and copies.to_host == 2  # dt, nsteps, x, v in; x, v out

    # Every port that can run here, against the host version. The trajectories separate by a
    # few float32 roundings per step, so the tolerance is absolute as well as relative.
    def make_args(backend: str, seed: int) -> tuple:
        x, v = initial(500, seed)
        if backend == "cupy":
            x, v = xp.to_cupy(x), xp.to_cupy(v)
        return 500, dt, nsteps, x, v

    ran = assert_kernels_agree(kernel, make_args, n_threads=500, rtol=1e-4, atol=1e-4)
    print(f"assert_kernels_agree: every port agrees with the host version: {ran}")
    assert set(ran) == {"cuda", "metal"}


if __name__ == "__main__":
    main()
