"""Every conformance kernel through MetalKernel, against its NumPy reference.

``test_kernel_matches_numpy`` takes the ``metal_engine`` fixture of the cunumpy pytest plugin: it
runs on the CPU emulator everywhere and, unchanged, on an Apple GPU through MLX where one is
present (``CUNUMPY_REQUIRE_METAL=1`` turns the skip into a failure). On the emulator every case
runs a second time with threadgroups, and threads inside them, in a random order: a correct
kernel cannot depend on the order.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from cunumpy.emulation import CompilerNotFoundError, EmulatorOptions, find_compiler

from .cases import CASES, Case
from .harness import SEED, assert_case, build_kernel, compare

IDS = [c.name for c in CASES]


@pytest.fixture
def emulator() -> str:
    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))
    return "emulator"


def _expect_emulator_gap(case: Case, engine: str, request: pytest.FixtureRequest) -> None:
    if engine == "emulator" and case.emulator_gap:
        request.applymarker(pytest.mark.xfail(strict=True, reason=case.emulator_gap))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_kernel_matches_numpy(case: Case, metal_engine: str,
                              request: pytest.FixtureRequest) -> None:
    _expect_emulator_gap(case, metal_engine, request)
    assert_case(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_kernel_matches_numpy_in_random_order(case: Case, emulator: str) -> None:
    if case.emulator_gap:
        pytest.skip(f"emulator gap (expected failure in test_kernel_matches_numpy): "
                    f"{case.emulator_gap}")
    options = EmulatorOptions(random_order=True, seed=SEED + len(case.name))
    assert_case(case, engine=emulator, emulator_options=options)


def test_random_order_is_in_effect(emulator: str) -> None:
    """The compaction kernel appends in the order its SIMD groups run: two seeds give two
    different raw outputs with the same canonical (sorted) result."""
    case = next(c for c in CASES if c.name == "ballot_compaction")
    launch = case.make_args(np.random.default_rng(SEED))
    raw = []
    for seed in (1, 2):
        kernel = build_kernel(case, EmulatorOptions(random_order=True, seed=seed))
        outs = tuple(o.copy() for o in launch.outputs)
        kernel(*launch.inputs, out=outs, n_threads=launch.n_threads, engine=emulator)
        compare(case, case.canonical(outs), case.reference(*launch.inputs), f"seed {seed}")
        raw.append(outs[0])
    assert not np.array_equal(raw[0], raw[1])


def test_suite_size_and_names() -> None:
    assert len(CASES) >= 25
    assert len(set(IDS)) == len(IDS)
    for case in CASES:
        assert case.features, case.name
        assert re.fullmatch(r"[a-z][a-z0-9_]*", case.name), case.name


# The MSL features the suite promises to exercise, each as a pattern that must occur in the text
# (header + body) of at least one kernel.
REQUIRED_FEATURES = {
    "threadgroup array": r"threadgroup float \w+\[",
    "threadgroup_barrier": r"threadgroup_barrier\(mem_flags::mem_threadgroup\)",
    "simd_sum": r"\bsimd_sum\(",
    "simd_max": r"\bsimd_max\(",
    "simd_min": r"\bsimd_min\(",
    "simd_prefix_exclusive_sum": r"\bsimd_prefix_exclusive_sum\(",
    "simd_shuffle_xor": r"\bsimd_shuffle_xor\(",
    "simd_ballot": r"\bsimd_ballot\(",
    "simd_broadcast_first": r"\bsimd_broadcast_first\(",
    "quad functions": r"\bquad_sum\(",
    "device atomic add": r"atomic_fetch_add_explicit\(",
    "device atomic max": r"atomic_fetch_max_explicit\(",
    "threadgroup atomics": r"threadgroup atomic_uint ",
    "float3 / float4": r"\bfloat4 .*\bfloat3 |\bfloat3 .*\bfloat4 ",
    "swizzle": r"\.xyz\b",
    "packed_float3": r"packed_float3",
    "elem_to_loc": r"\belem_to_loc\(",
    "half": r"\bhalf\b",
    "bfloat16": r"\bbfloat16_t\b",
    "complex64_t": r"\bcomplex64_t\b",
    "popcount": r"\bpopcount\(",
    "clz": r"\bclz\(",
    "as_type<uint>(float)": r"as_type<uint>\(",
    "metal::fast::exp": r"metal::fast::exp\(",
    "Limits<T>": r"Limits<T>::",
    "header helper with a device pointer": r"inline \w+ \w+\(const device float\*",
    "2-D threadgroup tile": r"threadgroup float \w+\[\w+( \+ 2)?\]\[\w+( \+ 2)?\]",
    "every thread attribute of a 3-D grid": r"dispatch_threads_per_threadgroup",
    "simdgroup_matrix": r"simdgroup_multiply_accumulate\(",
}


@pytest.mark.parametrize("feature", sorted(REQUIRED_FEATURES))
def test_feature_is_exercised(feature: str) -> None:
    pattern = re.compile(REQUIRED_FEATURES[feature], re.S)
    users = [c.name for c in CASES if pattern.search(c.header + "\n" + c.source)]
    assert users, f"no conformance kernel uses {feature}"


def test_suite_covers_launch_options() -> None:
    assert any(c.atomic_outputs and c.init_value is not None for c in CASES)
    assert any(not c.ensure_row_contiguous for c in CASES)
    assert any(c.template and any(isinstance(v, type) for v in c.template.values())
               for c in CASES)
    assert any(c.template and any(isinstance(v, bool) for v in c.template.values())
               for c in CASES)
    assert any(c.header for c in CASES)
    assert any(isinstance(c.threadgroup, tuple) and len(c.threadgroup) == 3 for c in CASES)
    dtypes = {o.dtype for c in CASES for o in c.make_args(np.random.default_rng(0)).outputs}
    for d in (np.float32, np.float16, np.int32, np.uint32, np.uint16, np.complex64):
        assert np.dtype(d) in dtypes, d


def test_threadgroup_template_helper_runs_with_checks_on_and_off(emulator: str) -> None:
    """``threadgroup_template_helper`` (a header template taking ``threadgroup T*``) compiles
    with checked threadgroup arrays, without falling back, and with plain arrays."""
    import warnings

    from cunumpy.emulation import EmulatorWarning

    case = next(c for c in CASES if c.name == "threadgroup_template_helper")
    assert not case.emulator_gap
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmulatorWarning)
        assert_case(case, engine=emulator, emulator_options=EmulatorOptions(checks=True))
    assert_case(case, engine=emulator, emulator_options=EmulatorOptions(checks=False))
