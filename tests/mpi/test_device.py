"""The CuPy side of cunumpy.mpi: staging through reused pinned buffers (counted), the direct
path's pass-through, the device counts of a migration, device binding, the CUDA-aware query and
probe; and the multi-rank checks through the direct path where the MPI library is CUDA-aware.
Needs an NVIDIA GPU (``requires_cuda``), or the CuPy stand-in of ``CUNUMPY_CUPY_ON_CPU=1``."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.mpi import bind_device, buffer, halo_exchange, migrate
from cunumpy.profiling import count_transfers

pytestmark = pytest.mark.requires_cuda


@pytest.fixture
def cupy_backend():
    with xp.use_backend("cupy", strict=True):
        import cupy

        yield cupy


@pytest.mark.requires_gpu  # pinned host memory: the stand-in has none
def test_staged_buffer_is_pinned_counted_and_reused(cupy_backend, monkeypatch):
    cupy = cupy_backend
    from cunumpy.mpi._buffers import pinned_pool

    monkeypatch.setenv("CUNUMPY_MPI_CUDA_AWARE", "0")
    a = cupy.arange(1000, dtype=cupy.float32)
    for round_ in range(2):
        with count_transfers() as c:
            with buffer(a) as host:
                assert isinstance(host, np.ndarray) and host.shape == a.shape
                np.testing.assert_array_equal(host, np.arange(1000, dtype=np.float32))
                attrs = cupy.cuda.runtime.pointerGetAttributes(host.ctypes.data)
                assert attrs.type == getattr(cupy.cuda.runtime, "memoryTypeHost", 1)  # pinned
        assert (c.to_host, c.to_device, c.bytes_to_host) == (1, 0, 4000)
        assert "test_device.py" in c.events[0].site
        if round_ == 0:
            made = pinned_pool().allocations
    assert pinned_pool().allocations == made  # the second round took the same block
    strided = cupy.zeros((50, 2), dtype=cupy.float64)[:, 1]
    with count_transfers() as c, buffer(strided, send=False, recv=True) as host:
        host[...] = 3.0
    assert (c.to_host, c.to_device) == (0, 1)  # nothing to send, one copy back
    assert float(strided.sum()) == 150.0


def test_direct_buffer_passes_device_arrays(cupy_backend, monkeypatch):
    cupy = cupy_backend
    monkeypatch.setenv("CUNUMPY_MPI_CUDA_AWARE", "1")
    a = cupy.ones(10, dtype=cupy.float32)
    with count_transfers() as c, buffer(a, recv=True) as got:
        assert got is a
    assert c.transfers == 0
    strided = cupy.zeros((10, 2), dtype=cupy.float32)[:, 0]
    with buffer(strided, send=False, recv=True) as got:
        assert isinstance(got, cupy.ndarray) and got.flags.c_contiguous
        got[...] = 5
    assert float(strided.sum()) == 50.0


def test_one_process_device_exchange_stays_on_the_device(cupy_backend, monkeypatch):
    cupy = cupy_backend
    monkeypatch.setenv("CUNUMPY_MPI_CUDA_AWARE", "0")
    inner = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    field = cupy.zeros((7, 8, 9), dtype=cupy.float32)
    field[2:-2, 2:-2, 2:-2] = cupy.asarray(inner)
    with count_transfers() as c:
        halo_exchange(field, 2)
    assert c.transfers == 0
    np.testing.assert_array_equal(field.get(), np.pad(inner, 2, mode="wrap"))
    _, pos = migrate(cupy.zeros(4, dtype=cupy.int64), cupy.arange(4),
                     cupy.ones((4, 3), dtype=cupy.float32))
    assert isinstance(pos, cupy.ndarray) and pos.shape == (4, 3)


def test_bind_device_picks_a_device(cupy_backend):
    cupy = cupy_backend
    assert bind_device() == 0
    assert cupy.cuda.runtime.getDevice() == 0


def test_a_device_array_on_another_device_is_refused(cupy_backend):
    cupy = cupy_backend
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs (an array on a device other than the current one)")
    with cupy.cuda.Device(1):
        elsewhere = cupy.zeros((6, 6), dtype=cupy.float32)
    with cupy.cuda.Device(0), pytest.raises(ValueError, match=r"lives on device 1 but this "
                                            r"rank's current device is 0"):
        halo_exchange(elsewhere, 1)


@pytest.mark.requires_mpi
def test_cuda_aware_query_and_probe(cupy_backend):
    from cunumpy.mpi._device import library_cuda_support, probe_in_child

    assert library_cuda_support() in (True, False, None)
    # The probe runs in a child: whatever the library does with a device pointer (crash,
    # wrong bytes, or the right ones), this process carries on.
    assert probe_in_child(0) in (True, False)


@pytest.mark.requires_mpi
def test_every_check_through_the_direct_path(rank_env):
    from _jobs import cuda_aware_here, everything

    from cunumpy.testing import run_ranks

    if rank_env["CUNUMPY_BACKEND"] != "cupy":
        pytest.skip("the direct path is for device arrays (CuPy backend)")
    aware = run_ranks(1, cuda_aware_here, env=rank_env).returns[0]
    if not aware:
        pytest.skip("the MPI library here is not CUDA-aware: only the staged path can run")
    env = {**rank_env, "CUNUMPY_MPI_CUDA_AWARE": "1"}
    summaries = run_ranks(2, everything, ("cuda",), env=env, timeout=240).returns
    assert all(not s["transfers"]["staged"] for s in summaries)
    assert summaries[0]["transfers"]["halo"] == (0, 0)
