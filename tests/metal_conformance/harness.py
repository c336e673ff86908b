"""Run a conformance :class:`~cases.Case` through MetalKernel and compare with its reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from cunumpy.kernels import MetalKernel

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
    """Assert ``got`` matches ``expected`` output by output (integers exactly)."""
    assert len(got) == len(expected), f"{where}: {len(got)} outputs, {len(expected)} expected"
    for k, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        label = f"{where}: output {k}"
        if case.canonical is None:
            label = f"{where}: output {case.outputs[k]!r}"
        assert g.size == e.size, f"{label}: {g.size} elements, {e.size} expected"
        e = e.reshape(g.shape)
        if g.dtype.kind in "biu":
            bad = np.flatnonzero(g.reshape(-1) != e.reshape(-1).astype(g.dtype))
            assert bad.size == 0, (
                f"{label}: {bad.size} of {g.size} elements differ, first at flat index "
                f"{bad[0]}: got {g.reshape(-1)[bad[0]]}, expected {e.reshape(-1)[bad[0]]}"
            )
        else:
            np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol, err_msg=label)


def assert_case(case: Case, *, engine: str | None = None, emulator_options: Any = None) -> None:
    """Run ``case`` and assert its outputs match the NumPy reference."""
    got, expected = run_case(case, engine=engine, emulator_options=emulator_options)
    compare(case, got, expected, f"{case.name} on {engine or 'the active engine'}")
