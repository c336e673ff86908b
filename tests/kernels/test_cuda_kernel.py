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
import textwrap

import numpy as np
import pytest

import cunumpy
from cunumpy.kernels import (
    CudaEngine,
    CudaKernel,
    CudaLaunchError,
    _cuda_engines,
    get_cuda_engine,
    register_cuda_engine,
)
from cunumpy.kernels._cuda_engines import DEFAULT_LIMITS, CudaLimits, unregister_cuda_engine
from cunumpy.kernels.cuda import default_block

SAXPY = r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

TYPES = r"""
extern "C" __global__ void types(bool b, unsigned int u, long long q, double d, short s,
                                 unsigned char c, const double* in, double* out) {}
"""


class SyncFailure(Exception):
    """What the recording engine's synchronize raises when told to fail."""


class RecordingEngine(CudaEngine):
    """A host-side engine that records launches: the seam as the CPU emulator will use it."""

    name = "host-record"
    array_space = "host"

    def __init__(self, limits: CudaLimits = DEFAULT_LIMITS) -> None:
        self.calls: list[tuple] = []
        self.syncs = 0
        self.fail_sync = False
        self.write_nan: tuple[int, int] | None = None
        self._limits = limits

    def array_types(self):
        return (np.ndarray,)

    def limits(self):
        return self._limits

    def launch(self, kernel, args, grid, block, shared_mem, stream):
        self.calls.append((kernel.name, args, grid, block, shared_mem, stream))
        if self.write_nan is not None:
            index, position = self.write_nan
            args[index].reshape(-1)[position] = np.nan

    def synchronize(self, stream):
        self.syncs += 1
        if self.fail_sync:
            raise SyncFailure("an illegal memory access was encountered")

    def sync_errors(self):
        return (SyncFailure,)


@pytest.fixture
def rec():
    engine = RecordingEngine()
    register_cuda_engine("host-record", lambda: engine)
    yield engine
    unregister_cuda_engine("host-record")


@pytest.fixture
def saxpy(rec):
    return CudaKernel(SAXPY, "saxpy", engine="host-record")


def f32(n):
    return np.arange(n, dtype=np.float32)


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
        monkeypatch.delenv("CUNUMPY_CUDA_ENGINE")
        with pytest.raises(TypeError, match="NumPy \\(host\\) array"):
            kernel(10, 1.0, x, x.copy())
    finally:
        _cuda_engines._engines.pop("emulator", None)
        if saved is not None:
            _cuda_engines._factories["emulator"] = saved
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


# -- geometry ----------------------------------------------------------------------------------
def test_default_blocks():
    assert default_block(1, 128) == (128, 1, 1)
    assert default_block(2, 128) == (32, 4, 1)
    assert default_block(3, 128) == (32, 2, 2)
    assert default_block(3, 1024) == (32, 4, 8)
    assert default_block(2, 16) == (16, 1, 1)
    for ndim in (1, 2, 3):
        for bs in (1, 32, 96, 100, 128, 256, 1000, 1024):
            b = default_block(ndim, bs)
            assert b[0] * b[1] * b[2] == bs


def test_launch_config_forms(saxpy):
    x = f32(1000)
    assert saxpy.launch_config(1000, 1.0, x, x) == ((8, 1, 1), (128, 1, 1), 0)
    assert saxpy.launch_config(1000, 1.0, x, x, n_threads=1001) == ((8, 1, 1), (128, 1, 1), 0)
    assert saxpy.launch_config(1000, 1.0, x, x, n_threads=(100, 10)).grid == (4, 3, 1)
    assert saxpy.launch_config(1000, 1.0, x, x, n_threads=(100, 10, 3)).block == (32, 2, 2)
    assert saxpy.launch_config(1000, 1.0, x, x, n_threads=(100, 10), block=(16, 16)) == (
        (7, 1, 1),
        (16, 16, 1),
        0,
    )
    assert saxpy.launch_config(1000, 1.0, x, x, grid=(4, 2), block=64) == ((4, 2, 1), (64, 1, 1), 0)
    assert saxpy.launch_config(1000, 1.0, x, x, grid=5).block == (128, 1, 1)
    assert saxpy.launch_config(1000, 1.0, x, x, block=256).grid == (4, 1, 1)
    assert saxpy.launch_config(1000, 1.0, x, x, n_threads=np.int64(256)).grid == (2, 1, 1)


