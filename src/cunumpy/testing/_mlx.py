"""``mlx_metal_on_cpu``: run an MLX project's custom Metal kernels on the CPU emulator.

MLX builds ``mx.fast.metal_kernel`` kernels on Linux (``pip install 'mlx[cpu]'``) but cannot
run them: the call raises ``[metal_kernel] No Metal back-end``. Inside :func:`mlx_metal_on_cpu`,
``mlx.core.fast.metal_kernel`` is :func:`cunumpy.kernels.metal_kernel` with the emulator engine,
so the project's unmodified code (its model code and its tests) runs its kernels on the CPU and
gets MLX arrays back.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["mlx_metal_on_cpu"]

_LOCK = threading.Lock()


def _import_mlx() -> Any:
    try:
        import mlx.core as mx
    except ImportError as exc:
        raise ImportError(
            "mlx_metal_on_cpu needs MLX: pip install 'mlx[cpu]' on Linux, or mlx on a Mac "
            f"({exc})"
        ) from exc
    return mx


@contextlib.contextmanager
def mlx_metal_on_cpu(
    *, engine: str = "emulator", metal_available: bool = False, compile: bool = False
) -> Iterator[Any]:
    """Make ``mlx.core.fast.metal_kernel`` run kernels on the CPU emulator, for the block.

    Parameters
    ----------
    engine : {"emulator", "auto", "mlx"}, default "emulator"
        The MetalKernel engine the kernels made inside the block use. ``"auto"`` keeps a real
        Metal GPU where there is one.
    metal_available : bool, default False
        Also make ``mx.metal.is_available()`` return True inside the block, for code that builds
        its kernels only where MLX reports Metal (``if not mx.metal.is_available(): return
        None``). Off by default: other code may then take Metal-only paths of MLX itself.
    compile : bool, default False
        Leave ``mx.compile`` on. By default the block calls ``mx.disable_compile()`` (and
        ``mx.enable_compile()`` on exit, unless ``MLX_DISABLE_COMPILE`` is set), so functions
        decorated with ``mx.compile`` run eagerly and the kernels they call can run on the
        emulator; a compiled trace cannot call back into Python.

    Yields
    ------
    callable
        The factory that ``mx.fast.metal_kernel`` is inside the block (same signature as MLX's).

    Notes
    -----
    Kernels are made when ``mx.fast.metal_kernel(...)`` is called: a kernel object built before
    the block (at import time, say) stays MLX's own. MLX's function is put back on exit, also
    when the block raises. The emulator runs at each call, eagerly: code that calls a kernel
    inside ``mx.vmap`` or while ``mx.compile`` traces (with ``compile=True``) cannot run this way;
    ``mx.grad`` and ``mx.custom_function`` work.

    Examples
    --------
    >>> import mlx.core as mx  # doctest: +SKIP
    >>> from cunumpy.testing import mlx_metal_on_cpu
    >>> with mlx_metal_on_cpu():  # doctest: +SKIP
    ...     k = mx.fast.metal_kernel(name="double", input_names=["x"], output_names=["y"],
    ...                              source="uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
    ...     (y,) = k(inputs=[mx.arange(4.0)], output_shapes=[(4,)], output_dtypes=[mx.float32],
    ...              grid=(4, 1, 1), threadgroup=(4, 1, 1))
    """
    mx = _import_mlx()
    from cunumpy._engines._metal_registry import resolve_metal_engine
    from cunumpy.kernels._mlx_api import MLXStyleKernel, metal_kernel

    resolve_metal_engine(engine)  # refuse an unknown engine name before patching anything

    with _LOCK:
        original = mx.fast.metal_kernel

        def factory(
            name: str,
            input_names: Sequence[str],
            output_names: Sequence[str],
            source: str,
            header: str = "",
            ensure_row_contiguous: bool = True,
            atomic_outputs: bool = False,
            compile_options: Mapping[str, str] | None = None,
        ) -> MLXStyleKernel:
            kernel = metal_kernel(
                name, input_names, output_names, source, header=header,
                ensure_row_contiguous=ensure_row_contiguous, atomic_outputs=atomic_outputs,
                compile_options=compile_options,
            )
            kernel.engine = engine
            return kernel

        factory.__doc__ = metal_kernel.__doc__
        factory._cunumpy_replaced = getattr(original, "_cunumpy_replaced", original)  # type: ignore[attr-defined]
        mx.fast.metal_kernel = factory
        is_available = mx.metal.is_available
        if metal_available:
            mx.metal.is_available = lambda: True
        if not compile:
            mx.disable_compile()
    try:
        yield factory
    finally:
        with _LOCK:
            mx.fast.metal_kernel = original
            mx.metal.is_available = is_available
            if not compile and not os.environ.get("MLX_DISABLE_COMPILE"):
                mx.enable_compile()
