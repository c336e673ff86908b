"""Where :class:`~cunumpy.kernels.Kernel` calls go: Metal dispatch and forced ports.

Each setting is a function, a context manager and an environment variable (read in
:mod:`cunumpy.config`); the function or context manager wins over the variable. The variables
are checked at every call through config's fast raw reader and decoded again only when they
change, so the generated ``Kernel.__call__`` pays about 30 ns per check.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from cunumpy import config

PORTS = config.KERNEL_PORTS
"""The versions a :class:`Kernel` holds, by name."""

# CUNUMPY_USE_METAL, CUNUMPY_METAL_ENGINE and CUNUMPY_KERNEL_PORT are read at every call through
# config's fast reader (the raw values) and decoded again, by config, only when they change.
_read_use_metal = config.raw_reader("CUNUMPY_USE_METAL")
_read_metal_engine = config.raw_reader("CUNUMPY_METAL_ENGINE")
_read_kernel_port = config.raw_reader("CUNUMPY_KERNEL_PORT")
_KERNEL_PORT = "CUNUMPY_KERNEL_PORT"

_metal_setting: list[bool | None] = [None]
"""The value given to :func:`set_metal_dispatch` / :func:`use_metal`; None: automatic."""
_port_setting: list[str | None] = [None]
"""The port given to :func:`force_port` / :func:`use_port`; None: no forcing by function."""
_env_cache: list[Any] = [object(), object(), None, None]
"""Raw (CUNUMPY_USE_METAL, CUNUMPY_METAL_ENGINE) last seen and the decision they gave."""
_port_env_cache: list[Any] = [object(), None]
"""Raw CUNUMPY_KERNEL_PORT last seen and the port it named."""


def _decode(raw: Any) -> str:
    return (os.fsdecode(raw) if isinstance(raw, bytes) else raw).strip().lower()


def _metal_from_environment() -> bool:
    """Metal dispatch as the environment and the hardware decide (no explicit setting)."""
    raw_use = _read_use_metal()
    raw_engine = _read_metal_engine()
    cache = _env_cache
    if raw_use is cache[0] and raw_engine is cache[1]:
        return cache[2]
    decision = config.use_metal()
    if decision is None:
        if raw_engine is not None and _decode(raw_engine) in ("emulator", "emu-metal"):
            decision = True
        else:
            from cunumpy.kernels._availability import metal_available

            decision = metal_available()
    cache[0], cache[1], cache[2] = raw_use, raw_engine, decision
    return decision


def metal_dispatch_enabled() -> bool:
    """Whether :class:`Kernel` calls on NumPy arrays go to the Metal port now.

    In order: the value given to :func:`set_metal_dispatch` / :func:`use_metal` if not None;
    then ``CUNUMPY_USE_METAL`` (``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``);
    then automatic (unset or ``auto``): True when ``CUNUMPY_METAL_ENGINE=emulator`` or when
    :func:`~cunumpy.kernels.metal_available` (an Apple GPU with MLX).
    """
    explicit = _metal_setting[0]
    return _metal_from_environment() if explicit is None else explicit


def set_metal_dispatch(enabled: bool | None) -> bool | None:
    """Turn Metal dispatch on (True), off (False) or back to automatic (None) for the process.

    Returns the previous setting, so it can be restored. See :func:`metal_dispatch_enabled`.
    """
    if enabled is not None and not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"set_metal_dispatch takes True, False or None, got {enabled!r}")
    previous = _metal_setting[0]
    _metal_setting[0] = None if enabled is None else bool(enabled)
    return previous


@contextlib.contextmanager
def use_metal(enabled: bool | None = True) -> Iterator[None]:
    """Inside the block, Metal dispatch is ``enabled`` (True, False or None = automatic).

    The previous setting comes back on exit, also when the block raises.

    Examples
    --------
    >>> import cunumpy as xp
    >>> with xp.kernels.use_metal(False):
    ...     xp.kernels.metal_dispatch_enabled()
    False
    """
    previous = set_metal_dispatch(enabled)
    try:
        yield
    finally:
        _metal_setting[0] = previous


def _check_port(port: Any, what: str) -> str | None:
    if port is None:
        return None
    if not isinstance(port, str) or port.lower() not in PORTS:
        raise ValueError(f"{what} {port!r} is not a port; valid ports are {', '.join(PORTS)}")
    return port.lower()


def _port_from_environment() -> str | None:
    raw = _read_kernel_port()
    cache = _port_env_cache
    if raw is cache[0]:
        return cache[1]
    port = config.kernel_port()
    cache[0], cache[1] = raw, port
    return port


def forced_port() -> str | None:
    """The port every :class:`Kernel` call is sent to now, or None (dispatch by arguments).

    The value given to :func:`force_port` / :func:`use_port` if not None, else
    ``CUNUMPY_KERNEL_PORT`` (``host``, ``cuda``, ``metal``; unset or ``auto``: None).
    """
    port = _port_setting[0]
    return _port_from_environment() if port is None else port


def force_port(port: str | None) -> str | None:
    """Send every :class:`Kernel` call to ``port`` (``"host"``, ``"cuda"``, ``"metal"``).

    ``None`` goes back to dispatch by arguments (or ``CUNUMPY_KERNEL_PORT``). Returns the
    previous setting. A forced port that a kernel lacks follows that kernel's ``missing``
    policy. Forcing ``"cuda"`` on NumPy arrays needs the CUDA emulator
    (``CUNUMPY_CUDA_ENGINE=emulator``).
    """
    checked = _check_port(port, "force_port got")
    previous = _port_setting[0]
    _port_setting[0] = checked
    return previous


@contextlib.contextmanager
def use_port(port: str | None) -> Iterator[None]:
    """Inside the block, every :class:`Kernel` call goes to ``port`` (see :func:`force_port`).

    Examples
    --------
    >>> import numpy as np
    >>> import cunumpy as xp
    >>> def double(x, y):
    ...     y[:] = 2 * x
    >>> k = xp.kernels.Kernel(double)
    >>> with xp.kernels.use_port("host"):
    ...     k.which(np.ones(2), np.empty(2))
    'host'
    """
    previous = force_port(port)
    try:
        yield
    finally:
        _port_setting[0] = previous