def test_block_size_option(rec):
    kernel = CudaKernel(SAXPY, "saxpy", block_size=256, engine="host-record")
    x = f32(1000)
    kernel(1000, 1.0, x, x.copy())
    assert rec.calls[-1][2:4] == ((4, 1, 1), (256, 1, 1))
    with pytest.raises(ValueError, match="block_size=2048 must be between 1 and 1024"):
        CudaKernel(SAXPY, "saxpy", block_size=2048)


def test_geometry_errors(saxpy):
    x = f32(10)
    with pytest.raises(TypeError, match="give n_threads= or grid=, not both"):
        saxpy(10, 1.0, x, x, n_threads=10, grid=1)
    with pytest.raises(
        ValueError, match="block \\(2048, 1, 1\\) has 2048 threads; this device allows at most 1024"
    ):
        saxpy(10, 1.0, x, x, block=2048)
    with pytest.raises(
        ValueError,
        match="block \\(1, 1, 128\\): extent 128 in dimension z exceeds the device limit 64",
    ):
        saxpy(10, 1.0, x, x, grid=1, block=(1, 1, 128))
    with pytest.raises(
        ValueError, match="70000 blocks in dimension y exceeds the device limit 65535"
    ):
        saxpy(10, 1.0, x, x, grid=(1, 70000))
    with pytest.raises(ValueError, match="must have 1 to 3 dimensions"):
        saxpy(10, 1.0, x, x, n_threads=(1, 1, 1, 1))
    with pytest.raises(ValueError, match="every extent must be positive"):
        saxpy(10, 1.0, x, x, block=0)
    with pytest.raises(ValueError, match="every extent must be >= 0"):
        saxpy(10, 1.0, x, x, n_threads=-1)
    with pytest.raises(TypeError, match="n_threads=2.5 must be an int"):
        saxpy(10, 1.0, x, x, n_threads=2.5)
    with pytest.raises(ValueError, match="shared_mem=300000 bytes exceeds this device's limit"):
        saxpy(10, 1.0, x, x, shared_mem=300_000)
    with pytest.raises(ValueError, match="shared_mem=-1 must be >= 0"):
        saxpy(10, 1.0, x, x, shared_mem=-1)


def test_engine_limits_are_used(rec):
    small = RecordingEngine(
        CudaLimits(
            max_threads_per_block=256,
            max_block=(256, 256, 64),
            max_grid=(1000, 10, 10),
            max_shared_mem=1024,
            max_shared_mem_optin=2048,
        )
    )
    kernel = CudaKernel(SAXPY, "saxpy", engine=small)
    x = f32(10)
    with pytest.raises(ValueError, match="at most 256 threads per block"):
        kernel(10, 1.0, x, x, block=512)
    with pytest.raises(
        ValueError, match="1001 blocks in dimension x exceeds the device limit 1000"
    ):
        kernel(10, 1.0, x, x, grid=1001)
    with pytest.raises(ValueError, match="limit of 2048 bytes"):
        kernel(10, 1.0, x, x, shared_mem=4096)
    kernel(10, 1.0, x, x, shared_mem=2048)
    assert small.calls[-1][4] == 2048


def test_zero_size_launch_checks_arguments_and_returns(saxpy, rec):
    empty = np.zeros(0, np.float32)
    saxpy(0, 1.0, empty, empty)
    saxpy(5, 1.0, f32(5), f32(5), n_threads=0)
    saxpy(5, 1.0, f32(5), f32(5), grid=(0, 1))
    assert rec.calls == []
    with pytest.raises(TypeError, match="has dtype float64"):
        saxpy(0, 1.0, np.zeros(0), empty)
    with pytest.raises(OverflowError):
        saxpy(-(2**40), 1.0, empty, empty)


