"""The Metal source text MLX compiles for a custom kernel, reproduced byte for byte.

``mx.fast.metal_kernel`` takes only the *body* of a kernel and writes the rest itself: the
template line, the signature (from the input and output names, the arrays of one call and plain
substring searches of the body) and, for templated kernels, an explicit instantiation. Both
MetalKernel engines use the :class:`MetalSignature` built here: the MLX engine to pass MLX the
body and to show the text MLX compiles (:meth:`MetalSignature.text`), the CPU emulator to declare
the same parameters in C++ (:attr:`MetalSignature.params`).

Rules, each checked against the text MLX 0.32 itself generates (``tests/kernels``):

* Text = ``header`` (verbatim, no newline added) + ``template <...>`` line when templated +
  ``[[kernel]] void <kernel_name>(`` + one parameter per line, indented by two spaces +
  ``) {`` + newline + body + ``\\n}\\n`` + the explicit instantiation when templated. MLX puts its
  own preamble (``metal_stdlib``, ``float16_t``, ``bfloat16_t``, ``complex64_t``, ...) in front of
  this text when it compiles; the preamble is not part of :meth:`MetalSignature.text`.
* Buffers are numbered from 0: each input (``const device T* x``; ``constant`` instead of
  ``device`` when the array has fewer than 8 elements, empty arrays included; a 0-d input is
  ``const constant T& x``), directly followed by ``x_shape`` (``const constant int*``),
  ``x_strides`` (``const constant int64_t*``) and ``x_ndim`` (``const constant int&``), each
  declared on its own when its name occurs anywhere in the body (never for a 0-d input); then each
  output (``device T* y``, or ``device atomic<T>* y`` with ``atomic_outputs``). Thread attributes
  whose names occur in the body follow, in :data:`ATTRIBUTES` order. The searches are plain
  substring searches of the body (not the header): ``xx_shape`` declares ``x_shape`` too, a name
  in a comment counts, and ``dispatch_threads_per_threadgroup`` also declares
  ``threads_per_threadgroup``.
* Host name: ``custom_kernel_`` + name; when templated, ``_`` + the instantiation list
  ``<float, 4, 1>`` with ``<``, ``, ``, ``-`` and ``>`` turned into ``_`` and the last ``_``
  dropped (``__float_4_1``); then per input ``_`` + type + ``s`` for a 0-d input or ``c`` for any
  other input in ``constant`` space; then per output ``_`` + type.
* Template parameters: dtypes are ``typename`` (value: the Metal type string), Python ints are
  ``int`` (decimal, 32-bit range), bools are ``bool`` (``1``/``0``).

MLX bug, worked around here: MLX ends the parameter list after the first output whose buffer
index reaches ``n_inputs + n_outputs - 1`` unless the body names a thread attribute. With two or
more outputs and any ``_shape``/``_strides``/``_ndim`` buffer that happens before the last output,
and MLX writes ``) {`` twice (invalid Metal). :func:`build_signature` then appends a line comment
naming ``thread_position_in_grid`` to the body, which makes MLX declare that attribute and close
the list once, at the end; :attr:`MetalSignature.workaround_applied` records it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from cunumpy._lang.library_headers import expand_library_includes

__all__ = [
    "ATTRIBUTES",
    "MLX_WORKAROUND_COMMENT",
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

MLX_WORKAROUND_COMMENT = (
    "\n// cunumpy: thread_position_in_grid is named here so that MLX writes a valid parameter list"
)
"""Appended to a body that would hit MLX's early ``) {`` bug (see the module docstring).

It names exactly one thread attribute and none of the ``_shape``/``_strides``/``_ndim`` suffixes,
so the only parameter it adds is ``uint3 thread_position_in_grid``. It starts on a new line, so a
body that ends inside a ``//`` comment cannot swallow the closing brace MLX adds after it.
"""

_WORKAROUND_ATTRIBUTE = "thread_position_in_grid"

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

_MAX_CONSTANT_SIZE = 8
"""Inputs with fewer elements than this live in Metal's ``constant`` address space."""

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def metal_type_name(dtype: Any) -> str:
    """MLX's Metal type string for a NumPy dtype (``float32`` -> ``"float"``).

    ``float64`` maps to ``"double"`` as in MLX's own table, although MLX refuses float64 arrays
    on the GPU (only a template value may be float64).

    Parameters
    ----------
    dtype : dtype-like
        Anything :class:`numpy.dtype` accepts.

    Returns
    -------
    str
        ``bool``, ``uint8_t`` ... ``uint64_t``, ``int8_t`` ... ``int64_t``, ``float16_t``,
        ``bfloat16_t``, ``float``, ``double`` or ``complex64_t``.

    Raises
    ------
    TypeError
        The dtype has no Metal counterpart (complex128, strings, objects, ...).
    """
    try:
        name = np.dtype(dtype).name
    except TypeError as exc:
        raise TypeError(f"{dtype!r} is not a NumPy dtype, so it has no Metal type") from exc
    try:
        return _TYPE_NAMES[name]
    except KeyError:
        known = ", ".join(_TYPE_NAMES)
        raise TypeError(
            f"dtype {name} has no Metal type; Metal kernels take {known}"
        ) from None


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


