"""``cunumpy.kernels.metal_kernel``: MLX's ``mx.fast.metal_kernel`` API, on every machine.

The factory takes MLX's arguments with MLX's names and defaults; the kernel it returns is called
with MLX's keyword arguments and returns a list of outputs. Underneath is a
:class:`~cunumpy.kernels.MetalKernel` (one per factory call), so validation, the generated
signature, transfer counting and the engines are those of MetalKernel: MLX's own GPU path where
there is a Metal GPU, the CPU emulator elsewhere.

MLX arrays in give MLX arrays out; NumPy arrays in give NumPy arrays out. Errors are tagged
``[metal_kernel]`` and name the kernel and the argument.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cunumpy._engines._metal_registry import get_metal_engine
from cunumpy._lang.metal_dtypes import is_bfloat16
from cunumpy.kernels.metal import MetalKernel

__all__ = ["MLXStyleKernel", "metal_kernel"]

_TAG = "[metal_kernel]"
_MATH_MODES = ("safe", "relaxed", "fast")


def _mx() -> Any:
    return sys.modules.get("mlx.core")


def _is_mx_array(a: Any) -> bool:
    mx = _mx()
    return mx is not None and isinstance(a, mx.array)


def _is_mx_dtype(d: Any) -> bool:
    mx = _mx()
    return mx is not None and isinstance(d, mx.Dtype)


def _names(kernel: str, role: str, names: Any) -> list[str]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(
            f"{_TAG} kernel {kernel!r}: {role} must be a list of names, got {names!r}"
        )
    return list(names)


def _math_mode(kernel: str, compile_options: Any) -> str:
    if compile_options is None:
        return "safe"
    if not isinstance(compile_options, Mapping):
        raise TypeError(
            f"{_TAG} kernel {kernel!r}: compile_options must be a dict such as "
            f"{{'math_mode': 'fast'}}, got {type(compile_options).__name__}"
        )
    unknown = sorted(set(compile_options) - {"math_mode"})
    if unknown:
        raise ValueError(
            f"{_TAG} kernel {kernel!r}: unknown compile_options {unknown}; the only option is "
            "'math_mode'"
        )
    mode = compile_options.get("math_mode", "safe")
    if mode not in _MATH_MODES:
        raise ValueError(
            f"{_TAG} kernel {kernel!r}: compile_options math_mode={mode!r} is not one of "
            f"{', '.join(_MATH_MODES)}"
        )
    return str(mode)


def metal_kernel(
    name: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    source: str,
    header: str = "",
    ensure_row_contiguous: bool = True,
    atomic_outputs: bool = False,
    compile_options: Mapping[str, str] | None = None,
) -> MLXStyleKernel:
    """A custom Metal kernel, made and called exactly as with MLX's ``mx.fast.metal_kernel``.

    Parameters
    ----------
    name : str
        Kernel name (MLX's host name is ``custom_kernel_<name>...``).
    input_names, output_names : list of str
        Parameter names of the inputs and outputs, in call order.
    source : str
        The body of the kernel; MLX's rules write the signature.
    header : str, default ""
        Text before the kernel: includes, defines, helper functions.
    ensure_row_contiguous : bool, default True
        Make inputs row-contiguous first; with False the body reads ``<name>_shape``,
        ``<name>_strides`` and ``<name>_ndim``.
    atomic_outputs : bool, default False
        Declare the outputs ``device atomic<T>*``.
    compile_options : dict, optional
        ``{"math_mode": "safe" | "relaxed" | "fast"}`` (default safe). On the emulator ``fast``
        compiles with fast math and defines ``__FAST_MATH__``.

    Returns
    -------
    MLXStyleKernel
        Call it with ``inputs=``, ``output_shapes=``, ``output_dtypes=``, ``grid=``,
        ``threadgroup=`` (and optionally ``template=``, ``init_value=``, ``verbose=``,
        ``stream=``); it returns a list of outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from cunumpy.kernels import metal_kernel
    >>> k = metal_kernel(name="axpy", input_names=["x", "a"], output_names=["y"],
    ...                  source="uint i = thread_position_in_grid.x; y[i] = a * x[i];")
    >>> x = np.arange(4, dtype=np.float32)
    >>> (y,) = k(inputs=[x, 2.0], output_shapes=[x.shape], output_dtypes=[np.float32],
    ...          grid=(4, 1, 1), threadgroup=(4, 1, 1))
    >>> y.tolist()
    [0.0, 2.0, 4.0, 6.0]
    """
    if not isinstance(name, str):
        raise TypeError(f"{_TAG} name must be a string, got {name!r}")
    ins = _names(name, "input_names", input_names)
    outs = _names(name, "output_names", output_names)
    mode = _math_mode(name, compile_options)
    try:
        kernel = MetalKernel(
            source, ins, outs, name=name, header=header, atomic_outputs=atomic_outputs,
            ensure_row_contiguous=ensure_row_contiguous,
        )
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{_TAG} {exc}") from exc
    return MLXStyleKernel(kernel, mode)


class MLXStyleKernel:
    """What :func:`metal_kernel` returns: call it with MLX's keyword arguments.

    Attributes
    ----------
    kernel : MetalKernel
        The kernel underneath (its ``metal_source(...)`` shows the text MLX compiles).
    math_mode : str
        ``compile_options["math_mode"]``.
    engine : str or None
        ``None`` follows ``CUNUMPY_METAL_ENGINE``; :func:`cunumpy.testing.mlx_metal_on_cpu`
        makes kernels with ``"emulator"``.
    """

    def __init__(self, kernel: MetalKernel, math_mode: str = "safe",
                 engine: str | None = None) -> None:
        self.kernel = kernel
        self.math_mode = math_mode
        self.engine = engine

    def __repr__(self) -> str:
        k = self.kernel
        return (
            f"metal_kernel(name={k.name!r}, input_names={list(k.input_names)}, "
            f"output_names={list(k.output_names)})"
        )

    def _error(self, exc: Exception) -> Exception:
        text = str(exc)
        if not text.startswith(_TAG):
            if text.startswith("MetalKernel "):  # the front end's wording, in MLX's terms
                text = "kernel " + text[len("MetalKernel "):]
            text = f"{_TAG} {text}"
        return type(exc)(text)

    def _inputs(self, inputs: Any) -> tuple[list[Any], bool]:
        """Host inputs for MetalKernel and whether any input was an MLX array."""
        k = self.kernel
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise TypeError(
                f"{_TAG} kernel {k.name!r}: inputs must be a list with one entry per input name "
                f"({', '.join(k.input_names) or 'none'}), got {type(inputs).__name__}"
            )
        if len(inputs) != len(k.input_names):
            raise ValueError(
                f"{_TAG} kernel {k.name!r} expects {len(k.input_names)} inputs "
                f"({', '.join(k.input_names) or 'none'}), got {len(inputs)}"
            )
        from_mlx = False
        host = []
        for n, a in zip(k.input_names, inputs):
            if _is_mx_array(a):
                from_mlx = True
                host.append(a)
            elif isinstance(a, (list, tuple)):
                raise TypeError(
                    f"{_TAG} kernel {k.name!r} input {n!r} is a Python {type(a).__name__}; "
                    "pass an array (mx.array(x) or np.asarray(x, dtype=np.float32))"
                )
            else:
                host.append(a)
        return host, from_mlx

    def _dtypes(self, output_dtypes: Any) -> list[np.dtype]:
        k = self.kernel
        if isinstance(output_dtypes, (str, bytes)) or not isinstance(output_dtypes, Sequence):
            raise TypeError(
                f"{_TAG} kernel {k.name!r}: output_dtypes must be a list with one dtype per "
                f"output ({', '.join(k.output_names)})"
            )
        out = []
        for n, d in zip(k.output_names, output_dtypes):
            try:
                if _is_mx_dtype(d):
                    from cunumpy._engines.mlx import numpy_dtype

                    out.append(numpy_dtype(d))
                else:
                    out.append(np.dtype(d))
            except TypeError as exc:
                raise TypeError(
                    f"{_TAG} kernel {k.name!r} output {n!r}: {d!r} is not a dtype ({exc})"
                ) from None
        return out

    def __call__(
        self,
        *,
        inputs: Sequence[Any],
        output_shapes: Sequence[Sequence[int]],
        output_dtypes: Sequence[Any],
        grid: Sequence[int],
        threadgroup: Sequence[int],
        template: Sequence[tuple[str, Any]] | None = None,
        init_value: float | None = None,
        verbose: bool = False,
        stream: Any = None,
    ) -> list[Any]:
        """Launch; returns one output per output name, as a list.

        Parameters
        ----------
        inputs : list
            MLX arrays, NumPy arrays or Python numbers (0-d, read by name in the body; read
            as ``a[0]`` where the body subscripts the name).
        output_shapes, output_dtypes : list
            One shape and one dtype (MLX or NumPy) per output.
        grid, threadgroup : tuple of 3 ints
            Threads in total per dimension (Metal ``dispatchThreads``) and per threadgroup.
        template : list of (name, value), optional
            Dtypes, ints and bools.
        init_value : float, optional
            Fill the outputs with it first; without it they start uninitialised.
        verbose : bool, default False
            Print the generated kernel text, as MLX does.
        stream : optional
            Accepted for MLX compatibility; the emulator runs on the CPU at once.

        Returns
        -------
        list
            MLX arrays when any input is an MLX array (or an output dtype an MLX dtype), else
            NumPy arrays.
        """
        del stream
        k = self.kernel
        host, from_mlx = self._inputs(inputs)
        dtypes = self._dtypes(output_dtypes)
        if len(output_shapes) != len(k.output_names) or len(dtypes) != len(k.output_names):
            raise ValueError(
                f"{_TAG} kernel {k.name!r} has {len(k.output_names)} outputs "
                f"({', '.join(k.output_names)}); give as many output_shapes and output_dtypes"
            )
        want_mlx = from_mlx or any(_is_mx_dtype(d) for d in output_dtypes)
        try:
            eng = get_metal_engine(self.engine)
            if eng.name != "mlx":
                host = [_host(a) for a in host]
            grid3 = _three(k.name, "grid", grid)
            results = k._run(
                tuple(host), None, grid3, template, [tuple(s) for s in output_shapes], dtypes,
                eng, _three(k.name, "threadgroup", threadgroup), init_value=init_value,
                math_mode=self.math_mode, verbose=verbose, requested=self.engine,
            )
        except (TypeError, ValueError, OverflowError) as exc:
            if "function transformations" in str(exc):
                raise ValueError(
                    f"{_TAG} kernel {k.name!r} was called while MLX traces a function "
                    "(mx.compile or mx.vmap); the CPU emulator runs the kernel at the call and "
                    "needs real arrays: call it outside the transformation, or run the block "
                    "with mx.disable_compile() (mlx_metal_on_cpu() does that by default)"
                ) from exc
            raise self._error(exc) from exc
        results = list(results) if isinstance(results, tuple) else [results]
        if eng.name == "mlx":
            if want_mlx:
                return results
            from cunumpy._engines.mlx import to_numpy

            return [np.array(to_numpy(r)) for r in results]
        if eng.name == "metal-cuda":  # CuPy results: MLX's API hands back host (or MLX) arrays
            arrays = [np.asarray(eng.host_view(r)) for r in results]
            if any(is_bfloat16(d) for d in dtypes):
                arrays = [a.view(d) if is_bfloat16(d) else a for a, d in zip(arrays, dtypes)]
        else:
            arrays = [r._data for r in results]
        if want_mlx:
            from cunumpy._engines.mlx import from_numpy

            return [from_numpy(a) for a in arrays]
        return arrays


def _host(a: Any) -> Any:
    """An MLX array as a NumPy view (bfloat16 through ml_dtypes); anything else unchanged."""
    if _is_mx_array(a):
        from cunumpy._engines.mlx import to_numpy

        return to_numpy(a)
    return a


def _three(kernel: str, role: str, dims: Any) -> tuple[int, ...]:
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        return (int(dims),)
    if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) or not 1 <= len(dims) <= 3:
        raise ValueError(
            f"{_TAG} kernel {kernel!r}: {role} must be a tuple of 3 ints, got {dims!r}"
        )
    return tuple(int(d) for d in dims)