def test_no_array_argument_needs_a_size(rec):
    kernel = CudaKernel('extern "C" __global__ void k(int n) {}', "k", engine="host-record")
    with pytest.raises(TypeError, match="no array argument to infer the launch size from"):
        kernel(3)
    kernel(3, n_threads=3)
    assert rec.calls[-1][2] == (1, 1, 1)


def test_stream_and_shared_mem_reach_the_engine(saxpy, rec):
    token = object()
    saxpy(10, 1.0, f32(10), f32(10), stream=token, shared_mem=512)
    assert rec.calls[-1][4:] == (512, token)
    saxpy(10, 1.0, f32(10), f32(10), stream=token)
    assert rec.calls[-1][5] is token


def test_launch_errors_are_wrapped_on_both_paths(rec):
    class Refused(Exception):
        pass

    class Refusing(RecordingEngine):
        def launch(self, kernel, args, grid, block, shared_mem, stream):
            raise Refused("too many resources requested for launch")

        def launch_errors(self):
            return (Refused,)

    kernel = CudaKernel(SAXPY, "saxpy", engine=Refusing())
    with pytest.raises(CudaLaunchError) as info:
        kernel(300, 1.0, f32(300), f32(300))
    assert str(info.value).startswith(
        "[host-record kernel 'saxpy'] launch failed with grid (3, 1, 1), block (128, 1, 1), "
        "shared_mem 0: Refused: too many resources"
    )
    assert isinstance(info.value.__cause__, Refused)
    with pytest.raises(
        CudaLaunchError, match="grid \\(2, 1, 1\\), block \\(64, 1, 1\\), shared_mem 8"
    ):
        kernel(300, 1.0, f32(300), f32(300), grid=2, block=64, shared_mem=8)


def test_shared_memory_is_reserved_before_the_launch(rec):
    seen = []

    class Reserving(RecordingEngine):
        def reserve_shared_mem(self, kernel, nbytes):
            seen.append((kernel.name, nbytes, len(self.calls)))

    engine = Reserving()
    kernel = CudaKernel(SAXPY, "saxpy", engine=engine)
    kernel(10, 1.0, f32(10), f32(10))
    kernel(10, 1.0, f32(10), f32(10), shared_mem=100_000)
    assert seen == [("saxpy", 100_000, 1)]
    assert engine.calls[-1][4] == 100_000


def test_recompile_rebuilds_the_launcher(saxpy, rec):
    saxpy(10, 1.0, f32(10), f32(10))
    first = saxpy._call
    saxpy.recompile()
    saxpy(10, 1.0, f32(10), f32(10))
    assert saxpy._call is not first and len(rec.calls) == 2


def test_switching_engines_back_and_forth(monkeypatch, rec):
    other = RecordingEngine()
    monkeypatch.setitem(_cuda_engines._factories, "emulator", lambda: other)
    monkeypatch.setitem(_cuda_engines._factories, "cupy", lambda: rec)
    monkeypatch.setattr(_cuda_engines, "_engines", {})
    _cuda_engines._default_cache[0] = _cuda_engines._UNSET
    try:
        kernel = CudaKernel(SAXPY, "saxpy")
        x = f32(10)
        for value in ("emulator", "cupy", None, "emulator", "emulator", "cupy"):
            if value is None:
                monkeypatch.delenv("CUNUMPY_CUDA_ENGINE", raising=False)
            else:
                monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", value)
            kernel(10, 1.0, x, x.copy())
        assert len(other.calls) == 3 and len(rec.calls) == 3
    finally:
        _cuda_engines._default_cache[0] = _cuda_engines._UNSET


# -- debug aids --------------------------------------------------------------------------------
def test_check_finite_names_the_output(saxpy, rec):
    x, y = f32(300), f32(300)
    rec.write_nan = (3, 17)
    with pytest.raises(FloatingPointError) as info:
        saxpy(300, 1.0, x, y, check_finite=True)
    message = str(info.value)
    assert message.startswith("[host-record kernel 'saxpy'] argument 'y' (float32[300])")
    assert "1 non-finite value(s)" in message and "first at flat index 17" in message
    assert "grid (3, 1, 1), block (128, 1, 1)" in message
    assert rec.syncs == 1


