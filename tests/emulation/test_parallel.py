"""Parallel groups on the CPU emulators: the same results and reports as a serial run, atomics
across workers, the worker-count setting, Ctrl-C, and no copies of host-resident arrays."""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import numpy as np
import pytest

from cunumpy import config
from cunumpy.emulation import EmulatorOptions, _launch, _workers
from cunumpy.emulation.errors import BarrierDivergenceError, OutOfBoundsError
from cunumpy.kernels import CudaKernel, MetalKernel
from cunumpy.profiling import count_transfers

pytestmark = pytest.mark.usefixtures("emulator_available")


@pytest.fixture
def emulator_available():
    from cunumpy.emulation import find_compiler

    try:
        find_compiler()
    except Exception as exc:  # pragma: no cover - no compiler
        pytest.skip(str(exc))


@pytest.fixture
def parallel_runs(monkeypatch):
    """Every launch with two or more groups goes to 3 workers; counts the parallel launches."""
    monkeypatch.setattr(_workers, "MIN_THREADS", 1)
    monkeypatch.setattr(_workers, "MIN_THREADS_SYNC", 1)
    monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", "3")
    calls = []
    real = _launch._parallel

    def spy(*args, **kwargs):
        calls.append(args[4])
        return real(*args, **kwargs)

    monkeypatch.setattr(_launch, "_parallel", spy)
    return calls


