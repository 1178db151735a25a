"""The trace-sampling stage as four steps with explicit inputs and outputs.

stage (select, read, anonymize, quarantine, write a staged partition) -> validate (GX) -> promote
(swap the staged partition into place) -> version (dvc add + push, git commit). Each step is what
one Airflow task calls and returns a small typed result that travels through XCom as JSON;
`run_trace_sampling` chains them for the CLI.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from datetime import date
from pathlib import Path

from pydantic import BaseModel, Field

from pipelines import inputs
from pipelines.batching import available_cpus
from pipelines.native_heap import return_freed_memory
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.settings import Settings
from pipelines.stores.partitions import promote, read_manifest
from pipelines.stores.traces import TraceStore
from pipelines.traces.sampling import sample_day
from pipelines.validation import ValidationPassed
from pipelines.workspace import PartitionPaths, Workspace


class SampleCounts(BaseModel):
    """What a day's sample holds; the partition's manifest records the same counts."""

    day: date
    population: int
    selected: int
    sampled: int
    quarantined: int
    quarantine_reasons: dict[str, int] = Field(default_factory=dict)
    pii_counts: dict[str, int] = Field(default_factory=dict)


class StagedSample(BaseModel):
    counts: SampleCounts
    staged: Path
    """The staged partition folder, handed from task to task (shared storage with several workers)."""


class PromotedSample(BaseModel):
    day: date
    partition: Path
    """The partition folder, relative to the data workspace."""


class SampleVersion(BaseModel):
    dvc_md5: str
    workspace_rev: str
    remote: str


class TraceSampling(BaseModel):
    """Every step's result of one run, for the CLI's summary."""

    counts: SampleCounts
    validation: ValidationPassed
    partition: Path
    version: SampleVersion | None = None


def stage_trace_sample(
    settings: Settings,
    day: date,
    *,
    rate: float | None = None,
    strata: list[str] | None = None,
    min_per_stratum: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> StagedSample:
    # A value left out (None) is the setting; a given one is checked the same way, whatever the entry point:
    # strata values are published in the manifest, so only the categorical fields may define strata.
    rate = settings.sample_rate if rate is None else rate
    if not 0 < rate <= 1:
        raise ValueError(f"sample rate {rate} is not in (0, 1]")
    min_per_stratum = settings.min_per_stratum if min_per_stratum is None else min_per_stratum
    if min_per_stratum < 0:
        raise ValueError(f"min_per_stratum {min_per_stratum} is negative")
    strata = inputs.strata(settings.strata if strata is None else strata)
    # Every run stages in its own folder: two runs of the same day (a retry racing a backfill) never share one.
    staged = Workspace.from_settings(settings).traces_staging(day, uuid.uuid4().hex)
    try:
        summary = sample_day(
            TraceStore.from_settings(settings),
            Anonymizer(settings.pseudonym_key),
            day,
            staged,
            rate=rate,
            strata=strata,
            min_per_stratum=min_per_stratum,
            max_field_chars=settings.max_field_chars,
            workers=settings.sample_workers or available_cpus(),
            progress=progress,
        )
    except BaseException:
        shutil.rmtree(staged.root, ignore_errors=True)  # a failed attempt leaves no folder behind
        raise
    return StagedSample(counts=SampleCounts.model_validate(summary.as_dict()), staged=staged.root)


def validate_trace_sample(staged: StagedSample) -> ValidationPassed:
    from pipelines.traces.quality import validate_trace_partition

    report = validate_trace_partition(PartitionPaths(staged.staged))
    return report.passed_or_raise(f"the previous version of dt={staged.counts.day}", staged.staged)


def promote_trace_sample(settings: Settings, staged: StagedSample) -> PromotedSample:
    """Swap the validated staged partition into place (readers see the old one or the new one)."""
    workspace = Workspace.from_settings(settings)
    final = workspace.traces_partition(staged.counts.day)
    promote(staged.staged, final.root)
    return PromotedSample(day=staged.counts.day, partition=workspace.relative(final.root))


def version_trace_sample(settings: Settings, promoted: PromotedSample) -> SampleVersion:
    from pipelines.versioning import ensure_workspace, version_directory

    workspace = Workspace.from_settings(settings)
    ensure_workspace(workspace, settings.resolved_dvc_remote)
    version = version_directory(workspace, workspace.root / promoted.partition, f"traces: sample of {promoted.day}")
    return SampleVersion(dvc_md5=version.md5, workspace_rev=version.git_rev, remote=version.remote)


def run_trace_sampling(settings: Settings, day: date, *, version: bool = True, **sample_options) -> TraceSampling:
    """Every step in one process (`ragwatch traces sample`), its memory returned between the steps.

    Each Airflow task is a process of its own and gives its memory back when it ends. Here the stage's
    freed heap would stay with the process while validation imports Great Expectations and starts its
    workers, when the run peaks: on a 1 M-trace day, returning it lowers the process's peak from 552 to
    511 MB and the tree's from 961 to 936 MB (2 CPUs: each validation worker adds ~200 MB).
    """
    staged = stage_trace_sample(settings, day, **sample_options)
    return_freed_memory()
    validation = validate_trace_sample(staged)
    return_freed_memory()
    promoted = promote_trace_sample(settings, staged)
    versioned = version_trace_sample(settings, promoted) if version else None
    return TraceSampling(counts=staged.counts, validation=validation, partition=promoted.partition, version=versioned)


def published_counts(settings: Settings, day: date) -> SampleCounts:
    """The counts of a day's promoted partition, from its manifest."""
    return SampleCounts.model_validate(read_manifest(Workspace.from_settings(settings).traces_partition(day).manifest))

