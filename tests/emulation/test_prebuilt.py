"""The prebuilt runtime object: kernels link it once it is built, compile the runtime themselves
before, and behave the same either way (results, failure reports, race reports)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from cunumpy.emulation import (
    BarrierDivergenceError,
    DataRaceError,
    EmulatorOptions,
    OutOfBoundsError,
    _build,
    emulate_cuda_kernel,
    metal,
)
from cunumpy.emulation._toolchain import find_compiler
from cunumpy.kernels import CudaKernel

RACES = EmulatorOptions(races=True)

OOB = """extern "C" __global__ void spill(const float* x, float* y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * {k}.0f;
}}"""

DIVERGE = """extern "C" __global__ void diverge(float* y) {{
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = t * {k}.0f;
    if (t < 16) __syncthreads();
    y[t] = s[63 - t];
}}"""

RACY = """extern "C" __global__ void racy(float* y) {{
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = t * {k}.0f;
    y[t] = s[(t + 1) % 64];
}}"""


@pytest.fixture
def commands(monkeypatch) -> Iterator[list[list[str]]]:
    """The compiler commands run from now on."""
    seen: list[list[str]] = []
    run = _build._run

    def spy(cmd, cwd):
        seen.append(list(cmd))
        return run(cmd, cwd)

    monkeypatch.setattr(_build, "_run", spy)
    yield seen


def _forget() -> None:
    metal.forget_variants()
    _build.forget_loaded()


def _links_runtime(cmds: list[list[str]]) -> bool:
    kernel = [c for c in cmds if "kernel.cpp" in c or any(a.endswith("kernel.o") for a in c)]
    assert kernel, cmds
    return any(_build.PREBUILT_DEFINE in c for c in kernel) and any(
        a.endswith("runtime.o") for c in kernel for a in c)


def _outcome(src: str, name: str, args: list[np.ndarray], options=None, **launch) -> str:
    """The error message of a launch (or the output's bytes when it succeeds)."""
    try:
        emulate_cuda_kernel(CudaKernel(src, name), *args, options=options, **launch)
    except (OutOfBoundsError, BarrierDivergenceError, DataRaceError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return args[-2 if name == "spill" else -1].tobytes().hex()


CASES = [
    ("oob", OOB, "spill", lambda: [np.ones(60, np.float32), np.zeros(64, np.float32),
                                   np.int32(60)], None),
    ("divergence", DIVERGE, "diverge", lambda: [np.zeros(64, np.float32)], None),
    ("race", RACY, "racy", lambda: [np.zeros(64, np.float32)], RACES),
]


def test_a_kernel_links_the_prebuilt_runtime(private_cache, commands):
    src = OOB.format(k=3).replace("y[i] =", "if (i < n) y[i] =")
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    emulate_cuda_kernel(CudaKernel(src, "spill"), x, y, np.int32(64), grid=2, block=32)
    assert np.array_equal(y, x * 3)
    assert _links_runtime(commands), commands


def test_a_fresh_cache_compiles_the_runtime_itself_then_links_it(tmp_path, monkeypatch,
                                                                  commands):
    monkeypatch.setenv("CUNUMPY_CACHE_DIR", str(tmp_path / "cache"))
    _forget()
    try:
        x = np.arange(64, dtype=np.float32)
        for k, prebuilt in ((5, False), (6, True)):
            commands.clear()
            y = np.zeros(64, np.float32)
            src = OOB.format(k=k).replace("y[i] =", "if (i < n) y[i] =")
            emulate_cuda_kernel(CudaKernel(src, "spill"), x, y, np.int32(64), grid=2, block=32)
            assert np.array_equal(y, x * k)
            assert _links_runtime(commands) == prebuilt, commands
            _build.wait_for_pch()
        assert list((tmp_path / "cache").glob("emu-*/runtime/*/*/runtime.o"))
    finally:
        _build.wait_for_pch()
        _forget()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_both_builds_report_the_same(case, private_cache, monkeypatch):
    _, src, name, args, options = case
    linked = _outcome(src.format(k=1), name, args(), options, grid=1, block=64)
    monkeypatch.setattr(_build, "_prebuilt", lambda *a, **k: _build._PLAIN)
    _forget()
    alone = _outcome(src.format(k=1), name, args(), options, grid=1, block=64)
    assert linked == alone
    assert "Error: " in linked


def test_the_runtime_object_is_keyed_by_its_flags(private_cache):
    compiler = find_compiler()
    plain = _build.compile_flags(compiler)
    racing = plain + _build.race_flags(compiler)
    for flags in (plain, racing):
        _build._prebuilt(private_cache, compiler, flags, "cn_cuda.h")
    _build.wait_for_pch()
    objects = {_build._prebuilt(private_cache, compiler, f, "cn_cuda.h").runtime
               for f in (plain, racing)}
    assert None not in objects and len(objects) == 2


def test_random_order_gets_its_own_build(private_cache):
    """Launches in order compile no per-thread copy of a loop-mode kernel (run_grid's Shuffle);
    a random-order launch of the same kernel builds the variant that has one."""
    src = OOB.format(k=2).replace("y[i] =", "if (i < n) y[i] =")
    k = CudaKernel(src, "spill")
    x = np.arange(64, dtype=np.float32)
    outs = []
    for options in (None, EmulatorOptions(random_order=True, seed=3)):
        y = np.zeros(64, np.float32)
        emulate_cuda_kernel(k, x, y, np.int32(64), grid=2, block=32, options=options)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], x * 2)
    np.testing.assert_array_equal(outs[1], x * 2)
    texts = sorted(p.read_text() for p in private_cache.glob("emu-*/emu-cuda/*/*/kernel.cpp"))
    assert len(texts) == 2
    assert sorted("run_grid<false, true, true, false>" in t for t in texts) == [False, True]
