"""cuRAND's device API (``#include <curand_kernel.h>``) on every CUDA engine, against expected
values: ``curand_reference.npz`` (cuRAND's own headers compiled for the host,
``tools/curand_reference.py``) and, where recorded, ``curand_h200.npz`` (the H200,
``tools/record_curand.py``).

Integers, uniforms, skip-ahead and Poisson draws must be equal bit for bit. Normals go through
transcendental functions: the host branch of cuRAND's headers calls sinf/cosf (the GPU the
SFU's __sincosf), so against the reference they agree to a few units of 2^-20 of their size.
"""

from __future__ import annotations

import _curand_cases as cases
import numpy as np
import pytest

_REF = np.load(cases.HERE / "curand_reference.npz")
_GPU = np.load(cases.EXPECTED) if cases.EXPECTED.exists() else None
_SUB = cases.cases()["subsequence"]

# Columns of each output group (see curand_cases.cu).
_UNIFORM_F = [*range(8), 41]
_UNIFORM_F_PHILOX = [28, 29, 30, 31]
_UNIFORM_D = [*range(8), 45]
_UNIFORM_D_PHILOX = [*range(28, 36)]
_NORMAL_F = [*range(8, 28), 40, 42, 43, 44, 45, 46, 47]
_NORMAL_F_PHILOX = [*range(32, 40)]
_NORMAL_D = [*range(8, 28), 44, 46]
_NORMAL_D_PHILOX = [*range(36, 44)]


def _rows(gen: str) -> np.ndarray:
    """Cases whose outputs are defined: MRG32k3a subsequences of 2^56 and more make the GPU
    read past its table of jump matrices (not defined; see cn_curand.h). Between 2^51 and 2^56
    the table holds zeros: the state becomes zero, on the GPU as here."""
    return _SUB < 2**56 if gen == "mrg32k3a" else np.ones(len(_SUB), dtype=bool)


def _reference_mask(gen: str) -> np.ndarray:
    """Slots of ``_u`` where the host reference is the GPU's: not those of a zeroed MRG32k3a
    state (subsequence 2^51 and more, in curand_init or in the jump of slots 20-23), whose
    first number is 2^32 as a double, which the GPU converts saturating (0xFFFFFFFF) and a
    host C++ cast to 0."""
    mask = np.ones(_REF[f"{gen}_u"].shape, dtype=bool)
    if gen == "mrg32k3a":
        mask[_SUB >= 2**51] = False
        jumped = (cases.cases()["skip"] & np.uint64(2**56 - 1)) >= 2**51
        mask[np.ix_(jumped, range(20, 24))] = False
    return mask


@pytest.fixture
def outputs(cuda_engine: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, np.ndarray]:
    monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "0")  # values here; races in test_curand_states
    return cases.outputs("emu-cuda" if cuda_engine == "emulator" else cuda_engine)


def _cols(gen: str, common: list[int], philox: list[int]) -> list[int]:
    return common + (philox if gen == "philox" else [])


@pytest.mark.parametrize("gen", cases.GENERATORS)
def test_integers_uniforms_and_skipahead_equal_the_reference(
    outputs: dict[str, np.ndarray], gen: str
) -> None:
    ok = _rows(gen)
    same = _reference_mask(gen)[ok]
    got, ref = outputs[f"{gen}_u"][ok], _REF[f"{gen}_u"][ok]
    bad = np.argwhere((got != ref) & same)
    assert bad.size == 0, f"{gen}: curand/skipahead outputs differ at (case, slot) {bad[:5]}"
    for key, cols in (("f", _cols(gen, _UNIFORM_F, _UNIFORM_F_PHILOX)),
                      ("d", _cols(gen, _UNIFORM_D, _UNIFORM_D_PHILOX))):
        g, r = outputs[f"{gen}_{key}"][ok][:, cols], _REF[f"{gen}_{key}"][ok][:, cols]
        assert np.array_equal(g.view(f"u{g.itemsize}"), r.view(f"u{r.itemsize}")), (
            f"{gen}: uniforms ({key}) differ at {np.argwhere(g != r)[:5]}")


def test_state_layouts_are_the_gpus(outputs: dict[str, np.ndarray]) -> None:
    sizes = {g: outputs[f"{g}_u"][0, 40] for g in cases.GENERATORS}
    assert sizes == {"xorwow": 48008, "philox": 64016, "mrg32k3a": 48008}  # size*1000 + align


@pytest.mark.parametrize("gen", cases.GENERATORS)
def test_poisson_equals_the_reference(outputs: dict[str, np.ndarray], gen: str) -> None:
    got, ref = outputs[f"{gen}_p"], _REF[f"{gen}_p"]
    bad = np.argwhere(got != ref)
    lam = cases.poisson_cases()["lam"]
    assert bad.size == 0, f"{gen}: Poisson draws differ at lambda {sorted(set(lam[bad[:, 0]]))}"


@pytest.mark.parametrize("gen", cases.GENERATORS)
def test_normals_follow_the_reference(outputs: dict[str, np.ndarray], gen: str) -> None:
    ok = _rows(gen)
    for key, cols, tol in (("f", _cols(gen, _NORMAL_F, _NORMAL_F_PHILOX), 4e-6),
                           ("d", _cols(gen, _NORMAL_D, _NORMAL_D_PHILOX), 1e-14)):
        g = outputs[f"{gen}_{key}"][ok][:, cols].astype(np.float64)
        r = _REF[f"{gen}_{key}"][ok][:, cols].astype(np.float64)
        err = np.abs(g - r) / np.maximum(np.abs(r), 1.0)
        assert err.max() <= tol, f"{gen} ({key}): normal off by {err.max():.3g} of its size"


@pytest.mark.skipif(_GPU is None, reason="no recorded GPU values (run tools/record_curand.py)")
@pytest.mark.parametrize("gen", cases.GENERATORS)
def test_equal_to_the_recorded_gpu(outputs: dict[str, np.ndarray], gen: str) -> None:
    assert _GPU is not None
    ok = _rows(gen)
    assert np.array_equal(outputs[f"{gen}_u"][ok], _GPU[f"{gen}_u"][ok])
    for key, cols in (("f", _cols(gen, _UNIFORM_F, _UNIFORM_F_PHILOX)),
                      ("d", _cols(gen, _UNIFORM_D, _UNIFORM_D_PHILOX))):
        assert np.array_equal(outputs[f"{gen}_{key}"][ok][:, cols],
                              _GPU[f"{gen}_{key}"][ok][:, cols])
    # Normals, in ulps of max(|x|, 1): double within 8; float within 32, since the SFU's
    # __sincosf is off by up to 2^-21.4 of the radius (at most 6.7), about 21 such ulps.
    for key, cols, limit in (("f", _cols(gen, _NORMAL_F, _NORMAL_F_PHILOX), 32),
                             ("d", _cols(gen, _NORMAL_D, _NORMAL_D_PHILOX), 8)):
        g, r = outputs[f"{gen}_{key}"][ok][:, cols], _GPU[f"{gen}_{key}"][ok][:, cols]
        size = np.maximum(np.abs(r), 1.0).astype(r.dtype)
        ulps = np.abs(g.astype(np.float64) - r) / np.spacing(size).astype(np.float64)
        assert ulps.max() <= limit, (
            f"{gen} ({key}): {ulps.max():.1f} ulps of max(|x|, 1)")
    p, q = outputs[f"{gen}_p"], _GPU[f"{gen}_p"]
    assert np.mean(p != q) <= 0.01, f"{gen}: {np.mean(p != q):.2%} of Poisson draws differ"
