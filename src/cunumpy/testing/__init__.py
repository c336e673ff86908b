"""Test helpers for kernel ports. Importing :mod:`cunumpy` does not import this module or pytest."""

from __future__ import annotations

__all__: list[str] = []
