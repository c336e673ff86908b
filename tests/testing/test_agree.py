"""assert_kernels_agree: ports that agree pass; ports that disagree fail with a readable message."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cunumpy as xp
from _dispatch_ports import FakeCuda, HostEngine, Param
from cunumpy.kernels import CudaKernel, Kernel, MetalKernel, metal_available
from cunumpy.testing import DEFAULT_TOLERANCES, assert_kernels_agree, tolerance_for


def scale(x, a, y):
    y[:] = a * x


def scale_args(backend, seed):
    x = np.random.default_rng(seed).random(64, dtype=np.float32)
    if backend == "cupy":
        x = xp.to_cupy(x)
    return x, 2.0, xp.zeros_like(x) if backend == "cupy" else np.zeros_like(x)


def _metal(body, name, **kw):
    return MetalKernel(f"uint i = thread_position_in_grid.x; {body}", inputs=["x", "a"],
                       outputs=["y"], name=name, **kw)


GOOD = _metal("y[i] = a[0] * x[i];", "scale_good")
WRONG = _metal("y[i] = a[0] * x[i] + (i == 17 ? 0.5f : 0.0f);", "scale_wrong")
FORGETS = _metal("if (i != 5) y[i] = a[0] * x[i];", "scale_forgets")


# ---------------------------------------------------------------------------- Metal, emulated
def test_agreeing_metal_port_passes(emu_metal):
    assert assert_kernels_agree(Kernel(scale, metal=GOOD), scale_args) == {"metal": "emu-metal"}


def test_wrong_metal_port_names_kernel_port_output_and_element(emu_metal):
    with pytest.raises(AssertionError) as info:
        assert_kernels_agree(Kernel(scale, metal=WRONG), scale_args)
    message = str(info.value)
    x = scale_args("numpy", 0)[0]
    host = np.float32(2.0) * x[17]
    assert re.fullmatch(
        r"\[kernel 'scale'\] port 'metal' \(emu-metal\) output 'y' \(float32\[64\]\) differs from "
        r"the host kernel in 1 of 64 element\(s\) \(rtol=0\.0001, atol=1e-06\); worst at index "
        r"\(17,\): port (\S+), host (\S+), abs err 0\.5, rel err (\S+)",
        message,
    ), message
    port_value, host_value, rel = re.search(r"port (\S+), host (\S+), .* rel err (\S+)",
                                            message).groups()
    assert float(host_value) == pytest.approx(float(host))
    assert float(port_value) == pytest.approx(float(host) + 0.5)
    assert float(rel) == pytest.approx(0.5 / float(host), rel=1e-2)
    assert "poison" not in message


def test_metal_port_that_forgets_an_element_fails_on_the_poison(emu_metal):
    with pytest.raises(AssertionError, match=r"output 'y' .* in 1 of 64 element\(s\).*index "
                       r"\(5,\): port nan, .*still the poison value: the port never wrote this "
                       r"element"):
        assert_kernels_agree(Kernel(scale, metal=FORGETS), scale_args)
    assert FORGETS.init_value is None  # the poison is put back


def test_float64_cast_port_is_checked_at_float32_tolerance(emu_metal):
    def args64(backend, seed):
        x = np.random.default_rng(seed).random(64) + 0.5
        return x, 1.0 / 3.0, np.zeros_like(x)

    cast = _metal("y[i] = a[0] * x[i];", "scale_cast", float64="cast")
    k = Kernel(scale, metal=cast)
    assert assert_kernels_agree(k, args64) == {"metal": "emu-metal"}
    # the same results held to float64's default tolerance fail: float32 rounding shows
    rtol64, atol64 = DEFAULT_TOLERANCES["float64"]
    with pytest.raises(AssertionError, match=r"output 'y' \(float64\[64\]\) differs .*rtol=1e-09"):
        assert_kernels_agree(k, args64, rtol=rtol64, atol=atol64)


def test_in_out_parameter_is_not_poisoned(emu_metal):
    def saxpy(x, a, y):
        y += a * x

    metal = MetalKernel("uint i = thread_position_in_grid.x; y_out[i] = a[0] * x[i] + y[i];",
                        inputs=["x", "a", "y"], outputs=["y_out"], name="saxpy_io")

    def args(backend, seed):
        rng = np.random.default_rng(seed)
        return rng.random(32, dtype=np.float32), 0.5, rng.random(32, dtype=np.float32)

    assert assert_kernels_agree(Kernel(saxpy, metal=metal), args, n_threads=32) == {
        "metal": "emu-metal"
    }


def test_integer_outputs_must_match_exactly(emu_metal):
    def bins(x, n, idx):
        idx[:] = np.minimum((x * n).astype(np.int32), n - 1)

    good = MetalKernel("uint i = thread_position_in_grid.x; idx[i] = min(int(x[i] * n[0]), "
                       "n[0] - 1);", inputs=["x", "n"], outputs=["idx"], name="bins_good")
    off = MetalKernel("uint i = thread_position_in_grid.x; idx[i] = min(int(x[i] * n[0] + "
                      "0.5f), n[0] - 1);", inputs=["x", "n"], outputs=["idx"], name="bins_off")

    def args(backend, seed):
        x = np.random.default_rng(seed).random(40, dtype=np.float32)
        return x, 10, np.zeros(40, np.int32)

    assert assert_kernels_agree(Kernel(bins, metal=good), args) == {"metal": "emu-metal"}
    with pytest.raises(AssertionError, match=r"output 'idx' \(int32\[40\]\) differs .*exact match "
                                             r"required.*abs err 1,"):
        assert_kernels_agree(Kernel(bins, metal=off), args)


# ------------------------------------------------------------------ CUDA-style in-place ports
class PythonCudaPort(FakeCuda):
    """An in-place "CUDA" port written in Python on a host-array engine (like the emulator)."""

    def __init__(self, body):
        super().__init__(Param("x", const=True), Param("a", pointer=False, const=True),
                         Param("y"), engine=HostEngine())
        self.body = body

    def __call__(self, x, a, y, **kw):
        super().__call__(x, a, y, **kw)
        self.body(x, a, y)


def test_in_place_port_that_forgets_an_element_fails_on_the_poison():
    def forgets(x, a, y):
        y[1:] = a * x[1:]

    k = Kernel(scale, PythonCudaPort(forgets))
    with pytest.raises(AssertionError, match=r"\[kernel 'scale'\] port 'cuda' \(emu-cuda\) output "
                       r"'y' .*index \(0,\): port nan.*still the poison value"):
        assert_kernels_agree(k, scale_args, ports=["cuda"])


def test_in_place_port_that_agrees_passes_and_gets_n_threads():
    port = PythonCudaPort(scale)
    assert assert_kernels_agree(Kernel(scale, port), scale_args, ports="cuda", n_threads=64) == {
        "cuda": "emu-cuda"
    }
    assert port.calls[0][1] == {"n_threads": 64}


def test_host_that_reads_its_output_keeps_it_unpoisoned():
    """An output the host also reads (y += ...) is not poisoned, so the ports see its values."""
    def saxpy(x, a, y):
        y += a * x

    def args(backend, seed):
        rng = np.random.default_rng(seed)
        return rng.random(16), 3.0, rng.random(16)

    assert assert_kernels_agree(Kernel(saxpy, PythonCudaPort(saxpy)), args, ports=["cuda"]) == {
        "cuda": "emu-cuda"
    }


# ------------------------------------------------------------------------------- misuse
def test_requires_a_kernel_and_an_existing_port():
    with pytest.raises(TypeError, match="takes a cunumpy.kernels.Kernel"):
        assert_kernels_agree(scale, scale_args)
    with pytest.raises(ValueError, match=r"\[kernel 'scale'\] has none of the ports cuda, metal"):
        assert_kernels_agree(Kernel(scale), scale_args)
    with pytest.raises(ValueError, match="unknown port 'opencl'"):
        assert_kernels_agree(Kernel(scale), scale_args, ports=["opencl"])


def test_make_args_must_match_the_host_parameters():
    with pytest.raises(TypeError, match=r"make_args\('numpy', 0\) returned 2 arguments; the host "
                                        r"kernel takes 3 \(x, a, y\)"):
        assert_kernels_agree(Kernel(scale, PythonCudaPort(scale)),
                             lambda b, s: (np.ones(2), 1.0), ports=["cuda"])


def test_tolerance_table():
    assert tolerance_for(np.float32) == DEFAULT_TOLERANCES["float32"] == (1e-4, 1e-6)
    assert tolerance_for("float64") == (1e-9, 1e-12)
    assert tolerance_for(np.int32) == (0.0, 0.0)
    assert tolerance_for(np.bool_) == (0.0, 0.0)


# ------------------------------------------------------------------ ports that cannot run here
def _skip_reason(exc_info) -> str:
    return str(exc_info.value)


def test_metal_port_without_gpu_or_emulator_skips(monkeypatch):
    if metal_available():
        pytest.skip("a Metal GPU is present: the mlx engine runs the port")
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "mlx")
    monkeypatch.delenv("CUNUMPY_REQUIRE_METAL", raising=False)
    with pytest.raises(pytest.skip.Exception) as info:
        assert_kernels_agree(Kernel(scale, metal=GOOD), scale_args)
    assert _skip_reason(info).startswith("[kernel 'scale'] metal port cannot run here: ")
    assert "CUNUMPY_METAL_ENGINE=emulator" in _skip_reason(info)


def test_require_metal_turns_the_skip_into_a_failure(monkeypatch):
    if metal_available():
        pytest.skip("a Metal GPU is present: the mlx engine runs the port")
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "mlx")
    monkeypatch.setenv("CUNUMPY_REQUIRE_METAL", "1")
    with pytest.raises(pytest.fail.Exception, match="metal port cannot run here.*a skip became "
                                                    "a failure because CUNUMPY_REQUIRE_METAL=1"):
        assert_kernels_agree(Kernel(scale, metal=GOOD), scale_args)


SCALE_CU = r"""
extern "C" __global__ void scale(const float* x, float a, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 64) y[i] = a * x[i];
}
"""


def test_cuda_port_without_gpu_skips_after_checking_metal(emu_metal, monkeypatch):
    if xp.cupy_available():
        pytest.skip("a CUDA GPU is present: the cupy engine runs the port")
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
    monkeypatch.delenv("CUNUMPY_REQUIRE_CUDA", raising=False)
    k = Kernel(scale, CudaKernel(SCALE_CU, "scale"), GOOD)
    with pytest.raises(pytest.skip.Exception) as info:
        assert_kernels_agree(k, scale_args)
    reason = _skip_reason(info)
    assert reason.startswith("[kernel 'scale'] cuda port cannot run here: CuPy")
    assert "CUNUMPY_CUDA_ENGINE=emulator" in reason
    assert reason.endswith("(checked: metal (emu-metal) agrees)")
    monkeypatch.setenv("CUNUMPY_REQUIRE_CUDA", "1")
    with pytest.raises(pytest.fail.Exception, match="CUNUMPY_REQUIRE_CUDA=1"):
        assert_kernels_agree(k, scale_args)


def test_a_failing_port_fails_even_when_another_cannot_run(emu_metal, monkeypatch):
    if xp.cupy_available():
        pytest.skip("a CUDA GPU is present")
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
    k = Kernel(scale, CudaKernel(SCALE_CU, "scale"), WRONG)
    with pytest.raises(AssertionError, match="port 'metal'"):
        assert_kernels_agree(k, scale_args)


def test_cuda_emulator_missing_is_a_skip_reason(monkeypatch):
    """With CUNUMPY_CUDA_ENGINE=emulator but no emulator engine, the CUDA port skips, saying why."""
    from cunumpy.kernels import get_cuda_engine

    try:
        get_cuda_engine("emulator")
    except RuntimeError:
        pass
    else:
        pytest.skip("the CUDA emulator is available here")
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")
    monkeypatch.delenv("CUNUMPY_REQUIRE_CUDA", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cuda port cannot run here: the CUDA engine "
                                                    "'emulator' is not available"):
        assert_kernels_agree(Kernel(scale, CudaKernel(SCALE_CU, "scale")), scale_args)
