"""The cunumpy pytest plugin (registered through the ``pytest11`` entry point).

Environment
-----------
``CUNUMPY_CUPY_ON_CPU=1``
    The plugin installs cunumpy's CuPy stand-in (:func:`cunumpy.testing.install_cupy_on_cpu`)
    when it loads: ``import cupy`` in the tests gives it, ``requires_cuda`` tests and the
    ``backend`` fixture's CuPy case run on it, and ``requires_gpu`` tests still skip.

Markers
-------
``requires_cuda``
    The test needs an NVIDIA GPU with CuPy. Skipped without one; fails instead when
    ``CUNUMPY_REQUIRE_CUDA=1``.
``requires_gpu``
    The test needs a real NVIDIA GPU: the CuPy stand-in cannot answer it (timing, pinned-memory
    bandwidth, NVRTC's own text). Skipped while the stand-in is installed, otherwise the same
    as ``requires_cuda``.
``requires_metal``
    The test needs an Apple GPU with MLX. Skipped without one; fails instead when
    ``CUNUMPY_REQUIRE_METAL=1``.
``requires_mpi``
    The test starts MPI jobs (:func:`cunumpy.testing.run_ranks`): it needs mpi4py, an MPI
    library it can load and an ``mpiexec``. Skipped, with the reason, without them.

Fixtures
--------
``backend``
    Parametrised over ``"numpy"`` and ``"cupy"``; the test body runs with that backend active
    (restored afterwards). The CuPy case skips (or fails, as above) without a GPU.
``kernel_engine``
    Parametrised over every engine of the engine table (ids its names: ``cupy``, ``emu-cuda``,
    ``mlx``, ``emu-metal``, ``metal-cuda``); the test runs with the engine selected
    (``CUNUMPY_<DIALECT>_ENGINE``) and gets its name. An engine that cannot run here skips with
    the table's reason (fails, for a GPU required as below).
``metal_engine`` / ``cuda_engine``
    The same, for the engines of one dialect (ids ``mlx``, ``emu-metal``, ``metal-cuda`` /
    ``cupy``, ``emu-cuda``); the test gets the ``CUNUMPY_METAL_ENGINE`` /
    ``CUNUMPY_CUDA_ENGINE`` value (``mlx``, ``emulator``, ``cuda`` / ``cupy``, ``emulator``).
``mlx_metal_on_cpu``
    The test runs inside :func:`cunumpy.testing.mlx_metal_on_cpu`: ``mx.fast.metal_kernel``
    runs custom Metal kernels on the CPU emulator. Skips when MLX is not installed.
``kernel_port``
    Parametrised over ``"host"``, ``"cuda"`` and ``"metal"``; every
    :class:`~cunumpy.kernels.Kernel` call in the test goes to that version
    (:func:`~cunumpy.kernels.use_port`), on NumPy arrays. The CUDA case runs on the CPU emulator
    (``CUNUMPY_CUDA_ENGINE=emulator``); the Metal case on an Apple GPU when there is one, else on
    the emulator. A case whose engine cannot run here skips with the reason.

Emulated launches inside ``kernel_engine``, ``metal_engine``, ``cuda_engine`` and ``kernel_port``
tests check data races (``CUNUMPY_EMULATOR_RACES=1``) unless the environment already sets that
variable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cunumpy.testing._markers import cuda_skip_or_fail, metal_skip_or_fail, skip_or_fail
from cunumpy.testing.cupy_on_cpu._activate import install_from_environment

# CUNUMPY_CUPY_ON_CPU=1: the CuPy stand-in is installed as the plugin loads, before conftest
# files and test modules import cupy. A refusal (a real CuPy works here, or cupy is imported
# already) stops the run with its reason.
install_from_environment()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_cuda: needs an NVIDIA GPU with CuPy (CUNUMPY_REQUIRE_CUDA=1: must run)"
    )
    config.addinivalue_line(
        "markers", "requires_gpu: needs a real NVIDIA GPU (skips on the CuPy stand-in too)"
    )
    config.addinivalue_line(
        "markers", "requires_metal: needs an Apple GPU with MLX (CUNUMPY_REQUIRE_METAL=1: must run)"
    )
    config.addinivalue_line(
        "markers", "requires_mpi: starts MPI jobs (needs mpi4py, an MPI library and mpiexec)"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("requires_gpu") is not None:
        from cunumpy._backend import cupy_stand_in, cupy_status

        if cupy_stand_in():
            skip_or_fail("needs a real NVIDIA GPU: cunumpy's CuPy stand-in "
                         "(CUNUMPY_CUPY_ON_CPU) cannot answer it", False, "CUNUMPY_REQUIRE_CUDA")
        ok, reason = cupy_status()
        if not ok:
            cuda_skip_or_fail(reason)
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
    if item.get_closest_marker("requires_mpi") is not None:
        ok, reason = _mpi_status()
        if not ok:
            pytest.skip(reason)


_mpi: list[tuple[bool, str]] = []


def _mpi_status() -> tuple[bool, str]:
    """Whether MPI jobs can start here (asked once per session)."""
    if not _mpi:
        from cunumpy.testing._ranks import mpi_status

        _mpi.append(mpi_status())
    return _mpi[0]


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


def _engine_params(dialect: str | None) -> list[Any]:
    """One ``pytest.param`` per engine of the table (of ``dialect``, or all), id its name."""
    from cunumpy._engines._table import ENGINES

    return [pytest.param(name, id=name) for name, r in ENGINES.items()
            if dialect is None or r.dialect == dialect]


def _use_engine(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Skip unless the table says engine ``name`` can run here; else select it for the test
    (``CUNUMPY_<DIALECT>_ENGINE`` set to its setting value, race checks on) and return the
    setting value."""
    from cunumpy._engines._table import row

    r = row(name)
    _skip_unless_ready(name)
    monkeypatch.setenv(f"CUNUMPY_{r.dialect.upper()}_ENGINE", r.setting)
    _check_races(monkeypatch)
    return r.setting


