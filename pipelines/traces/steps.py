"""The trace-sampling stage as four steps with explicit inputs and outputs.

Each step is what one Airflow task calls; `run_trace_sampling` chains them for the CLI.
Steps exchange small dicts (paths, counts, hashes): they travel through XCom unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from pipelines.privacy.anonymizer import Anonymizer
from pipelines.quality import validate_trace_partition
from pipelines.settings import Settings
from pipelines.stores.partitions import partition_path, publish, read_manifest, staging_path
from pipelines.stores.traces import TraceStore
from pipelines.traces.sampling import sample_day
from pipelines.versioning import ensure_workspace, version_directory

DATASET = "traces"


class ValidationFailed(RuntimeError):
    """The staged data broke an expectation; nothing was published."""


def stage_trace_sample(
    settings: Settings,
    day: date,
    *,
    rate: float | None = None,
    strata: list[str] | None = None,
    min_per_stratum: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    workspace = settings.resolved_workspace
    staged = staging_path(workspace, DATASET, day)
    summary = sample_day(
        TraceStore.from_settings(settings),
        Anonymizer(settings.pseudonym_key),
        day,
        staged,
        rate=settings.sample_rate if rate is None else rate,
        strata=settings.strata if strata is None else strata,
        min_per_stratum=settings.min_per_stratum if min_per_stratum is None else min_per_stratum,
        max_field_chars=settings.max_field_chars,
        progress=progress,
    )
    return {**summary.as_dict(), "staged": str(staged)}


def validate_trace_sample(staged: dict[str, Any]) -> dict[str, Any]:
    report = validate_trace_partition(Path(staged["staged"]))
    if not report.success:
        raise ValidationFailed(
            f"{report.describe()}\nNothing was published; the previous version of dt={staged['day']} is intact. "
            f"The staged files stay in {staged['staged']} for inspection."
        )
    return {**staged, "validation": f"passed ({len(report.checks)} expectations)"}


def publish_trace_sample(settings: Settings, validated: dict[str, Any]) -> dict[str, Any]:
    day = date.fromisoformat(validated["day"])
    final = partition_path(settings.resolved_workspace, DATASET, day)
    publish(Path(validated["staged"]), final)
    return {**validated, "partition": str(final.relative_to(settings.resolved_workspace))}


def version_trace_sample(settings: Settings, published: dict[str, Any]) -> dict[str, Any]:
    workspace = settings.resolved_workspace
    ensure_workspace(workspace, settings.resolved_dvc_remote)
    version = version_directory(workspace, Path(published["partition"]), f"traces: sample of {published['day']}")
    return {**published, "dvc_md5": version.md5, "workspace_rev": version.git_rev, "remote": version.remote}


def run_trace_sampling(settings: Settings, day: date, *, version: bool = True, **sample_options) -> dict[str, Any]:
    staged = stage_trace_sample(settings, day, **sample_options)
    published = publish_trace_sample(settings, validate_trace_sample(staged))
    return version_trace_sample(settings, published) if version else published


def published_manifest(settings: Settings, day: date) -> dict[str, Any]:
    return read_manifest(partition_path(settings.resolved_workspace, DATASET, day))
