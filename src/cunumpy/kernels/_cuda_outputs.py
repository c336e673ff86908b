"""Write-only outputs of a CUDA kernel: ``CudaKernel(..., outputs=["y"])``.

CUDA cannot tell an output from an in/out pointer, so a kernel may declare which of its pointer
parameters it only writes. The declaration is checked at construction (each name must be a
non-const pointer parameter of the parsed signature) and used by:

- the CPU emulator, which fills those arrays with a poison pattern before the launch and raises
  :class:`~cunumpy.emulation.UnwrittenOutputError` naming the elements no thread wrote
  (:func:`poison_and_check`);
- :func:`cunumpy.testing.assert_kernels_agree`, which poisons them before the CUDA port runs.

The GPU engine ignores it (a GPU cannot see unwritten elements).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cunumpy.kernels._cuda_signature import CudaSignature

__all__ = ["declared_outputs", "poison_and_check"]


def declared_outputs(
    tag: str, signature: CudaSignature | None, outputs: Sequence[str] | str | None
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Validate ``outputs=``; return the names and their parameter indices."""
    if outputs is None:
        return (), ()
    if isinstance(outputs, str):
        raise TypeError(f"{tag} outputs must be a sequence of parameter names, not one str; "
                        f"write outputs=[{outputs!r}]")
    names = list(outputs)
    if signature is None:
        raise ValueError(
            f"{tag} outputs= needs the parsed signature (to find the parameters); it is not "
            "available with check_signature=False on an unreadable parameter list"
        )
    index = {p.name: i for i, p in enumerate(signature.params)}
    found: list[int] = []
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{tag} outputs must name parameters (str), got {n!r}")
        if n not in index:
            raise ValueError(
                f"{tag} outputs names {n!r}, which is not a parameter; the parameters are "
                f"{', '.join(p.name for p in signature.params)}"
            )
        p = signature.params[index[n]]
        if not p.pointer:
            raise ValueError(
                f"{tag} outputs names {n!r} ({p.text}), which is a value, not a pointer; only "
                "pointer parameters can be outputs"
            )
        if p.const:
            raise ValueError(
                f"{tag} outputs names {n!r} ({p.text}), whose pointee is const: the kernel "
                "cannot write it. Remove const or leave it out of outputs"
            )
        if index[n] in found:
            raise ValueError(f"{tag} outputs names {n!r} twice")
        found.append(index[n])
    return tuple(names), tuple(found)


def poison_and_check(
    prefix: str,
    params: Sequence[Any],
    args: Sequence[Any],
    outputs: Sequence[int],
    run: Callable[[], None],
    label: Callable[[str, np.ndarray], str],
) -> None:
    """Poison the ``outputs`` arrays, ``run()`` the launch, raise for unwritten elements.

    One- and two-byte integer outputs can legitimately hold their poison pattern; their
    suspects are confirmed by a second launch with another pattern, after every other writable
    array argument is restored to what it held before the first launch.
    """
    from cunumpy.emulation import _poison
    from cunumpy.emulation.errors import UnwrittenOutputError

    arrays = [(i, args[i]) for i in outputs if isinstance(args[i], np.ndarray)]
    arrays = [(i, a) for i, a in arrays if _poison.poison(a, 0)]
    confirm = any(_poison.needs_confirmation(a.dtype) for _, a in arrays)
    saved = []
    if confirm:
        saved = [
            (a, a.copy()) for k, (p, a) in enumerate(zip(params, args, strict=False))
            if isinstance(a, np.ndarray) and p.pointer and not p.const and k not in outputs
        ]
    run()
    suspects = [_poison.unwritten(a, 0) for _, a in arrays]
    if not any(s.size for s in suspects):
        return
    if any(s.size and _poison.needs_confirmation(a.dtype)
           for s, (_, a) in zip(suspects, arrays, strict=True)):
        for a, copy in saved:
            a[...] = copy
        for _, a in arrays:
            _poison.poison(a, 1)
        run()
        suspects = [
            np.intersect1d(s, _poison.unwritten(a, 1)) if _poison.needs_confirmation(a.dtype)
            else _poison.unwritten(a, 1)
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
