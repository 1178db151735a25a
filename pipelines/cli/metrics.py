"""`ragwatch metrics ...`: scores of a user's own runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.options import (
    checked,
)
from pipelines.cli.render.console import fail
from pipelines.core import inputs

app = typer.Typer(help="Score your own runs.", no_args_is_help=True)


@app.command("retrieval")
def metrics_retrieval(
    source: Annotated[
        Path,
        typer.Option(
            "--in",
            exists=True,
            dir_okay=False,
            help='JSONL of {"query_id", "retrieved_ids", "gold_ids"}.',
        ),
    ],
    k: Annotated[
        str, typer.Option(help="Comma-separated cut-offs.", callback=checked(inputs.cutoffs))
    ] = "1,3,5,10",
) -> None:
    """recall@k, precision@k and MRR of a run file, as one JSON object.

    Duplicate ids in a retrieved list count once. @k is measured the standard way (trec_eval,
    ir_measures) over every query: a list shorter than k counts its missing ranks as not relevant;
    `n_short@k` says how many queries retrieved fewer than k distinct ids, `mean_depth` how many
    they retrieved on average."""
    from pipelines.evaluation.metrics.retrieval import score_run_file

    try:
        ks = [int(v) for v in k.split(",") if v.strip()]
        result = score_run_file(source, ks)
    except ValueError as exc:
        fail(str(exc))
    print(json.dumps(result))
    for cut in sorted(
        int(name.partition("@")[2]) for name in result if name.startswith("n_short@")
    ):
        if result[f"n_short@{cut}"]:
            print(
                f"k={cut}: {result[f'n_short@{cut}']} of {result['n']} queries retrieved fewer than {cut} distinct ids; "
                f"their missing ranks count as not relevant (precision@{cut} below 1 for them)",
                file=sys.stderr,
            )
