"""Texture objects for :class:`~cunumpy.kernels.CudaKernel`: a NumPy array and how to sample it.

A kernel parameter of type ``cudaTextureObject_t`` takes a :class:`Texture`. Each engine makes
its own texture of it at the launch and passes the handle: the ``cupy`` engine a real CUDA
texture object (a CUDA array, or linear device memory for ``tex1Dfetch``, with the texture
descriptor), the emulator a descriptor that its ``tex1Dfetch``/``tex1D``/``tex2D``/``tex3D``
read, with the hardware's rules (nearest-texel and linear filtering with 9-bit fixed-point
weights, normalised coordinates, the four address modes, the border colour, normalised-float
reads of integer texels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Texture"]

FILTERS = ("point", "linear")
ADDRESS_MODES = ("wrap", "clamp", "mirror", "border")
READ_MODES = ("element", "normalized_float")
MEMORY = ("array", "linear")

_KINDS = {"f": "float", "i": "signed", "u": "unsigned"}


@dataclass(frozen=True, eq=False)
class Texture:
    """A texture: an array of texels and the sampling state of ``cudaTextureDesc``.

    Parameters
    ----------
    data : numpy.ndarray
        The texels, C-contiguous: shape ``(width,)``, ``(height, width)`` or
        ``(depth, height, width)``, with one more axis of 2 or 4 channels when ``channels`` is
        2 or 4. dtype float32, float16, int8/uint8, int16/uint16 or int32/uint32. The array is
        read at each launch (and copied to the GPU by the ``cupy`` engine then); it is never
        written.
    channels : {1, 2, 4}, default 1
        Channels per texel (``float2``/``float4``/``uchar4`` texels have 2 or 4).
    filter : {"point", "linear"}, default "point"
        ``cudaFilterModePoint`` (the nearest texel) or ``cudaFilterModeLinear`` (linear
        interpolation of the 2, 4 or 8 nearest texels, with weights in 9-bit fixed point as on
        the GPU). Linear filtering needs float texels or ``read_mode="normalized_float"``.
    address : str or sequence of str, default "clamp"
        ``"wrap"``, ``"clamp"``, ``"mirror"`` or ``"border"`` (``cudaAddressMode*``), one for
        all dimensions or one per dimension (x first). Wrap and mirror need
        ``normalized_coords=True``, as on the GPU.
    normalized_coords : bool, default False
        Coordinates in ``[0, 1)`` instead of ``[0, width)``.
    read_mode : {"element", "normalized_float"}, default "element"
        ``cudaReadModeElementType``, or ``cudaReadModeNormalizedFloat``: 8- and 16-bit integer
        texels read as floats in ``[0, 1]`` (unsigned) or ``[-1, 1]`` (signed).
    border : float or sequence of 4 floats, default 0
        The border colour (address mode ``"border"``).
    memory : {"array", "linear"}, optional
        Where the texels live: a CUDA array (``tex1D``/``tex2D``/``tex3D``) or linear memory
        (``tex1Dfetch``, 1-D only, no filtering, integer coordinates). Default: ``"linear"``
        for 1-D data, else ``"array"``.

    Examples
    --------
    >>> import numpy as np
    >>> from cunumpy.kernels import Texture
    >>> image = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> t = Texture(image, filter="linear", address="border")
    >>> t.shape, t.filter
    ((4, 3, 1), 'linear')
    """

    data: np.ndarray
    channels: int = 1
    filter: str = "point"
    address: str | Sequence[str] = "clamp"
    normalized_coords: bool = False
    read_mode: str = "element"
    border: float | Sequence[float] = 0.0
    memory: str | None = None
    _handles: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        tag = "[Texture]"
        data = self.data
        if not isinstance(data, np.ndarray):
            raise TypeError(f"{tag} data must be a NumPy array, got {type(data).__name__}")
        if not data.flags.c_contiguous:
            raise ValueError(f"{tag} data must be C-contiguous; pass np.ascontiguousarray(data)")
        if self.channels not in (1, 2, 4):
            raise ValueError(f"{tag} channels must be 1, 2 or 4, got {self.channels!r}")
        dt = data.dtype
        if dt.kind not in _KINDS or dt.itemsize not in (1, 2, 4) or dt == np.float64 or (
                dt.kind == "f" and dt.itemsize == 1):
            raise TypeError(
                f"{tag} data has dtype {dt}; textures hold float32, float16, int8/uint8, "
                "int16/uint16 or int32/uint32 texels"
            )
        ndim = data.ndim - (1 if self.channels > 1 else 0)
        if self.channels > 1 and (data.ndim < 2 or data.shape[-1] != self.channels):
            raise ValueError(
                f"{tag} data of shape {data.shape} with channels={self.channels}: the last axis "
                f"must hold the {self.channels} channels"
            )
        if not 1 <= ndim <= 3 or data.size == 0:
            raise ValueError(f"{tag} data must have 1, 2 or 3 dimensions of texels, got shape "
                             f"{data.shape}")
        memory = self.memory or ("linear" if ndim == 1 else "array")
        object.__setattr__(self, "memory", memory)
        if memory not in MEMORY:
            raise ValueError(f"{tag} memory must be 'array' or 'linear', got {memory!r}")
        if memory == "linear" and ndim != 1:
            raise ValueError(f"{tag} linear-memory textures (tex1Dfetch) are 1-D; got {ndim}-D data")
        if self.filter not in FILTERS:
            raise ValueError(f"{tag} filter must be 'point' or 'linear', got {self.filter!r}")
        modes = (self.address,) * 3 if isinstance(self.address, str) else tuple(self.address)
        if len(modes) == 1:
            modes = modes * 3
        if len(modes) < ndim or any(m not in ADDRESS_MODES for m in modes):
            raise ValueError(f"{tag} address must be one of {ADDRESS_MODES} or one per dimension, "
                             f"got {self.address!r}")
        modes = tuple(modes[:ndim]) + ("clamp",) * (3 - ndim)
        if not self.normalized_coords and any(m in ("wrap", "mirror") for m in modes[:ndim]):
            raise ValueError(f"{tag} address modes 'wrap' and 'mirror' need normalized_coords=True "
                             "(as on the GPU)")
        object.__setattr__(self, "address", modes)
        if self.read_mode not in READ_MODES:
            raise ValueError(f"{tag} read_mode must be 'element' or 'normalized_float', got "
                             f"{self.read_mode!r}")
        if self.read_mode == "normalized_float" and (dt.kind == "f" or dt.itemsize == 4):
            raise ValueError(f"{tag} read_mode='normalized_float' takes 8- or 16-bit integer "
                             f"texels, not {dt}")
        if self.filter == "linear" and dt.kind != "f" and self.read_mode != "normalized_float":
            raise ValueError(f"{tag} linear filtering needs float texels or "
                             "read_mode='normalized_float'")
        if memory == "linear" and self.filter == "linear":
            raise ValueError(f"{tag} linear-memory textures (tex1Dfetch) are not filtered")
        border = (float(self.border),) * 4 if np.isscalar(self.border) else tuple(
            float(b) for b in self.border)
        if len(border) != 4:
            raise ValueError(f"{tag} border must be a number or 4 numbers")
        object.__setattr__(self, "border", border)

    @property
    def ndim(self) -> int:
        """Dimensions of texels (1, 2 or 3)."""
        return self.data.ndim - (1 if self.channels > 1 else 0)

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(width, height, depth)`` in texels (1 for missing dimensions)."""
        dims = self.data.shape[: self.ndim][::-1]
        return tuple(dims) + (1,) * (3 - len(dims))

    @property
    def kind(self) -> str:
        """``"float"``, ``"signed"`` or ``"unsigned"`` texel channels."""
        return _KINDS[self.data.dtype.kind]

    def handle(self, key: Any, make: Any) -> Any:
        """The engine's texture for this one, made once per ``key`` by ``make()``."""
        h = self._handles.get(key)
        if h is None:
            h = self._handles[key] = make()
        return h
