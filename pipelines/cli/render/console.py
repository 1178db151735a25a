"""The console every command prints to, its progress bar, and the one-line error exit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from pipelines.core.redact import redact_text

# Rich writes plain text (no colour, no box drawing) when stdout is not a terminal: see tables.py.
# The progress bar is then left out: a log wants the result, not a bar redrawn.
console = Console()


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    )


@contextmanager
def progress_of(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of one task, and the `progress(done, total)` callback a step calls to advance
    it."""
    with progress_bar() as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def fail(message: str) -> None:
    # Errors quote URLs (stores, gateways, targets): never print the credentials in them. Not
    # wrapped: a path or URL cut by a line break can neither be copied nor searched for.
    console.print(f"[red]error:[/red] {escape(redact_text(message))}", soft_wrap=True)
    raise typer.Exit(code=1)
