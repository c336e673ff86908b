"""Linear texture filtering on the emulator equals what an H200 returned for the same
coordinates (recorded by hand on the lent GPU: ``golden/texture_h200.npz``): 9-bit weights with
ties rounded up, and in 2-D the corner weights the texture unit uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cunumpy.kernels import CudaKernel, Texture

_H200 = np.load(Path(__file__).parent / "golden" / "texture_h200.npz")
_SOURCE = r"""
extern "C" __global__ void fetch2d(cudaTextureObject_t tex, const float* x, const float* y,
                                   float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(tex, x[i], y[i]);
}
"""


def _fetch(img: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    k = CudaKernel(_SOURCE, "fetch2d", engine="emulator")
    out = np.zeros(x.size, np.float32)
    k(Texture(img, filter="linear"), x, y, out, np.int32(x.size), grid=(x.size + 127) // 128,
      block=128)
    return out


def test_one_axis_weights_round_ties_up() -> None:
    img = np.zeros((1, 2048), np.float32)
    img[0, 2] = img[0, 1001] = 1.0
    x = _H200["x1"]
    got = _fetch(img, x, np.full_like(x, 0.5))
    assert np.array_equal(got, _H200["w1"])


def test_two_axis_corner_weights_are_the_gpus() -> None:
    x, y = _H200["x"], _H200["y"]
    assert np.array_equal(_fetch(_H200["img_wxy"], x, y), _H200["wxy"])
    got, gpu = _fetch(_H200["img_rand"], x, y), _H200["rand"]
    # the weights are the GPU's; the weighted sum is rounded in another order (1 float ulp)
    assert np.abs(got - gpu).max() <= 2 * np.spacing(np.float32(1))
