"""Fixtures of the CudaKernel tests: the recording host engine and a saxpy kernel on it."""

from __future__ import annotations

import pytest
from _cuda_recording import SAXPY, RecordingEngine

from cunumpy._engines._cuda_registry import unregister_cuda_engine
from cunumpy.kernels import CudaKernel, register_cuda_engine


@pytest.fixture
def rec():
    engine = RecordingEngine()
    register_cuda_engine("host-record", lambda: engine)
    yield engine
    unregister_cuda_engine("host-record")


@pytest.fixture
def saxpy(rec):
    return CudaKernel(SAXPY, "saxpy", engine="host-record")
