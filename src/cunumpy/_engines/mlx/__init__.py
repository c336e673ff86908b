"""The ``mlx`` engine of MetalKernel: hands one launch to ``mx.fast.metal_kernel`` on an Apple GPU.

The front end has already validated the call, converted the arguments to MLX arrays and built the
call's :class:`~cunumpy._lang.metal_signature.MetalSignature`; this module only talks to MLX.
It passes MLX the body from the signature (which carries the workaround for MLX's early ``) {``
bug), so the text MLX compiles is exactly ``signature.text()`` after MLX's preamble; the golden
tests in ``tests/kernels`` check that against MLX itself.

MLX is imported inside the functions, never at module import.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cunumpy._engines._base import Program
from cunumpy._engines._metal import MetalEngineBase, MetalLaunch
from cunumpy._engines._status import mlx_status
from cunumpy._lang.metal_dtypes import bfloat16, is_bfloat16
from cunumpy._lang.metal_signature import MetalSignature, _normalise_template

__all__ = [
    "MLXEngine",
    "clear_kernel_cache",
    "from_numpy",
    "launch_mlx",
    "mlx_template",
    "mx_dtype",
    "numpy_dtype",
    "real_metal_kernel",
    "to_numpy",
]

_ENGINE = "mlx"

_KERNELS: dict[tuple, Any] = {}
"""``mx.fast.metal_kernel`` objects by (name, source, header, names, flags)."""
_KERNELS_LOCK = threading.Lock()

_MX_NAMES = {
    "bool": "bool_",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
}


def _import_mlx() -> Any:
    try:
        import mlx.core as mx
    except ImportError as exc:
        raise ImportError(
            f"the mlx engine of MetalKernel needs MLX, which could not be imported ({exc}); "
            "on an Apple silicon Mac install it with pip install 'cunumpy[metal]', or run Metal "
            "kernels on the CPU emulator with CUNUMPY_METAL_ENGINE=emulator"
        ) from exc
    return mx


def mx_dtype(np_dtype: Any) -> Any:
    """The MLX dtype for a NumPy dtype (``numpy.float32`` -> ``mx.float32``).

    Parameters
    ----------
    np_dtype : dtype-like
        Anything :class:`numpy.dtype` accepts, or a ``bfloat16`` dtype from ``ml_dtypes``.

    Raises
    ------
    TypeError
        MLX has no such dtype (complex128, strings, objects, ...).
    ImportError
        MLX is not installed.
    """
    mx = _import_mlx()
    name = "bfloat16" if is_bfloat16(np_dtype) else np.dtype(np_dtype).name
    try:
        return getattr(mx, _MX_NAMES[name])
    except KeyError:
        known = ", ".join(_MX_NAMES)
        raise TypeError(f"dtype {name} has no MLX counterpart; MLX takes {known}") from None


def numpy_dtype(mlx_dtype: Any) -> np.dtype:
    """The NumPy dtype for an MLX dtype (``mx.float32`` -> ``numpy.float32``).

    Raises
    ------
    TypeError
        NumPy has no such dtype (``bfloat16`` without the ``ml_dtypes`` package), or the
        argument is not an MLX dtype.
    ImportError
        MLX is not installed.
    """
    mx = _import_mlx()
    for name, attribute in _MX_NAMES.items():
        if getattr(mx, attribute, None) == mlx_dtype:
            if name == "bfloat16":
                try:
                    return bfloat16()
                except ImportError as exc:
                    raise TypeError(f"MLX dtype bfloat16 has no NumPy counterpart here: {exc}") \
                        from exc
            return np.dtype(name)
    raise TypeError(f"{mlx_dtype!r} is not an MLX dtype that cunumpy knows")


def to_numpy(a: Any) -> np.ndarray:
    """A NumPy view of an MLX array (bfloat16 as ``ml_dtypes.bfloat16``, bit for bit).

    Evaluates the array; ``numpy.asarray`` shares MLX's memory where MLX allows it.
    """
    mx = _import_mlx()
    if a.dtype == mx.bfloat16:
        return np.asarray(a.view(mx.uint16)).view(numpy_dtype(a.dtype))
    return np.asarray(a)


def from_numpy(host: np.ndarray, dtype: Any = None) -> Any:
    """An MLX array copied from a NumPy array, converted to ``dtype`` (NumPy) first if given."""
    mx = _import_mlx()
    if dtype is not None and np.dtype(dtype) != host.dtype:
        host = host.astype(dtype)
    if is_bfloat16(host.dtype):
        return mx.array(np.ascontiguousarray(host).view(np.uint16)).view(mx.bfloat16)
    return mx.array(host, dtype=mx_dtype(host.dtype))


def real_metal_kernel() -> Any:
    """MLX's own ``mx.fast.metal_kernel``, also while :func:`cunumpy.testing.mlx_metal_on_cpu`
    has put cunumpy's factory in its place."""
    mx = _import_mlx()
    factory = mx.fast.metal_kernel
    return getattr(factory, "_cunumpy_replaced", factory)