def test_check_finite_ignores_const_inputs(saxpy, rec):
    x = f32(10)
    x[3] = np.inf
    saxpy(10, 1.0, x, f32(10), check_finite=True)
    assert len(rec.calls) == 1


def test_debug_mode_synchronises_and_names_the_launch(rec):
    kernel = CudaKernel(SAXPY, "saxpy", engine="host-record", debug=True)
    kernel(10, 1.0, f32(10), f32(10))
    assert rec.syncs == 1
    rec.fail_sync = True
    with pytest.raises(CudaLaunchError) as info:
        kernel(10, 1.0, f32(10), f32(10), grid=2, block=32)
    message = str(info.value)
    assert (
        "[host-record kernel 'saxpy'] failed while running with grid (2, 1, 1), block (32, 1, 1)"
        in message
    )
    assert "illegal memory access" in message
    assert isinstance(info.value.__cause__, SyncFailure)
    kernel.debug = False
    kernel(10, 1.0, f32(10), f32(10))  # no sync, no error


def test_debug_default_from_environment(monkeypatch):
    monkeypatch.setenv("CUNUMPY_CUDA_DEBUG", "1")
    assert CudaKernel(SAXPY, "saxpy").debug
    monkeypatch.delenv("CUNUMPY_CUDA_DEBUG")
    assert not CudaKernel(SAXPY, "saxpy").debug


# -- construction ------------------------------------------------------------------------------
def test_template_args_required_and_only_for_templates(rec):
    src = "template <typename T> __global__ void k(T* x, int n) {}"
    with pytest.raises(TypeError, match="is a template .* give template_args="):
        CudaKernel(src, "k")
    kernel = CudaKernel(src, "k", template_args=(np.float64,), engine="host-record")
    assert kernel.name_expression == "k<double>"
    assert kernel.params[0].dtype == np.dtype(np.float64)
    kernel(np.zeros(3), 3)
    with pytest.raises(TypeError, match="has dtype float32, but parameter 'T\\* x' needs float64"):
        kernel(f32(3), 3)
    with pytest.raises(ValueError, match="is not a template"):
        CudaKernel(SAXPY, "saxpy", template_args=(np.float32,))


def test_name_expression_for_cpp_linkage():
    assert CudaKernel(SAXPY, "saxpy").name_expression is None
    assert CudaKernel("__global__ void k(int* p) {}", "k").name_expression == "k"


def test_unsupported_parameter_types_suggest_check_signature_false(rec):
    src = 'union U { float f; int i; };\nextern "C" __global__ void k(U* p, int n) {}'
    with pytest.raises(
        NotImplementedError,
        match="parameter 'p' \\(U\\* p\\) has type 'U'.*unions.*check_signature=False",
    ):
        CudaKernel(src, "k")
    kernel = CudaKernel(src, "k", check_signature=False, engine="host-record")
    p = np.zeros((4, 4), np.float32)
    kernel(p, np.int32(4))
    args = rec.calls[-1][1]
    assert args[0] is p and type(args[1]) is np.int32
    assert rec.calls[-1][2] == (1, 1, 1)  # n_threads inferred from the first array: 16 threads
    with pytest.raises(TypeError, match="takes 2 arguments"):
        kernel(p)


def test_unparsable_signature_needs_check_signature_false():
    src = '#define SIG (float* x)\nextern "C" __global__ void k SIG {}'
    with pytest.raises(ValueError, match="\\[cuda kernel 'k'\\]"):
        CudaKernel(src, "k")
    kernel = CudaKernel(src, "k", check_signature=False)
    assert kernel.signature is None and kernel.name == "k"


def test_repr_and_launcher_source(saxpy):
    assert (
        repr(saxpy)
        == "<CudaKernel __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y)>"
    )
    text = saxpy.launcher_source()
    assert text.startswith("def launch(v0=_M, v1=_M, v2=_M, v3=_M, *extra, n_threads=None")
    assert "-2147483648 <= v0 <= 2147483647" in text
    assert "v2.dtype is not _d2" in text


def test_bad_constructor_arguments():
    with pytest.raises(TypeError, match="source must be a str"):
        CudaKernel(b"x", "k")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="options must be a sequence of str"):
        CudaKernel(SAXPY, "saxpy", options="-O3")  # type: ignore[arg-type]


