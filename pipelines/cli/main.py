"""The `ragwatch` command: the root app, its logging option, and every command group hung on it.

Each group's module imports its heavy modules (pandas, SQLAlchemy, ragas) inside its commands, so that
`ragwatch --help` and a mistyped option answer at once."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from pipelines.cli import bench, corpus, demo, evals, golden, judge, metrics, traces, workspace
from pipelines.cli.anonymize import anonymize
from pipelines.cli.simulator import simulate_llm

app = typer.Typer(help="ragwatch: scheduled, honest evaluation of RAG assistants.", no_args_is_help=True)
app.add_typer(traces.app, name="traces")
app.add_typer(demo.app, name="demo")
app.add_typer(bench.app, name="bench")
app.add_typer(golden.app, name="golden")
app.add_typer(corpus.app, name="corpus")
app.add_typer(workspace.app, name="workspace")
app.add_typer(metrics.app, name="metrics")
app.add_typer(evals.app, name="eval")
app.add_typer(judge.app, name="judge")
app.command("anonymize")(anonymize)
app.command("simulate-llm")(simulate_llm)


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")] = False) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    for chatty in ("httpx", "great_expectations", "sentence_transformers"):  # one line per request / per step
        logging.getLogger(chatty).setLevel(logging.WARNING)
