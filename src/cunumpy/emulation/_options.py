"""Options of an emulated launch, with defaults taken from the environment."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, replace

from cunumpy import config

__all__ = ["EmulatorOptions", "checking_races", "resolve_options"]

_RACES_DEFAULT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cunumpy_emulator_races", default=False
)


@dataclass(frozen=True)
class EmulatorOptions:
    """How the CPU emulator runs a launch.

    Parameters
    ----------
    checks : bool, default True
        Bounds-check every buffer and threadgroup array access, poison outputs (unless an
        ``init_value`` is given) and report unwritten elements, check barriers and SIMD lanes.
        Off: raw pointers, no poisoning, faster; barrier divergence and inactive SIMD lanes are
        still reported.
        Environment default: ``CUNUMPY_EMULATOR_CHECKS=0`` turns checks off.
    random_order : bool, default False
        Run threadgroups (and the threads inside each group) in a random order, to expose
        kernels whose result depends on the order. ``CUNUMPY_EMULATOR_ORDER=random``.
    seed : int or None, default None
        Seed of the random order; None draws a fresh one per launch.
    isolated : bool, default False
        Run the launch in a child process, so that a crashing kernel raises
        :class:`~cunumpy.emulation.errors.KernelCrashError` instead of killing Python.
        ``CUNUMPY_EMULATOR_ISOLATED=1``.
    races : bool or None, default None
        Check data races (:class:`~cunumpy.emulation.errors.DataRaceError`): the kernel is
        built with race-checking instrumentation (a separate cached library), and every access
        to a writable buffer or a shared array is checked against the memory model in
        ``docs/races.md``. Implies ``checks``. None: ``CUNUMPY_EMULATOR_RACES`` when set, else
        on inside :func:`~cunumpy.testing.assert_kernels_agree` and the pytest plugin's kernel
        fixtures and off elsewhere.
    strict_barriers : bool, default False
        Report threads that returned before a barrier the others wait at
        (:class:`~cunumpy.emulation.errors.BarrierDivergenceError`). Off, they count as arrived,
        as on NVIDIA and Apple GPUs; live threads waiting at different barriers are an error
        either way.
    undefined : {"error", "warn"}, default "error"
        What undefined behaviour does (CUDA emulator: a warp shuffle that reads a lane outside
        its mask or a lane that takes no part, a calling lane missing from its mask, ...):
        ``"error"`` stops the launch with
        :class:`~cunumpy.emulation.errors.UndefinedBehaviorError` (an
        :class:`~cunumpy.emulation.errors.InactiveLaneError` for an inactive lane); ``"warn"``
        emits an :class:`~cunumpy.emulation.errors.UndefinedBehaviorWarning` and goes on.
        ``CUNUMPY_EMULATOR_UNDEFINED=warn``.
    """

    checks: bool = True
    random_order: bool = False
    seed: int | None = None
    isolated: bool = False
    races: bool | None = None
    strict_barriers: bool = False
    undefined: str = "error"

    def __post_init__(self) -> None:
        if self.undefined not in config.EMULATOR_UNDEFINED:
            raise ValueError(
                f"EmulatorOptions(undefined={self.undefined!r}) must be one of "
                f"{', '.join(map(repr, config.EMULATOR_UNDEFINED))}"
            )


@contextlib.contextmanager
def checking_races(on: bool = True) -> Iterator[None]:
    """Within the block, emulated launches whose options leave ``races`` None check races
    (unless ``CUNUMPY_EMULATOR_RACES`` says otherwise)."""
    token = _RACES_DEFAULT.set(on)
    try:
        yield
    finally:
        _RACES_DEFAULT.reset(token)


def _races_default() -> bool:
    env = config.emulator_races()
    return _RACES_DEFAULT.get() if env is None else env


def resolve_options(options: EmulatorOptions | None) -> EmulatorOptions:
    """``options`` as given (``races=None`` resolved), or the defaults from the environment."""
    if options is not None:
        if not isinstance(options, EmulatorOptions):
            raise TypeError(
                f"options must be an EmulatorOptions, not {type(options).__name__}"
            )
        races = _races_default() if options.races is None else options.races
        if races and not options.checks:
            return replace(options, races=True, checks=True)
        return options if options.races is races else replace(options, races=races)
    races = _races_default()
    return replace(
        EmulatorOptions(),
        checks=config.emulator_checks() or races,
        random_order=config.emulator_order() == "random",
        isolated=config.emulator_isolated(),
        races=races,
        undefined=config.emulator_undefined(),
    )