# -- headers and the compile key -------------------------------------------------------------
def test_from_file_headers_and_digest(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "local.cuh").write_text('#include "nested.cuh"\n#define A 1\n')
    (tmp_path / "nested.cuh").write_text("#define B 2\n")
    (tmp_path / "inc" / "other.cuh").write_text("#define C 3\n")
    (tmp_path / "k.cu").write_text(
        '#include "local.cuh"\n#include <other.cuh>\n#include <cuda_fp16.h>\n'
        'extern "C" __global__ void k(float* y) { y[0] = A + B + C; }\n'
    )
    kernel = CudaKernel.from_file(tmp_path / "k.cu", include_dirs=[tmp_path / "inc"])
    assert kernel.name == "k"
    assert [p.name for p in kernel.headers()] == ["local.cuh", "nested.cuh", "other.cuh"]
    code, options, expression = kernel._compile_inputs()
    assert f"-I{tmp_path.resolve()}" in options and f"-I{(tmp_path / 'inc').resolve()}" in options
    digest = kernel.header_digest()
    assert digest in code and expression is None
    (tmp_path / "nested.cuh").write_text("#define B 20\n")
    assert (
        CudaKernel.from_file(tmp_path / "k.cu", include_dirs=[tmp_path / "inc"]).header_digest()
        != digest
    )
    assert kernel.compiled_source() == code  # one kernel object keeps its compile inputs ...
    kernel.recompile()
    assert kernel.compiled_source() != code  # ... until recompile()


def test_no_headers_no_digest():
    kernel = CudaKernel(SAXPY, "saxpy")
    assert kernel.header_digest() == "" and kernel.compiled_source() == SAXPY


# -- the CuPy engine without CuPy ---------------------------------------------------------------
def test_cupy_engine_unavailable_message():
    from cunumpy._backend import cupy_status

    if cupy_status()[0]:
        pytest.skip("CuPy works here; this checks the message when it does not")
    kernel = CudaKernel('extern "C" __global__ void k(int n) {}', "k", engine="cupy")
    with pytest.raises(
        RuntimeError, match="\\[cupy kernel 'k'\\] cannot launch: .*CUNUMPY_CUDA_ENGINE=emulator"
    ):
        kernel(1, n_threads=1)


# ============================================================================================
# On an NVIDIA GPU (CuPy)
# ============================================================================================
@pytest.fixture
def cp():
    import cupy

    return cupy


@pytest.mark.requires_cuda
def test_gpu_saxpy_runs_without_transfers(cp):
    kernel = CudaKernel(SAXPY, "saxpy")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, dtype=cp.float32)
    with cunumpy.profiling.count_transfers() as counter:
        kernel(1000, 2.0, x, y)
    assert counter.to_device == 0 and counter.to_host == 0
    np.testing.assert_allclose(y.get(), 2 * np.arange(1000) + 1)


@pytest.mark.requires_cuda
def test_gpu_argument_checks(cp):
    kernel = CudaKernel(SAXPY, "saxpy", engine="cupy")
    x = cp.zeros(8, cp.float32)
    with pytest.raises(
        TypeError, match="argument 'y' \\(float32\\[8\\]\\) is a NumPy \\(host\\) array"
    ):
        kernel(8, 1.0, x, np.zeros(8, np.float32))
    with pytest.raises(TypeError, match="argument 'x' \\(float64\\[8\\]\\) has dtype float64"):
        kernel(8, 1.0, cp.zeros(8), x)
    with pytest.raises(ValueError, match="argument 'x' \\(float32\\[4\\]\\) is not C-contiguous"):
        kernel(4, 1.0, x[::2], x[:4])
    kernel(4, 1.0, x[4:], x[:4])  # contiguous views are fine


