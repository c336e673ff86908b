"""``cupy._util`` of the stand-in: the helpers of CuPy's ``cupy/_util.pyx`` other libraries use.

Libraries built on CuPy (cuCIM's ``cucim.skimage``, code vendored from ``cupyx``) reach into this
private module for a few names, so the stand-in provides them with CuPy's behaviour:

- :func:`memoize` / :func:`clear_memo`: the decorator that caches generated kernels, keyed by the
  arguments (and by the current device when ``for_each_device=True``; the stand-in has one
  device, so that changes nothing). ``cupy.memoize`` and ``cupy.clear_memo`` are these objects;
- :func:`experimental`: a ``FutureWarning`` naming the API, silenced by setting
  ``cupy.disable_experimental_feature_warning = True``;
- :class:`PerformanceWarning`, :func:`check_array`, :func:`is_shutting_down`, :func:`bf16_loop`;
- the settings CuPy reads from the environment when ``cupy`` is imported (here: when the stand-in
  is installed, or at first use): ``ENABLE_SLICE_COPY``
  (``CUPY_EXPERIMENTAL_SLICE_COPY``; the stand-in's ``a[:] = numpy_array`` honours it),
  ``CUDA_ARRAY_INTERFACE_SYNC``, ``CUDA_ARRAY_INTERFACE_EXPORT_VERSION`` and
  ``DLPACK_EXPORT_VERSION`` (kept for code that reads them: the stand-in refuses to export
  ``__cuda_array_interface__`` and ``__dlpack__`` whatever their values).

Not provided: ``cython_build_ver`` (the stand-in is not built with Cython).
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import warnings
from typing import Any

__all__ = [  # the four settings are read on first access, by the module's __getattr__
    "CUDA_ARRAY_INTERFACE_EXPORT_VERSION",  # noqa: F822
    "CUDA_ARRAY_INTERFACE_SYNC",  # noqa: F822
    "DLPACK_EXPORT_VERSION",  # noqa: F822
    "ENABLE_SLICE_COPY",  # noqa: F822
    "PerformanceWarning",
    "bf16_loop",
    "check_array",
    "clear_memo",
    "experimental",
    "is_shutting_down",
    "memoize",
    "read_settings",
]

PACKAGE = "cunumpy.testing.cupy_on_cpu"


def _cupy() -> Any:
    """The stand-in's top module (``cupy``), looked up at each call as CuPy's helpers read
    ``cupy.<name>``: this module imports nothing of the stand-in, so that ``_array`` can import
    it (``a[:] = numpy_array`` reads :data:`ENABLE_SLICE_COPY`)."""
    return sys.modules[PACKAGE]


def _environment() -> dict[str, str]:
    """CuPy's own variables (not cunumpy settings), CuPy's default for each one unset."""
    return {name: os.environ.get(name, default) for name, default in (
        ("CUPY_EXPERIMENTAL_SLICE_COPY", "0"), ("CUPY_CUDA_ARRAY_INTERFACE_SYNC", "1"),
        ("CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION", "3"), ("CUPY_DLPACK_EXPORT_VERSION", "0.6"))}


def _flag(text: str) -> bool:
    return bool(int(text))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


_SETTINGS = {
    "ENABLE_SLICE_COPY": ("CUPY_EXPERIMENTAL_SLICE_COPY", _flag),
    "CUDA_ARRAY_INTERFACE_SYNC": ("CUPY_CUDA_ARRAY_INTERFACE_SYNC", _flag),
    "CUDA_ARRAY_INTERFACE_EXPORT_VERSION": ("CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION", int),
    "DLPACK_EXPORT_VERSION": ("CUPY_DLPACK_EXPORT_VERSION", _version),
}
"""The module's settings: attribute -> (CuPy's variable, conversion). CuPy reads them when
``cupy`` is imported; here each is read on first access, and :func:`read_settings` (called by
installing) reads them all, so a bad value fails at the install, not at ``import
cunumpy.testing``. Assigning an attribute (``cupy._util.ENABLE_SLICE_COPY = True``) overrides it,
as on CuPy."""


def __getattr__(name: str) -> Any:
    if name not in _SETTINGS:
        raise AttributeError(f"module 'cupy._util' has no attribute {name!r}")
    variable, convert = _SETTINGS[name]
    text = _environment()[variable]
    try:
        value = convert(text)
    except ValueError as exc:
        raise ValueError(f"cupy._util (cunumpy's CuPy stand-in): {variable}={text!r} is not "
                         "valid") from exc
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SETTINGS))


def read_settings() -> None:
    """Read every setting of :data:`_SETTINGS` that is not read or assigned yet."""
    for name in _SETTINGS:
        if name not in globals():
            __getattr__(name)


# -- memoize ---------------------------------------------------------------------------

_MEMOS: list[dict] = []
"""Every cache made by :func:`memoize`, so that :func:`clear_memo` can empty them all."""

_DEVICE = 0
"""The current device's id for ``for_each_device`` keys: the stand-in has only device 0."""