def mlx_template(template: Sequence[tuple[str, Any]], kernel: str = "?") -> list[tuple[str, Any]]:
    """Template pairs as MLX takes them: MLX dtypes, Python ``int`` and ``bool``.

    MLX refuses NumPy scalars (``numpy.int64(3)``, ``numpy.True_``) as template values, so they
    are turned into Python numbers here; dtypes become MLX dtypes.
    """
    out = []
    for name, value in _normalise_template(kernel, template):
        out.append((name, mx_dtype(value) if isinstance(value, np.dtype) else value))
    return out


def clear_kernel_cache() -> None:
    """Forget the ``mx.fast.metal_kernel`` objects built so far (MLX keeps its own caches)."""
    with _KERNELS_LOCK:
        _KERNELS.clear()


def _kernel(
    name: str,
    input_names: tuple[str, ...],
    output_names: tuple[str, ...],
    source: str,
    header: str,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    compile_options: tuple[tuple[str, str], ...] = (),
) -> Any:
    key = (name, source, header, input_names, output_names, ensure_row_contiguous, atomic_outputs,
           compile_options)
    with _KERNELS_LOCK:
        kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    factory = real_metal_kernel()
    extra = {"compile_options": dict(compile_options)} if compile_options else {}
    kernel = factory(
        **extra,
        name=name,
        input_names=list(input_names),
        output_names=list(output_names),
        source=source,
        header=header,
        ensure_row_contiguous=ensure_row_contiguous,
        atomic_outputs=atomic_outputs,
    )
    with _KERNELS_LOCK:
        return _KERNELS.setdefault(key, kernel)


def _check_consistent(
    signature: MetalSignature,
    source_for_mlx: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    header: str,
    template: Sequence[tuple[str, Any]],
    atomic_outputs: bool,
) -> None:
    """Refuse a launch whose arguments differ from the signature that describes it."""
    tag = f"[{_ENGINE} kernel '{signature.name}']"
    if source_for_mlx != signature.source:
        hint = (
            " (the signature appended the MLX bug workaround; pass signature.source)"
            if signature.workaround_applied
            else ""
        )
        raise ValueError(f"{tag} the source given to MLX differs from signature.source{hint}")
    if header != signature.header:
        raise ValueError(f"{tag} the header given to MLX differs from signature.header")
    declared_in = tuple(p.name for p in signature.params if p.kind == "input")
    declared_out = tuple(p.name for p in signature.params if p.kind == "output")
    if tuple(input_names) != declared_in:
        raise ValueError(
            f"{tag} input names {list(input_names)} differ from the signature's {list(declared_in)}"
        )
    if tuple(output_names) != declared_out:
        raise ValueError(
            f"{tag} output names {list(output_names)} differ from the signature's "
            f"{list(declared_out)}"
        )
    if _normalise_template(signature.name, template) != signature.template:
        raise ValueError(f"{tag} template {list(template)} differs from the signature's")
    atomic = any(p.atomic for p in signature.params)
    if atomic != bool(atomic_outputs):
        raise ValueError(
            f"{tag} atomic_outputs={atomic_outputs} but the signature was built with "
            f"atomic_outputs={atomic}"
        )


