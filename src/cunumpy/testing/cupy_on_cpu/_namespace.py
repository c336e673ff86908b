"""CuPy's namespace, forwarded to NumPy (filled in by the next commit)."""

from __future__ import annotations

from typing import Any


class ufunc:  # noqa: N801 - CuPy's name
    """Placeholder replaced by the forwarding ufunc."""


def namespace() -> Any:
    import sys

    return sys.modules["cunumpy.testing.cupy_on_cpu"]


def lookup_numpy_function(func: Any) -> Any:
    return None


def get(name: str) -> Any:
    raise AttributeError(f"module 'cupy' has no attribute {name!r}")


def names() -> list[str]:
    return []
