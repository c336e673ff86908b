"""cunumpy.kernels.Texture: validation, and what a kernel gets for a cudaTextureObject_t."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.emulation import EmulationError
from cunumpy.kernels import CudaKernel, Texture

SRC = r"""
extern "C" __global__ void fetch2d(cudaTextureObject_t t, float* y, int w) {
    y[threadIdx.x] = tex2D<float>(t, threadIdx.x % w + 0.5f, threadIdx.x / w + 0.5f);
}
extern "C" __global__ void fetch1d(cudaTextureObject_t t, float* y) {
    y[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x);
}
"""


def test_texture_describes_its_texels():
    t = Texture(np.zeros((2, 3, 4), np.uint8), channels=4, filter="linear",
                read_mode="normalized_float", address=("wrap", "border"), normalized_coords=True)
    assert (t.ndim, t.shape, t.kind, t.memory) == (2, (3, 2, 1), "unsigned", "array")
    assert t.address == ("wrap", "border", "clamp") and t.border == (0.0,) * 4
    assert Texture(np.zeros(5, np.float32)).memory == "linear"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"data": [1.0]}, "must be a NumPy array"),
    ({"data": np.zeros((4, 4), np.float64)}, "dtype float64"),
    ({"data": np.zeros((4, 4), np.float32)[:, ::2]}, "C-contiguous"),
    ({"data": np.zeros((4, 3), np.float32), "channels": 4}, "last axis"),
    ({"data": np.zeros((4, 4), np.float32), "address": "wrap"}, "need normalized_coords=True"),
    ({"data": np.zeros((4, 4), np.int32), "filter": "linear"}, "linear filtering needs float"),
    ({"data": np.zeros(4, np.float32), "filter": "linear"}, "not filtered"),
    ({"data": np.zeros((4, 4), np.float32), "memory": "linear"}, "are 1-D"),
    ({"data": np.zeros((4, 4), np.float32), "read_mode": "normalized_float"}, "8- or 16-bit"),
    ({"data": np.zeros((4, 4), np.float32), "filter": "cubic"}, "'point' or 'linear'"),
])
def test_bad_textures_are_refused_with_the_reason(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        Texture(**kwargs)


def test_a_texture_parameter_takes_a_texture():
    k = CudaKernel(SRC, "fetch2d", engine="emulator")
    assert k.params[0].kind == "texture"
    with pytest.raises(TypeError, match=r"argument 't' .*is a texture object; pass a "
                                        r"cunumpy.kernels.Texture"):
        k(np.zeros((2, 3), np.float32), np.zeros(6, np.float32), 3, grid=1, block=6)


def test_the_emulator_checks_the_kind_of_fetch():
    y = np.zeros(6, np.float32)
    img = np.arange(6, dtype=np.float32).reshape(2, 3)
    CudaKernel(SRC, "fetch2d", engine="emulator")(Texture(img), y, 3, grid=1, block=6)
    assert y.tolist() == list(range(6))
    with pytest.raises(EmulationError, match="tex1Dfetch reads linear-memory textures"):
        CudaKernel(SRC, "fetch1d", engine="emulator")(Texture(img), y, grid=1, block=6)