TemplateValue = np.dtype | bool | int
"""A normalised template value: a NumPy dtype (``typename``), a bool or a 32-bit int."""


def _template_kind(value: TemplateValue) -> str:
    if isinstance(value, np.dtype):
        return "typename"
    if isinstance(value, bool):
        return "bool"
    return "int"


def _template_text(value: TemplateValue) -> str:
    if isinstance(value, np.dtype):
        return metal_type_name(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


@dataclass(frozen=True)
class MetalSignature:
    """The kernel MLX builds for one call: its host name, parameters and full text.

    Build it with :func:`build_signature`. ``source`` is the body MLX must be given (the user's
    body, plus :data:`MLX_WORKAROUND_COMMENT` when ``workaround_applied``); ``text()`` is then
    exactly what MLX writes after its preamble.
    """

    name: str
    """The user's kernel name (without MLX's ``custom_kernel_`` prefix)."""
    kernel_name: str
    """MLX's host name, e.g. ``custom_kernel_scale_float_floatc_float``."""
    params: tuple[Param, ...]
    template: tuple[tuple[str, Any], ...]
    """``(name, value)`` pairs in order; values are :class:`numpy.dtype`, ``bool`` or ``int``."""
    source: str
    """The body as MLX receives it (after the bug workaround, if one was needed)."""
    header: str
    workaround_applied: bool = False
    """True when :data:`MLX_WORKAROUND_COMMENT` was appended to the user's body."""

    @property
    def user_source(self) -> str:
        """The body as the user wrote it (``source`` without the workaround comment)."""
        if self.workaround_applied:
            return self.source[: -len(MLX_WORKAROUND_COMMENT)]
        return self.source

    def template_declaration(self) -> str:
        """The ``template <typename T, int N, bool B>`` line with its newline; ``""`` if none."""
        if not self.template:
            return ""
        items = ", ".join(f"{_template_kind(v)} {n}" for n, v in self.template)
        return f"template <{items}>\n"

    def template_arguments(self) -> str:
        """The instantiation list, e.g. ``<float, 4, 1>``; ``""`` when not templated."""
        if not self.template:
            return ""
        return "<" + ", ".join(_template_text(v) for _, v in self.template) + ">"

    def parameter_list(self) -> str:
        """The parameter lines as MLX writes them, from the first one to ``) {`` and newline.

        Reproduces MLX's closing rule, so a signature built without the workaround shows the
        broken list MLX would write.
        """
        ends = _line_ends(self.params)
        return "".join(
            f"  {param.declaration()}{end}" for param, end in zip(self.params, ends, strict=True)
        )

    def mlx_would_close_early(self) -> bool:
        """True when MLX writes ``) {`` before the last parameter (invalid Metal)."""
        return _closes_early(self.params)

    def text(self) -> str:
        """Exactly what MLX compiles after its preamble (header, signature, body, instantiation)."""
        parts = [
            self.header,
            self.template_declaration(),
            f"[[kernel]] void {self.kernel_name}(\n",
            self.parameter_list(),
            self.source,
            "\n}\n",
        ]
        if self.template:
            specialised = self.kernel_name + self.template_arguments()
            parts.append(
                f'\ntemplate [[host_name("{self.kernel_name}")]] [[kernel]] '
                f"decltype({specialised}) {specialised};\n"
            )
        return "".join(parts)


def _line_ends(params: Sequence[Param]) -> list[str]:
    """What MLX writes after each parameter: ``",\\n"`` or ``") {\\n"``.

    Inputs and their shape buffers always continue the list. An output closes it when no thread
    attribute follows and its *buffer index* is at least ``n_inputs + n_outputs - 1``; MLX
    compares the buffer index (which also counts shape buffers) with a count of arrays, which is
    the source of its bug. The last attribute closes the list.
    """
    n_inputs = sum(p.kind == "input" for p in params)
    n_outputs = sum(p.kind == "output" for p in params)
    n_attributes = sum(p.kind == "attribute" for p in params)
    ends = []
    seen_attributes = 0
    for p in params:
        if p.kind == "output":
            assert p.buffer is not None
            more = p.buffer < n_inputs + n_outputs - 1 or n_attributes > 0
            ends.append(",\n" if more else ") {\n")
        elif p.kind == "attribute":
            seen_attributes += 1
            ends.append(",\n" if seen_attributes < n_attributes else ") {\n")
        else:
            ends.append(",\n")
    return ends


def _closes_early(params: Sequence[Param]) -> bool:
    return ") {\n" in _line_ends(params)[:-1]


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
        space = "constant" if spec.size < _MAX_CONSTANT_SIZE else "device"
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


def _normalise_template(kernel: str, template: Sequence[tuple[str, Any]]) -> tuple:
    """Template pairs with values as :class:`numpy.dtype`, ``bool`` or ``int``."""
    out = []
    for pair in template:
        try:
            tname, value = pair
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"[metal kernel '{kernel}'] template entries must be (name, value) pairs, "
                f"got {pair!r}"
            ) from exc
        if not isinstance(tname, str) or not tname.isidentifier():
            raise ValueError(
                f"[metal kernel '{kernel}'] template name {tname!r} is not a valid identifier"
            )
        if isinstance(value, (bool, np.bool_)):
            out.append((tname, bool(value)))
        elif isinstance(value, (int, np.integer)):
            number = int(value)
            if not _INT32_MIN <= number <= _INT32_MAX:
                raise ValueError(
                    f"[metal kernel '{kernel}'] template value {tname}={number} does not fit "
                    "in a 32-bit Metal int (MLX declares integer template parameters as int)"
                )
            out.append((tname, number))
        elif isinstance(value, np.dtype) or (
            isinstance(value, type) and issubclass(value, np.generic)
        ):
            dtype = np.dtype(value)
            try:
                metal_type_name(dtype)
            except TypeError as exc:
                raise TypeError(
                    f"[metal kernel '{kernel}'] template value {tname}={dtype.name}: {exc}"
                ) from exc
            out.append((tname, dtype))
        else:
            raise TypeError(
                f"[metal kernel '{kernel}'] template value {tname}={value!r} "
                f"({type(value).__name__}) is not a NumPy dtype, an int or a bool; pass a dtype "
                "such as numpy.float32 for a typename parameter"
            )
    return tuple(out)


