"""Options of an emulated launch, with defaults taken from the environment."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cunumpy import config

__all__ = ["EmulatorOptions", "resolve_options"]


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
    undefined: str = "error"

    def __post_init__(self) -> None:
        if self.undefined not in config.EMULATOR_UNDEFINED:
            raise ValueError(
                f"EmulatorOptions(undefined={self.undefined!r}) must be one of "
                f"{', '.join(map(repr, config.EMULATOR_UNDEFINED))}"
            )


def resolve_options(options: EmulatorOptions | None) -> EmulatorOptions:
    """``options`` as given, or the defaults from the environment when None."""
    if options is not None:
        if not isinstance(options, EmulatorOptions):
            raise TypeError(
                f"options must be an EmulatorOptions, not {type(options).__name__}"
            )
        return options
    return replace(
        EmulatorOptions(),
        checks=config.emulator_checks(),
        random_order=config.emulator_order() == "random",
        isolated=config.emulator_isolated(),
        undefined=config.emulator_undefined(),
    )
