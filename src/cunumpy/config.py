"""Settings read from the environment, each documented where it is defined.

Every setting is read when it is needed, not cached at import, so a test can change the
environment with ``monkeypatch.setenv`` and see the effect at the next call. The one exception is
``CUNUMPY_BACKEND``, which picks the backend once, when :mod:`cunumpy` is imported; change the
backend afterwards with :func:`cunumpy.set_backend`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "BACKENDS",
    "CUDA_ENGINES",
    "EMULATOR_ORDERS",
    "EMULATOR_UNDEFINED",
    "KERNEL_PORTS",
    "METAL_ENGINES",
    "cache_dir_override",
    "cuda_debug",
    "cuda_engine",
    "cxx_command",
    "emulator_checks",
    "emulator_isolated",
    "emulator_order",
    "emulator_progress",
    "emulator_threads",
    "emulator_undefined",
    "env_flag",
    "initial_backend",
    "kernel_port",
    "metal_engine",
    "metal_on_cuda",
    "mpi_cuda_aware",
    "mpi_environment",
    "mpi_launched",
    "mpiexec_command",
    "raw_lookup",
    "raw_reader",
    "require_cuda",
    "require_metal",
    "setting_text",
    "staging_threshold",
    "use_metal",
]

BACKENDS = ("numpy", "cupy")
"""Names accepted by :func:`cunumpy.set_backend` and ``CUNUMPY_BACKEND``."""

METAL_ENGINES = ("auto", "mlx", "emulator", "cuda", "emu-metal", "metal-cuda")
"""Values of ``CUNUMPY_METAL_ENGINE`` (and a MetalKernel call's ``engine=``): ``auto``, the
engine table's names ``mlx``, ``emu-metal``, ``metal-cuda``, and the aliases ``emulator``
(``emu-metal``) and ``cuda`` (``metal-cuda``)."""

CUDA_ENGINES = ("cupy", "emulator")
"""Engines that run :class:`~cunumpy.kernels.CudaKernel` launches."""


def _choice(var: str, allowed: tuple[str, ...], default: str) -> str:
    value = os.environ.get(var, "").strip().lower()
    if not value:
        return default
    if value not in allowed:
        raise ValueError(
            f"environment variable {var}={os.environ[var]!r} is not one of "
            f"{', '.join(allowed)}; unset it or pick one of those"
        )
    return value


def env_flag(var: str) -> bool:
    """True when ``var`` is set to ``1``, ``true``, ``yes`` or ``on`` (any case)."""
    return os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on")


def initial_backend() -> str:
    """``CUNUMPY_BACKEND`` (``numpy`` or ``cupy``): the backend chosen at import.

    Default ``numpy``. With ``cupy`` and no working GPU, the import falls back to NumPy with a
    warning that says why.
    """
    return _choice("CUNUMPY_BACKEND", BACKENDS, "numpy")


def metal_engine() -> str:
    """``CUNUMPY_METAL_ENGINE`` (``auto``, ``mlx``, ``emulator`` or ``cuda``): what runs
    MetalKernel launches.

    Default ``auto``: MLX where it reports a working Metal GPU, else the CPU emulator (with a
    one-time warning). ``mlx`` requires the Apple GPU; ``emulator`` runs every launch on the CPU
    emulator (engine ``emu-metal``), through the same front end; ``cuda`` translates the kernel to
    CUDA and runs it on an NVIDIA GPU through CuPy (engine ``metal-cuda``; ``auto`` never picks
    it). The engine names ``emu-metal`` and ``metal-cuda`` are accepted too. Read at every launch.
    """
    return _choice("CUNUMPY_METAL_ENGINE", METAL_ENGINES, "auto")


def metal_on_cuda() -> bool:
    """``CUNUMPY_METAL_ON_CUDA=1``: a :class:`~cunumpy.kernels.Kernel` without a CUDA port runs
    its Metal port on the ``cuda`` engine when a call goes to the CUDA port.

    Default off: such a call follows the kernel's ``missing`` policy (raise, or run the host
    kernel). On, CuPy-array calls (or any call while the CuPy backend is active) of a kernel with
    a Metal port but no CUDA port run the Metal kernel translated to CUDA, on the GPU, with the
    CuPy arrays in place. Read at every such call.
    """
    return env_flag("CUNUMPY_METAL_ON_CUDA")


def cuda_engine() -> str:
    """``CUNUMPY_CUDA_ENGINE`` (``cupy`` or ``emulator``): what runs CudaKernel launches.

    Default ``cupy``. With ``emulator`` a CudaKernel runs on the CPU and takes NumPy arrays where
    it would take device arrays. Read at every launch.
    """
    return _choice("CUNUMPY_CUDA_ENGINE", CUDA_ENGINES, "cupy")


def cupy_on_cpu() -> bool:
    """``CUNUMPY_CUPY_ON_CPU`` (``1`` or ``0``): install cunumpy's CuPy stand-in under pytest.

    Default ``0``. With ``1``, cunumpy's pytest plugin calls
    :func:`cunumpy.testing.install_cupy_on_cpu` when it loads, so ``import cupy`` in the tests
    gives the stand-in (refused, stopping the run, where a real CuPy works). Read once, then.
    """
    return _choice("CUNUMPY_CUPY_ON_CPU", ("0", "1"), "0") == "1"


def require_cuda() -> bool:
    """``CUNUMPY_REQUIRE_CUDA=1``: tests that need an NVIDIA GPU fail instead of skipping."""
    return env_flag("CUNUMPY_REQUIRE_CUDA")


def require_metal() -> bool:
    """``CUNUMPY_REQUIRE_METAL=1``: tests that need an Apple GPU fail instead of skipping."""
    return env_flag("CUNUMPY_REQUIRE_METAL")


def cache_dir_override() -> str | None:
    """``CUNUMPY_CACHE_DIR``: where compiled emulation libraries live.

    Resolution order: an explicit argument, then this variable, then the user cache directory
    given by :mod:`platformdirs`.
    """
    value = os.environ.get("CUNUMPY_CACHE_DIR", "").strip()
    return value or None


EMULATOR_ORDERS = ("sequential", "random")
"""Values of ``CUNUMPY_EMULATOR_ORDER``."""


def emulator_checks() -> bool:
    """``CUNUMPY_EMULATOR_CHECKS``: whether the CPU emulators check launches.

    Default on. ``0``, ``false``, ``no`` or ``off`` turn bounds checks, output poisoning and lane
    checks off (faster). An explicit ``EmulatorOptions(checks=...)`` wins. Read at every launch.
    """
    value = os.environ.get("CUNUMPY_EMULATOR_CHECKS", "").strip().lower()
    return value not in ("0", "false", "no", "off")


def emulator_order() -> str:
    """``CUNUMPY_EMULATOR_ORDER`` (``sequential`` or ``random``): threadgroup order.

    Default ``sequential``. ``random`` runs the groups of every emulated launch, and the threads
    inside each group, in a random order, to expose order-dependent kernels. Read at every launch.
    """
    return _choice("CUNUMPY_EMULATOR_ORDER", EMULATOR_ORDERS, "sequential")


EMULATOR_UNDEFINED = ("error", "warn")
"""Values of ``CUNUMPY_EMULATOR_UNDEFINED``."""


def emulator_undefined() -> str:
    """``CUNUMPY_EMULATOR_UNDEFINED`` (``error`` or ``warn``): what undefined behaviour does.

    Default ``error``: the first case (a warp shuffle reading a lane outside its mask or a lane
    that takes no part, ...) stops the launch with ``UndefinedBehaviorError``. ``warn``: the
    launch goes on and an ``UndefinedBehaviorWarning`` says what happened. An explicit
    ``EmulatorOptions(undefined=...)`` wins. Read at every launch.
    """
    return _choice("CUNUMPY_EMULATOR_UNDEFINED", EMULATOR_UNDEFINED, "error")


def emulator_isolated() -> bool:
    """``CUNUMPY_EMULATOR_ISOLATED=1``: run every emulated launch in a child process.

    Default off. On, a kernel that crashes (segmentation fault) raises ``KernelCrashError``
    instead of killing Python; each launch pays a process start. Read at every launch.
    """
    return env_flag("CUNUMPY_EMULATOR_ISOLATED")


def emulator_races() -> bool | None:
    """``CUNUMPY_EMULATOR_RACES``: whether the CPU emulators check data races.

    ``1``/``true``/``yes``/``on`` turn race checking on for every emulated launch, ``0``/``false``/
    ``no``/``off`` off (also inside ``assert_kernels_agree`` and the pytest plugin's kernel
    fixtures, which check races by default). Unset: None (the caller's default). An explicit
    ``EmulatorOptions(races=...)`` wins. Read at every launch.
    """
    value = os.environ.get("CUNUMPY_EMULATOR_RACES", "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    if value:
        raise ValueError(
            f"environment variable CUNUMPY_EMULATOR_RACES={os.environ['CUNUMPY_EMULATOR_RACES']!r}"
            " is not one of 1, 0, true, false, on, off"
        )
    return None


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def emulator_threads() -> int:
    """``CUNUMPY_EMULATOR_THREADS``: worker threads that run the groups of an emulated launch.

    Default: the CPUs this process may run on. ``1`` runs every launch serially on the calling
    thread. Launches too small to gain from workers, launches that check races, and kernels that
    call ``printf`` run serially whatever the setting (``docs/emulation.md``, "Parallel
    groups"). Read at every launch.
    """
    raw = os.environ.get("CUNUMPY_EMULATOR_THREADS", "").strip().lower()
    if raw in ("", "auto"):
        return _cpu_count()
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"environment variable CUNUMPY_EMULATOR_THREADS="
            f"{os.environ['CUNUMPY_EMULATOR_THREADS']!r} is not a positive whole number of "
            "worker threads (1: serial) or auto; unset it or pick one of those"
        )
    return value


EMULATOR_PROGRESS = ("auto", "on", "off")
"""Values of ``CUNUMPY_EMULATOR_PROGRESS``."""


def emulator_progress() -> bool:
    """``CUNUMPY_EMULATOR_PROGRESS`` (``auto``, ``on`` or ``off``; ``1``/``0`` too): whether a
    long emulated launch shows a progress bar on standard error.

    Default ``auto``: on when standard error is a terminal and ``CI`` is not set. The bar needs
    ``rich`` (``pip install 'cunumpy[cli]'``) and appears only for a launch expected to take more
    than a few seconds. Read at every launch.
    """
    raw = os.environ.get("CUNUMPY_EMULATOR_PROGRESS", "").strip().lower()
    value = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off",
             "": "auto"}.get(raw, raw)
    if value not in EMULATOR_PROGRESS:
        raise ValueError(
            f"environment variable CUNUMPY_EMULATOR_PROGRESS="
            f"{os.environ['CUNUMPY_EMULATOR_PROGRESS']!r} is not one of auto, on, off"
        )
    if value != "auto":
        return value == "on"
    if os.environ.get("CI", "").strip():
        return False
    import sys

    stream = sys.stderr
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


STAGING_THRESHOLD_DEFAULT = 16 << 20
"""Default of ``CUNUMPY_STAGING_THRESHOLD``, in bytes (set from ``benchmarks/bench_transfers.py``)."""


def staging_threshold() -> int | None:
    """``CUNUMPY_STAGING_THRESHOLD``: the smallest array (bytes) copied through pinned buffers.

    :func:`cunumpy.to_numpy` and :func:`cunumpy.to_cupy` copy arrays of at least this many bytes
    in chunks through two pinned staging buffers, with the host side of the copy spread over
    threads (``cunumpy._staging``). Smaller arrays take CuPy's ordinary path. Default 16 MiB
    (below it the ordinary path was as fast on the H200 host);
    ``off`` (or ``0``) turns staging off. Suffixes ``K``, ``M`` and ``G`` (powers of 1024) are
    accepted. Read at every copy.
    """
    value = os.environ.get("CUNUMPY_STAGING_THRESHOLD", "").strip().upper()
    if not value:
        return STAGING_THRESHOLD_DEFAULT
    if value in ("OFF", "0", "NO", "FALSE"):
        return None
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:], 1)
    digits = value[:-1] if scale != 1 else value
    try:
        threshold = int(digits) * scale
    except ValueError:
        raise ValueError(
            f"environment variable CUNUMPY_STAGING_THRESHOLD={os.environ['CUNUMPY_STAGING_THRESHOLD']!r}"
            " is not a byte count such as 8388608, 8M or off"
        ) from None
    return threshold if threshold > 0 else None


def mpi_cuda_aware() -> bool | None:
    """``CUNUMPY_MPI_CUDA_AWARE`` (``0`` or ``1``): whether the MPI library takes device pointers.

    Overrides what :func:`cunumpy.mpi.cuda_aware` finds out (the library's own query, else a
    probe in a child process). ``1`` hands CuPy arrays to MPI directly (a library that is not
    CUDA-aware then reads device addresses as host memory: a crash or wrong data); ``0`` stages
    every device buffer through pinned host memory. Unset: None (ask the library). Read at every
    call of the functions of :mod:`cunumpy.mpi`.
    """
    value = os.environ.get("CUNUMPY_MPI_CUDA_AWARE", "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("", "auto"):
        return None
    raise ValueError(
        f"environment variable CUNUMPY_MPI_CUDA_AWARE={os.environ['CUNUMPY_MPI_CUDA_AWARE']!r} "
        "is not one of 1, 0 or auto; unset it or pick one of those"
    )


def mpiexec_command() -> list[str] | None:
    """``CUNUMPY_MPIEXEC``: the command that launches MPI jobs for
    :func:`cunumpy.testing.run_ranks` (split like a shell, e.g. ``srun --mpi=pmix``).

    Unset: the ``mpiexec`` next to the Python interpreter (where ``pip install mpich`` puts it),
    else the first ``mpiexec`` on ``PATH``. The number of ranks is appended as ``-n N``. Read at
    every launch.
    """
    value = os.environ.get("CUNUMPY_MPIEXEC", "").strip()
    if not value:
        return None
    import shlex

    return shlex.split(value)


MPI_LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "PRTE_", "HYDRA_", "HYDI_", "MPIR_", "MPI_LOCAL",
                         "MV2_", "I_MPI_HYDRA", "SLURM_STEP", "SLURM_PROCID", "SLURM_LOCALID")
"""Prefixes of the variables an MPI launcher sets for the ranks it starts (MPICH's hydra, Open MPI
and PMIx, MVAPICH, Intel MPI, Slurm's ``srun``). A process started by one of those ranks with
these variables would believe it is that rank; :func:`mpi_environment` leaves them out."""

_MPI_RANK_VARIABLES = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                       "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def mpi_launched() -> bool:
    """Whether this process was started by an MPI launcher (``mpiexec``, ``mpirun``, ``srun``).

    Not a cunumpy setting: true when one of the rank variables that MPICH, Open MPI, PMIx or
    MVAPICH set (``PMI_RANK``, ``PMI_SIZE``, ``PMIX_RANK``, ``OMPI_COMM_WORLD_SIZE``,
    ``MV2_COMM_WORLD_SIZE``, ``MPI_LOCALNRANKS``) is present. ``cunumpy demo`` asks it before it
    imports mpi4py, so that a plain run never starts MPI.
    """
    return any(var in os.environ for var in _MPI_RANK_VARIABLES)


def mpi_environment(extra: dict[str, str] | None = None,
                    python_path: str | None = None) -> dict[str, str]:
    """A copy of the environment for a fresh MPI job: without the variables of
    :data:`MPI_LAUNCHER_PREFIXES` (so that a job started from inside a rank is a job of its own),
    with ``extra`` added and ``python_path`` put first on ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(MPI_LAUNCHER_PREFIXES)}
    env.update(extra or {})
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (python_path, env.get("PYTHONPATH")) if p)
    return env


def setting_text(var: str) -> str | None:
    """The value of the setting ``var`` as written (stripped), or None when unset or empty.

    For messages and reports (``cunumpy info``); use the setting's own function to interpret it.
    """
    return os.environ.get(var, "").strip() or None


KERNEL_PORTS = ("host", "cuda", "metal")
"""Ports a :class:`~cunumpy.kernels.Kernel` can be sent to (``CUNUMPY_KERNEL_PORT``)."""


def use_metal() -> bool | None:
    """``CUNUMPY_USE_METAL``: whether :class:`~cunumpy.kernels.Kernel` calls go to the Metal port.

    ``1``/``true``/``yes``/``on``: True; ``0``/``false``/``no``/``off``: False; unset or
    ``auto``: None (automatic: see :func:`cunumpy.kernels.metal_dispatch_enabled`). Read at
    every call, through :func:`raw_reader`, and decoded again only when the value changes.
    """
    value = os.environ.get("CUNUMPY_USE_METAL", "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("", "auto"):
        return None
    raise ValueError(
        f"environment variable CUNUMPY_USE_METAL={os.environ.get('CUNUMPY_USE_METAL')!r} is "
        "not one of 1, 0 or auto; unset it or pick one of those"
    )


def kernel_port() -> str | None:
    """``CUNUMPY_KERNEL_PORT`` (``host``, ``cuda``, ``metal``): send every Kernel call there.

    Unset or ``auto``: None (dispatch by arguments). Read at every call, through
    :func:`raw_reader`, and decoded again only when the value changes.
    """
    raw = os.environ.get("CUNUMPY_KERNEL_PORT", "")
    value = raw.strip().lower()
    if value in ("", "auto"):
        return None
    if value not in KERNEL_PORTS:
        raise ValueError(
            f"environment variable CUNUMPY_KERNEL_PORT {value!r} is not a port; valid ports "
            f"are {', '.join(KERNEL_PORTS)}"
        )
    return value


def cuda_debug() -> bool:
    """``CUNUMPY_CUDA_DEBUG=1``: CudaKernels compile with device debug information.

    Read when a :class:`~cunumpy.kernels.CudaKernel` is constructed without ``debug=``.
    """
    return env_flag("CUNUMPY_CUDA_DEBUG")


def cxx_command() -> str | None:
    """``CUNUMPY_CXX``: the C++ compiler command for the CPU emulators (split like a shell).

    Unset: the first of ``clang++``, ``g++``, ``c++`` on PATH, then the ``ziglang`` wheel.
    Read once per process, when the emulators first look for a compiler.
    """
    return os.environ.get("CUNUMPY_CXX", "").strip() or None


# The fast environment reader. Settings read at every launch (CUNUMPY_CUDA_ENGINE,
# CUNUMPY_METAL_ENGINE, CUNUMPY_USE_METAL, CUNUMPY_KERNEL_PORT) are checked through the
# environment's own dictionary (about 30 ns, against about 500 ns for os.environ.get); callers
# compare the raw value with the one they saw last and call the documented function above only
# when it changed.
_env_data: Any = getattr(os.environ, "_data", None)
if not isinstance(_env_data, dict) or not hasattr(os.environ, "encodekey"):  # pragma: no cover
    _env_data = None


def raw_reader(var: str) -> Callable[[], Any]:
    """A fast zero-argument callable returning the raw value of ``var`` now (or None).

    The value is for comparison only (it may be bytes); interpret it with the setting's own
    function. Writes through ``os.environ`` (and ``monkeypatch.setenv``) are seen at once.
    """
    if _env_data is not None:
        return functools.partial(_env_data.get, os.environ.encodekey(var))  # type: ignore[attr-defined]
    return functools.partial(os.environ.get, var)  # pragma: no cover - not CPython


def raw_lookup(var: str) -> tuple[Callable[[Any], Any], Any]:
    """``(get, key)``: ``get(key)`` is the raw value of ``var`` now (or None), as from
    :func:`raw_reader`, at about half its cost (one builtin call, for generated code that holds
    ``get`` and ``key`` as constants: the generated ``Kernel.__call__``)."""
    if _env_data is not None:
        return _env_data.get, os.environ.encodekey(var)  # type: ignore[attr-defined]
    return os.environ.get, var  # pragma: no cover - not CPython
