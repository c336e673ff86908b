"""Kernel dispatch: which version runs for which arguments, backend, setting and policy.

These tests use stand-in ports (no compiler, no GPU), so they check the decision itself; the
launches of real ports are in test_metal_dispatch.py and test_cuda_dispatch.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cunumpy as xp
from _dispatch_ports import (
    DeviceEngine,
    FakeCuda,
    FakeDeviceArray,
    FakeMetal,
    HostEngine,
    Param,
    saxpy_ports,
)
from cunumpy.kernels import (
    Kernel,
    MissingPortError,
    PortFallbackWarning,
    force_port,
    forced_port,
    metal_dispatch_enabled,
    set_metal_dispatch,
    use_metal,
    use_port,
)

pytestmark = pytest.mark.usefixtures("clean_settings")


def _args(n=4):
    return np.ones(n, np.float32), 2.0, np.zeros(n, np.float32)


# ------------------------------------------------------------------- the matrix (NumPy backend)
PORT_SETS = {
    "host": (False, False),
    "host+cuda": (True, False),
    "host+metal": (False, True),
    "host+cuda+metal": (True, True),
}


def _kernel(ports: str, missing: str):
    host, cuda, metal = saxpy_ports()
    has_cuda, has_metal = PORT_SETS[ports]
    k = Kernel(host, cuda if has_cuda else None, metal if has_metal else None, missing=missing)
    return k, host, cuda, metal


def _ran(host, cuda, metal) -> str:
    ran = [name for name, calls in (("host", host.calls), ("cuda", cuda.calls),
                                    ("metal", metal.calls)) if calls]
    assert len(ran) == 1, ran
    return ran[0]


@pytest.mark.parametrize("missing", ["raise", "fallback"])
@pytest.mark.parametrize("ports", list(PORT_SETS))
@pytest.mark.parametrize("metal_on", [False, True], ids=["metal-off", "metal-on"])
def test_numpy_arrays(ports, missing, metal_on):
    """NumPy arrays: the Metal port when Metal is on and present, else the host (no fallback)."""
    k, host, cuda, metal = _kernel(ports, missing)
    with use_metal(metal_on), xp.profiling.count_transfers() as counter, warnings.catch_warnings():
        warnings.simplefilter("error")
        assert k.which(*_args()) == ("metal" if metal_on and PORT_SETS[ports][1] else "host")
        k(*_args())
    expected = "metal" if metal_on and PORT_SETS[ports][1] else "host"
    assert _ran(host, cuda, metal) == expected
    assert counter.fallbacks == 0


@pytest.mark.parametrize("missing", ["raise", "fallback"])
@pytest.mark.parametrize("ports", list(PORT_SETS))
def test_device_arrays(ports, missing):
    """A device array (anything with __cuda_array_interface__) sends the call to the CUDA port."""
    k, host, cuda, metal = _kernel(ports, missing)
    x, a, y = FakeDeviceArray(4), 2.0, FakeDeviceArray(4)
    with use_metal(True), xp.profiling.count_transfers() as counter:
        if PORT_SETS[ports][0]:
            k(x, a, y)
            assert _ran(host, cuda, metal) == "cuda"
            assert cuda.calls[0][0] == (x, a, y)
        elif missing == "raise":
            with pytest.raises(MissingPortError, match=r"\[kernel 'saxpy'\] has no CUDA port.*"
                               r"argument 'x' is a device array"):
                k(x, a, y)
            assert not host.calls
        else:
            with pytest.warns(PortFallbackWarning, match="kernel 'saxpy'.*no CUDA port"):
                k(x, a, y)
            assert _ran(host, cuda, metal) == "host"
            assert counter.fallbacks == 1


@pytest.mark.requires_cuda
@pytest.mark.parametrize("missing", ["raise", "fallback"])
@pytest.mark.parametrize("ports", list(PORT_SETS))
def test_cupy_backend(ports, missing):
    """With the CuPy backend active every call goes to the CUDA port, whatever the arrays."""
    k, host, cuda, metal = _kernel(ports, missing)
    with xp.use_backend("cupy", strict=True):
        x, a, y = xp.ones(4, dtype=xp.float32), 2.0, xp.zeros(4, dtype=xp.float32)
        if PORT_SETS[ports][0]:
            k(x, a, y)
            assert _ran(host, cuda, metal) == "cuda"
        elif missing == "raise":
            with pytest.raises(MissingPortError, match="the cupy backend is active"):
                k(x, a, y)
        else:
            with pytest.warns(PortFallbackWarning):
                k(x, a, y)
            assert _ran(host, cuda, metal) == "host"


def test_cupy_backend_is_read_at_every_call(monkeypatch):
    """The backend test reads the backend state, not a copy taken at construction."""
    from cunumpy import _backend

    k, host, cuda, _ = _kernel("host+cuda", "raise")
    k(*_args())
    monkeypatch.setitem(_backend._state, "name", "cupy")
    k(*_args())
    assert len(host.calls) == 1 and len(cuda.calls) == 1


# ------------------------------------------------------------------------- fallback details
def test_fallback_warns_once_and_counts_every_time():
    host, _, _ = saxpy_ports()
    k = Kernel(host, missing="fallback")
    x, y = FakeDeviceArray(4), FakeDeviceArray(4)
    with xp.profiling.count_transfers() as counter:
        with pytest.warns(PortFallbackWarning) as record:
            k(x, 1.0, y)
            k(x, 1.0, y)
            k(x, 1.0, y)
    assert len(record) == 1
    assert record[0].filename == __file__  # points at the caller's line
    assert counter.fallbacks == 3
    assert counter.transfers == 0
    assert "missing CUDA port" in counter.events[0].description
    assert len(host.calls) == 3


def test_fallback_is_not_recorded_without_a_counter():
    host, _, _ = saxpy_ports()
    k = Kernel(host, missing="fallback")
    with pytest.warns(PortFallbackWarning):
        k(FakeDeviceArray(2), 1.0, FakeDeviceArray(2))
    assert len(host.calls) == 1


def test_which_reports_fallback_without_warning():
    host, _, _ = saxpy_ports()
    k = Kernel(host, missing="fallback")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert k.which(FakeDeviceArray(2), 1.0, FakeDeviceArray(2)) == "host"
    assert not host.calls


def test_bad_missing_policy():
    with pytest.raises(ValueError, match=r"\[kernel 'f'\] missing='ignore'"):
        Kernel(lambda x: None, name="f", missing="ignore")


# ------------------------------------------------------------------------------ Metal mapping
def test_metal_port_gets_inputs_and_outputs_by_name():
    def push(pos, vel, dt, pos_new):
        pass

    metal = FakeMetal(["vel", "pos", "dt"], ["pos_new"])
    k = Kernel(push, metal=metal)
    pos, vel, new = np.zeros(3), np.ones(3), np.empty(3)
    with use_metal(True):
        k(pos, vel, 0.5, new)
    (inputs, kw), = metal.calls
    assert inputs[0] is vel and inputs[1] is pos and inputs[2] == 0.5
    assert kw == {"out": new}
    assert k.metal_mapping == {"vel": ("input", "vel"), "pos": ("input", "pos"),
                               "dt": ("input", "dt"), "pos_new": ("output", "pos_new")}


def test_metal_in_out_parameter_by_suffix():
    """``y`` read and updated: input ``y`` + output ``y_out``, or input ``y_in`` + output ``y``."""
    host, _, metal = saxpy_ports()  # inputs x, a, y; outputs y_out
    k = Kernel(host, metal=metal)
    x, y = np.ones(3), np.zeros(3)
    with use_metal(True):
        k(x, 2.0, y)
    (inputs, kw), = metal.calls
    assert inputs == (x, 2.0, y) and kw["out"] is y
    assert k.outputs == ("y",)

    metal2 = FakeMetal(["x", "a", "y_in"], ["y"])
    k2 = Kernel(host, metal=metal2)
    with use_metal(True):
        k2(x, 2.0, y)
    assert metal2.calls[0][0][2] is y and metal2.calls[0][1]["out"] is y


def test_metal_multiple_outputs_and_unused_host_parameter():
    def split(n, z, re, im):
        pass

    metal = FakeMetal(["z"], ["re", "im"])
    k = Kernel(split, metal=metal)
    z, re, im = np.ones(2, np.complex64), np.empty(2, np.float32), np.empty(2, np.float32)
    with use_metal(True):
        k(2, z, re, im)
    (inputs, kw), = metal.calls
    assert inputs == (z,)
    assert kw["out"][0] is re and kw["out"][1] is im


def test_launch_keywords_go_to_the_port_that_takes_them():
    host, cuda, metal = saxpy_ports()
    k = Kernel(host, cuda, metal)
    args = _args()
    with use_metal(True):
        k(*args, n_threads=4, template={"N": 2}, block=64)
    assert metal.calls[0][1] == {"out": args[2], "n_threads": 4, "template": {"N": 2}}
    with use_port("cuda"), use_metal(False):
        cuda.engine = HostEngine()
        k(*args, n_threads=4, template={"N": 2}, block=64, shared_mem=16)
        k(*args, shared_mem=0, check_finite=False)  # defaults given explicitly: nothing passed
    assert cuda.calls[0][1] == {"n_threads": 4, "block": 64, "shared_mem": 16}
    assert cuda.calls[1][1] == {}
    k(FakeDeviceArray(4), 2.0, FakeDeviceArray(4), n_threads=4, template={"N": 2}, stream=1)
    assert cuda.calls[2][1] == {"n_threads": 4, "stream": 1}  # the generated CUDA branch
    with use_metal(False):
        k(*args, n_threads=4, grid=2)  # the host kernel takes none
    assert host.calls[0] == args


def test_unknown_launch_keyword_and_wrong_arity():
    host, cuda, metal = saxpy_ports()
    k = Kernel(host, cuda, metal)
    with pytest.raises(TypeError, match=r"\[kernel 'saxpy'\] got unknown launch keyword.*'bloc'"):
        k(*_args(), bloc=3)
    with pytest.raises(TypeError, match=r"\[kernel 'saxpy'\] takes 3 arguments \(x, a, y\), got 2"):
        k(np.ones(2), 1.0)


def test_call_returns_none():
    host, cuda, metal = saxpy_ports()
    with use_metal(True):
        assert Kernel(host, cuda, metal)(*_args()) is None


# ---------------------------------------------------------------------- the Metal setting
def test_metal_setting_function_context_manager_and_variable(monkeypatch):
    host, _, metal = saxpy_ports()
    k = Kernel(host, metal=metal)
    monkeypatch.setenv("CUNUMPY_USE_METAL", "1")
    assert metal_dispatch_enabled() and k.which(*_args()) == "metal"
    monkeypatch.setenv("CUNUMPY_USE_METAL", "off")
    assert not metal_dispatch_enabled() and k.which(*_args()) == "host"
    with use_metal(True):  # the function/context manager wins over the variable
        assert k.which(*_args()) == "metal"
        with use_metal(None):  # back to automatic: the variable decides
            assert k.which(*_args()) == "host"
        assert k.which(*_args()) == "metal"
    assert k.which(*_args()) == "host"
    assert set_metal_dispatch(True) is None
    assert set_metal_dispatch(None) is True


def test_metal_setting_restored_when_the_block_raises():
    with pytest.raises(KeyError), use_metal(True):
        raise KeyError
    assert set_metal_dispatch(None) is None


def test_metal_automatic_follows_the_emulator_engine(monkeypatch):
    """Automatic: on with CUNUMPY_METAL_ENGINE=emulator, else only with a real Metal GPU."""
    from cunumpy.kernels import metal_available

    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "emulator")
    assert metal_dispatch_enabled()
    monkeypatch.setenv("CUNUMPY_USE_METAL", "auto")
    assert metal_dispatch_enabled()
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "mlx")
    assert metal_dispatch_enabled() == metal_available()
    monkeypatch.delenv("CUNUMPY_METAL_ENGINE")
    monkeypatch.delenv("CUNUMPY_USE_METAL")
    assert metal_dispatch_enabled() == metal_available()


def test_metal_setting_rejects_bad_values(monkeypatch):
    with pytest.raises(TypeError, match="True, False or None"):
        set_metal_dispatch("yes")
    monkeypatch.setenv("CUNUMPY_USE_METAL", "maybe")
    with pytest.raises(ValueError, match="CUNUMPY_USE_METAL='maybe' is not one of 1, 0 or auto"):
        metal_dispatch_enabled()


def test_kernel_without_metal_port_ignores_metal_setting():
    host, cuda, _ = saxpy_ports()
    k = Kernel(host, cuda)
    with use_metal(True):
        k(*_args())
    assert len(host.calls) == 1


# ---------------------------------------------------------------------- forced ports
def test_forced_port_function_context_manager_and_variable(monkeypatch):
    host, cuda, metal = saxpy_ports()
    cuda.engine = HostEngine()
    k = Kernel(host, cuda, metal)
    assert forced_port() is None
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", "cuda")
    assert forced_port() == "cuda" and k.which(*_args()) == "cuda"
    with use_port("host"):
        assert k.which(FakeDeviceArray(2), 1.0, FakeDeviceArray(2)) == "host"
        with use_port("metal"):
            assert k.which(*_args()) == "metal"
        assert forced_port() == "host"
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", "auto")
    assert forced_port() is None
    assert force_port("metal") is None
    assert force_port(None) == "metal"


def test_forced_port_rejects_bad_values(monkeypatch):
    with pytest.raises(ValueError, match="'gpu' is not a port; valid ports are host, cuda, metal"):
        force_port("gpu")
    monkeypatch.setenv("CUNUMPY_KERNEL_PORT", "opencl")
    with pytest.raises(ValueError, match="CUNUMPY_KERNEL_PORT 'opencl' is not a port"):
        forced_port()


@pytest.mark.parametrize("missing", ["raise", "fallback"])
def test_forced_missing_port_follows_policy(missing):
    host, _, _ = saxpy_ports()
    k = Kernel(host, missing=missing)
    with use_port("metal"):
        if missing == "raise":
            with pytest.raises(MissingPortError, match=r"no Metal port.*the metal port is forced "
                               r"\(use_port/force_port\)"):
                k(*_args())
        else:
            with pytest.warns(PortFallbackWarning), xp.profiling.count_transfers() as c:
                k(*_args())
            assert c.fallbacks == 1 and len(host.calls) == 1


def test_forced_cuda_on_numpy_arrays_needs_a_host_array_engine():
    """use_port('cuda') with NumPy arrays runs the CUDA port only on an emulator engine."""
    host, _, _ = saxpy_ports()
    cuda = FakeCuda(Param("x"), Param("a", pointer=False), Param("y"), engine=DeviceEngine())
    k = Kernel(host, cuda)
    with use_port("cuda"):
        with pytest.raises(TypeError, match=r"\[kernel 'saxpy'\] the cuda port is forced.*NumPy "
                           r"arrays.*CUNUMPY_CUDA_ENGINE=emulator"):
            k(*_args())
        k(FakeDeviceArray(4), 1.0, FakeDeviceArray(4))  # device arrays are fine
        cuda.engine = HostEngine()
        k(*_args())
    assert len(cuda.calls) == 2 and not host.calls


def test_run_port_runs_one_version():
    host, cuda, metal = saxpy_ports()
    k = Kernel(host, cuda, metal)
    args = _args()
    k.run_port("metal", *args, n_threads=4, block=3)
    k.run_port("cuda", *args, template={"N": 1}, block=3)
    k.run_port("host", *args, n_threads=4)
    assert metal.calls[0][1] == {"out": args[2], "n_threads": 4}
    assert cuda.calls[0][1] == {"block": 3}
    assert host.calls == [args]
    with pytest.raises(MissingPortError, match=r"\[kernel 'saxpy'\] has no Metal port"):
        Kernel(host).run_port("metal", *args)
    with pytest.raises(ValueError, match="not a port"):
        k.run_port("opencl", *args)


def test_repr_and_properties():
    host, cuda, metal = saxpy_ports()
    k = Kernel(host, cuda, metal, name="axpy", missing="fallback")
    assert repr(k) == "Kernel(axpy(x, a, y), ports: host, cuda, metal, missing='fallback')"
    assert k.name == "axpy" and k.host is host and k.cuda is cuda and k.metal is metal
    assert k.param_names == ("x", "a", "y") and k.missing == "fallback"
    assert k.port("cuda") is cuda and k.port("host") is host


def test_host_array_types_are_not_device_arrays():
    """NumPy scalars and 0-d arrays never look like device memory."""
    host, cuda, _ = saxpy_ports()
    k = Kernel(host, cuda)
    k(np.float32(1.0), np.int64(3), np.array(2.0))
    assert len(host.calls) == 1


# ---------------------------------------------------------------------- the kernel_port fixture
def test_kernel_port_fixture_forces_each_version(kernel_port):
    """The plugin's ``kernel_port`` fixture sends every Kernel call to one version."""
    import os

    host, cuda, metal = saxpy_ports()
    cuda.engine = HostEngine()
    k = Kernel(host, cuda, metal)
    assert forced_port() == kernel_port
    k(*_args())
    assert _ran(host, cuda, metal) == kernel_port
    if kernel_port == "cuda":
        assert os.environ["CUNUMPY_CUDA_ENGINE"] == "emulator"
