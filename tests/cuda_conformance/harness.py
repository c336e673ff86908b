"""Run a conformance :class:`~cases.Case` on one CUDA engine and compare with its reference."""

from __future__ import annotations

from typing import Any

import numpy as np

import cunumpy
from cunumpy.kernels import CudaKernel, get_cuda_engine
from cunumpy.testing._agree import compare_to_reference

from .cases import Case

SEED = 20261130


def _to_engine(value: Any, space: str) -> Any:
    """Move a host array to the engine's side (device: one copy with cunumpy.to_cupy)."""
    if isinstance(value, np.ndarray) and space == "device":
        return cunumpy.to_cupy(value)
    return value


def build_kernel(case: Case, engine: Any) -> CudaKernel:
    """The case's kernel, fixed to ``engine``."""
    if case.file is not None:
        return CudaKernel.from_file(case.file, case.name, engine=engine, **case.kernel_kwargs)
    return CudaKernel(case.source, case.name, engine=engine, **case.kernel_kwargs)


def run_case(case: Case, engine: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Launch ``case`` on ``engine`` and return ``{argument index: (got, expected)}``.

    Inputs are drawn on the host with a fixed seed; the reference runs on host copies. Arrays
    go to the engine's side once before the launch and come back once after it.
    """
    eng = get_cuda_engine(engine)
    rng = np.random.default_rng(SEED)
    host = case.inputs(rng)
    expected = case.reference([a.copy() if isinstance(a, np.ndarray) else a for a in host])
    args = [_to_engine(a, eng.array_space) for a in host]
    kernel = build_kernel(case, eng)
    kernel(*args, **case.launch(host))
    return {i: (cunumpy.to_numpy(args[i]), np.asarray(exp)) for i, exp in expected.items()}


def assert_case(case: Case, engine: str) -> None:
    """Run ``case`` and assert every output matches the reference (integers exactly).

    The comparison is the one :func:`cunumpy.testing.assert_kernels_agree` makes
    (:func:`cunumpy.testing._agree.compare_to_reference`), as in the Metal suite.
    """
    problems = [
        compare_to_reference(got, expected, case.rtol, case.atol,
                             what=f"{case.id} on {engine}: argument {index}")
        for index, (got, expected) in run_case(case, engine).items()
    ]
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)