def launch_mlx(
    signature: MetalSignature,
    source_for_mlx: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    header: str,
    inputs: Sequence[Any],
    output_shapes: Sequence[Sequence[int]],
    output_dtypes: Sequence[Any],
    grid: tuple[int, int, int],
    threadgroup: tuple[int, int, int],
    *,
    template: Sequence[tuple[str, Any]],
    init_value: float | None,
    atomic_outputs: bool,
    ensure_row_contiguous: bool,
    verbose: bool = False,
    compile_options: tuple[tuple[str, str], ...] = (),
) -> list:
    """Run one MetalKernel launch through ``mx.fast.metal_kernel``.

    The kernel object is built once per (name, source, header, names, flags) and cached; MLX
    compiles one Metal library per host name at the first evaluation.

    Parameters
    ----------
    signature : MetalSignature
        Built by :func:`~cunumpy._lang.metal_signature.build_signature` for this call; its
        ``name`` is the MLX kernel name.
    source_for_mlx : str
        The body to hand MLX; must be ``signature.source`` (the body after the bug workaround).
    input_names, output_names : sequence of str
        Parameter names, in the order of ``inputs`` and of the outputs.
    header : str
        Text before the kernel; must be ``signature.header``.
    inputs : sequence of mx.array
        The converted inputs.
    output_shapes : sequence of tuple of int
    output_dtypes : sequence of NumPy dtype
    grid, threadgroup : tuple of 3 int
        Threads in total (Metal ``dispatchThreads``) and threads per threadgroup.
    template : sequence of (str, value)
        NumPy dtypes, ints and bools; dtypes are passed to MLX as MLX dtypes.
    init_value : float or None
        Fill value of the outputs, or ``None`` to leave them uninitialised.
    atomic_outputs, ensure_row_contiguous : bool
        Passed to ``mx.fast.metal_kernel``.
    verbose : bool, optional
        Let MLX print the generated source (to the C++ standard output).
    compile_options : tuple of (str, str), optional
        MLX's ``compile_options`` (``(("math_mode", "fast"),)``); empty for MLX's default.

    Returns
    -------
    list of mx.array
        The outputs, lazy: MLX runs the kernel when they are evaluated.

    Raises
    ------
    ImportError
        MLX is not installed.
    ValueError
        The arguments disagree with ``signature``, or MLX refused them.
    RuntimeError
        MLX failed to build the launch (on Linux: no Metal back-end).
    """
    _check_consistent(
        signature, source_for_mlx, input_names, output_names, header, template, atomic_outputs
    )
    kernel = _kernel(
        signature.name,
        tuple(input_names),
        tuple(output_names),
        source_for_mlx,
        header,
        bool(ensure_row_contiguous),
        bool(atomic_outputs),
        tuple(compile_options),
    )
    mx_template = mlx_template(template, signature.name)
    dtypes = [mx_dtype(d) for d in output_dtypes]
    shapes = [tuple(int(n) for n in shape) for shape in output_shapes]
    try:
        outputs = kernel(
            inputs=list(inputs),
            output_shapes=shapes,
            output_dtypes=dtypes,
            grid=tuple(int(n) for n in grid),
            threadgroup=tuple(int(n) for n in threadgroup),
            template=mx_template or None,
            init_value=init_value,
            verbose=verbose,
        )
    except ValueError as exc:
        raise ValueError(
            f"[{_ENGINE} kernel '{signature.name}'] MLX refused the launch of "
            f"{signature.kernel_name}: {exc}"
        ) from exc
    except RuntimeError as exc:
        raise RuntimeError(
            f"[{_ENGINE} kernel '{signature.name}'] MLX could not launch "
            f"{signature.kernel_name}: {exc}"
        ) from exc
    return list(outputs)


class MLXEngine(MetalEngineBase):
    """Runs MetalKernel launches on an Apple GPU through MLX (``mlx``)."""

    name = "mlx"

    @staticmethod
    def _mx() -> Any:
        try:
            import mlx.core as mx
        except ImportError as exc:
            raise ImportError(
                "MetalKernel's mlx engine needs MLX: pip install 'cunumpy[metal]' on an Apple "
                "silicon Mac, or run on the CPU emulator with CUNUMPY_METAL_ENGINE=emulator"
            ) from exc
        return mx

    def check_available(self) -> None:
        self._mx()
        ok, reason, _ = mlx_status()
        if not ok:
            raise RuntimeError(f"MetalKernel cannot launch on the mlx engine: {reason}")

    def is_device_array(self, a: Any) -> bool:
        mx = sys.modules.get("mlx.core")
        return mx is not None and isinstance(a, mx.array)

    def describe(self, a: Any) -> tuple[np.dtype, tuple[int, ...]]:
        return numpy_dtype(a.dtype), tuple(a.shape)

    def to_device(self, host: np.ndarray, dtype: np.dtype, contiguous: bool) -> Any:
        self._mx()
        return from_numpy(host, dtype)

    def host_view(self, device: Any) -> np.ndarray:
        return to_numpy(device)

    def contiguous(self, device: Any) -> Any:
        return device  # MLX makes inputs row-contiguous itself when the kernel asks for it

    def prepare_library(self, program: Program) -> Callable[[Any], None]:
        """The launch callable of one kernel of a whole library (:class:`~cunumpy.kernels.MetalLibrary`):
        the library as MLX header text and a generated body (:mod:`cunumpy._engines.mlx._library`)."""
        from cunumpy._engines.mlx._library import prepare_library

        return prepare_library(self, program)

    def _prepare(self, program: Program) -> Callable[[MetalLaunch], list[Any]]:
        signature = program.signature
        inputs, outputs = program.setting("inputs"), program.setting("outputs")
        atomic = program.setting("atomic_outputs")
        contiguous = program.setting("ensure_row_contiguous")
        math_mode = program.setting("math_mode")
        options = () if math_mode == "safe" else (("math_mode", math_mode),)

        def go(launch: MetalLaunch) -> list[Any]:
            return launch_mlx(
                signature, signature.source, inputs, outputs, signature.header,
                list(launch.inputs), [tuple(s) for s in launch.output_shapes],
                list(launch.output_dtypes), launch.grid, launch.threadgroup,
                template=list(program.template), init_value=launch.init_value,
                atomic_outputs=atomic, ensure_row_contiguous=contiguous,
                compile_options=options,
            )

        return go
