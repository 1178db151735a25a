"""`ragwatch judge ...`: people's labels of the judge-audit queue, and how far the judge can be
trusted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from pipelines.cli.options import (
    current_settings,
)
from pipelines.cli.render.console import console, fail

app = typer.Typer(
    help="How far the judge can be trusted: people's labels of the daily audit queue.",
    no_args_is_help=True,
)
labels_app = typer.Typer(
    help="Labels of the judge-audit queue (inbox/judge-audit-*.csv).", no_args_is_help=True
)
app.add_typer(labels_app, name="labels")


@labels_app.command("import")
def judge_labels_import(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True,
            dir_okay=False,
            help="A judge-audit CSV/JSONL from the inbox with its label column filled (yes/no).",
        ),
    ],
) -> None:
    """Check a labelled judge-audit file and store its labels; every next eval run calibrates its
    judge on them."""
    from pipelines.core.workspace import Workspace
    from pipelines.evaluation.outputs.formatting import number
    from pipelines.evaluation.outputs.judge_audit import LabelFileError, import_labels
    from pipelines.evaluation.statistics.judge_agreement import trustworthy

    try:
        result = import_labels(Workspace.from_settings(current_settings()), file)
    except LabelFileError as exc:
        fail(str(exc))
    if not result.imported:
        console.print(
            f"no row of {escape(file.name)} is labelled yet: fill its label column with yes or no, then import it"
        )
        raise typer.Exit(code=2)
    console.print(f"{result.imported} labels imported into {result.path}.")
    for (suite, metric), agreed in result.agreement.items():
        n = result.labels[(suite, metric)]
        trusted = trustworthy(n, agreed.kappa)
        console.print(
            f"{suite} {metric}: {n} labels so far, κ {number(agreed.kappa)}, accuracy {number(agreed.accuracy)} "
            f"(unweighted): "
            + ("[green]trustworthy" if trusted else "[red]not trustworthy")
            + "[/]; the next eval run's report weighs them and corrects the judge's mean by its error rates."
        )
