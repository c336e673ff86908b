"""The ``cunumpy`` command: ``cunumpy info``, ``cunumpy demo``, ``cunumpy bench``.

Each subcommand lives in its own module with two functions, ``add_arguments(parser)`` and
``run(args) -> int``; this module only wires them up, importing a subcommand's module when it is
chosen so that ``cunumpy info`` stays quick.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

__all__ = ["main"]

SUBCOMMANDS = {
    "info": ("cunumpy.cli._cmd_info", "what backends, devices and emulators this machine has"),
    "demo": ("cunumpy.cli._cmd_demo", "a particle push through every engine this machine has"),
    "bench": ("cunumpy.cli._cmd_bench", "benchmarks across engines and sizes, with plots"),
}


def _available() -> dict[str, tuple[str, str]]:
    found = {}
    for name, (module, help_text) in SUBCOMMANDS.items():
        if importlib.util.find_spec(module) is not None:
            found[name] = (module, help_text)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    commands = _available()
    parser = argparse.ArgumentParser(
        prog="cunumpy", description="cunumpy: NumPy/CuPy namespace and checked GPU kernels."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in commands.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(sub_parser)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return int(importlib.import_module(commands[args.command][0]).run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
