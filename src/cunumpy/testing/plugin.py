"""The cunumpy pytest plugin (registered through the ``pytest11`` entry point).

Markers
-------
``requires_cuda``
    The test needs an NVIDIA GPU with CuPy. Skipped without one; fails instead when
    ``CUNUMPY_REQUIRE_CUDA=1``.
``requires_metal``
    The test needs an Apple GPU with MLX. Skipped without one; fails instead when
    ``CUNUMPY_REQUIRE_METAL=1``.

Fixtures
--------
``backend``
    Parametrised over ``"numpy"`` and ``"cupy"``; the test body runs with that backend active
    (restored afterwards). The CuPy case skips (or fails, as above) without a GPU.
``metal_engine`` / ``cuda_engine``
    Parametrised over the real engine (``mlx`` / ``cupy``) and ``emulator`` (and, for
    ``metal_engine``, ``cuda``: Metal translated to CUDA on an NVIDIA GPU); the test runs with
    ``CUNUMPY_METAL_ENGINE`` / ``CUNUMPY_CUDA_ENGINE`` set to it.
``mlx_metal_on_cpu``
    The test runs inside :func:`cunumpy.testing.mlx_metal_on_cpu`: ``mx.fast.metal_kernel``
    runs custom Metal kernels on the CPU emulator. Skips when MLX is not installed.
``kernel_port``
    Parametrised over ``"host"``, ``"cuda"`` and ``"metal"``; every
    :class:`~cunumpy.kernels.Kernel` call in the test goes to that version
    (:func:`~cunumpy.kernels.use_port`), on NumPy arrays. The CUDA case runs on the CPU emulator
    (``CUNUMPY_CUDA_ENGINE=emulator``); the Metal case on an Apple GPU when there is one, else on
    the emulator. A case whose engine cannot run here skips with the reason.

Emulated launches inside ``metal_engine``, ``cuda_engine`` and ``kernel_port`` tests check data
races (``CUNUMPY_EMULATOR_RACES=1``) unless the environment already sets that variable.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cunumpy.testing._markers import cuda_skip_or_fail, metal_skip_or_fail


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_cuda: needs an NVIDIA GPU with CuPy (CUNUMPY_REQUIRE_CUDA=1: must run)"
    )
    config.addinivalue_line(
        "markers", "requires_metal: needs an Apple GPU with MLX (CUNUMPY_REQUIRE_METAL=1: must run)"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("requires_cuda") is not None:
        from cunumpy._backend import cupy_status

        ok, reason = cupy_status()
        if not ok:
            cuda_skip_or_fail(reason)
    if item.get_closest_marker("requires_metal") is not None:
        from cunumpy._engines._table import engine_status

        ok, reason = engine_status("mlx")
        if not ok:
            metal_skip_or_fail(reason)


@pytest.fixture(params=["numpy", "cupy"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once per array backend, with that backend active."""
    import cunumpy

    name = request.param
    if name == "cupy":
        from cunumpy._backend import cupy_status

        ok, reason = cupy_status()
        if not ok:
            cuda_skip_or_fail(reason)
    with cunumpy.use_backend(name, strict=True):
        yield name


def _check_races(monkeypatch: pytest.MonkeyPatch) -> None:
    """Emulated launches of the test check data races, unless the environment says otherwise."""
    from cunumpy import config

    if config.setting_text("CUNUMPY_EMULATOR_RACES") is None:
        monkeypatch.setenv("CUNUMPY_EMULATOR_RACES", "1")


def _skip_unless_ready(engine: str) -> None:
    """Skip (or, for a required GPU, fail) the running test when ``engine`` cannot run here."""
    from cunumpy._engines._table import engine_status, row

    ok, reason = engine_status(engine)
    if ok:
        return
    needs = row(engine).hardware
    if needs == "cuda":
        cuda_skip_or_fail(reason)
    elif needs == "metal":
        metal_skip_or_fail(reason)
    pytest.skip(reason)


# The values are what CUNUMPY_<DIALECT>_ENGINE takes; the ids are the engine table's names.
@pytest.fixture(params=["mlx", "emulator", "cuda"], ids=["mlx", "emu-metal", "metal-cuda"])
def metal_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per MetalKernel engine, selected through ``CUNUMPY_METAL_ENGINE``.

    ``mlx`` needs an Apple GPU (skips, or fails with ``CUNUMPY_REQUIRE_METAL=1``); ``emulator``
    needs a C++ compiler; ``cuda`` (Metal translated to CUDA) needs an NVIDIA GPU with CuPy
    (skips, or fails with ``CUNUMPY_REQUIRE_CUDA=1``).
    """
    name = request.param
    from cunumpy._engines._table import canonical_name

    _skip_unless_ready(canonical_name("metal", name))
    monkeypatch.setenv("CUNUMPY_METAL_ENGINE", name)
    _check_races(monkeypatch)
    return name


@pytest.fixture(params=["cupy", "emulator"], ids=["cupy", "emu-cuda"])
def cuda_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per CudaKernel engine, selected through ``CUNUMPY_CUDA_ENGINE``.

    ``cupy`` needs an NVIDIA GPU (skips, or fails with ``CUNUMPY_REQUIRE_CUDA=1``); ``emulator``
    needs a C++ compiler.
    """
    name = request.param
    _skip_unless_ready("cupy" if name == "cupy" else "emu-cuda")
    monkeypatch.setenv("CUNUMPY_CUDA_ENGINE", name)
    _check_races(monkeypatch)
    return name


@pytest.fixture(params=["host", "cuda", "metal"])
def kernel_port(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test once per Kernel version, with every Kernel call forced to it."""
    from cunumpy.kernels import use_port

    port = request.param
    if port != "host":
        from cunumpy._engines._table import engine_status, select, setting_value

        # The CUDA port on the CPU emulator; the Metal port on a Metal GPU when there is one.
        engine = select("metal", "auto") if port == "metal" else "emu-cuda"
        ok, reason = engine_status(engine)
        if not ok:
            pytest.skip(f"the {port} port cannot run here: {reason}")
        var = "CUNUMPY_CUDA_ENGINE" if port == "cuda" else "CUNUMPY_METAL_ENGINE"
        monkeypatch.setenv(var, setting_value(engine))
        _check_races(monkeypatch)
    with use_port(port):
        yield port


@pytest.fixture(name="mlx_metal_on_cpu")
def _mlx_metal_on_cpu_fixture() -> Iterator[object]:
    """``mx.fast.metal_kernel`` runs custom kernels on the CPU emulator during the test."""
    pytest.importorskip("mlx.core", reason="the mlx_metal_on_cpu fixture needs MLX")
    from cunumpy.testing._mlx import mlx_metal_on_cpu

    with mlx_metal_on_cpu() as factory:
        yield factory
