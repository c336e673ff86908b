"""Run a conformance :class:`~cases.Case` through MetalKernel and compare with its reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from cunumpy.kernels import MetalKernel
from cunumpy.testing._agree import compare_to_reference

from .cases import Case

SEED = 20261130


def build_kernel(case: Case, emulator_options: Any = None) -> MetalKernel:
    """The case's kernel (``emulator_options`` only matters on the emulator engine)."""
    return MetalKernel(case.source, emulator_options=emulator_options, **case.kernel_kwargs())


def run_case(
    case: Case, *, engine: str | None = None, emulator_options: Any = None
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Launch ``case`` once and return ``(got, expected)``, both in canonical form.

    ``engine=None`` uses ``CUNUMPY_METAL_ENGINE`` (set by the ``metal_engine`` fixture).
    """
    launch = case.make_args(np.random.default_rng(SEED))
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in launch.inputs]
    expected = tuple(case.reference(*host))
    outs = tuple(o.copy() for o in launch.outputs)
    kernel = build_kernel(case, emulator_options)
    kernel(*launch.inputs, out=outs, n_threads=launch.n_threads, template=case.template,
           engine=engine)
    for before, after in zip(host, launch.inputs):
        if isinstance(before, np.ndarray):
            np.testing.assert_array_equal(after, before, err_msg=f"{case.name}: input modified")
    got = tuple(case.canonical(outs)) if case.canonical is not None else outs
    return got, expected


def compare(case: Case, got: tuple[Any, ...], expected: tuple[Any, ...], where: str) -> None:
    """Assert ``got`` matches ``expected`` output by output (integers exactly), with the
    comparison :func:`cunumpy.testing.assert_kernels_agree` makes
    (:func:`cunumpy.testing._agree.compare_to_reference`), as in the CUDA suite."""
    assert len(got) == len(expected), f"{where}: {len(got)} outputs, {len(expected)} expected"
    problems = []
    for k, (g, e) in enumerate(zip(got, expected)):
        label = f"{where}: output {k}" if case.canonical is not None else (
            f"{where}: output {case.outputs[k]!r}")
        problem = compare_to_reference(g, e, case.rtol, case.atol, what=label)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)


def assert_case(case: Case, *, engine: str | None = None, emulator_options: Any = None) -> None:
    """Run ``case`` and assert its outputs match the NumPy reference."""
    got, expected = run_case(case, engine=engine, emulator_options=emulator_options)
    compare(case, got, expected, f"{case.name} on {engine or 'the active engine'}")
