"""Installing the CuPy stand-in as ``cupy`` (each case in a child process: it edits sys.modules)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _run(code: str, env: dict[str, str] | None = None, path: list[str] | None = None,
         args: list[str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "CUNUMPY_CUPY_ON_CPU"}
    environment["PYTHONPATH"] = os.pathsep.join([*(path or []), SRC])
    environment.update(env or {})
    return subprocess.run([sys.executable, *(args or ["-c", textwrap.dedent(code)])],
                          capture_output=True, text=True, env=environment, timeout=300)


@pytest.fixture(scope="module")
def no_working_cupy():
    """Installing must work here: skip where a real CuPy computes (the stand-in refuses)."""
    from cunumpy.testing.cupy_on_cpu._activate import _real_cupy_works

    works, what = _real_cupy_works()
    if works:
        pytest.skip(f"a real CuPy works here ({what}): the stand-in refuses to install")


def test_install_gives_cupy_cupyx_and_the_cupy_backend(no_working_cupy):
    done = _run("""
        import cunumpy, cunumpy.testing
        cunumpy.testing.install_cupy_on_cpu()
        import cupy, cupyx, cupyx.scipy.special, cupy.cuda.runtime
        from cupy.cuda import Device
        assert cupy.__name__ == "cunumpy.testing.cupy_on_cpu"
        assert cunumpy.set_backend("cupy", strict=True) == "cupy"
        a = cunumpy.arange(4.0)
        assert type(a) is cupy.ndarray
        assert float(cupyx.scipy.special.erf(a)[0]) == 0.0
        assert cunumpy.get_array_module(a) is cupy
        from cupy.lib.stride_tricks import as_strided
        w = as_strided(a, shape=(3, 2), strides=(8, 8))
        assert type(w) is cupy.ndarray and float(w[2, 1]) == 3.0
        print(cunumpy.backend_info()["cupy"]["stand_in"])
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_cupy_util_imports_as_cupy_does(no_working_cupy):
    """cuCIM's spellings: `import cupy._util`, `from cupy._util import ...`, `cupy._util.x`."""
    done = _run("""
        import warnings
        import cunumpy.testing
        cunumpy.testing.install_cupy_on_cpu()
        import cupy
        assert cupy._util.memoize is cupy.memoize  # an attribute before any import of it
        import cupy._util
        from cupy import _util
        from cupy._util import PerformanceWarning, clear_memo, memoize
        import cunumpy.testing.cupy_on_cpu._util as own
        assert cupy._util is _util is own and memoize is cupy.memoize
        assert clear_memo is cupy.clear_memo and issubclass(PerformanceWarning, RuntimeWarning)

        @cupy._util.memoize(for_each_device=True)
        def kernel(n):
            return cupy.ElementwiseKernel("T x", "T y", f"y = x * {n}", "times")

        assert kernel(3) is kernel(3)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            cupy._util.experimental("cupyx.jit.rawkernel")
            cupy.disable_experimental_feature_warning = True
            cupy._util.experimental("cupyx.jit.rawkernel")
        assert [w.category for w in got] == [FutureWarning]
        a = cupy.zeros(3)
        a[:] = __import__("numpy").ones(3)  # CUPY_EXPERIMENTAL_SLICE_COPY=1, read at install
        print(cupy._util.ENABLE_SLICE_COPY, a.sum())
    """, env={"CUPY_EXPERIMENTAL_SLICE_COPY": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "3.0"]


def test_a_bad_cupy_environment_value_is_named(no_working_cupy):
    """CuPy's own variables fail the install (CuPy's `import cupy`), not `import cunumpy.testing`."""
    done = _run("""
        import cunumpy.testing
        print("imported", flush=True)
        cunumpy.testing.install_cupy_on_cpu()
    """, env={"CUPY_DLPACK_EXPORT_VERSION": "one"})
    assert done.stdout.strip() == "imported" and done.returncode != 0
    assert "CUPY_DLPACK_EXPORT_VERSION='one' is not valid" in done.stderr


def test_cunumpy_info_says_the_stand_in_is_active(no_working_cupy):
    done = _run("""
        import cunumpy.testing, sys
        cunumpy.testing.install_cupy_on_cpu()
        from cunumpy.cli import main
        sys.argv = ["cunumpy", "info"]
        main()
    """, env={"COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    assert "stand-in" in done.stdout


def test_refuses_when_cupy_is_imported_already(tmp_path):
    (tmp_path / "cupy").mkdir()
    (tmp_path / "cupy" / "__init__.py").write_text("")
    done = _run("""
        import cupy, cunumpy.testing
        try:
            cunumpy.testing.install_cupy_on_cpu()
        except cunumpy.testing.CupyOnCpuRefused as exc:
            print(exc)
    """, path=[str(tmp_path)])
    assert "cupy is already imported" in done.stdout, done.stderr


def test_refuses_when_a_real_cupy_computes(tmp_path):
    fake = tmp_path / "cupy"
    fake.mkdir()
    (fake / "__init__.py").write_text(textwrap.dedent("""
        import numpy
        __version__ = "99.0"
        float32 = numpy.float32
        class cuda:
            class runtime:
                getDeviceCount = staticmethod(lambda: 2)
        arange = numpy.arange
    """))
    done = _run("""
        import cunumpy.testing
        try:
            cunumpy.testing.install_cupy_on_cpu()
        except cunumpy.testing.CupyOnCpuRefused as exc:
            print(exc)
    """, path=[str(tmp_path)])
    assert "a real CuPy works here (CuPy 99.0" in done.stdout, done.stderr
    assert "2 CUDA device(s)" in done.stdout


def test_installs_over_a_cupy_that_does_not_compute(tmp_path):
    (tmp_path / "cupy").mkdir()
    (tmp_path / "cupy" / "__init__.py").write_text("raise ImportError('libcudart.so missing')")
    done = _run("""
        import cunumpy.testing
        cp = cunumpy.testing.install_cupy_on_cpu()
        import cupy
        assert cupy is cp
        print("ok")
    """, path=[str(tmp_path)])
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("value, ok", [("1", True), ("yes", False)])
def test_the_pytest_plugin_reads_the_variable(tmp_path, value, ok, no_working_cupy):
    test = tmp_path / "test_uses_cupy.py"
    test.write_text(textwrap.dedent("""
        import cupy
        import numpy
        import pytest

        def test_strict():
            a = cupy.arange(3)
            with pytest.raises(TypeError):
                numpy.asarray(a)
            assert int(a.sum()) == 3

        @pytest.mark.requires_cuda
        def test_runs_on_the_stand_in():
            assert cupy.cuda.runtime.getDeviceCount() == 1

        @pytest.mark.requires_gpu
        def test_keeps_skipping():
            raise AssertionError("a requires_gpu test ran on the stand-in")
    """))
    done = _run("", env={"CUNUMPY_CUPY_ON_CPU": value},
                args=["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)])
    if ok:
        assert "2 passed, 1 skipped" in done.stdout, done.stdout + done.stderr
        assert "cannot answer it" in done.stdout
    else:
        assert done.returncode != 0
        assert "CUNUMPY_CUPY_ON_CPU='yes'" in done.stdout + done.stderr


def test_cuda_kernel_runs_stand_in_arrays_on_the_emulator_in_place(no_working_cupy):
    pytest.importorskip("cunumpy.emulation")
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))
    done = _run("""
        import numpy as np, cunumpy.testing
        cunumpy.testing.install_cupy_on_cpu()
        import cupy
        from cunumpy.kernels import CudaKernel
        from cunumpy.profiling import count_transfers
        k = CudaKernel('''extern "C" __global__ void scale(const float* x, float* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = 2.0f * x[i];
        }''', "scale")
        x = cupy.arange(5, dtype=cupy.float32)
        y = cupy.zeros_like(x)
        with count_transfers() as c:
            k(x, y, np.int32(5), grid=(1,), block=(32,))
        print(c.transfers, y.get().tolist())
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("0 [0.0, 2.0, 4.0, 6.0, 8.0]"), done.stdout
