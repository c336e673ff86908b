"""The one comparison of results, shared by assert_kernels_agree and both conformance suites."""

from __future__ import annotations

import numpy as np

from cunumpy.testing._agree import compare_arrays, compare_to_reference


def test_floats_within_tolerance_and_nan_agree():
    want = np.array([1.0, np.nan, np.inf, -2.0])
    got = np.array([1.0 + 1e-7, np.nan, np.inf, -2.0], np.float32)
    assert compare_arrays(got, want, 1e-6, 0.0, what="x") is None
    assert compare_to_reference(got, want, 1e-6, 0.0, what="x") is None


def test_a_difference_names_the_worst_element_with_the_callers_words():
    want = np.zeros(6, np.float32)
    got = want.copy()
    got[2], got[4] = 0.5, 2.0
    msg = compare_to_reference(got, want.reshape(2, 3), 1e-6, 1e-3, what="case on emu-cuda: y")
    assert msg == (
        "case on emu-cuda: y (float32[6]) differs from the NumPy reference in 2 of 6 element(s) "
        "(rtol=1e-06, atol=0.001); worst at index (4,): got 2.0, expected 0.0, abs err 2, "
        "rel err inf"
    )
    port = compare_arrays(got, want, 0.0, 0.0, what="[kernel 'k'] port 'metal' (mlx) output 'y'")
    assert port is not None and "differs from the host kernel" in port
    assert ": port 2.0, host 0.0," in port


def test_integer_outputs_of_a_reference_compare_exactly_whatever_the_tolerance():
    want = np.array([2**40 + 1, 7], np.int64)
    got = np.array([2**40, 7], np.int64)
    msg = compare_to_reference(got, want, 0.5, 10.0, what="n")
    assert msg is not None and "exact match required" in msg and "1 of 2" in msg
    assert compare_to_reference(np.array([True, False]), [1, 0], 0.1, 0.1, what="b") is None


def test_sizes_must_match():
    assert compare_to_reference(np.zeros(3), np.zeros(4), 0, 0, what="z") == (
        "z: 3 elements, 4 expected"
    )
