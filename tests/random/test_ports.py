"""The Philox stream in Metal ports, cuRAND states kept between CUDA launches, per-rank
streams, and what is refused."""

from __future__ import annotations

import itertools
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from cunumpy.kernels import CudaKernel, MetalKernel
from cunumpy.random import (
    METAL_INCLUDE,
    STATE_DTYPES,
    Philox4x32_10,
    curand_states,
    metal_header,
    rank_streams,
    rank_subsequences,
)

_METAL_BODY = """
    uint i = thread_position_in_grid.x;
    curandStatePhilox4_32_10_t s;
    curand_init(seed[0], i, 0, &s);
    bits[i] = curand(&s);
    uni[i] = curand_uniform(&s);
    nor[i] = curand_normal(&s);
    float4 q = curand_normal4(&s);
    n4[4 * i] = q.x; n4[4 * i + 1] = q.y; n4[4 * i + 2] = q.z; n4[4 * i + 3] = q.w;
    lgn[i] = curand_log_normal(&s, 0.5f, 0.25f);
"""


def test_metal_port_draws_the_host_stream(metal_engine: str) -> None:
    k = MetalKernel(_METAL_BODY, inputs=["seed"], outputs=["bits", "uni", "nor", "n4", "lgn"],
                    header=f"#include <{METAL_INCLUDE}>\n", name="philox_port")
    n = 96
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the emulator's one-time notice
        outs = k(np.array([2**40 + 7], np.uint64), n_threads=n,
                 output_shapes=[(n,), (n,), (n,), (4 * n,), (n,)],
                 output_dtypes=[np.uint32, np.float32, np.float32, np.float32, np.float32])
    bits, uni, nor, n4, lgn = (np.asarray(o.get() if hasattr(o, "get") else o) for o in outs)
    s = Philox4x32_10(2**40 + 7, np.arange(n), xp=np)
    assert np.array_equal(bits, s.curand())
    assert np.array_equal(uni, s.uniform())
    # Normals through Metal's log, sqrt, sinpi and cospi: a few float32 ulps of max(|x|, 1).
    for got, ref in ((nor, s.normal()), (n4.reshape(n, 4), s.normal4()),
                     (lgn, s.log_normal(0.5, 0.25))):
        err = np.abs(got - ref) / np.maximum(np.abs(ref), 1)
        assert err.max() <= 1e-5, f"{metal_engine}: off by {err.max():.2g}"


def test_metal_header_is_the_included_text() -> None:
    from cunumpy._lang.library_headers import expand_library_includes

    text = metal_header()
    assert "curandStatePhilox4_32_10" in text and "__METAL_VERSION__" in text
    once = expand_library_includes('#include <cunumpy/random.h>\n#include "cunumpy/random.h"\n')
    assert once.startswith(text) and once.count("#define CN_PHILOX_H") == 1  # included once
    kept = "#include <metal_stdlib>\n#include <cunumpy/other.h>\n"
    assert expand_library_includes(kept) == kept


_STATES = r"""
#include <curand_kernel.h>
extern "C" __global__ void setup(curandState* xorwow, curandStatePhilox4_32_10_t* philox,
                                 curandStateMRG32k3a_t* mrg, unsigned long long seed, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  curand_init(seed, i, 0, &xorwow[i]);
  curand_init(seed, i, 0, &philox[i]);
  curand_init(seed, i, 0, &mrg[i]);
}
extern "C" __global__ void draw(curandState* xorwow, curandStatePhilox4_32_10_t* philox,
                                curandStateMRG32k3a_t* mrg, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  curandState a = xorwow[i];
  out[3 * i] = curand_uniform(&a);
  xorwow[i] = a;
  out[3 * i + 1] = curand_uniform(&philox[i]);
  out[3 * i + 2] = curand_uniform(mrg + i);
}
extern "C" __global__ void direct(unsigned long long seed, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  curandState a;
  curandStatePhilox4_32_10_t b;
  curandStateMRG32k3a_t c;
  curand_init(seed, i, 0, &a);
  curand_init(seed, i, 0, &b);
  curand_init(seed, i, 0, &c);
  for (int k = 0; k < 2; ++k) {
    out[6 * i + 3 * k] = curand_uniform(&a);
    out[6 * i + 3 * k + 1] = curand_uniform(&b);
    out[6 * i + 3 * k + 2] = curand_uniform(&c);
  }
}
"""


