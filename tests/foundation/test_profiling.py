"""Transfer accounting: counters, nesting, reports, assert_no_transfers, conversions."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import profiling


def test_no_counter_means_recording_is_off():
    assert profiling._active == []


def test_record_counts_kinds_and_bytes():
    with profiling.count_transfers() as c:
        profiling._record("to_device", 100, "x")
        profiling._record("to_host", 40, "y")
        profiling._record("to_device", 8, "z")
    assert (c.to_device, c.to_host, c.bytes_to_device, c.bytes_to_host) == (2, 1, 108, 40)
    assert c.transfers == 3
    assert [e.kind for e in c.events] == ["to_device", "to_host", "to_device"]
    assert c.events[0].site.startswith(__file__)
    assert "test_record_counts_kinds_and_bytes" in c.events[0].site


def test_unknown_kind_is_refused():
    with profiling.count_transfers(), pytest.raises(ValueError, match="to_device"):
        profiling._record("sideways", 1, "x")


def test_counters_nest():
    with profiling.count_transfers() as outer:
        profiling._record("to_device", 1, "a")
        with profiling.count_transfers() as inner:
            profiling._record("to_host", 2, "b")
        profiling._record("to_device", 4, "c")
    assert outer.transfers == 3 and inner.transfers == 1
    assert inner.events[0].description == "b"


def test_counter_removed_when_block_raises():
    with pytest.raises(ZeroDivisionError), profiling.count_transfers():
        1 / 0  # noqa: B018
    assert profiling._active == []


def test_decorator_accumulates_over_calls():
    counter = profiling.count_transfers()

    @counter
    def step():
        profiling._record("to_device", 10, "step")

    step()
    step()
    assert counter.to_device == 2 and counter.bytes_to_device == 20
    assert profiling._active == []


def test_report_groups_by_call_site():
    with profiling.count_transfers() as c:
        for _ in range(2):
            profiling._record("to_device", 2048, "input 'x'")
        profiling._record("to_host", 10, "output 'y'")
        profiling._record("fallback", 0, "kernel 'push' ran on the host")
    text = c.report()
    first, *rest = text.splitlines()
    assert first == "2 to_device (4.0 KiB), 1 to_host (10 B), 1 fallback"
    sites = [line for line in rest if line.startswith("  ") and not line.startswith("    ")]
    assert len(sites) == 3  # one per recording line; the loop's two events share one site
    assert rest[1:3] == ["    to_device 2.0 KiB  input 'x'"] * 2
    assert "    to_device 2.0 KiB  input 'x'" in text
    assert "    fallback   kernel 'push' ran on the host" in text


def test_assert_no_transfers_passes_and_fails():
    with profiling.assert_no_transfers():
        profiling._record("fallback", 0, "not a copy")
    with pytest.raises(AssertionError, match="1 to_device") as info:
        with profiling.assert_no_transfers():
            profiling._record("to_device", 4, "oops")
    assert "oops" in str(info.value)


def test_assert_no_transfers_lets_block_errors_through():
    with pytest.raises(KeyError), profiling.assert_no_transfers():
        profiling._record("to_device", 4, "x")
        raise KeyError("own error")


def test_assert_no_transfers_as_decorator():
    @profiling.assert_no_transfers()
    def clean():
        return xp.to_numpy(np.ones(3)).sum()

    assert clean() == 3.0


def test_numpy_conversions_copy_nothing():
    a = np.arange(5.0)
    with xp.use_backend("numpy"), profiling.assert_no_transfers():
        assert xp.to_numpy(a) is a
        assert xp.to_cunumpy(a) is a
        assert isinstance(xp.to_numpy([1, 2]), np.ndarray)


def test_to_cupy_without_gpu_says_why(monkeypatch):
    from cunumpy import _backend

    monkeypatch.setattr(_backend, "_cupy_status", (False, "no CUDA device (test)"))
    with pytest.raises(RuntimeError, match="to_cupy needs a working CuPy: no CUDA device"):
        xp.to_cupy(np.ones(2))


@pytest.mark.requires_cuda
def test_cupy_conversions_are_counted_once():
    import cupy

    a = np.arange(1000, dtype=np.float32)
    with profiling.count_transfers() as c:
        d = xp.to_cupy(a)
        assert xp.to_cupy(d) is d
        back = xp.to_numpy(d)
    assert isinstance(d, cupy.ndarray)
    np.testing.assert_array_equal(back, a)
    assert (c.to_device, c.to_host) == (1, 1)
    assert c.bytes_to_device == c.bytes_to_host == 4000
    with xp.use_backend("cupy", strict=True), profiling.count_transfers() as c2:
        assert xp.to_cunumpy(d) is d
        xp.to_cunumpy(a)
    assert c2.to_device == 1


def test_mlx_conversion_is_counted():
    mx = pytest.importorskip("mlx.core", reason="MLX not installed")
    m = mx.array(np.arange(4, dtype=np.float32))
    with profiling.count_transfers() as c:
        host = xp.to_numpy(m)
    assert xp.get_array_backend(m) == "mlx"
    np.testing.assert_array_equal(host, np.arange(4, dtype=np.float32))
    assert (c.to_host, c.bytes_to_host) == (1, 16)


# ----------------------------------------------------------- call sites through generated code
def _line_of(text: str) -> int:
    """The line number in this file of the one line holding ``text``."""
    with open(__file__, encoding="utf-8") as f:
        lines = [i for i, line in enumerate(f, start=1) if text in line]
    assert len(lines) == 1, lines  # callers split ``text`` so that only the marked line holds it
    return lines[0]


def test_call_site_through_kernel_dispatch_is_the_users_line():
    from cunumpy.kernels import Kernel, PortFallbackWarning, use_port

    def copy(x, y):
        y[:] = x

    kernel = Kernel(copy, missing="fallback")  # the event is recorded under Kernel's __call__
    x = np.ones(2)
    with use_port("cuda"), profiling.count_transfers() as c, pytest.warns(PortFallbackWarning):
        kernel(x, np.empty_like(x))  # site: dispatched call
    assert [e.kind for e in c.events] == ["fallback"]
    expected = f"{__file__}:{_line_of('# site: ' + 'dispatched call')} in "
    assert c.events[0].site.startswith(expected), c.events[0].site
    assert "<" not in c.report().splitlines()[1]  # no generated-code pseudo file name


def test_generated_code_counts_as_inside_the_package():
    text = "def f():\n    return _record('to_host', 1, 'generated')\n"
    ns = {"_record": profiling._record}
    exec(compile(text, profiling._generated_filename("test helper"), "exec"), ns)
    with profiling.count_transfers() as c:
        ns["f"]()  # site: generated helper
    assert c.events[0].site.startswith(f"{__file__}:{_line_of('# site: ' + 'generated helper')}")


@pytest.fixture
def scale_kernel(monkeypatch):
    """A Kernel with a Metal port that runs on the CPU emulator (skips without a compiler)."""
    from cunumpy.emulation import CompilerNotFoundError, find_compiler
    from cunumpy.kernels import Kernel, MetalKernel

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", "emulator")
    monkeypatch.delenv("CUNUMPY_USE_METAL", raising=False)
    monkeypatch.delenv("CUNUMPY_KERNEL_PORT", raising=False)
    import cunumpy

    cunumpy.set_backend("numpy")  # NumPy arrays go to the Metal port (the suite restores it)

    def scale(x, a, y):
        y[:] = a * x

    port = MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
                       inputs=["x", "a"], outputs=["y"], name="scale")
    return Kernel(scale, metal=port)


def test_metal_port_through_kernel_reports_the_users_line(scale_kernel):
    x = np.ones(8, dtype=np.float32)
    with profiling.count_transfers() as c:
        scale_kernel(x, np.float32([2]), np.empty_like(x))  # site: emulated call
    site = f"{__file__}:{_line_of('# site: ' + 'emulated call')} in "
    assert len(c.events) == 3 and all(e.site.startswith(site) for e in c.events), c.report()


def test_assert_no_transfers_through_kernel_names_the_users_line(scale_kernel):
    x = np.ones(8, dtype=np.float32)
    with pytest.raises(AssertionError) as info:
        with profiling.assert_no_transfers():
            scale_kernel(x, np.float32([2]), np.empty_like(x))  # site: asserted call
    assert f"{__file__}:{_line_of('# site: ' + 'asserted call')} in " in str(info.value)
    assert "<Kernel" not in str(info.value)


def test_every_generated_function_carries_the_generated_file_name(scale_kernel):
    """Kernel's dispatcher and CudaKernel's launchers are named so that call sites skip them."""
    from cunumpy.kernels import CudaKernel, get_cuda_engine

    assert type(scale_kernel).__call__.__code__.co_filename.startswith(profiling._GENERATED_PREFIX)
    try:
        engine = get_cuda_engine("emulator")
    except RuntimeError as exc:
        pytest.skip(f"the CUDA emulator cannot run here: {exc}")
    k = CudaKernel('extern "C" __global__ void inc(int n, float* y) '
                   "{ int i = threadIdx.x; if (i < n) y[i] += 1.0f; }", engine=engine)
    y = np.zeros(4, dtype=np.float32)
    k(4, y)
    assert y.tolist() == [1.0] * 4
    launchers = list(k._launchers.values())
    assert launchers and all(
        f.__code__.co_filename.startswith(profiling._GENERATED_PREFIX) for f in launchers
    )


def test_tracebacks_through_generated_code_show_its_lines():
    import traceback

    from cunumpy.kernels import Kernel

    def broken(x):
        raise ZeroDivisionError("inside the host kernel")

    def other(x, y):
        pass

    import cunumpy

    kernel = Kernel(broken, name="same")
    Kernel(other, name="same")  # another generated text under the same name
    try:
        with cunumpy.use_backend("numpy"):  # host arrays run the host kernel on any backend
            kernel(np.ones(2))
    except ZeroDivisionError:
        text = traceback.format_exc()
    else:
        raise AssertionError("the host kernel should have raised")
    assert "<cunumpy Kernel same call" in text
    assert "    _host(a0)" in text  # the generated line itself, not a blank
