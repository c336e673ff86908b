"""Real CUDA texture objects for the ``cupy`` engine, made from a :class:`~cunumpy.kernels.Texture`.

A texture over a CUDA array (``memory="array"``: ``tex1D``/``tex2D``/``tex3D``) or over linear
device memory (``memory="linear"``: ``tex1Dfetch``) is created once per texture and device with
CuPy's ``cupy.cuda.texture`` (``cudaCreateTextureObject`` with the texture descriptor: filter,
address modes, read mode, normalised coordinates, border colour); the texels are copied from the
texture's NumPy array at every launch (one host-to-device transfer, counted by
:func:`cunumpy.profiling.count_transfers`), so a changed array is seen as on the emulator.
"""

from __future__ import annotations

from typing import Any

__all__ = ["texture_object"]

_KIND = {"signed": 0, "unsigned": 1, "float": 2}  # cudaChannelFormatKind
_ADDRESS = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}  # cudaTextureAddressMode


class _CupyTexture:
    """The CUDA objects of one texture on one device."""

    def __init__(self, cupy: Any, texture: Any) -> None:
        from cupy.cuda import texture as ct

        bits = texture.data.dtype.itemsize * 8
        c = texture.channels
        ch = ct.ChannelFormatDescriptor(bits, bits if c > 1 else 0, bits if c > 2 else 0,
                                        bits if c > 3 else 0, _KIND[texture.kind])
        self.texture = texture
        if texture.memory == "linear":
            self.device = cupy.empty(texture.data.shape, texture.data.dtype)
            self.array = None
            res = ct.ResourceDescriptor(2, arr=self.device, chDesc=ch,
                                        sizeInBytes=self.device.nbytes)
        else:
            w, h, d = texture.shape
            self.device = None
            self.array = ct.CUDAarray(ch, w, h if texture.ndim >= 2 else 0,
                                      d if texture.ndim == 3 else 0)
            res = ct.ResourceDescriptor(0, cuArr=self.array)
        desc = ct.TextureDescriptor(
            addressModes=tuple(_ADDRESS[a] for a in texture.address[: texture.ndim]),
            filterMode=1 if texture.filter == "linear" else 0,
            readMode=1 if texture.read_mode == "normalized_float" else 0,
            borderColors=tuple(texture.border),
            normalizedCoords=1 if texture.normalized_coords else 0,
        )
        self.object = ct.TextureObject(res, desc)

    def refresh(self) -> int:
        """Copy the texels to the device; return the handle."""
        from cunumpy import profiling

        data = self.texture.data
        if self.device is not None:
            self.device.set(data)
        else:  # CuPy takes the channels of a row as one axis: (..., width * channels)
            t = self.texture
            self.array.copy_from(data if t.channels == 1 else
                                 data.reshape((*data.shape[: t.ndim - 1], -1)))
        if profiling._active:
            profiling._record("to_device", data.nbytes, f"texture texels {data.dtype}{data.shape}")
        return int(self.object.ptr)


def texture_object(cupy: Any, texture: Any, device: int) -> int:
    """The handle of ``texture``'s CUDA texture object on ``device``, texels copied now."""
    made = texture.handle(("cupy", device), lambda: _CupyTexture(cupy, texture))
    return made.refresh()
