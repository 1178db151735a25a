"""What commands share: input checks as typer callbacks, common options, the settings."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated

import typer

from pipelines.cli.render.console import fail
from pipelines.core import inputs
from pipelines.core.settings import Settings, SettingsError, load_settings


def checked(check):
    """A typer callback running one of `pipelines.core.inputs`' checks: a refused value exits 2 with
    its reason."""

    def callback(value):
        if value is not None:
            try:
                check(value)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
        return value

    return callback


def valid_rate(value: float) -> None:
    if not 0 < value <= 1:
        raise ValueError(f"sample rate {value} is not in (0, 1]")


def valid_target_url(value: str) -> None:
    from pipelines.evaluation.runs.params import target_url

    target_url(value)


def valid_run_id(value: str) -> None:
    from pipelines.evaluation.runs.params import offline_run_id

    offline_run_id(value)


def valid_metrics(value: str) -> None:
    from pipelines.evaluation.runs.params import ALL_JUDGE_METRICS

    unknown = [m for m in value.split(",") if m not in ALL_JUDGE_METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; choose from {ALL_JUDGE_METRICS}")


def date_option(help: str):
    """`--date`, a YYYY-MM-DD day checked as every date is; `help` says which day and its
    default."""
    return typer.Option("--date", help=help, callback=checked(inputs.day))


def target_name_option(help: str):
    """A target's name, checked as every target name is; `help` says what it names and its
    default."""
    return typer.Option(help=help, callback=checked(inputs.target_name))


DateOption = date_option("YYYY-MM-DD (UTC).")
JudgeMetricsOption = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated judge metrics; default: all.", callback=checked(valid_metrics)
    ),
]
SubsetOption = Annotated[
    int | None,
    typer.Option(
        help="Evaluate a stable subset of this many items, stratified by question type.", min=1
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Estimate the requests and tokens per stage from the last runs; send nothing, write nothing.",
    ),
]


def current_settings() -> Settings:
    """The settings, or one line per configuration problem naming the variable to set."""
    try:
        return load_settings()
    except SettingsError as exc:
        fail(f"invalid configuration:\n{exc}")


NameOption = Annotated[
    str | None,
    typer.Option(
        "--name",
        help="Golden set name; default from params.yaml.",
        callback=checked(inputs.golden_name),
    ),
]


def golden_params(name: str | None = None):
    from pipelines.golden.params import load_golden_params

    try:
        return load_golden_params(current_settings(), name=name)
    except ValueError as exc:
        fail(str(exc))


def today() -> date:
    return datetime.now(UTC).date()
