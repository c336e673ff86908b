"""The generated per-kernel call function makes the same decisions as the generic one."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from _dispatch_ports import FakeCuda, FakeDeviceArray, FakeMetal, HostEngine, Param

from cunumpy.kernels import (
    Kernel,
    MissingPortError,
    use_metal,
    use_port,
)

pytestmark = pytest.mark.usefixtures("clean_settings")


def axpy(x, a, y):
    y += a * x


def _ports():
    cuda = FakeCuda(Param("x", const=True), Param("a", pointer=False), Param("y"),
                    engine=HostEngine())
    metal = FakeMetal(["x", "a", "y"], ["y_out"])
    return cuda, metal


SCENARIOS = [
    ("numpy, metal off", lambda: use_metal(False), False),
    ("numpy, metal on", lambda: use_metal(True), False),
    ("device arrays", lambda: use_metal(True), True),
    ("forced cuda", lambda: use_port("cuda"), False),
    ("forced host", lambda: use_port("host"), True),
]


@pytest.mark.parametrize(("label", "setting", "device"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
@pytest.mark.parametrize("generic", [False, True], ids=["generated", "generic"])
def test_generated_and_generic_agree(label, setting, device, generic):
    cuda, metal = _ports()
    host_calls = []

    def record(x, a, y):
        host_calls.append(a)

    k = Kernel(record, cuda, FakeMetal(["x", "a", "y"], ["y_out"]), name="axpy", check=False)
    metal = k.metal
    args = (FakeDeviceArray(3), 1.0, FakeDeviceArray(3)) if device else (
        np.ones(3), 2.0, np.zeros(3))
    with setting():
        expected = k.which(*args)
        (Kernel.__call__ if generic else type(k).__call__)(k, *args, n_threads=3)
    ran = [name for name, calls in (("host", host_calls), ("cuda", cuda.calls),
                                    ("metal", metal.calls)) if calls]
    assert ran == [expected]


def test_generated_source_writes_the_mapping_out():
    cuda, metal = _ports()
    text = Kernel(axpy, cuda, metal).call_source()
    assert "a0, a1, a2 = args" in text
    assert "_metal(a0, a1, a2, out=a2)" in text
    assert "_host(a0, a1, a2)" in text
    assert "_cuda(*args)" in text
    host_only = Kernel(axpy).call_source()
    assert "_metal" not in host_only and "self._run('cuda', args, _given(" in host_only


def test_kernels_of_zero_and_one_parameter():
    calls = []
    k0 = Kernel(lambda: calls.append("zero"), name="zero")
    k0()
    k1 = Kernel(lambda x: calls.append(x), name="one")
    k1(5)
    assert calls == ["zero", 5]
    with pytest.raises(TypeError, match=r"\[kernel 'one'\] takes 1 arguments \(x\), got 2"):
        k1(1, 2)


def test_metal_port_without_inputs():
    def fill(y):
        y[:] = 1

    metal = FakeMetal([], ["y"])
    k = Kernel(fill, metal=metal)
    y = np.zeros(2)
    with use_metal(True):
        k(y)
    assert metal.calls == [((), {"out": y})]


@pytest.mark.parametrize("setting", [lambda: use_metal(True), lambda: use_metal(False),
                                     lambda: use_port("cuda")], ids=["metal", "host", "forced"])
def test_unknown_keyword_is_refused_on_every_path(setting):
    cuda, metal = _ports()
    k = Kernel(axpy, cuda, metal)
    with setting(), pytest.raises(TypeError, match="unknown launch keyword.*'nthreads'"):
        k(np.ones(2), 1.0, np.zeros(2), nthreads=2)
    with pytest.raises(TypeError, match="unknown launch keyword.*'threads'"):
        k(FakeDeviceArray(2), 1.0, FakeDeviceArray(2), threads=2)
    assert not cuda.calls and not metal.calls


def test_still_a_kernel_and_picklable():
    cuda, metal = _ports()
    k = Kernel(axpy, cuda, metal, name="axpy2", missing="fallback")
    assert isinstance(k, Kernel) and type(k).__name__ == "Kernel"
    copy = pickle.loads(pickle.dumps(k))
    assert repr(copy) == repr(k)
    assert copy.call_source() == k.call_source()
    y = np.zeros(2)
    with use_metal(False):
        copy(np.ones(2), 2.0, y)
    assert y.tolist() == [2.0, 2.0]


def test_missing_port_through_generated_path():
    k = Kernel(axpy)
    with pytest.raises(MissingPortError, match=r"\[kernel 'axpy'\] has no CUDA port"):
        k(FakeDeviceArray(2), 1.0, FakeDeviceArray(2))
