"""The `ragwatch` command: the root app, its logging option, and every command group hung on it.

Each group's module imports its heavy modules (pandas, SQLAlchemy, ragas) inside its commands, so
that `ragwatch --help` and a mistyped option answer at once. Other distributions add groups through
the `ragwatch.commands` entry points (the harness's `bench` and `demo`, harness/pyproject.toml)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Annotated

import typer

from pipelines.cli import corpus, evals, golden, judge, metrics, traces, workspace
from pipelines.cli.anonymize import anonymize
from pipelines.cli.simulator import simulate_llm

COMMANDS = "ragwatch.commands"
"""The entry-point group of extra command groups: name -> "module:typer_app"."""

app = typer.Typer(
    help="ragwatch: scheduled, honest evaluation of RAG assistants.", no_args_is_help=True
)
app.add_typer(traces.app, name="traces")
app.add_typer(golden.app, name="golden")
app.add_typer(corpus.app, name="corpus")
app.add_typer(workspace.app, name="workspace")
app.add_typer(metrics.app, name="metrics")
app.add_typer(evals.app, name="eval")
app.add_typer(judge.app, name="judge")
app.command("anonymize")(anonymize)
app.command("simulate-llm")(simulate_llm)


def add_command_groups(root: typer.Typer, found: Iterable[EntryPoint]) -> list[str]:
    """Hang each entry point's Typer app on `root` under the entry point's name; return the names
    added. A name the root already has is refused: an installed package must not replace a product
    command."""
    taken = {group.name for group in root.registered_groups} | {
        c.name for c in root.registered_commands
    }
    added = []
    for entry in sorted(found, key=lambda e: e.name):
        if entry.name in taken:
            raise RuntimeError(
                f"{entry.value} ({COMMANDS} entry point) reuses the command name {entry.name!r}"
            )
        root.add_typer(entry.load(), name=entry.name)
        taken.add(entry.name)
        added.append(entry.name)
    return added


add_command_groups(app, entry_points(group=COMMANDS))


@app.callback()
def _setup(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    for chatty in (
        "httpx",
        "great_expectations",
        "sentence_transformers",
    ):  # one line per request / per step
        logging.getLogger(chatty).setLevel(logging.WARNING)
