"""The mlx engine's MetalLibrary path on Linux: its generated kernels run through our MetalKernel.

MLX on Linux (``mlx[cpu]``) has arrays but no Metal back-end. ``install(monkeypatch)`` lets the
``mlx`` engine run anyway: its launches build the same ``mx.fast.metal_kernel`` arguments (name,
header, body, input and output names, template) and call the factory, which here is
:func:`cunumpy.kernels.metal_kernel` on ``emu-metal`` (MLX's API, its signature rules, the CPU
emulator). The GPU writes a kernel's buffers in place; the stand-in gives the emulator aligned
copies of the MLX inputs and writes what the kernel left in them back into the MLX arrays'
memory, which is what the GPU's writes would have done (inputs that share MLX memory, slices of
one array, share one copy). Every factory call is recorded
(``factory.made``), so tests can hand the same arguments to MLX itself.
"""

from __future__ import annotations

import ctypes

import numpy as np

from cunumpy._engines._library import memory_groups


class InPlaceFactory:
    """``mx.fast.metal_kernel`` made of :func:`cunumpy.kernels.metal_kernel` on ``emu-metal``."""

    def __init__(self) -> None:
        self.made: list[dict] = []
        """The factory's arguments, per kernel made."""
        self.calls: list[tuple[dict, list[np.ndarray], dict]] = []
        """(factory arguments, the inputs as NumPy copies before the launch, call arguments)."""

    def __call__(self, **kw):
        from cunumpy.kernels._mlx_api import MLXStyleKernel, metal_kernel

        self.made.append(dict(kw))
        k = metal_kernel(**kw)
        inner = MLXStyleKernel(k.kernel, k.math_mode, engine="emulator")

        def call(*, inputs, **args):
            import mlx.core as mx

            views = [np.asarray(a) for a in inputs]  # MLX's memory (slices share it)
            self.calls.append((dict(kw), [v.copy() for v in views], dict(args)))
            hosts: list = [None] * len(views)
            unions = []
            for lo, hi, members in memory_groups(dict(enumerate(views))):
                union = np.ctypeslib.as_array((ctypes.c_ubyte * (hi - lo)).from_address(lo))
                copy = union.copy()  # aligned, and shared by the inputs that share memory
                unions.append((union, copy))
                for i, offset in members:
                    hosts[i] = copy[offset: offset + views[i].nbytes].view(views[i].dtype)
            outs = inner(inputs=hosts, **args)
            for union, copy in unions:
                union[...] = copy  # the buffers as the kernel left them
            return [mx.array(o) for o in outs]

        return call


def install(monkeypatch) -> InPlaceFactory:
    """Route the mlx engine's kernels to :class:`InPlaceFactory`; returns it."""
    from cunumpy._engines import mlx as engine

    factory = InPlaceFactory()
    monkeypatch.setattr(engine, "real_metal_kernel", lambda: factory)
    monkeypatch.setattr(engine.MLXEngine, "check_available", lambda self: None)
    engine.clear_kernel_cache()
    return factory
