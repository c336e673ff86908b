"""Terminal output for the CLI: rich tables and progress when rich is installed, plain text else."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["Console"]


class Console:
    """Prints tables and shows what a long step is doing.

    Uses :mod:`rich` when it can be imported (a spinner with the step's name on a terminal, a
    table with colours) and falls back to plain lines otherwise. Output that is not a terminal
    gets a wide, fixed layout so that names are never folded.
    """

    def __init__(self, plain: bool = False) -> None:
        self._rich: Any = None
        if not plain:
            try:
                from rich.console import Console as RichConsole
            except ImportError:
                pass
            else:
                console = RichConsole()
                if not console.is_terminal:
                    console = RichConsole(width=160)
                self._rich = console

    @property
    def uses_rich(self) -> bool:
        return self._rich is not None

    def print(self, text: str = "", style: str | None = None) -> None:
        if self._rich is not None:
            from rich.markup import escape

            self._rich.print(escape(text), style=style, highlight=False)
        else:
            print(text, flush=True)

    @contextlib.contextmanager
    def status(self, text: str) -> Iterator[None]:
        """Show ``text`` while the block runs (a spinner on a terminal, a line otherwise)."""
        start = time.perf_counter()
        if self._rich is not None and self._rich.is_terminal:
            from rich.markup import escape

            with self._rich.status(escape(text) + " ..."):
                yield
            return
        print(f"  {text} ...", end="", flush=True, file=sys.stdout)
        try:
            yield
        finally:
            print(f" {time.perf_counter() - start:.1f} s", flush=True)

    @contextlib.contextmanager
    def progress(self, total: int, text: str) -> Iterator[Callable[[str], None]]:
        """A progress bar over ``total`` steps; the block calls ``step(description)`` when it
        starts each step (a bar on a terminal, one numbered line per step otherwise)."""
        if self._rich is not None and self._rich.is_terminal:
            from rich.markup import escape
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn())
            with Progress(*columns, console=self._rich, transient=True) as bar:
                task = bar.add_task(escape(text), total=total)
                started = [False]

                def step(description: str) -> None:
                    bar.update(task, advance=1 if started[0] else 0,
                               description=escape(f"{text}: {description}"))
                    started[0] = True

                yield step
                bar.update(task, completed=total)
            return
        count = [0]

        def plain_step(description: str) -> None:
            count[0] += 1
            print(f"  [{count[0]}/{total}] {description}", flush=True)

        yield plain_step

    def table(
        self,
        title: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        styles: Sequence[str | None] | None = None,
    ) -> None:
        """Print a table; ``styles`` gives an optional rich style per row."""
        if self._rich is not None:
            from rich.markup import escape
            from rich.table import Table

            table = Table(title=escape(title), title_justify="left")
            for i, name in enumerate(columns):
                table.add_column(escape(name), no_wrap=i < 2, justify="left" if i < 2 else "right")
            for i, row in enumerate(rows):
                style = styles[i] if styles else None
                table.add_row(*(escape(str(c)) for c in row), style=style)
            self._rich.print(table)
            return
        widths = [max(len(str(c)) for c in col) for col in zip(columns, *rows)]
        print(title)
        print("  ".join(f"{c:<{w}}" for c, w in zip(columns, widths)))
        for row in rows:
            print("  ".join(f"{c!s:<{w}}" for c, w in zip(row, widths)))
        sys.stdout.flush()
