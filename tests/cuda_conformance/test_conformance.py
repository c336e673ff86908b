"""Each conformance kernel, run through CudaKernel on every CUDA engine, against NumPy."""

from __future__ import annotations

import pytest

from .cases import CASES as BASE_CASES
from .cases import Case
from .cases_builtins import CASES as BUILTIN_CASES
from .cases_constructs import CASES as CONSTRUCT_CASES
from .cases_half import CASES as HALF_CASES
from .cases_headers import CASES as HEADER_CASES
from .cases_launch import CASES as LAUNCH_CASES
from .cases_realworld import CASES as REALWORLD_CASES
from .harness import assert_case

CASES = (BASE_CASES + LAUNCH_CASES + REALWORLD_CASES + HEADER_CASES + BUILTIN_CASES
         + HALF_CASES + CONSTRUCT_CASES)


def test_enough_cases() -> None:
    assert len(CASES) >= 20
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_numpy(case: Case, cuda_engine: str) -> None:
    assert_case(case, cuda_engine)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_reference_fits_outputs(case: Case) -> None:
    """On any machine: the reference runs and matches the output arguments' size and kind,
    and the kernel's parsed signature takes the case's arguments."""
    import numpy as np

    from .harness import SEED, build_kernel

    args = case.inputs(np.random.default_rng(SEED))
    expected = case.reference([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert expected
    for index, value in expected.items():
        out = args[index]
        assert isinstance(out, np.ndarray)
        assert np.asarray(value).size == out.size, (case.id, index)
        assert np.all(np.isfinite(np.asarray(value, dtype=np.float64)))
    kernel = build_kernel(case, "cupy")
    assert len(kernel.params) == len(args)
    for p, a in zip(kernel.params, args, strict=True):
        assert p.pointer == isinstance(a, np.ndarray), (case.id, p.text)
        if p.pointer:
            assert a.dtype == p.dtype, (case.id, p.text, a.dtype)
    for index in expected:
        assert not kernel.params[index].const, (case.id, "an output is declared const")
    config = kernel.launch_config(*args, **case.launch(args))
    assert config is not None
