"""CudaKernel: argument checks, launch geometry, the engine seam, and (with a GPU) real launches.

Argument checks are written against the array protocol (dtype, shape, flags, data pointer), so
most of them run here with NumPy arrays on a host-side engine registered through the same seam
the CPU emulator uses (``register_cuda_engine``). That engine records what it is given instead of
running the kernel. Tests marked ``requires_cuda`` run the same checks on CuPy device arrays.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from _cuda_recording import SAXPY, TYPES, RecordingEngine, f32

import cunumpy
from cunumpy._engines import _cuda_registry as _cuda_engines
from cunumpy.kernels import (
    CudaKernel,
    get_cuda_engine,
    register_cuda_engine,
)


# -- import and engine seam -------------------------------------------------------------------
def test_importing_kernels_does_not_import_cupy():
    code = (
        "import sys, cunumpy, cunumpy.kernels as k\n"
        "k.CudaKernel('extern \"C\" __global__ void f(float* x) {}', 'f')\n"
        "assert 'cupy' not in sys.modules, 'cupy imported'\n"
    )
    env = {key: v for key, v in os.environ.items() if key != "CUNUMPY_BACKEND"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_engine_lookup():
    cupy_engine = get_cuda_engine("cupy")
    assert cupy_engine.name == "cupy" and cupy_engine.array_space == "device"
    assert get_cuda_engine(cupy_engine) is cupy_engine
    assert get_cuda_engine("cupy") is cupy_engine  # one object per name
    with pytest.raises(ValueError, match="unknown CUDA engine 'nope'"):
        get_cuda_engine("nope")


def test_register_twice_needs_replace(rec):
    with pytest.raises(ValueError, match="already registered"):
        register_cuda_engine("host-record", RecordingEngine)
    with pytest.raises(TypeError, match="callable"):
        register_cuda_engine("x", 3)  # type: ignore[arg-type]


def test_default_engine_is_read_at_each_call(monkeypatch, rec):
    saved = _cuda_engines._factories.get("emulator")
    monkeypatch.setitem(_cuda_engines._factories, "emulator", lambda: rec)
    _cuda_engines._engines.pop("emulator", None)
    try:
        kernel = CudaKernel(SAXPY, "saxpy")
        x = f32(10)
        monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")
        kernel(10, 1.0, x, x.copy())
        assert len(rec.calls) == 1
        monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
        with pytest.raises(TypeError, match="NumPy \\(host\\) array"):
            kernel(10, 1.0, x, x.copy())
        assert len(rec.calls) == 1
        # unset: auto, which is cupy where a CUDA device computes
        monkeypatch.setattr(cunumpy._backend, "cupy_status", lambda: (True, "a GPU (test)"))
        monkeypatch.delenv("CUNUMPY_CUDA_ENGINE")
        from cunumpy._backend import cupy_stand_in

        if cupy_stand_in():  # unset means emu-cuda on the CuPy stand-in
            kernel(10, 1.0, x, x.copy())
            assert len(rec.calls) == 2
        else:
            with pytest.raises(TypeError, match="NumPy \\(host\\) array"):
                kernel(10, 1.0, x, x.copy())
    finally:
        _cuda_engines._engines.pop("emulator", None)
        if saved is not None:
            _cuda_engines._factories["emulator"] = saved
        _cuda_engines._default_cache[0] = _cuda_engines._UNSET


def test_default_engine_without_a_gpu_is_the_emulator_with_one_warning(monkeypatch, rec):
    from cunumpy.emulation.errors import EmulatorWarning

    monkeypatch.setitem(_cuda_engines._factories, "emulator", lambda: rec)
    monkeypatch.setattr(_cuda_engines, "_engines", {})
    monkeypatch.setattr(_cuda_engines, "_warned_auto", [False])
    monkeypatch.setattr(cunumpy._backend, "cupy_status",
                        lambda: (False, "CuPy is installed but no CUDA device was found"))
    monkeypatch.delenv("CUNUMPY_CUDA_ENGINE", raising=False)
    _cuda_engines._default_cache[0] = _cuda_engines._UNSET
    try:
        assert _cuda_engines.resolve_cuda_engine() == "emulator"
        kernel = CudaKernel(SAXPY, "saxpy")
        x = f32(10)
        with pytest.warns(EmulatorWarning) as caught:
            kernel(10, 1.0, x, x.copy())  # NumPy arrays run, no "move it with to_cupy"
        assert len(rec.calls) == 1
        message = str(caught[0].message)
        assert message == (
            "CudaKernel runs on the CPU emulator (host-record): CuPy is installed but no CUDA "
            "device was found. Set CUNUMPY_CUDA_ENGINE=emulator to silence this, or =cupy to "
            "require a CUDA GPU")
        assert caught[0].filename == __file__  # points at the call
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            CudaKernel(SAXPY, "saxpy")(10, 1.0, x, x.copy())  # once per process
            monkeypatch.setattr(_cuda_engines, "_warned_auto", [False])
            monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "emulator")  # chosen: no warning
            CudaKernel(SAXPY, "saxpy")(10, 1.0, x, x.copy())
        assert len(rec.calls) == 3
    finally:
        _cuda_engines._default_cache[0] = _cuda_engines._UNSET


def test_engine_fixed_at_construction_ignores_environment(monkeypatch, saxpy, rec):
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", "cupy")
    x = f32(10)
    saxpy(10, 1.0, x, x.copy())
    assert len(rec.calls) == 1


# -- NumPy arrays on the CuPy engine ----------------------------------------------------------
def test_numpy_array_rejected_by_cupy_engine_without_copy():
    kernel = CudaKernel(SAXPY, "saxpy", engine="cupy")
    x = f32(16)
    with cunumpy.profiling.count_transfers() as counter:
        with pytest.raises(TypeError) as info:
            kernel(16, 2.0, x, x.copy())
    message = str(info.value)
    assert message.startswith("[cupy kernel 'saxpy'] argument 'x' (float32[16])")
    assert "never copies arrays implicitly" in message
    assert "cunumpy.to_cupy(x)" in message
    assert counter.to_device == 0 and counter.to_host == 0


def test_list_rejected_by_cupy_engine():
    kernel = CudaKernel(SAXPY, "saxpy", engine="cupy")
    with pytest.raises(TypeError, match="needs a device array \\(CuPy\\) of float32, got list"):
        kernel(3, 2.0, [1.0, 2.0, 3.0], [0.0, 0.0, 0.0])


def test_scalar_errors_come_before_array_errors_on_cupy_engine():
    kernel = CudaKernel(SAXPY, "saxpy", engine="cupy")
    with pytest.raises(OverflowError, match="argument 'n' = 4294967296 does not fit"):
        kernel(2**32, 2.0, f32(4), f32(4))


# -- arrays, through the host engine ----------------------------------------------------------
def test_good_call_passes_arrays_through_and_converts_scalars(saxpy, rec):
    x, y = f32(1000), f32(1000)
    saxpy(1000, 2.0, x, y)
    name, args, grid, block, shared_mem, stream = rec.calls[-1]
    assert name == "saxpy"
    assert args[2] is x and args[3] is y  # never copied
    assert type(args[0]) is np.int32 and args[0] == 1000
    assert type(args[1]) is np.float32 and args[1] == 2.0
    assert grid == (8, 1, 1) and block == (128, 1, 1) and shared_mem == 0 and stream is None


def test_fast_and_slow_paths_agree(saxpy, rec):
    x, y = f32(300), f32(300)
    saxpy(300, 2.0, x, y)
    saxpy(np.int64(300), np.float64(2.0), x, y, n_threads=300, block=128)
    fast, slow = rec.calls
    assert [type(a) for a in fast[1]] == [type(a) for a in slow[1]]
    assert fast[1][:2] == slow[1][:2] and fast[2:] == slow[2:]


def test_wrong_dtype(saxpy):
    with pytest.raises(TypeError) as info:
        saxpy(4, 1.0, np.zeros(4), f32(4))
    message = str(info.value)
    assert "[host-record kernel 'saxpy'] argument 'x' (float64[4]) has dtype float64" in message
    assert "needs float32" in message and "x.astype(float32)" in message


def test_byte_swapped_dtype_is_not_the_same_dtype(saxpy):
    with pytest.raises(TypeError, match="has dtype float32 \\(>f4, non-native byte order\\), but"):
        saxpy(4, 1.0, f32(4).astype(">f4"), f32(4))


def test_non_contiguous_array(saxpy):
    x = f32(20)[::2]
    with pytest.raises(ValueError, match="argument 'x' \\(float32\\[10\\]\\) is not C-contiguous"):
        saxpy(10, 1.0, x, f32(10))
    fortran = np.asfortranarray(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="not C-contiguous"):
        saxpy(12, 1.0, f32(12), fortran)


def test_contiguous_views_are_fine(saxpy, rec):
    base = f32(40)
    saxpy(10, 1.0, base[10:20], base[20:30].reshape(2, 5))
    assert rec.calls[-1][1][2].base is base


def test_read_only_output_refused_but_read_only_input_fine(saxpy, rec):
    ro = f32(8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="argument 'y' .* is read-only"):
        saxpy(8, 1.0, f32(8), ro)
    saxpy(8, 1.0, ro, f32(8))
    assert rec.calls[-1][1][2] is ro


def test_device_array_refused_by_host_engine(saxpy):
    class DeviceLike:
        """Exposes only the CUDA array interface, as a device array of another library does."""

        dtype = np.dtype(np.float32)
        shape = (4,)

        @property
        def __cuda_array_interface__(self):
            return {"shape": (4,), "typestr": "<f4", "data": (1, False)}

    with pytest.raises(TypeError, match="device array, but the host-record engine runs on the CPU"):
        saxpy(4, 1.0, DeviceLike(), f32(4))


def test_void_pointer_takes_any_dtype(rec):
    kernel = CudaKernel(
        'extern "C" __global__ void k(const void* p, int n) {}', "k", engine="host-record"
    )
    kernel(np.zeros(3, np.int16), 3)
    kernel(np.zeros((2, 2)), 4)
    with pytest.raises(ValueError, match="not C-contiguous"):
        kernel(np.zeros(8)[::2], 4)
    assert len(rec.calls) == 2


def test_wrong_number_of_arguments(saxpy):
    with pytest.raises(TypeError, match="takes 4 arguments \\(n, a, x, y\\); got 3"):
        saxpy(4, 1.0, f32(4))
    with pytest.raises(TypeError, match="takes 4 arguments \\(n, a, x, y\\); got 5"):
        saxpy(4, 1.0, f32(4), f32(4), 5)
    with pytest.raises(TypeError, match="takes 4 arguments \\(n, a, x, y\\); got 0"):
        saxpy()
    with pytest.raises(TypeError, match="unexpected keyword argument 'nthreads'"):
        saxpy(4, 1.0, f32(4), f32(4), nthreads=4)


# -- scalars -----------------------------------------------------------------------------------
@pytest.fixture
def types_kernel(rec):
    return CudaKernel(TYPES, "types", engine="host-record")


def call_types(kernel, **overrides):
    values = dict(b=True, u=7, q=-5, d=1.5, s=3, c=200, inp=np.zeros(4), out=np.zeros(4))
    values.update(overrides)
    kernel(*values.values())


def test_scalars_converted_to_exact_c_types(types_kernel, rec):
    call_types(types_kernel, u=np.uint64(2**32 - 1), q=np.int8(-3), d=np.float32(0.5), c=True)
    args = rec.calls[-1][1]
    assert [type(a) for a in args[:6]] == [
        np.bool_,
        np.uint32,
        np.int64,
        np.float64,
        np.int16,
        np.uint8,
    ]
    assert args[1] == 2**32 - 1 and args[5] == 1


def test_numpy_scalars_of_the_exact_type_skip_the_general_check(types_kernel, rec, monkeypatch):
    """``np.float32(2)`` for a ``float`` (as CuPy users write it) takes the launcher's fast
    conversion, like a Python number; other NumPy types still get the full check."""

    def no_general_check(engine, index, value):
        raise AssertionError(f"parameter {index} ({value!r}) went through the general check")

    monkeypatch.setattr(types_kernel, "_check_scalar", no_general_check)
    exact = dict(b=np.bool_(True), u=np.uint32(7), q=np.int64(-5), d=np.float64(1.5),
                 s=np.int16(3), c=np.uint8(200))
    call_types(types_kernel, **exact)
    args = rec.calls[-1][1]
    assert [type(a) for a in args[:6]] == [type(v) for v in exact.values()]
    assert [a.item() for a in args[:6]] == [v.item() for v in exact.values()]
    assert "_t3" in types_kernel.launcher_source()
    with pytest.raises(AssertionError, match="parameter 1"):
        call_types(types_kernel, **{**exact, "u": np.int64(7)})  # not the exact type


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        (
            "u",
            -1,
            "argument 'u' = -1 does not fit parameter 'unsigned int u' \\(uint32, 0..4294967295\\)",
        ),
        ("u", 2**32, "argument 'u' = 4294967296 does not fit"),
        ("s", 40000, "argument 's' = 40000 does not fit parameter 'short s' \\(int16"),
        ("c", 256, "argument 'c' = 256 does not fit"),
        ("q", 2**63, "argument 'q' = 9223372036854775808 does not fit"),
    ],
)
def test_integer_overflow(types_kernel, field, value, match):
    with pytest.raises(OverflowError, match=match):
        call_types(types_kernel, **{field: value})


def test_float_overflow_but_inf_and_nan_pass(saxpy, rec):
    with pytest.raises(
        OverflowError, match="argument 'a' = 1e\\+39 does not fit parameter 'float a'"
    ):
        saxpy(4, 1e39, f32(4), f32(4))
    with pytest.raises(OverflowError, match="argument 'a'"):
        saxpy(4, 10**400, f32(4), f32(4))
    saxpy(4, float("inf"), f32(4), f32(4))
    saxpy(4, float("nan"), f32(4), f32(4))
    assert np.isinf(rec.calls[0][1][1]) and np.isnan(rec.calls[1][1][1])


def test_scalar_type_errors(types_kernel, saxpy):
    with pytest.raises(
        TypeError, match="argument 'q' \\(float 2.0\\): parameter 'long long q' takes an integer"
    ):
        call_types(types_kernel, q=2.0)
    with pytest.raises(TypeError, match="parameter 'bool b' takes a bool"):
        call_types(types_kernel, b=1)
    with pytest.raises(TypeError, match="parameter 'double d' takes a real number"):
        call_types(types_kernel, d=1 + 2j)
    with pytest.raises(
        TypeError,
        match="argument 'n' \\(int64\\[1\\]\\) is an array, but parameter 'int n' is a scalar",
    ):
        saxpy(np.array([4]), 1.0, f32(4), f32(4))
    with pytest.raises(TypeError, match="parameter 'float a' takes a real number"):
        saxpy(4, "2", f32(4), f32(4))
