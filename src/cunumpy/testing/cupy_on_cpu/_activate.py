"""Installing the stand-in as ``cupy``: :func:`install_cupy_on_cpu` and its environment switch.

Installing puts the stand-in in :data:`sys.modules` as ``cupy`` (with ``cupy.cuda`` and its
submodules, ``cupy.fft``, ``cupy.linalg``, ``cupy.random``, ``cupy.testing``, ``cupy._util``)
and ``cupyx`` (with ``cupyx.scipy.*``), so that ``import cupy`` in any code that runs later gets it. It
refuses, with the reason, when ``cupy`` is imported already (the real module would stay in use
by whoever imported it) and when a real CuPy is importable and computes on a device (the
stand-in would hide the GPU). The check for a working CuPy runs in a child process, so this
process never imports the real CuPy.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

__all__ = [
    "ENVIRONMENT_VARIABLE",
    "CupyOnCpuRefused",
    "install_cupy_on_cpu",
    "install_from_environment",
    "installed",
]

ENVIRONMENT_VARIABLE = "CUNUMPY_CUPY_ON_CPU"
"""``CUNUMPY_CUPY_ON_CPU=1``: cunumpy's pytest plugin installs the stand-in when it loads."""

PACKAGE = "cunumpy.testing.cupy_on_cpu"

_PROBE = (
    "import cupy, sys\n"
    "n = cupy.cuda.runtime.getDeviceCount()\n"
    "assert n > 0\n"
    "assert float((cupy.arange(4, dtype=cupy.float32) * 2).sum()) == 12.0\n"
    "print(cupy.__version__, n)\n"
)


class CupyOnCpuRefused(RuntimeError):
    """:func:`install_cupy_on_cpu` would hide a real CuPy, or came too late."""


def installed() -> bool:
    """True when ``sys.modules['cupy']`` is the stand-in."""
    module = sys.modules.get("cupy")
    return module is not None and getattr(module, "__name__", "") == PACKAGE


def _real_cupy_works() -> tuple[bool, str]:
    """``(works, what)`` for a real CuPy, probed in a child process (never imported here)."""
    try:
        spec = importlib.util.find_spec("cupy")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return False, "CuPy is not installed"
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"CuPy at {spec.origin} could not be probed ({exc})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return False, f"CuPy at {spec.origin} does not compute here: {last}"
    version, count = done.stdout.split()[-2:]
    return True, f"CuPy {version} at {spec.origin} computes on {count} CUDA device(s)"


def install_cupy_on_cpu() -> ModuleType:
    """Make ``import cupy`` / ``import cupyx`` give cunumpy's strict CuPy stand-in.

    Call it before anything imports ``cupy``. A second call returns the installed stand-in.
    The CuPy backend (``cunumpy.set_backend("cupy")``) then selects it, and ``cunumpy info``
    reports it.

    Returns
    -------
    module
        The stand-in, now ``sys.modules["cupy"]``.

    Raises
    ------
    CupyOnCpuRefused
        ``cupy`` is imported already, or a real CuPy is installed and computes on a GPU here
        (use the GPU; unset ``CUNUMPY_CUPY_ON_CPU``).

    Examples
    --------
    >>> import cunumpy.testing
    >>> cp = cunumpy.testing.install_cupy_on_cpu()  # doctest: +SKIP
    >>> import cupy                                  # doctest: +SKIP
    >>> cupy.arange(3).sum()                         # doctest: +SKIP
    array(3)
    """
    if installed():
        return sys.modules["cupy"]
    if "cupy" in sys.modules:
        origin = getattr(sys.modules["cupy"], "__file__", None) or "an unknown location"
        raise CupyOnCpuRefused(
            f"install_cupy_on_cpu: cupy is already imported (from {origin}); call it before "
            "anything imports cupy (with pytest: set CUNUMPY_CUPY_ON_CPU=1, which cunumpy's "
            "plugin reads before tests are collected)"
        )
    works, what = _real_cupy_works()
    if works:
        raise CupyOnCpuRefused(
            f"install_cupy_on_cpu: a real CuPy works here ({what}); the stand-in would hide "
            f"the GPU. Run on the GPU (unset {ENVIRONMENT_VARIABLE})"
        )
    _register()
    return sys.modules["cupy"]


def _register() -> None:
    from cunumpy.testing.cupy_on_cpu import _cuda, _cupyx, _namespace, _submodules

    module = importlib.import_module(PACKAGE)
    module._cunumpy_stand_in = True
    sys.modules["cupy"] = module
    _cuda.register("cupy.cuda")
    for name in ("fft", "linalg", "random", "testing", "polynomial", "lib"):
        sys.modules[f"cupy.{name}"] = _submodules.submodule(name)
    # `from cupy.lib.stride_tricks import as_strided` (cuCIM) imports it by its full name
    sys.modules["cupy.lib.stride_tricks"] = sys.modules["cupy.lib"].stride_tricks
    # registered by name, never found on the package's path: a second copy would keep its own
    # memo caches; importing it also makes it the attribute `cupy._util`, as on CuPy
    sys.modules["cupy._util"] = importlib.import_module(f"{PACKAGE}._util")
    sys.modules["cupy._util"].read_settings()  # CuPy's variables, read when cupy is imported
    sys.modules.update(_cupyx.cupyx_module())
    _namespace._cache.clear()
    from cunumpy import _backend

    _backend._cupy_status = None  # probed again: the stand-in now answers
    from cunumpy._engines import _cuda_registry

    _cuda_registry._default_cache[0] = _cuda_registry._UNSET  # unset engine: now emu-cuda


def install_from_environment() -> bool:
    """Install the stand-in when ``CUNUMPY_CUPY_ON_CPU=1``; True when it is installed."""
    from cunumpy import config

    if not config.cupy_on_cpu():
        return installed()
    install_cupy_on_cpu()
    return True
