"""The parameter list MLX gives a custom Metal kernel, reproduced exactly.

``mx.fast.metal_kernel`` writes the kernel's signature itself, from the input and output names,
the arrays of one call, and plain substring searches of the body. Both MetalKernel engines use
the :class:`MetalSignature` built here: the MLX engine to show the text MLX compiles
(:meth:`MetalSignature.text`), the CPU emulator to declare the same parameters in C++.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "ATTRIBUTES",
    "ArgSpec",
    "MetalSignature",
    "Param",
    "build_signature",
    "metal_type_name",
]

ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("dispatch_quadgroups_per_threadgroup", "uint"),
    ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"),
    ("grid_origin", "uint3"),
    ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"),
    ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"),
    ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"),
    ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"),
    ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"),
    ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"),
    ("threadgroups_per_grid", "uint3"),
    ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"),
    ("threads_per_threadgroup", "uint3"),
)
"""Thread attributes MLX recognises, with their Metal types, in the order MLX declares them."""

_TYPE_NAMES = {
    "bool": "bool",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float16": "float16_t",
    "bfloat16": "bfloat16_t",
    "float32": "float",
    "float64": "double",
    "complex64": "complex64_t",
}


def metal_type_name(dtype: Any) -> str:
    """MLX's Metal type string for a NumPy dtype (``float32`` -> ``"float"``).

    Raises
    ------
    TypeError
        The dtype has no Metal counterpart (complex128, strings, objects, ...).
    """
    name = np.dtype(dtype).name
    try:
        return _TYPE_NAMES[name]
    except KeyError:
        raise TypeError(f"dtype {name} has no Metal type") from None


@dataclass(frozen=True)
class ArgSpec:
    """What the signature depends on for one array argument of one call."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


ParamKind = Literal["input", "shape", "strides", "ndim", "output", "attribute"]


@dataclass(frozen=True)
class Param:
    """One kernel parameter, as MLX declares it."""

    kind: ParamKind
    name: str
    ctype: str
    """Element or value type: ``float``, ``int``, ``int64_t``, ``uint3``, ..."""
    address_space: str | None
    """``"device"`` or ``"constant"`` for buffers, ``None`` for thread attributes."""
    const: bool
    reference: bool
    """Declared as a reference (``T& x``) rather than a pointer (0-d inputs, ``_ndim``)."""
    atomic: bool
    buffer: int | None
    """Metal buffer index, ``None`` for thread attributes."""
    arg: int | None
    """Index of the input (or output) this parameter describes; ``None`` for attributes."""

    def declaration(self) -> str:
        """The parameter as it appears in MLX's generated signature."""
        if self.kind == "attribute":
            return f"{self.ctype} {self.name} [[{self.name}]]"
        ctype = f"atomic<{self.ctype}>" if self.atomic else self.ctype
        const = "const " if self.const else ""
        ref = "&" if self.reference else "*"
        return f"{const}{self.address_space} {ctype}{ref} {self.name} [[buffer({self.buffer})]]"


@dataclass(frozen=True)
class MetalSignature:
    """The kernel MLX builds for one call: its host name, parameters and full text."""

    name: str
    """The user's kernel name (without MLX's ``custom_kernel_`` prefix)."""
    kernel_name: str
    """MLX's host name, e.g. ``custom_kernel_scale_float_floatc_float``."""
    params: tuple[Param, ...]
    template: tuple[tuple[str, Any], ...]
    source: str
    header: str

    def text(self) -> str:
        """Exactly what MLX compiles after its preamble (header, signature, body, instantiation)."""
        raise NotImplementedError("filled in by the MLX text module")


def _uses(source: str, name: str) -> bool:
    return name in source


def build_params(
    source: str,
    inputs: Sequence[ArgSpec],
    outputs: Sequence[ArgSpec],
    atomic_outputs: bool,
) -> tuple[Param, ...]:
    """The parameters MLX declares, in order, for these arrays and this body."""
    params: list[Param] = []
    buffer = 0
    for i, spec in enumerate(inputs):
        ctype = metal_type_name(spec.dtype)
        space = "constant" if spec.size < 8 else "device"
        scalar = spec.ndim == 0
        params.append(Param("input", spec.name, ctype, space, True, scalar, False, buffer, i))
        buffer += 1
        if scalar:
            continue
        if _uses(source, f"{spec.name}_shape"):
            params.append(
                Param("shape", f"{spec.name}_shape", "int", "constant", True, False, False,
                      buffer, i)
            )
            buffer += 1
        if _uses(source, f"{spec.name}_strides"):
            params.append(
                Param("strides", f"{spec.name}_strides", "int64_t", "constant", True, False,
                      False, buffer, i)
            )
            buffer += 1
        if _uses(source, f"{spec.name}_ndim"):
            params.append(
                Param("ndim", f"{spec.name}_ndim", "int", "constant", True, True, False,
                      buffer, i)
            )
            buffer += 1
    for i, spec in enumerate(outputs):
        params.append(
            Param("output", spec.name, metal_type_name(spec.dtype), "device", False, False,
                  atomic_outputs, buffer, i)
        )
        buffer += 1
    for name, ctype in ATTRIBUTES:
        if _uses(source, name):
            params.append(Param("attribute", name, ctype, None, False, False, False, None, None))
    return tuple(params)


def build_signature(
    name: str,
    source: str,
    header: str,
    inputs: Sequence[ArgSpec],
    outputs: Sequence[ArgSpec],
    template: Sequence[tuple[str, Any]] = (),
    atomic_outputs: bool = False,
) -> MetalSignature:
    """Build the signature MLX would generate for one call."""
    raise NotImplementedError("filled in by the MLX text module")
