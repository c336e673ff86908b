"""``cupy.fuse`` of the stand-in: the Python function, run on the stand-in's arrays.

CuPy traces the function into one kernel; the stand-in runs it as written (each operation
forwards to NumPy), which gives the results CuPy's fused kernel gives for the elementwise and
reduction operations ``fuse`` supports. The host/device discipline still holds inside: a NumPy
array mixed with stand-in arrays raises ``TypeError`` as the operations do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["Fusion", "fuse"]


class Fusion:
    """A fused function (``cupy.fuse``'s result): calls ``func`` with the arguments."""

    def __init__(self, func: Callable[..., Any], name: str | None = None) -> None:
        if not callable(func):
            raise TypeError(f"cupy.fuse takes a function, got {type(func).__name__}")
        self.func = func
        self.name = name or getattr(func, "__name__", "fused")
        self.__name__ = self.name
        functools.update_wrapper(self, func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def clear_cache(self) -> None:
        """Accepted (nothing is compiled)."""

    def __repr__(self) -> str:
        return f"<Fusion {self.name!r} (cupy stand-in: runs the Python function)>"


def fuse(*args: Any, **kwargs: Any) -> Any:
    """``cupy.fuse``: ``fuse(f)``, ``@fuse`` or ``@fuse(kernel_name=...)``."""
    name = kwargs.pop("kernel_name", None)
    if kwargs:
        raise TypeError(f"cupy.fuse got unexpected keyword arguments {sorted(kwargs)}")
    if len(args) == 1 and callable(args[0]):
        return Fusion(args[0], name)
    if args:
        raise TypeError("cupy.fuse takes a function, or only keyword arguments as a decorator")
    return lambda f: Fusion(f, name)
