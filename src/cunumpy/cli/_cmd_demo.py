"""``cunumpy demo``: the spec's particle push through every engine this machine has; under
``mpiexec`` (or with ``--mpi``), a distributed push checked against the serial run."""

from __future__ import annotations

import argparse
import json

from cunumpy.cli._runners import ENGINES


def _engine_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in ENGINES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown engine(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(ENGINES)}"
        )
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--n", type=int, default=None, metavar="PARTICLES",
        help="number of particles, 3 float32 coordinates each (default: 4 Mi with a GPU, "
        "1 Mi when only the CPU emulators are available)",
    )
    parser.add_argument(
        "--emulator-n", type=int, default=None, metavar="PARTICLES",
        help="particles the CPU emulators push, the first ones of the --n (default: all of "
        "them when --n is given, at most 1 Mi otherwise)",
    )
    parser.add_argument("--steps", type=int, default=None, metavar="NSTEPS",
                        help="steps of the push, a compile-time constant of the kernels "
                        "(default 200; under MPI, steps of the distributed push, default 10)")
    parser.add_argument("--engines", type=_engine_list, default=None, metavar="LIST",
                        help=f"comma-separated engines to try (default all: {','.join(ENGINES)})")
    parser.add_argument("--rtol", type=float, default=None,
                        help="largest relative error counted as agreement (default: "
                        "2 * NSTEPS * float32 epsilon)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="also write the results as JSON to PATH")
    parser.add_argument("--plain", action="store_true",
                        help="plain text output even when rich is installed")
    parser.add_argument("--mpi", action="store_true",
                        help="run the distributed push (halo exchange and migration on a 2-D "
                        "decomposition, checked against the serial run) also on one process; "
                        "it runs by itself when the demo is started by mpiexec with several "
                        "ranks")


def run(args: argparse.Namespace) -> int:
    from cunumpy import config
    from cunumpy.cli._console import Console
    from cunumpy.cli._demo import run_demo

    if args.mpi or config.mpi_launched():
        from cunumpy.cli._demo_mpi import run_cli

        done = run_cli(args, Console(plain=args.plain))
        if done is not None:
            return done

    if args.n is not None and args.n < 1:
        raise SystemExit("cunumpy demo: --n must be a positive number of particles")
    args.steps = 200 if args.steps is None else args.steps
    if args.steps < 1:
        raise SystemExit("cunumpy demo: --steps must be at least 1")
    if args.emulator_n is not None and args.emulator_n < 1:
        raise SystemExit("cunumpy demo: --emulator-n must be a positive number of particles")
    report = run_demo(particles=args.n, nsteps=args.steps, engines=args.engines,
                      emulator_particles=args.emulator_n,
                      seed=args.seed, rtol=args.rtol, console=Console(plain=args.plain))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report.as_dict(), fh, indent=2)
    return 0 if report.ok else 1
