"""The CPU CUDA emulator's check of write-only outputs (``CudaKernel(..., outputs=[...])``):
poison them before the launch and raise for the elements no thread wrote."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["poison_and_check"]


def poison_and_check(
    prefix: str,
    params: Sequence[Any],
    args: Sequence[Any],
    outputs: Sequence[int],
    run: Callable[[], None],
    label: Callable[[str, np.ndarray], str],
    lib: Any = None,
) -> None:
    """Poison the ``outputs`` arrays, ``run()`` the launch, raise for unwritten elements.

    One- and two-byte integer outputs can legitimately hold their poison pattern; their
    suspects are confirmed by a second launch with another pattern, after every other writable
    array argument is restored to what it held before the first launch. ``lib`` (the kernel's
    library) does the poisoning and the check in its C helpers.
    """
    from cunumpy.emulation import _poison
    from cunumpy.emulation.errors import UnwrittenOutputError

    arrays = [(i, args[i]) for i in outputs if isinstance(args[i], np.ndarray)]
    arrays = [(i, a) for i, a in arrays if _poison.poison(a, 0, lib)]
    confirm = any(_poison.needs_confirmation(a.dtype) for _, a in arrays)
    saved = []
    if confirm:
        saved = [
            (a, a.copy()) for k, (p, a) in enumerate(zip(params, args, strict=False))
            if isinstance(a, np.ndarray) and p.pointer and not p.const and k not in outputs
        ]
    run()
    suspects = [_poison.unwritten(a, 0, lib) for _, a in arrays]
    if not any(s.size for s in suspects):
        return
    if any(s.size and _poison.needs_confirmation(a.dtype)
           for s, (_, a) in zip(suspects, arrays, strict=True)):
        for a, copy in saved:
            a[...] = copy
        for _, a in arrays:
            _poison.poison(a, 1, lib)
        run()
        suspects = [
            np.intersect1d(s, _poison.unwritten(a, 1, lib)) if _poison.needs_confirmation(a.dtype)
            else _poison.unwritten(a, 1, lib)
            for s, (_, a) in zip(suspects, arrays, strict=True)
        ]
    problems = []
    for (i, a), idx in zip(arrays, suspects, strict=True):
        if not idx.size:
            continue
        shown = ", ".join(_index(int(k), a.shape) for k in idx[:5])
        more = ", ..." if idx.size > 5 else ""
        problems.append(
            f"{label(params[i].name, a)}: {idx.size} of {a.size} elements never written "
            f"(indices {shown}{more})"
        )
    if problems:
        raise UnwrittenOutputError(
            f"{prefix} " + "; ".join(problems)
            + ". It is declared in outputs= (write-only): write every element, or leave it out "
            "of outputs if the kernel updates it in place"
        )


def _index(flat: int, shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return str(flat)
    return "(" + ", ".join(str(int(v)) for v in np.unravel_index(flat, shape)) + ")"
