"""cunumpy.random.Philox4x32_10 on the host: the numbers of cuRAND's Philox for the same
(seed, subsequence, offset), checked against cuRAND's headers (``curand_reference.npz``) and,
for the transforms through transcendental functions, against the CUDA emulator's cuRAND."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import _curand_cases as cases
import numpy as np
import pytest

from cunumpy.random import Philox4x32_10

_REF = np.load(cases.HERE / "curand_reference.npz")
_C = cases.cases()


def _fresh(xp: Any = np) -> Philox4x32_10:
    return Philox4x32_10(_C["seed"], _C["subsequence"], _C["offset"], xp=xp)


def _calls(*fns: Callable[[Philox4x32_10], Any], xp: Any = np) -> np.ndarray:
    """The results of ``fns`` called in turn on fresh streams, one column (or more) each."""
    s = _fresh(xp)
    parts = [np.asarray(f(s).get() if xp is not np else f(s)) for f in fns]
    return np.concatenate([p.reshape(len(_C["seed"]), -1) for p in parts], axis=1)


def _skip(s: Philox4x32_10) -> Philox4x32_10:
    s.skipahead(_C["skip"])
    return s


# (columns of curand_cases.cu's u/f/d outputs, what the host calls to make them)
_EXACT = {
    "u": [
        (range(16), [lambda s: s.curand()] * 16),
        (range(28, 32), [lambda s: s.curand4()]),
        (range(32, 40), [lambda s: (s.curand(), s.curand4())[1], lambda s: s.curand4()]),
    ],
    "f": [
        (range(8), [lambda s: s.uniform()] * 8),
        (range(28, 32), [lambda s: s.uniform4()]),
    ],
    "d": [
        (range(8), [lambda s: s.uniform_double()] * 8),
        (range(28, 32), [lambda s: s.uniform2_double()] * 2),
        (range(32, 36), [lambda s: s.uniform4_double()]),
    ],
}


@pytest.mark.parametrize("key", ["u", "f", "d"])
def test_bits_and_uniforms_equal_curand(key: str) -> None:
    for cols, fns in _EXACT[key]:
        got = _calls(*fns)
        ref = _REF[f"philox_{key}"][:, list(cols)]
        assert got.dtype == ref.dtype
        assert np.array_equal(got, ref), f"columns {list(cols)} differ"


def test_skipahead_and_skipahead_sequence_equal_curand() -> None:
    def run(prepare: Callable[[Philox4x32_10], None]) -> np.ndarray:
        s = _fresh()
        prepare(s)
        return np.stack([s.curand() for _ in range(4)], axis=1)

    ref = _REF["philox_u"]
    assert np.array_equal(run(lambda s: s.skipahead(_C["skip"])), ref[:, 16:20])
    assert np.array_equal(run(lambda s: s.skipahead_sequence(_C["skip"])), ref[:, 20:24])
    assert np.array_equal(run(lambda s: (s.skipahead(_C["skip"]), s.skipahead(3))), ref[:, 24:28])


_EMULATED = {
    # (key, columns): the calls, in order, on fresh streams
    ("f", range(8, 16)): [lambda s: s.normal()] * 8,
    ("f", range(16, 20)): [lambda s: s.normal2()] * 2,
    ("f", range(20, 24)): [lambda s: s.log_normal(0.5, 1.5)] * 4,
    ("f", range(24, 28)): [lambda s: s.log_normal2(-1.0, 0.5)] * 2,
    ("f", range(32, 36)): [lambda s: s.normal4()],
    ("f", range(36, 40)): [lambda s: s.log_normal4(0.5, 1.5)],
    ("f", range(40, 48)): [lambda s: s.normal(), lambda s: s.uniform(), lambda s: s.normal(),
                           lambda s: s.log_normal(0.0, 1.0), lambda s: s.normal(),
                           lambda s: s.log_normal(0.0, 1.0), lambda s: s.normal(),
                           lambda s: s.normal()],
    ("d", range(8, 16)): [lambda s: s.normal_double()] * 8,
    ("d", range(16, 20)): [lambda s: s.normal2_double()] * 2,
    ("d", range(20, 24)): [lambda s: s.log_normal_double(0.25, 0.75)] * 4,
    ("d", range(36, 40)): [lambda s: s.normal4_double()],
    ("d", range(40, 44)): [lambda s: s.log_normal4_double(0.25, 0.75)],
    ("d", range(44, 47)): [lambda s: s.normal_double(), lambda s: s.uniform_double(),
                           lambda s: s.normal_double()],
}


@pytest.mark.parametrize(("key", "cols"), list(_EMULATED), ids=lambda v: str(v))
def test_normals_equal_the_emulated_curand(key: str, cols: range) -> None:
    emu = cases.outputs("emu-cuda")[f"philox_{key}"][:, list(cols)]
    got = _calls(*_EMULATED[(key, cols)])
    assert got.dtype == emu.dtype
    ulps = np.abs(got.astype(np.float64) - emu) / np.spacing(np.abs(emu)).astype(np.float64)
    # Float normals: equal. Double: the host's exp/log may differ from the C library's by 1 ulp.
    assert ulps.max() <= (0 if key == "f" else 2), f"{ulps.max()} ulps"


def test_a_kept_normal_survives_other_draws_per_stream() -> None:
    a = Philox4x32_10(5, subsequence=np.arange(3), xp=np)
    first = a.normal()
    a.skipahead(np.array([0, 1, 2], dtype=np.uint64))  # streams now at different positions
    kept = a.normal()
    b = Philox4x32_10(5, subsequence=np.arange(3), xp=np)
    pair = b.normal2()
    assert np.array_equal(first, pair[:, 0]) and np.array_equal(kept, pair[:, 1])


def test_scalar_streams_give_scalar_results() -> None:
    s = Philox4x32_10(0, xp=np)
    assert int(s.curand()) == 0x6627E8D5  # Random123's known answer, key 0, counter 0
    assert s.uniform().shape == () and s.curand4().shape == (4,)
    assert s.streams_shape == ()


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"seed": -1}, ValueError, "seed must be in [0, 2**64)"),
    ({"seed": 1.5}, TypeError, "seed must be an integer"),
    ({"seed": 1, "subsequence": [-3]}, ValueError, "subsequence must be in"),
    ({"seed": 1, "offset": 2**64}, ValueError, "offset must be in"),
])
def test_bad_stream_arguments_are_named(kwargs: dict, error: type, words: str) -> None:
    with pytest.raises(error, match=words.replace("(", r"\(").replace("[", r"\[")
                       .replace("*", r"\*").replace(")", r"\)")):
        Philox4x32_10(xp=np, **kwargs)


@pytest.mark.requires_cuda
def test_cupy_streams_equal_numpy_streams() -> None:
    import cupy

    for fns in ([lambda s: s.curand()] * 5, [lambda s: s.uniform4()]):
        assert np.array_equal(_calls(*fns, xp=cupy), _calls(*fns))
    # Normals go through the device's log/sin/cos (CuPy's elementwise math) on one side and the
    # host C library's on the other: the bounds, 4 ulps (float) and 8 ulps (double).
    for fns, bound in (([lambda s: s.normal()] * 3, 4), ([lambda s: s.normal2_double()], 8)):
        dev, host = _calls(*fns, xp=cupy), _calls(*fns)
        assert dev.dtype == host.dtype
        ulps = np.abs(dev.astype(np.float64) - host) / np.spacing(np.abs(host)).astype(np.float64)
        assert ulps.max() <= bound, f"{ulps.max()} ulps"


def test_the_namespace_keeps_the_backends_random_names() -> None:
    import cunumpy as xp

    with xp.use_backend("numpy", strict=True):
        assert xp.random.Philox4x32_10 is Philox4x32_10
        assert xp.random.default_rng is np.random.default_rng  # forwarded to the backend
        assert "default_rng" in dir(xp.random) and "curand_states" in dir(xp.random)
        with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
            xp.random.no_such_name  # noqa: B018