def test_states_kept_between_launches(cuda_engine: str) -> None:
    xp = np
    if cuda_engine == "cupy":
        import cupy as xp
    n = 80
    setup, draw, direct = (CudaKernel(_STATES, name) for name in ("setup", "draw", "direct"))
    states = [curand_states(n, g, xp=xp) for g in ("xorwow", "philox", "mrg32k3a")]
    setup(*states, 31, n, n_threads=n)
    got = []
    for _ in range(2):
        out = xp.zeros(3 * n, dtype=np.float32)
        draw(*states, out, n, n_threads=n)
        got.append(np.asarray(out.get() if hasattr(out, "get") else out).reshape(n, 3))
    both = xp.zeros(6 * n, dtype=np.float32)
    direct(31, both, n, n_threads=n)
    both = np.asarray(both.get() if hasattr(both, "get") else both).reshape(n, 2, 3)
    assert np.array_equal(got[0], both[:, 0]) and np.array_equal(got[1], both[:, 1])
    s = Philox4x32_10(31, np.arange(n), xp=np)
    assert np.array_equal(got[0][:, 1], s.uniform()) and np.array_equal(got[1][:, 1], s.uniform())


def test_states_as_structured_arrays_on_the_emulator() -> None:
    setup = CudaKernel(_STATES, "setup", engine="emu-cuda")
    n = 4
    arrays = [np.zeros(n, STATE_DTYPES[g]) for g in ("xorwow", "philox", "mrg32k3a")]
    setup(*arrays, 0, n, n_threads=n)
    assert arrays[1]["key"].tolist() == [[0, 0]] * n
    assert arrays[1]["ctr"][:, 2].tolist() == [0, 1, 2, 3]  # subsequence i: counter word z
    assert arrays[2]["s1"].all()


def test_a_state_array_of_the_wrong_size_is_refused() -> None:
    setup = CudaKernel(_STATES, "setup", engine="emu-cuda")
    with pytest.raises(TypeError, match=r"xorwow.*uint8 with a last axis of 48"):
        setup(np.zeros((4, 64), np.uint8), curand_states(4, "philox"),
              curand_states(4, "mrg32k3a"), 0, 4, n_threads=4)


def test_curand_states_arguments() -> None:
    a = curand_states(3, "philox", xp=np)
    assert a.shape == (3, 64) and a.dtype == np.uint8 and not a.any()
    assert a.view(STATE_DTYPES["philox"]).shape == (3, 1)
    with pytest.raises(ValueError, match="generator must be one of"):
        curand_states(3, "sobol")
    with pytest.raises(ValueError, match="n must be a count"):
        curand_states(-1)


@pytest.mark.parametrize("comm", [
    (2, 5),
    SimpleNamespace(rank=2, size=5),
    SimpleNamespace(Get_rank=lambda: 2, Get_size=lambda: 5),
], ids=["pair", "rank-size", "mpi4py-like"])
def test_rank_subsequences_from_any_communicator(comm: object) -> None:
    r = rank_subsequences(comm)
    assert (r.start, r.stop) == (2 * 2**40, 3 * 2**40)
    s = rank_streams(9, 6, comm, xp=np)
    t = Philox4x32_10(9, np.uint64(2 * 2**40) + np.arange(6, dtype=np.uint64), xp=np)
    assert np.array_equal(s.curand4(), t.curand4())


def test_ranks_never_share_subsequences() -> None:
    ranges = [rank_subsequences(rank=r, size=4, per_rank=1000) for r in range(4)]
    assert all(a.stop == b.start for a, b in itertools.pairwise(ranges))
    with pytest.raises(ValueError, match="rank 4 is not in"):
        rank_subsequences((4, 4))
    with pytest.raises(ValueError, match="do not fit"):
        rank_subsequences((0, 2**30), per_rank=2**40)
    with pytest.raises(TypeError, match="give a communicator"):
        rank_subsequences()
    with pytest.raises(ValueError, match="do not fit in the 10"):
        rank_streams(0, 11, (0, 2), per_rank=10)


def test_generators_the_emulator_lacks_are_refused_by_name() -> None:
    src = '#include <curand_mtgp32_kernel.h>\nextern "C" __global__ void k(float* y) { y[0] = 1; }'
    with pytest.raises(NotImplementedError, match="MTGP32"):
        CudaKernel(src, "k", engine="emu-cuda")(np.zeros(1, np.float32), n_threads=1)