def _host_name(
    name: str,
    template: Sequence[tuple[str, TemplateValue]],
    inputs: Sequence[ArgSpec],
    outputs: Sequence[ArgSpec],
) -> str:
    parts = ["custom_kernel_" + name]
    if template:
        # MLX writes "<a, b, c>" and turns "<", ", ", "-" and ">" into "_", then drops the last
        # "_": one "_" for "<" plus the values joined by "_" ("-3" becomes "_3").
        values = "_".join(_template_text(v).replace("-", "_") for _, v in template)
        parts.append("__" + values)
    for spec in inputs:
        suffix = ""
        if spec.ndim == 0:
            suffix = "s"
        elif spec.size < _MAX_CONSTANT_SIZE:
            suffix = "c"
        parts.append(f"_{metal_type_name(spec.dtype)}{suffix}")
    for spec in outputs:
        parts.append(f"_{metal_type_name(spec.dtype)}")
    return "".join(parts)


def build_signature(
    name: str,
    source: str,
    header: str,
    inputs: Sequence[ArgSpec],
    outputs: Sequence[ArgSpec],
    template: Sequence[tuple[str, Any]] = (),
    atomic_outputs: bool = False,
    *,
    mlx_bug_workaround: bool = True,
) -> MetalSignature:
    """Build the kernel MLX would generate for one call.

    Parameters
    ----------
    name : str
        The kernel's name as given to ``mx.fast.metal_kernel`` (without ``custom_kernel_``).
    source : str
        The kernel body as the user wrote it.
    header : str
        Text MLX puts before the kernel, verbatim (no newline is added after it).
    inputs, outputs : sequence of ArgSpec
        Name, dtype and shape of each array of this call, in order.
    template : sequence of (str, value), optional
        Compile-time constants: a NumPy dtype (``typename``), a bool or an int (32-bit).
    atomic_outputs : bool, optional
        Declare outputs as ``device atomic<T>*``.
    mlx_bug_workaround : bool, optional
        Append :data:`MLX_WORKAROUND_COMMENT` to the body when MLX would otherwise close the
        parameter list early (default). ``False`` reproduces MLX's broken text, for tests.

    Returns
    -------
    MetalSignature
        ``source`` is the body to pass to MLX; ``text()`` is what MLX then compiles.

    Raises
    ------
    ValueError
        No outputs (MLX needs at least one), a template int outside the 32-bit range or a
        template name that is not an identifier.
    TypeError
        An array or template dtype without a Metal type, or a template value of another kind.
    """
    if not outputs:
        raise ValueError(
            f"[metal kernel '{name}'] needs at least one output; MLX refuses kernels without one"
        )
    template = _normalise_template(name, template)
    inputs = tuple(inputs)
    outputs = tuple(outputs)
    kernel_name = _host_name(name, template, inputs, outputs)
    params = build_params(source, inputs, outputs, atomic_outputs)
    workaround = mlx_bug_workaround and _closes_early(params)
    if workaround:
        source = source + MLX_WORKAROUND_COMMENT
        params = build_params(source, inputs, outputs, atomic_outputs)
        assert not _closes_early(params) and any(
            p.name == _WORKAROUND_ATTRIBUTE for p in params
        ), "the MLX workaround comment must declare exactly the attribute it names"
    header = expand_library_includes(header)  # <cunumpy/random.h>: every engine gets the text
    return MetalSignature(
        name=name,
        kernel_name=kernel_name,
        params=params,
        template=template,
        source=source,
        header=header,
        workaround_applied=workaround,
    )
