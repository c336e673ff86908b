"""CudaKernel: launch geometry, debug aids, construction, headers and the compile key.

Run on the recording host engine of ``_cuda_recording.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _cuda_recording import SAXPY, RecordingEngine, SyncFailure, f32

from cunumpy._engines import _cuda_registry as _cuda_engines
from cunumpy._engines._cuda import CudaLimits
from cunumpy.kernels import (
    CudaKernel,
    CudaLaunchError,
)
from cunumpy.kernels.cuda import default_block


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
    from cunumpy._backend import cupy_stand_in

    if cupy_stand_in():
        pytest.skip("with the CuPy stand-in an unset CUNUMPY_CUDA_ENGINE means the emulator")
    other = RecordingEngine()
    monkeypatch.setitem(_cuda_engines._factories, "emulator", lambda: other)
    monkeypatch.setitem(_cuda_engines._factories, "cupy", lambda: rec)
    monkeypatch.setattr(_cuda_engines, "_engines", {})
    _cuda_engines._default_cache[0] = _cuda_engines._UNSET
    import cunumpy._backend

    # unset is auto: cupy where a CUDA device computes (as here), else the emulator
    monkeypatch.setattr(cunumpy._backend, "cupy_status", lambda: (True, "a GPU (test)"))
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


def test_check_signature_false_on_a_host_engine_checks_layout_not_dtype(rec):
    """Unchecked arguments still reach a host engine as the flat buffers it relies on: the front
    end checks the layout (once, with the checked path's messages), never the dtype."""
    src = 'extern "C" __global__ void k(float* y, const int* x, int n) {}'
    kernel = CudaKernel(src, "k", check_signature=False, engine="host-record")
    y, x = np.zeros(8, np.float64), np.zeros(8, np.int8)  # wrong dtypes pass unchecked
    kernel(y, x, np.int32(8))
    assert rec.calls[-1][1][0] is y
    tag = r"\[host-record kernel 'k'\]"
    with pytest.raises(ValueError, match=tag + r" argument 'y' .* is not C-contiguous"):
        kernel(np.zeros(16)[::2], x, np.int32(8))
    with pytest.raises(ValueError, match=tag + r" argument 'y' .* is read-only"):
        ro = np.zeros(8)
        ro.flags.writeable = False
        kernel(ro, x, np.int32(8))
    kernel(y, np.zeros(8, np.int8), np.int32(8))  # a read-only const pointee is fine
    with pytest.raises(TypeError, match=tag + r" argument 'x' \(list .*needs a NumPy array"):
        kernel(y, [1, 2], np.int32(8))
    with pytest.raises(TypeError, match=tag + r" argument 'n' .* is an array, but parameter "
                                              r"'int n' is a scalar"):
        kernel(y, x, np.zeros(2, np.int32))
    assert len(rec.calls) == 2


def test_unparsable_signature_needs_check_signature_false():
    src = '#define SIG (float* x)\nextern "C" __global__ void k SIG {}'
    with pytest.raises(ValueError, match="\\[cuda kernel 'k'\\]"):
        CudaKernel(src, "k")
    kernel = CudaKernel(src, "k", check_signature=False)
    assert kernel.signature is None and kernel.name == "k"


def test_the_launch_runs_the_text_launcher_source_shows(saxpy, rec):
    """A call goes through the generated launcher; its text (launcher_source) is what runs, names
    its generator, and shows in a traceback."""
    import inspect
    import traceback

    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    saxpy(4, 2.0, x, y)
    text = saxpy.launcher_source()
    assert inspect.getsource(saxpy._call) == text
    assert "generated by build_launcher (cunumpy/kernels/_cuda_launcher.py)" in text.splitlines()[1]
    with pytest.raises(TypeError) as info:
        saxpy(4, 2.0, x)
    assert "_k._wrong_arity(_eng, (v0, v1, v2, v3) + extra)" in "".join(
        traceback.format_tb(info.tb))


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