# The one engine fixture: every engine of the engine table, ids the table's names; the
# dialect fixtures below are its slices (returning the CUNUMPY_<DIALECT>_ENGINE value).
@pytest.fixture(params=_engine_params(None))
def kernel_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per engine of the engine table, selected for the test.

    Returns the engine's table name (``cupy``, ``emu-cuda``, ``mlx``, ``emu-metal``,
    ``metal-cuda``); its dialect's ``CUNUMPY_<DIALECT>_ENGINE`` is set to select it. An engine
    the table reports as not ready skips with the table's reason (a GPU engine fails instead
    with ``CUNUMPY_REQUIRE_CUDA=1`` / ``CUNUMPY_REQUIRE_METAL=1``).
    """
    _use_engine(request.param, monkeypatch)
    return request.param


@pytest.fixture(params=_engine_params("metal"))
def metal_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per MetalKernel engine, selected through ``CUNUMPY_METAL_ENGINE``.

    The Metal rows of the ``kernel_engine`` fixture; returns the ``CUNUMPY_METAL_ENGINE`` value
    (``mlx``, ``emulator``, ``cuda``). ``mlx`` needs an Apple GPU (skips, or fails with
    ``CUNUMPY_REQUIRE_METAL=1``); ``emulator`` needs a C++ compiler; ``cuda`` (Metal translated
    to CUDA) needs an NVIDIA GPU with CuPy (skips, or fails with ``CUNUMPY_REQUIRE_CUDA=1``).
    """
    return _use_engine(request.param, monkeypatch)


@pytest.fixture(params=_engine_params("cuda"))
def cuda_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per CudaKernel engine, selected through ``CUNUMPY_CUDA_ENGINE``.

    The CUDA rows of the ``kernel_engine`` fixture; returns the ``CUNUMPY_CUDA_ENGINE`` value
    (``cupy``, ``emulator``). ``cupy`` needs an NVIDIA GPU (skips, or fails with
    ``CUNUMPY_REQUIRE_CUDA=1``); ``emulator`` needs a C++ compiler.
    """
    return _use_engine(request.param, monkeypatch)


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


@pytest.fixture(name="torch_mps_on_cpu")
def _torch_mps_on_cpu_fixture() -> Iterator[object]:
    """``torch.mps.compile_shader`` runs its kernels on CPU tensors during the test (the CPU
    emulator); skips, naming the wheel to install, where PyTorch is missing."""
    from cunumpy.testing._torch_mps import INSTALL_HINT, torch_mps_on_cpu

    pytest.importorskip("torch", reason=INSTALL_HINT)
    with torch_mps_on_cpu():
        yield None