@pytest.mark.requires_cuda
def test_gpu_foreign_device_array_is_viewed_not_copied(cp):
    class Foreign:
        def __init__(self, a):
            self._a = a
            self.dtype = a.dtype
            self.shape = a.shape

        @property
        def __cuda_array_interface__(self):
            return self._a.__cuda_array_interface__

    kernel = CudaKernel(SAXPY, "saxpy")
    y = cp.zeros(64, cp.float32)
    kernel(64, 1.0, Foreign(cp.ones(64, cp.float32)), Foreign(y))
    assert float(y.sum()) == 64.0


@pytest.mark.requires_cuda
def test_gpu_stream(cp):
    kernel = CudaKernel(SAXPY, "saxpy")
    x = cp.ones(1 << 16, cp.float32)
    y = cp.zeros_like(x)
    stream = cp.cuda.Stream(non_blocking=True)
    kernel(x.size, 3.0, x, y, stream=stream)
    stream.synchronize()
    assert float(y.sum()) == 3.0 * x.size


@pytest.mark.requires_cuda
def test_gpu_limits_and_zero_size(cp):
    kernel = CudaKernel(SAXPY, "saxpy")
    x = cp.zeros(8, cp.float32)
    with pytest.raises(
        ValueError, match="\\[cupy kernel 'saxpy'\\] block \\(2048, 1, 1\\) has 2048 threads"
    ):
        kernel(8, 1.0, x, x, block=2048)
    with pytest.raises(ValueError, match="exceeds the device limit 65535"):
        kernel(8, 1.0, x, x, grid=(1, 1, 70000))
    empty = cp.zeros(0, cp.float32)
    kernel(0, 1.0, empty, empty)
    kernel(8, 1.0, x, x, grid=0)
    limits = get_cuda_engine("cupy").limits()
    assert limits.max_threads_per_block == 1024 and limits.max_shared_mem_optin >= 48 * 1024


@pytest.mark.requires_cuda
def test_gpu_large_dynamic_shared_memory_opt_in(cp):
    src = r"""
    extern "C" __global__ void big_shared(int n, float* out) {
        extern __shared__ float s[];
        for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = (float)i;
        __syncthreads();
        if (threadIdx.x == 0) { double acc = 0; for (int i = 0; i < n; ++i) acc += s[i]; out[0] = acc; }
    }
    """
    kernel = CudaKernel(src, "big_shared")
    n = 24 * 1024  # 96 KiB of floats: over the 48 KiB default
    out = cp.zeros(1, cp.float32)
    kernel(n, out, grid=1, block=256, shared_mem=n * 4)
    assert float(out[0]) == pytest.approx(n * (n - 1) / 2, rel=1e-6)


@pytest.mark.requires_cuda
def test_gpu_check_finite(cp):
    src = r"""
    extern "C" __global__ void poison(int n, int where, const float* x, float* y) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = (i == where) ? x[i] / 0.0f : x[i];
    }
    """
    kernel = CudaKernel(src, "poison")
    x = cp.ones(1000, cp.float32)
    y = cp.zeros(1000, cp.float32)
    kernel(1000, -1, x, y, check_finite=True)
    with pytest.raises(
        FloatingPointError,
        match="argument 'y' \\(float32\\[1000\\]\\) holds 1 non-finite value\\(s\\).*first at flat index 7",
    ):
        kernel(1000, 7, x, y, check_finite=True)


@pytest.mark.requires_cuda
def test_gpu_launch_error_names_kernel_grid_block(cp):
    src = r"""
    extern "C" __global__ void __launch_bounds__(64) small(float* y) { y[threadIdx.x] = 1.0f; }
    """
    kernel = CudaKernel(src, "small")
    y = cp.zeros(1024, cp.float32)
    with pytest.raises(
        CudaLaunchError,
        match="\\[cupy kernel 'small'\\] launch failed with grid \\(1, 1, 1\\), block \\(512, 1, 1\\)",
    ):
        kernel(y, grid=1, block=512)
    kernel(y, grid=1, block=64)
    assert float(y.sum()) == 64.0


