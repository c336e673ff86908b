"""The emulator's texture objects: the ``CnTexture`` descriptor ``runtime/cn_cuda_tex.h`` reads.

:func:`texture_descriptor` lays out one descriptor (a one-element NumPy record with the C
struct's layout) for a texel array and its sampling state; the handle a kernel gets for its
``cudaTextureObject_t`` parameter is the record's address. The caller keeps the record (and the
texel array it points to) alive while kernels may use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["DESCRIPTOR", "texture_descriptor"]

MAGIC = 0x58455454434E4E43

DESCRIPTOR = np.dtype([
    ("magic", "<u8"), ("data", "<u8"), ("size", "<i8", 3),
    ("ndim", "<i4"), ("channels", "<i4"), ("bytes", "<i4"), ("kind", "<i4"),
    ("filter", "<i4"), ("normalized", "<i4"), ("read_norm", "<i4"), ("linear", "<i4"),
    ("address", "<i4", 3), ("pad", "<i4"), ("border", "<f4", 4),
])
"""The layout of ``cn::cuda::CnTexture`` (104 bytes)."""

_ADDRESS = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
_KIND = {"f": 0, "i": 1, "u": 2}


def texture_descriptor(
    data: np.ndarray,
    shape: Sequence[int],
    ndim: int,
    channels: int,
    *,
    filter: str,
    address: Sequence[str],
    normalized: bool,
    read_mode: str,
    border: Sequence[float],
    memory: str,
) -> np.ndarray:
    """The descriptor record of a texture over ``data`` (C-contiguous texels, x fastest)."""
    assert data.flags.c_contiguous, "the Texture checks its data"
    d = np.zeros((), DESCRIPTOR)
    d["magic"] = MAGIC
    d["data"] = data.__array_interface__["data"][0]
    d["size"] = tuple(shape)
    d["ndim"] = ndim
    d["channels"] = channels
    d["bytes"] = data.dtype.itemsize
    d["kind"] = _KIND[data.dtype.kind]
    d["filter"] = 1 if filter == "linear" else 0
    d["normalized"] = int(bool(normalized))
    d["read_norm"] = int(read_mode == "normalized_float")
    d["linear"] = int(memory == "linear")
    d["address"] = tuple(_ADDRESS[a] for a in address)
    d["border"] = tuple(border)
    return d
