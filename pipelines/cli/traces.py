"""`ragwatch traces ...`: one day's production traces sampled, anonymized, validated and
versioned."""

from __future__ import annotations

from datetime import date
from typing import Annotated

import typer

from pipelines.cli.options import (
    checked,
    current_settings,
    date_option,
    valid_rate,
)
from pipelines.cli.render.console import console, fail, progress_of
from pipelines.cli.render.traces import print_sample_summary
from pipelines.core import inputs

app = typer.Typer(
    help="Production traces: sample, anonymize, validate, version.", no_args_is_help=True
)


@app.command("sample")
def traces_sample(
    day: Annotated[str, date_option("Day to sample (YYYY-MM-DD, UTC).")],
    rate: Annotated[
        float | None,
        typer.Option(
            help="Sample rate in (0, 1]; default from settings.", callback=checked(valid_rate)
        ),
    ] = None,
    strata: Annotated[
        str | None,
        typer.Option(
            help=f"Comma-separated strata keys from {', '.join(inputs.STRATA)}; default from settings.",
            callback=checked(inputs.strata),
        ),
    ] = None,
    min_per_stratum: Annotated[
        int | None, typer.Option(help="Floor per stratum so small strata appear.", min=0)
    ] = None,
    version: Annotated[bool, typer.Option(help="dvc add + push the published partition.")] = True,
) -> None:
    """Sample, anonymize, validate and publish one day's traces (what the DAG does)."""
    from pipelines.core.validation import ValidationFailed
    from pipelines.stores.traces import StoreError
    from pipelines.traces.steps import run_trace_sampling

    settings = current_settings()
    with progress_of(f"sampling {day}") as progress:
        try:
            result = run_trace_sampling(
                settings,
                date.fromisoformat(day),
                version=version,
                rate=rate,
                strata=strata.split(",") if strata else None,
                min_per_stratum=min_per_stratum,
                progress=progress,
            )
        except (ValidationFailed, StoreError, ValueError) as exc:
            fail(str(exc))
    print_sample_summary(
        result.counts,
        result.validation.describe(),
        result.partition,
        result.version.dvc_md5 if result.version else None,
        result.version.workspace_rev if result.version else None,
    )


@app.command("version")
def traces_version(
    day: Annotated[str, date_option("Promoted day to version (YYYY-MM-DD).")],
) -> None:
    """dvc add + push a promoted day and commit it, after any other day a stopped run left
    unversioned."""
    from pipelines.core.versioning import VersioningError
    from pipelines.traces.steps import promoted_sample, version_trace_sample

    settings = current_settings()
    try:
        version = version_trace_sample(settings, promoted_sample(settings, date.fromisoformat(day)))
    except (FileNotFoundError, VersioningError) as exc:
        fail(str(exc))
    console.print(f"dt={day}: md5 {version.dvc_md5} (workspace commit {version.workspace_rev})")
