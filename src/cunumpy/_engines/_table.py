"""The one table of engines: every engine that runs kernels, its dialect and its one spelling.

``cunumpy info``, the pytest plugin, the demo, ``assert_kernels_agree`` and dispatch ask this
table which engines exist, which one a setting selects, and whether each can run here. Adding an
engine is adding one row (see ``docs/architecture.md``).

Each engine has one name, used for ids, cache paths, error tags and test ids: ``cupy``,
``emu-cuda``, ``mlx``, ``emu-metal``, ``metal-cuda`` (Metal kernels translated to CUDA; its
``CUNUMPY_METAL_ENGINE`` value is ``cuda``). ``CUNUMPY_CUDA_ENGINE`` / ``CUNUMPY_METAL_ENGINE`` also
accept ``emulator`` (the dialect's CPU emulator) and, for Metal, ``auto``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from cunumpy._engines import _status
from cunumpy._engines._base import DIALECTS, EngineStatus

__all__ = [
    "ENGINES",
    "EngineRow",
    "canonical_name",
    "engine_names",
    "engine_status",
    "row",
    "select",
    "setting_value",
]


@dataclass(frozen=True)
class EngineRow:
    """One engine of the table."""

    name: str
    """The one spelling (ids, cache paths, error tags, test ids)."""
    dialect: str
    """``cuda`` or ``metal``."""
    label: str
    """What ``cunumpy info`` and the demo call it."""
    gpu: bool
    """True for a real GPU, False for a CPU emulator."""
    array_space: str
    """``device`` (GPU memory) or ``host`` (NumPy arrays)."""
    setting: str
    """The value of ``CUNUMPY_<DIALECT>_ENGINE`` that selects it."""
    status: Callable[[], EngineStatus]
    """Whether it can run here, and why (not)."""
    hardware: str = ""
    """The GPU it needs: ``cuda`` (an NVIDIA GPU; ``CUNUMPY_REQUIRE_CUDA``), ``metal`` (an Apple
    GPU; ``CUNUMPY_REQUIRE_METAL``) or ``""`` (a C++ compiler only)."""


ENGINES: dict[str, EngineRow] = {
    row.name: row
    for row in (
        EngineRow("cupy", "cuda", "CUDA, CuPy (GPU)", True, "device", "cupy",
                  _status.cupy_engine_status, "cuda"),
        EngineRow("emu-cuda", "cuda", "CUDA, CPU emulator", False, "host", "emulator",
                  functools.partial(_status.emulator_status, "cuda")),
        EngineRow("mlx", "metal", "Metal, MLX (GPU)", True, "device", "mlx",
                  _status.mlx_engine_status, "metal"),
        EngineRow("emu-metal", "metal", "Metal, CPU emulator", False, "host", "emulator",
                  functools.partial(_status.emulator_status, "metal")),
        EngineRow("metal-cuda", "metal", "Metal, translated to CUDA (GPU)", True, "device",
                  "cuda", _status.metal_cuda_status, "cuda"),
    )
}
"""Every engine, by its one name, in the order ``cunumpy info`` shows them."""

_VARIABLES = {"cuda": "CUNUMPY_CUDA_ENGINE", "metal": "CUNUMPY_METAL_ENGINE"}


def engine_names(dialect: str | None = None) -> tuple[str, ...]:
    """The engines' names, of one dialect or of all."""
    return tuple(n for n, r in ENGINES.items() if dialect is None or r.dialect == dialect)


def canonical_name(dialect: str, name: str) -> str:
    """The engine's one name for a setting value or an engine name of ``dialect``.

    ``emulator`` is the dialect's CPU emulator; an engine's name is itself. Raises ValueError
    for anything else (``auto`` included: see :func:`select`).
    """
    if dialect not in DIALECTS:
        raise ValueError(f"unknown kernel dialect {dialect!r}; dialects are {', '.join(DIALECTS)}")
    for r in ENGINES.values():
        if r.dialect == dialect and name in (r.name, r.setting):
            return r.name
    raise ValueError(
        f"unknown {dialect} engine {name!r}; engines are "
        f"{', '.join(engine_names(dialect))} (or emulator)"
    )


def row(name: str) -> EngineRow:
    """The table row of the engine called ``name``."""
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(
            f"unknown kernel engine {name!r}; known engines: {', '.join(ENGINES)}"
        ) from None


def setting_value(name: str) -> str:
    """The ``CUNUMPY_<DIALECT>_ENGINE`` value that selects the engine called ``name``."""
    return row(name).setting


def engine_status(name: str) -> EngineStatus:
    """Whether the engine called ``name`` can launch here, and why (not).

    The expensive parts (importing CuPy or MLX, finding a compiler) are cached by the rows'
    status functions; this asks them again at every call, so a test can fake them.
    """
    return row(name).status()


def select(dialect: str, setting: str) -> str:
    """The engine a launch of a ``dialect`` kernel uses for a setting value.

    ``auto`` (Metal only) is ``mlx`` where MLX reports a working Metal GPU, else ``emu-metal``.
    """
    if dialect == "metal" and setting == "auto":
        return "mlx" if engine_status("mlx").ok else "emu-metal"
    return canonical_name(dialect, setting)