def _serial(monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", "1")


ELEMENTWISE = r"""
extern "C" __global__ void axpy(const float* x, float a, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = a * x[i] + y[i] * 0.5f;
}
"""

REDUCE = r"""
extern "C" __global__ void reduce(const float* x, float* out) {
    __shared__ float buf[128];
    unsigned t = threadIdx.x;
    buf[t] = x[blockIdx.x * 128 + t];
    __syncthreads();
    for (unsigned s = 64; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0];
}
"""

HISTOGRAM = r"""
extern "C" __global__ void hist(const int* x, int n, int* bins, float* total,
                                unsigned long long* big, int* top) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&bins[x[i] & 15], 1);
    atomicAdd(total, 0.5f);
    atomicAdd(big, 3ull);
    atomicMax(top, x[i]);
}
"""


@pytest.mark.parametrize("order", ["sequential", "random"])
def test_cuda_elementwise_parallel_equals_serial(monkeypatch, parallel_runs, order):
    k = CudaKernel(ELEMENTWISE, "axpy", engine="emulator")
    rng = np.random.default_rng(1)
    x = rng.random(5000, dtype=np.float32)
    y0 = rng.random(5000, dtype=np.float32)
    opts = EmulatorOptions(random_order=order == "random", seed=7)
    results = []
    for threads in ("1", "3"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
        y = y0.copy()
        from cunumpy.emulation import emulate_cuda_kernel

        emulate_cuda_kernel(k, x, np.float32(2), y, np.int32(5000), n_threads=5000,
                            block=64, options=opts)
        results.append(y)
    assert parallel_runs == [3]
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[1], np.float32(2) * x + y0 * np.float32(0.5))


def test_cuda_barrier_reduction_parallel_equals_serial(monkeypatch, parallel_runs):
    k = CudaKernel(REDUCE, "reduce", engine="emulator")
    x = np.arange(128 * 40, dtype=np.float32) % 17
    outs = []
    for threads in ("1", "3"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
        out = np.zeros(40, np.float32)
        k(x, out, grid=40, block=128)
        outs.append(out)
    assert parallel_runs == [3]
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[1], x.reshape(40, 128).sum(axis=1))


def test_cuda_atomics_are_atomic_across_workers(monkeypatch, parallel_runs):
    k = CudaKernel(HISTOGRAM, "hist", engine="emulator")
    n = 200_000
    x = (np.arange(n, dtype=np.int32) * 7919) % 1000
    results = []
    for threads in ("1", "3"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
        bins = np.zeros(16, np.int32)
        total = np.zeros(1, np.float32)
        big = np.zeros(1, np.uint64)
        top = np.zeros(1, np.int32)
        k(x, np.int32(n), bins, total, big, top, n_threads=n, block=32)
        results.append((bins, total, big, top))
    assert parallel_runs == [3]
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    bins, total, big, top = results[1]
    np.testing.assert_array_equal(bins, np.bincount(x & 15, minlength=16))
    assert total[0] == n * 0.5 and big[0] == 3 * n and top[0] == x.max()


METAL_HIST = """
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&bins[int(x[i]) & 15], 1, memory_order_relaxed);
atomic_fetch_add_explicit(&total[0], 0.25f, memory_order_relaxed);
"""

METAL_REDUCE = """
threadgroup float buf[64];
uint t = thread_position_in_threadgroup.x;
buf[t] = x[thread_position_in_grid.x];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 32; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (t == 0) out[threadgroup_position_in_grid.x] = buf[0];
"""


def test_metal_atomics_and_barriers_parallel_equal_serial(monkeypatch, parallel_runs):
    hist = MetalKernel(METAL_HIST, ["x"], ["bins", "total"], atomic_outputs=True,
                       init_value=0, threadgroup=64)
    red = MetalKernel(METAL_REDUCE, ["x"], ["out"], threadgroup=64)
    n = 64 * 300
    x = ((np.arange(n) * 31) % 97).astype(np.float32)
    runs = []
    for threads in ("1", "3"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
        bins, total = hist(x, output_shapes=[(16,), (1,)],
                           output_dtypes=[np.int32, np.float32], n_threads=n,
                           engine="emulator")
        out = red(x, out=np.zeros(300, np.float32), n_threads=n, engine="emulator")
        runs.append((np.asarray(bins._data), np.asarray(total._data), out.copy()))
    assert parallel_runs == [3, 3]
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    bins, total, out = runs[1]
    np.testing.assert_array_equal(bins, np.bincount(x.astype(int) & 15, minlength=16))
    assert total[0] == n * 0.25
    np.testing.assert_array_equal(out, x.reshape(300, 64).sum(axis=1))


OOB = r"""
extern "C" __global__ void oob(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x % 7 == 3) y[i + n] = 1.0f;  // out of bounds in every 7th block
    else y[i] = 2.0f;
}
"""


def test_first_failure_report_is_the_serial_one(monkeypatch, parallel_runs):
    k = CudaKernel(OOB, "oob", engine="emulator")
    messages = []
    for threads in ("1", "3", "3", "3", "3", "3"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
        y = np.zeros(64 * 200, np.float32)
        with pytest.raises(OutOfBoundsError) as info:
            k(y, np.int32(y.size), grid=200, block=64)
        messages.append(str(info.value))
    assert parallel_runs == [3] * 5
    assert len(set(messages)) == 1, messages
    assert "block (3,0,0)" in messages[0] and "thread (0,0,0)" in messages[0]
    # every 7th block from block 3 on fails for all its 64 threads
    assert f"; {64 * len(range(3, 200, 7)) - 1} further failures" in messages[0]


DIVERGE = r"""
extern "C" __global__ void diverge(float* y) {
    __shared__ float s[64];
    s[threadIdx.x] = 1.0f;
    if (blockIdx.x >= 5 && threadIdx.x == 0) y[blockIdx.x * 64 + 1000000] = 1.0f;
    if (blockIdx.x == 9 && threadIdx.x < 32) return;
    if (blockIdx.x == 9 || threadIdx.x < 64) __syncthreads();
    y[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x];
    if (blockIdx.x == 12) { if (threadIdx.x < 8) __syncthreads(); }
}
"""


def test_fatal_failure_stops_later_groups_deterministically(monkeypatch, parallel_runs):
    # Block 12 diverges (a fatal failure); blocks 5..12 also index out of bounds. A serial run
    # stops after block 12: the report names the first out-of-bounds access (block 5) and counts
    # the failures of blocks 5..12 only, however the groups were shared out.
    k = CudaKernel(DIVERGE, "diverge", engine="emulator")
    messages = []
    for threads in ("1", "3", "3", "3", "3"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
        y = np.zeros(64 * 100, np.float32)
        with pytest.raises(OutOfBoundsError) as info:
            k(y, grid=100, block=64)
        messages.append(str(info.value))
    assert len(set(messages)) == 1, messages
    assert "block (5,0,0)" in messages[0]
    # blocks 5..12: one out-of-bounds write each, and block 12's divergence
    assert "; 8 further failures" in messages[0]


def test_divergence_alone_is_reported_in_parallel(monkeypatch, parallel_runs):
    src = DIVERGE.replace("if (blockIdx.x >= 5 && threadIdx.x == 0)", "if (false)")
    k = CudaKernel(src, "diverge", engine="emulator")
    y = np.zeros(64 * 100, np.float32)
    with pytest.raises(BarrierDivergenceError, match=r"block \(12,0,0\)"):
        k(y, grid=100, block=64)


@pytest.mark.parametrize(("value", "expected"), [("1", 1), (" 4 ", 4), ("auto", None), ("", None)])
def test_thread_setting(monkeypatch, value, expected):
    monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", value)
    got = config.emulator_threads()
    assert got == (expected if expected is not None else len(os.sched_getaffinity(0)))


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_thread_setting_rejects_bad_values(monkeypatch, value):
    monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", value)
    with pytest.raises(ValueError, match="CUNUMPY_EMULATOR_THREADS"):
        config.emulator_threads()
    k = CudaKernel(ELEMENTWISE, "axpy", engine="emulator")
    y = np.zeros(1 << 17, np.float32)
    with pytest.raises(ValueError, match="CUNUMPY_EMULATOR_THREADS"):
        k(y, np.float32(1), y, np.int32(y.size), n_threads=y.size)


def test_small_launches_stay_serial(monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", "2")
    assert _workers.plan(1000, 10, sync=False, serial=False) == 1
    assert _workers.plan(1 << 16, 512, sync=False, serial=False) == 1
    assert _workers.plan(1 << 16, 512, sync=True, serial=False) == 2
    assert _workers.plan(1 << 20, 1, sync=False, serial=False) == 1
    assert _workers.plan(1 << 20, 4096, sync=False, serial=True) == 1
    assert _workers.plan(1 << 20, 4096, sync=False, serial=False) == 2


def test_race_checked_and_printing_launches_run_serially(monkeypatch, parallel_runs, capfd):
    k = CudaKernel(ELEMENTWISE, "axpy", engine="emulator")
    y = np.zeros(4096, np.float32)
    from cunumpy.emulation import emulate_cuda_kernel

    emulate_cuda_kernel(k, y.copy(), np.float32(1), y, np.int32(4096), n_threads=4096,
                        block=64, options=EmulatorOptions(races=True))
    printing = CudaKernel(r"""
    extern "C" __global__ void say(int* y) {
        y[blockIdx.x] = blockIdx.x;
        if (threadIdx.x == 0) printf("block %d\n", blockIdx.x);
    }""", "say", engine="emulator")
    out = np.zeros(16, np.int32)
    printing(out, grid=16, block=32)
    assert parallel_runs == []
    text = capfd.readouterr().out
    assert text.splitlines() == [f"block {b}" for b in range(16)]


SLOW = r"""
extern "C" __global__ void slow(const float* x, float* y, int reps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = x[i];
    for (int k = 0; k < reps; ++k) acc = acc * 0.999999f + 1.0f;
    y[i] = acc;
}
"""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_ctrl_c_stops_a_long_launch(monkeypatch, threads):
    monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
    monkeypatch.setattr(_workers, "MIN_THREADS", 1)
    k = CudaKernel(SLOW, "slow", engine="emulator")
    n = 32 * 20_000  # ~20 ms per block of 32 threads here (far less where the compiler
    # vectorises the thread loop): minutes in all unless interrupted
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    k(x[:32], y[:32], np.int32(10), grid=1, block=32)  # compiled before the clock starts
    before = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            k(x, y, np.int32(600_000), grid=n // 32, block=32)
    finally:
        timer.cancel()
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):  # Python's own handler is back at the C level
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):
            time.sleep(0.01)
    assert 0 < np.count_nonzero(y) < n  # stopped between blocks, part of the work done
    z = np.zeros(64, np.float32)
    k(x[:64], z, np.int32(3), grid=2, block=32)  # the library works after the interrupt
    np.testing.assert_allclose(z, ((1 * 0.999999 + 1) * 0.999999 + 1) * 0.999999 + 1, rtol=1e-6)


def test_spread_waits_for_started_calls_before_an_interrupt_goes_on():
    stop = threading.Event()
    ended = []

    def call() -> int:  # a worker that runs until cancelled
        stop.wait(10)
        ended.append(time.monotonic())
        return 1

    def here() -> int:
        time.sleep(0.1)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _workers.spread([call, call], here, stop.set)
    assert len(ended) == 2  # both had stopped before the interrupt reached us
    assert _workers.spread([lambda: 2, lambda: 3], lambda: 1, stop.set) == [1, 2, 3]


# A long launch on many workers in a process of its own, interrupted 0.5 s in: ``process`` sends
# SIGINT to the process (the kernel picks the thread; meanwhile the launch may still be handing
# groups to the workers: before the fix that unwound the launch and left the workers running in
# freed memory, a crash), ``worker`` sends it to one worker thread, as the kernel may (before the
# fix the main thread slept in Future.result() until every group had run: minutes).
_CTRL_C_CHILD = """
import json, os, signal, sys, threading, time
import numpy as np
from cunumpy.emulation import _workers
from cunumpy.kernels import CudaKernel
_workers.MIN_THREADS = 1
target = sys.argv[1]
k = CudaKernel(sys.argv[2], "slow", engine="emulator")
n = 32 * 200_000  # 20 ms a block of 32 threads here: minutes on any host unless interrupted
x = np.ones(n, np.float32)
y = np.zeros(n, np.float32)
k(x[:32], y[:32], np.int32(10), grid=1, block=32)
before = signal.getsignal(signal.SIGINT)
sent = []

def interrupt():
    if target == "worker":
        busy = [t for t in threading.enumerate() if t.name.startswith("cunumpy-emulator") and t.ident]
        signal.pthread_kill(busy[-1].ident, signal.SIGINT)
    else:
        os.kill(os.getpid(), signal.SIGINT)
    sent.append(time.monotonic())

threading.Timer(0.5, interrupt).start()
try:
    k(x, y, np.int32(600_000), grid=n // 32, block=32)
    outcome = "finished"
except KeyboardInterrupt:
    outcome = "interrupted"
stopped = time.monotonic()
z = np.zeros(64, np.float32)
k(x[:64], z, np.int32(3), grid=2, block=32)
print(json.dumps({"outcome": outcome, "after": stopped - sent[0] if sent else None,
                  "done": int(np.count_nonzero(y)), "n": n, "z": float(z[-1]),
                  "handler": signal.getsignal(signal.SIGINT) is before}))
"""


@pytest.mark.parametrize(("target", "threads"), [("process", "16"), ("process", "64"),
                                                 ("worker", "16")])
def test_ctrl_c_stops_a_launch_on_many_workers(target, threads):
    import json
    import subprocess
    import sys

    import cunumpy

    CudaKernel(SLOW, "slow", engine="emulator")(
        np.ones(32, np.float32), np.zeros(32, np.float32), np.int32(1), grid=1, block=32)
    src = os.path.dirname(os.path.dirname(cunumpy.__file__))
    env = dict(os.environ, CUNUMPY_EMULATOR_THREADS=threads,
               PYTHONPATH=os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])))
    try:
        out = subprocess.run([sys.executable, "-c", _CTRL_C_CHILD, target, SLOW], env=env,
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"Ctrl-C ({target}) did not stop a launch on {threads} workers in 120 s: "
                    f"{exc.stderr!r}")
    assert out.returncode == 0, f"child exited with {out.returncode}: {out.stderr[-3000:]}"
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["outcome"] == "interrupted", got
    assert got["after"] is not None and got["after"] < 30, got  # between groups, not at the end
    assert 0 < got["done"] < got["n"], got  # part of the work done
    assert got["handler"], got  # Python's SIGINT handler is back
    assert got["z"] == pytest.approx(((1 * 0.999999 + 1) * 0.999999 + 1) * 0.999999 + 1), got


PUSH = "uint i = thread_position_in_grid.x; out[i] = x[i] + v[i] * dt;"


def test_metal_emulator_uses_host_arrays_in_place(monkeypatch):
    from cunumpy._engines.emu_metal import EmuMetalEngine
    from cunumpy.emulation import metal as emu_metal

    copies = []
    real_to_device = EmuMetalEngine.to_device
    monkeypatch.setattr(EmuMetalEngine, "to_device",
                        lambda self, host, dtype, c: copies.append(host.dtype) or
                        real_to_device(self, host, dtype, c))
    seen = []
    real_run = emu_metal.launch_metal
    monkeypatch.setattr(emu_metal, "launch_metal",
                        lambda sig, inputs, outputs, *a, **kw: seen.append((inputs, outputs))
                        or real_run(sig, inputs, outputs, *a, **kw))
    k = MetalKernel(PUSH, ["x", "v", "dt"], ["out"])
    x = np.arange(1000, dtype=np.float32)
    v = np.ones(1000, np.float32)
    out = np.empty_like(x)
    with count_transfers() as c:
        k(x, v, 0.5, out=out, engine="emulator")
    np.testing.assert_array_equal(out, x + 0.5)
    inputs, outputs = seen[-1]
    assert inputs[0] is x and inputs[1] is v and outputs[0] is out  # no copy either way
    assert copies == []
    # the transfers the GPU engine makes are still counted
    assert (c.to_device, c.to_host) == (3, 1)
    assert (c.bytes_to_device, c.bytes_to_host) == (4000 + 4000 + 4, 4000)
    # a float64 input must be converted, a strided one packed, an aliased output kept apart
    cast = MetalKernel(PUSH, ["x", "v", "dt"], ["out"], float64="cast")
    cast(x.astype(np.float64), v, 0.5, out=out, engine="emulator")
    assert copies == [np.dtype(np.float64)]
    k(np.arange(2000, dtype=np.float32)[::2], v, 0.5, out=out, engine="emulator")
    assert len(copies) == 2
    xs = x.copy()
    k(xs, v, 0.5, out=xs, engine="emulator")  # the output aliases an input
    np.testing.assert_array_equal(xs, x + 0.5)
    assert seen[-1][1][0] is not xs



VEC4 = """
uint i = thread_position_in_grid.x;
float4 q = *(const device float4*)(x + 4 * i);
*(device float4*)(out + 4 * i) = q * 2.0f;
"""


def test_metal_emulator_copies_misaligned_host_arrays():
    # A view 4 bytes into a buffer (like NumPy views of MLX arrays on the CPU, 8-byte aligned)
    # must not be used in place: the kernel casts it to float4, which is 16-byte aligned.
    k = MetalKernel(VEC4, ["x"], ["out"])
    base = np.zeros(4 * 64 + 1, np.float32)
    x = base[1:]
    x[:] = np.arange(4 * 64, dtype=np.float32)
    obase = np.zeros(4 * 64 + 1, np.float32)
    out = obase[1:]
    assert x.ctypes.data % 16 and out.ctypes.data % 16
    k(x, out=out, n_threads=64, threadgroup=32, engine="emulator")
    np.testing.assert_array_equal(out, x * 2)
    np.testing.assert_array_equal(base[1:], np.arange(4 * 64, dtype=np.float32))  # unchanged


def test_progress_setting(monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATOR_PROGRESS", "on")
    assert config.emulator_progress() is True
    monkeypatch.setenv("CUNUMPY_EMULATOR_PROGRESS", "off")
    assert config.emulator_progress() is False
    monkeypatch.setenv("CUNUMPY_EMULATOR_PROGRESS", "auto")
    monkeypatch.setenv("CI", "true")
    assert config.emulator_progress() is False
    monkeypatch.setenv("CUNUMPY_EMULATOR_PROGRESS", "sometimes")
    with pytest.raises(ValueError, match="CUNUMPY_EMULATOR_PROGRESS"):
        config.emulator_progress()


def test_progress_bar_shows_for_a_long_launch(monkeypatch):
    pytest.importorskip("rich")
    from cunumpy.emulation import _progress

    monkeypatch.setenv("CUNUMPY_EMULATOR_PROGRESS", "on")
    monkeypatch.setattr(_progress, "GRACE", 0.05)
    monkeypatch.setattr(_progress, "LONG", 0.1)
    shown = []
    real_bar = _progress._bar
    monkeypatch.setattr(_progress, "_bar", lambda label, total: shown.append((label, total))
                        or real_bar(label, total))
    k = CudaKernel(SLOW, "slow", engine="emulator")
    n = 32 * 400
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    k(x, y, np.int32(20_000), grid=n // 32, block=32)
    assert shown and shown[0][1] == n // 32 and "slow" in shown[0][0]
    assert re.search(r"emu-cuda", shown[0][0])


UB = r"""
extern "C" __global__ void ub(float* y) {
    unsigned t = threadIdx.x;
    if (blockIdx.x >= 3 && t >= 16) return;
    float v = __shfl_down_sync(0xffffffffu, 1.0f, 16);
    y[blockIdx.x * 32 + t] = v;
}
"""


@pytest.mark.parametrize("mode", ["error", "warn"])
def test_undefined_behaviour_report_is_the_serial_one(monkeypatch, parallel_runs, mode):
    import warnings

    from cunumpy.emulation import emulate_cuda_kernel
    from cunumpy.emulation.errors import InactiveLaneError

    k = CudaKernel(UB, "ub", engine="emulator")
    texts = []
    for threads in ("1", "3", "3", "3"):
        monkeypatch.setenv("CUNUMPY_EMULATOR_THREADS", threads)
        y = np.zeros(32 * 60, np.float32)
        opts = EmulatorOptions(undefined=mode)
        if mode == "error":
            with pytest.raises(InactiveLaneError) as info:
                emulate_cuda_kernel(k, y, grid=60, block=32, options=opts)
            texts.append(str(info.value))
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                emulate_cuda_kernel(k, y, grid=60, block=32, options=opts)
            texts.append(" ".join(str(w.message) for w in caught))
    assert len(set(texts)) == 1, texts
    assert "block (3,0,0)" in texts[0]
    if mode == "warn":  # blocks 3..59, 16 reading lanes each
        assert f"; {57 * 16 - 1} further cases" in texts[0]
