"""Write-only outputs of a CUDA kernel: ``CudaKernel(..., outputs=["y"])``.

CUDA cannot tell an output from an in/out pointer, so a kernel may declare which of its pointer
parameters it only writes. The declaration is checked at construction (each name must be a
non-const pointer parameter of the parsed signature) and used by:

- the CPU emulator, which fills those arrays with a poison pattern before the launch and raises
  :class:`~cunumpy.emulation.UnwrittenOutputError` naming the elements no thread wrote
  (:func:`cunumpy.emulation._cuda_outputs.poison_and_check`);
- :func:`cunumpy.testing.assert_kernels_agree`, which poisons them before the CUDA port runs.

The GPU engine ignores it (a GPU cannot see unwritten elements).
"""

from __future__ import annotations

from collections.abc import Sequence

from cunumpy._lang.cuda_signature import CudaSignature

__all__ = ["declared_outputs"]


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
