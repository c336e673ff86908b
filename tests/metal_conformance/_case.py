"""Metal conformance kernels: MSL bodies written as a Metal programmer would, each with its
arguments and a NumPy reference.

A :class:`Case` is engine-neutral. ``make_args(rng)`` draws the inputs (NumPy arrays, Python
numbers) and the output arrays; ``reference(*inputs)`` computes the expected outputs on host
copies of the inputs. ``harness.py`` launches the case through :class:`cunumpy.kernels.MetalKernel`
on whichever engine is active (MLX on an Apple GPU, the CPU emulator elsewhere), so the same
text is checked by both.

Assumptions about the hardware that a kernel relies on are stated next to it: SIMD groups of 32
lanes (every Apple GPU), quad groups of 4, ``dispatchThreads`` semantics (exactly ``n_threads``
threads, partial edge threadgroups).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CASES", "Case", "Launch"]


@dataclass(frozen=True)
class Launch:
    """The arguments of one launch: inputs in ``Case.inputs`` order, one array per output."""

    inputs: tuple[Any, ...]
    outputs: tuple[np.ndarray, ...]
    n_threads: int | tuple[int, ...] | None = None


@dataclass(frozen=True)
class Case:
    """One Metal kernel, one launch, one NumPy reference.

    Attributes
    ----------
    name : str
        Kernel name (``MetalKernel(name=...)``) and test id.
    source : str
        The MSL body.
    inputs, outputs : tuple of str
        Argument names, in call order.
    make_args : callable
        ``rng -> Launch``.
    reference : callable
        ``*inputs -> tuple`` of expected outputs (after ``canonical``), computed on host copies.
    header : str
        MSL text placed before the kernel (``#define``, helper functions).
    threadgroup : int or tuple of int
        Threads per threadgroup.
    template : mapping, optional
        Compile-time constants (ints, bools, NumPy dtypes as types).
    atomic_outputs, init_value, ensure_row_contiguous
        Passed to :class:`MetalKernel` unchanged.
    canonical : callable, optional
        ``outputs -> tuple``: a canonical form of the kernel's outputs, for results that are
        correct in any order (atomically appended elements are sorted, for instance).
    rtol, atol : float
        Tolerances for floating-point outputs; integer outputs must match exactly.
    features : tuple of str
        The MSL features the kernel exercises (checked against its text by the tests).
    emulator_gap : str, optional
        Why the CPU emulator cannot run this (valid MSL) kernel yet; its emulator runs are
        expected to fail (strict xfail) until the gap is closed.
    """

    name: str
    source: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    make_args: Callable[[np.random.Generator], Launch]
    reference: Callable[..., tuple[Any, ...]]
    header: str = ""
    threadgroup: int | tuple[int, ...] = 256
    template: Mapping[str, Any] | None = None
    atomic_outputs: bool = False
    init_value: float | None = None
    ensure_row_contiguous: bool = True
    canonical: Callable[[tuple[np.ndarray, ...]], tuple[Any, ...]] | None = None
    rtol: float = 1e-6
    atol: float = 0.0
    features: tuple[str, ...] = field(default_factory=tuple)
    emulator_gap: str | None = None

    def kernel_kwargs(self) -> dict[str, Any]:
        """Keywords of :class:`MetalKernel` besides ``emulator_options``."""
        return {
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "name": self.name,
            "header": self.header,
            "threadgroup": self.threadgroup,
            "atomic_outputs": self.atomic_outputs,
            "init_value": self.init_value,
            "ensure_row_contiguous": self.ensure_row_contiguous,
        }


CASES: list[Case] = []


def _add(**kwargs: Any) -> Case:
    c = Case(**kwargs)
    CASES.append(c)
    return c


def _f32(rng: np.random.Generator, shape: Any, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _f64(*arrays: Any) -> list[np.ndarray]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _blocks(x: np.ndarray, width: int, fill: Any = 0) -> np.ndarray:
    """Pad a 1-D array with ``fill`` to a multiple of ``width`` and reshape to (-1, width)."""
    n = -(-x.size // width) * width
    padded = np.full(n, fill, dtype=x.dtype)
    padded[: x.size] = x
    return padded.reshape(-1, width)


def _ceil_to(n: int, m: int) -> int:
    return -(-n // m) * m
