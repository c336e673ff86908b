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
    """

    checks: bool = True
    random_order: bool = False
    seed: int | None = None
    isolated: bool = False


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
    )