@pytest.mark.requires_cuda
def test_gpu_debug_mode_reports_a_fault_in_a_subprocess():
    code = textwrap.dedent(
        r"""
        import cupy, cunumpy
        from cunumpy.kernels import CudaKernel, CudaLaunchError
        k = CudaKernel('extern "C" __global__ void bad(int* p, long long off) '
                       '{ p[off + threadIdx.x] = 1; }', "bad", debug=True)
        p = cupy.zeros(4, cupy.int32)
        try:
            k(p, 1 << 40, grid=3, block=32)
        except CudaLaunchError as e:
            print("CAUGHT", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (
        "CAUGHT [cupy kernel 'bad'] failed while running with grid (3, 1, 1), block (32, 1, 1)"
        in out.stdout
    ), out.stderr


@pytest.mark.requires_cuda
def test_gpu_compile_error():
    import cupy as cp

    from cunumpy.kernels import CudaCompileError

    kernel = CudaKernel(
        'extern "C" __global__ void broken(float* y) { y[0] = undefined_name; }', "broken"
    )
    with pytest.raises(
        CudaCompileError, match="\\[cupy kernel 'broken'\\] NVRTC could not compile"
    ) as info:
        kernel(cp.zeros(1, cp.float32))
    assert "undefined_name" in info.value.log


@pytest.mark.requires_cuda
def test_gpu_header_change_invalidates_the_cache(tmp_path, cp):
    (tmp_path / "value.cuh").write_text("#define VALUE 1.0f\n")
    (tmp_path / "k.cu").write_text(
        '#include "value.cuh"\nextern "C" __global__ void setv(float* y) { y[threadIdx.x] = VALUE; }\n'
    )
    y = cp.zeros(32, cp.float32)
    CudaKernel.from_file(tmp_path / "k.cu")(y, grid=1, block=32)
    assert float(y[0]) == 1.0
    (tmp_path / "value.cuh").write_text("#define VALUE 2.0f\n")
    CudaKernel.from_file(tmp_path / "k.cu")(y, grid=1, block=32)
    assert float(y[0]) == 2.0


@pytest.mark.requires_cuda
def test_gpu_compiled_once_per_device_and_variant(cp):
    engine = get_cuda_engine("cupy")
    src = SAXPY.replace("saxpy", "saxpy_once")
    x = cp.ones(10, cp.float32)
    before = len(engine._compiled)
    CudaKernel(src, "saxpy_once")(10, 1.0, x, x)
    CudaKernel(src, "saxpy_once")(10, 1.0, x, x)
    assert len(engine._compiled) == before + 1
    CudaKernel(src, "saxpy_once", options=("-DUNUSED=1",))(10, 1.0, x, x)
    assert len(engine._compiled) == before + 2


def test_explicit_grid_and_block_launch_as_given_and_bad_ones_get_the_checks(saxpy, rec):
    x = f32(300)
    for grid, block in [((3,), (128,)), (3, 128), ((3, 1, 1), (64, 2, 1)), ((3, 2), (32, 4))]:
        saxpy(300, 1.0, x, x, grid=grid, block=block)
    expected = [((3, 1, 1), (128, 1, 1)), ((3, 1, 1), (128, 1, 1)), ((3, 1, 1), (64, 2, 1)),
                ((3, 2, 1), (32, 4, 1))]
    assert [(c[2], c[3]) for c in rec.calls] == expected
    with pytest.raises(ValueError):
        saxpy(300, 1.0, x, x, grid=(3,), block=(2048,))
    with pytest.raises((ValueError, TypeError)):
        saxpy(300, 1.0, x, x, grid=(3.0,), block=(128,))
    assert len(rec.calls) == 4


def test_explicit_geometry_respects_the_engine_limits():
    small = RecordingEngine(
        CudaLimits(max_threads_per_block=256, max_block=(256, 256, 4), max_grid=(1000, 10, 10),
                   max_shared_mem=1024, max_shared_mem_optin=2048)
    )
    kernel = CudaKernel(SAXPY, "saxpy", engine=small)
    x = f32(10)
    kernel(10, 1.0, x, x, grid=(2,), block=(64,))
    with pytest.raises(ValueError, match="exceeds the device limit 1000"):
        kernel(10, 1.0, x, x, grid=(1001,), block=(64,))
    with pytest.raises(ValueError, match="at most 256 threads per block"):
        kernel(10, 1.0, x, x, grid=(2,), block=(512,))
    assert len(small.calls) == 1