def memoize(for_each_device: bool = False) -> Any:
    """``cupy.memoize`` / ``cupy._util.memoize``: cache a function's result per arguments.

    The key is the positional arguments and the keyword arguments (which must be hashable, as
    on CuPy), plus the device when ``for_each_device`` is true. When two threads compute the
    same key at once, both get the result stored first.

    Parameters
    ----------
    for_each_device : bool, optional
        Keep one result per device. The stand-in has one device, so results are shared.

    Raises
    ------
    TypeError
        ``memoize`` used as ``@memoize`` without parentheses (``for_each_device`` would be the
        function); write ``@memoize()``.

    Examples
    --------
    >>> from cunumpy.testing.cupy_on_cpu._util import memoize
    >>> @memoize(for_each_device=True)
    ... def kernel_source(n):
    ...     return f"#define N {n}"
    >>> kernel_source(4) is kernel_source(4)
    True
    """
    if callable(for_each_device):
        raise TypeError(
            f"cupy._util.memoize is a decorator factory: write @memoize() or "
            f"@memoize(for_each_device=True) above {getattr(for_each_device, '__name__', '?')!r}"
        )
    device = _DEVICE if for_each_device else -1

    def decorator(f: Any) -> Any:
        memo: dict = {}
        _MEMOS.append(memo)

        @functools.wraps(f)
        def cached(*args: Any, **kwargs: Any) -> Any:
            key = (device, args, frozenset(kwargs.items())) if kwargs else (device, args)
            try:
                return memo[key]
            except KeyError:
                return memo.setdefault(key, f(*args, **kwargs))

        return cached

    return decorator


@atexit.register
def clear_memo() -> None:
    """``cupy.clear_memo`` / ``cupy._util.clear_memo``: forget every result :func:`memoize` kept.

    Also run at interpreter exit, as CuPy does.
    """
    for memo in _MEMOS:
        memo.clear()


# -- warnings and checks -------------------------------------------------------------------

class PerformanceWarning(RuntimeWarning):
    """CuPy's warning for code that works but may be slow (``cupy._util.PerformanceWarning``)."""


def experimental(api_name: str) -> None:
    """Warn, with a ``FutureWarning``, that ``api_name`` is an experimental API.

    Nothing is issued while ``cupy.disable_experimental_feature_warning`` is true. The warning
    points at the line that called ``experimental`` (where CuPy's compiled version points too).
    """
    if not getattr(_cupy(), "disable_experimental_feature_warning", False):
        warnings.warn(f"{api_name} is experimental. The interface can change in the future.",
                      FutureWarning, stacklevel=2)


def check_array(obj: Any, *, arg_name: str) -> None:
    """Raise ``TypeError`` unless ``obj`` is a (stand-in) ``cupy.ndarray``; a NumPy array fails."""
    if not isinstance(obj, _cupy().ndarray):
        raise TypeError(f"'{arg_name}' must be a cupy.ndarray object, not {type(obj)}.")


_shutting_down = [False]


@atexit.register
def _note_shutdown() -> None:
    _shutting_down[0] = True


def is_shutting_down(_flag: list[bool] = _shutting_down) -> bool:
    """True once the interpreter has begun to exit (for ``__del__`` methods; bind it early)."""
    return _flag[0]


def bf16_loop(in_types: Any = 1, out_types: Any = 1, code: Any = None) -> tuple:
    """No bfloat16 ufunc loops: ``()``, as CuPy gives without ``ml_dtypes``."""
    return ()
