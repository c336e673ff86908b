"""How a :class:`~cunumpy.kernels.Kernel` reads its ports: host parameters, port parameter
names, argument pickers, device-array detection and launch keywords."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

_HOST_TYPES = frozenset((
    np.ndarray, int, float, bool, complex, np.float16, np.float32, np.float64, np.complex64,
    np.complex128, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.bool_,
))
"""Argument classes that are certainly not device arrays (checked first, for speed)."""


def _python_function(host: Any) -> Callable[..., Any]:
    """The Python function behind ``host``: itself, or a Numba dispatcher's ``py_func``."""
    py_func = getattr(host, "py_func", None)
    if py_func is not None and type(host).__module__.split(".")[0] == "numba":
        return py_func
    return host


def _host_params(host: Any, tag: str) -> tuple[str, ...]:
    if not callable(host):
        raise TypeError(f"{tag} host kernel must be callable, got {type(host).__name__}")
    func = _python_function(host)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{tag} cannot read the host kernel's parameter names ({exc}); pass a Python "
            "function or a Numba @njit function"
        ) from exc
    names = []
    for p in signature.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            raise TypeError(
                f"{tag} host kernel takes *{p.name}; a Kernel matches ports to the host's "
                "parameters by name, so name every parameter"
            )
        elif p.default is p.empty and p.kind is p.KEYWORD_ONLY:
            raise TypeError(
                f"{tag} host kernel has a keyword-only parameter {p.name!r} without a default; "
                "a Kernel passes arguments by position only"
            )
    return tuple(names)


def _cuda_params(port: Any) -> tuple[Any, ...] | None:
    """The CUDA port's parameters (objects with ``.name``), or None when not known."""
    params = getattr(port, "params", None)
    if params:
        return tuple(params)
    names = getattr(port, "param_names", None)
    if names:
        return tuple(_Named(n) for n in names)
    return None


class _Named:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _resolve_metal_name(name: str, role: str, host: tuple[str, ...]) -> str | None:
    """The host parameter a Metal input/output name stands for (see :class:`Kernel`)."""
    if name in host:
        return name
    suffix = "_in" if role == "input" else "_out"
    if name.endswith(suffix) and name[: -len(suffix)] in host:
        return name[: -len(suffix)]
    return None


def _getter(indices: tuple[int, ...], as_tuple: bool) -> Callable[[tuple], Any]:
    """A fast function picking ``indices`` from the argument tuple."""
    if not indices:
        return lambda args: ()
    if len(indices) == 1:
        (i,) = indices
        if as_tuple:
            return lambda args: (args[i],)
        return operator.itemgetter(i)
    return operator.itemgetter(*indices)


_DEVICE_TYPES: set[type] = set()
"""Classes seen with a class-level ``__cuda_array_interface__`` (the generated call tests its
arguments' classes against it before calling :func:`_has_device`)."""


def _has_device(args: tuple) -> bool:
    """True when an argument is device memory (has ``__cuda_array_interface__``)."""
    for a in args:
        cls = a.__class__
        if cls in _HOST_TYPES:
            continue
        if hasattr(cls, "__cuda_array_interface__"):
            if len(_DEVICE_TYPES) < 256:
                _DEVICE_TYPES.add(cls)
            return True
        if hasattr(a, "__cuda_array_interface__"):
            return True
    return False


_MISSING = object()
"""Default of every parameter of a generated call function: an argument that was not given."""


def _given_args(named: tuple, extra: tuple) -> tuple:
    """The positional arguments of a call to a generated call function (for its error)."""
    return tuple(a for a in named if a is not _MISSING) + extra


def _launch_dict(n_threads: Any, template: Any, launch: dict[str, Any]) -> dict[str, Any]:
    """All the launch keywords of a generated call, as one dict."""
    if n_threads is not None:
        launch["n_threads"] = n_threads
    if template is not None:
        launch["template"] = template
    return launch


def _only(launch: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """The launch keywords a port takes, leaving out those given at their default value."""
    out = {}
    for k, v in launch.items():
        if k not in keys:
            continue
        if k == "shared_mem":
            if isinstance(v, int) and v == 0:
                continue
        elif k == "check_finite":
            if v is False:
                continue
        elif v is None:
            continue
        out[k] = v
    return out
