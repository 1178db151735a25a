"""The trace-sampling stage as steps with explicit inputs and outputs.

select (the day's ids, written to the workspace once, and the shards' plan) -> shard × N (read,
anonymize, quarantine and write a contiguous range of the staged partition's parts) -> merge (check
every planned shard wrote its parts, write the manifest) -> validate (GX) -> promote (swap the
staged partition into place) -> version (dvc add + push, git commit). Each step is what one Airflow
task calls and returns a small typed result that travels through XCom as JSON; `stage_trace_sample`
runs the first three in one process and `run_trace_sampling` chains them all for the CLI.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Callable
from datetime import date
from pathlib import Path

from pydantic import BaseModel, Field

from pipelines.core import inputs
from pipelines.core.batching import available_cpus
from pipelines.core.native_heap import return_freed_memory
from pipelines.core.settings import Settings
from pipelines.core.validation import ValidationPassed
from pipelines.core.workspace import PartitionPaths, StaleVersion, Workspace
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.stores.partitions import promote, read_manifest, write_manifest
from pipelines.stores.trace_sources import open_trace_source
from pipelines.stores.trace_sources.file_store import FileTraceStore
from pipelines.traces import shards
from pipelines.traces.sampling import day_interval, select_day, write_parts
from pipelines.traces.stale_attempts import own_attempt, remove_stale_attempts

log = logging.getLogger(__name__)
DAMAGE_COUNTS = (
    "lines_truncated_file",
    "lines_unreadable_line",
    "spans_lost",
    "rejected_truncated_file",
    "rejected_unreadable_line",
    "rejected_incomplete_trace",
)


class SampleCounts(BaseModel):
    """What a day's sample holds; the partition's manifest records the same counts."""

    day: date
    population: int
    selected: int
    sampled: int
    quarantined: int
    quarantine_reasons: dict[str, int] = Field(default_factory=dict)
    pii_counts: dict[str, int] = Field(default_factory=dict)
    source_counts: dict[str, int] = Field(default_factory=dict)
    """From a span-file source: spans read, kept and lost, damaged lines, and the day's traces per
    outcome."""


class PlannedShard(BaseModel):
    """One `shard` task's work: which selection (day and attempt) and which of its parts and
    rows."""

    day: date
    attempt: str
    """The run's own staging folders: two runs of the same day (a retry racing a backfill) never
    share one."""
    index: int
    """The shard's number, and the `shard` task's map index."""
    parts: tuple[int, int]
    rows: tuple[int, int]
    """The selected rows its parts hold (of the day's sorted ids)."""


class StagedSample(BaseModel):
    counts: SampleCounts
    staged: Path
    """The staged partition folder, handed from task to task (shared storage with several
    workers)."""
    attempt: str = ""
    """The attempt whose selection promotion cleans up."""


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


def select_trace_sample(
    settings: Settings,
    day: date,
    *,
    rate: float | None = None,
    strata: list[str] | None = None,
    min_per_stratum: int | None = None,
    shard_count: int | None = None,
    attempt: str | None = None,
) -> list[PlannedShard]:
    """Select the day's traces (once, under `RAGWATCH_SELECTION_STATEMENT_TIMEOUT_S`), write the ids
    and the plan to the workspace, and return the shards to map over (`RAGWATCH_SAMPLE_SHARDS`, at
    most one per part). Attempts that killed runs left in the staging folder go first
    (`stale_attempts`). `attempt`: the id of an attempt this process owns (`own_attempt`); default,
    a new one."""
    # A value left out (None) is the setting; a given one is checked the same way, whatever the
    # entry point: strata values are published in the manifest, so only the categorical fields may
    # define strata.
    rate = settings.sample_rate if rate is None else rate
    if not 0 < rate <= 1:
        raise ValueError(f"sample rate {rate} is not in (0, 1]")
    min_per_stratum = settings.min_per_stratum if min_per_stratum is None else min_per_stratum
    if min_per_stratum < 0:
        raise ValueError(f"min_per_stratum {min_per_stratum} is negative")
    strata = inputs.strata(settings.strata if strata is None else strata)
    shard_count = settings.sample_shards if shard_count is None else shard_count
    if shard_count < 1:
        raise ValueError(f"{shard_count} shards: a day needs at least one")
    remove_stale_attempts(Workspace.from_settings(settings))
    store = open_trace_source(settings, selection=True)
    selection = select_day(store, day, rate=rate, strata=strata, min_per_stratum=min_per_stratum)
    source_counts = (
        store.source_counts(*day_interval(day)) if isinstance(store, FileTraceStore) else {}
    )
    plan = shards.plan_sample(
        day,
        selection,
        rate=rate,
        strata=strata,
        min_per_stratum=min_per_stratum,
        max_field_chars=settings.max_field_chars,
        part_rows=settings.sample_part_rows,
        shards=shard_count,
        source_counts=source_counts,
    )
    attempt = attempt or uuid.uuid4().hex
    paths = Workspace.from_settings(settings).traces_selection(day, attempt)
    try:
        shards.write_selection(paths, selection, plan)
    except BaseException:
        shutil.rmtree(paths.root, ignore_errors=True)
        raise
    return [
        PlannedShard(day=day, attempt=attempt, index=i, parts=parts, rows=plan.shard_rows(i))
        for i, parts in enumerate(plan.shards)
    ]


def write_trace_shard(
    settings: Settings, shard: PlannedShard, progress: Callable[[int, int], None] | None = None
) -> shards.ShardRecord:
    """Anonymize and write the shard's parts into the staged partition; a rerun replaces them, and
    only them."""
    workspace = Workspace.from_settings(settings)
    paths = workspace.traces_selection(shard.day, shard.attempt)
    plan = shards.read_plan(paths)
    if shard.index >= len(plan.shards) or tuple(plan.shards[shard.index]) != tuple(shard.parts):
        raise ValueError(
            f"shard {shard.index} (parts {shard.parts}) is not in the plan at {paths.plan}: clear the "
            "trace_sampling `select` task and the tasks after it"
        )
    first, end = shard.parts
    counts = write_parts(
        open_trace_source(settings),
        Anonymizer(settings.pseudonym_key),
        shard.day,
        ((part, shards.part_ids(paths, plan, part)) for part in range(first, end)),
        workspace.traces_staging(shard.day, shard.attempt),
        paths.scratch,
        rows=shard.rows[1] - shard.rows[0],
        rate=plan.rate,
        max_field_chars=plan.max_field_chars,
        question_rule=settings.question_rule,
        workers=settings.sample_workers or available_cpus(),
        progress=progress,
    )
    return shards.write_shard_record(paths, plan, shard.index, counts)


def merge_trace_sample(settings: Settings, planned: list[PlannedShard]) -> StagedSample:
    """Check every planned shard wrote its record and parts (IncompleteHandoff names the missing
    ones), then write the staged partition's manifest."""
    day, attempt = planned[0].day, planned[0].attempt
    workspace = Workspace.from_settings(settings)
    paths, staged = workspace.traces_selection(day, attempt), workspace.traces_staging(day, attempt)
    plan = shards.read_plan(paths)
    summary = shards.merged_summary(plan, shards.check_shards(paths, staged, plan))
    write_manifest(staged.manifest, shards.manifest(plan, summary))
    log.info(
        "%s: sampled %d, quarantined %d %s, PII replaced %s",
        day,
        summary.sampled,
        summary.quarantined,
        dict(summary.quarantine_reasons),
        dict(summary.pii_counts),
    )
    if lost := {k: v for k, v in summary.source_counts.items() if k in DAMAGE_COUNTS and v}:
        log.warning("%s: the trace source's files were damaged: %s", day, lost)
    return StagedSample(
        counts=SampleCounts.model_validate(summary.as_dict()), staged=staged.root, attempt=attempt
    )


def stage_trace_sample(
    settings: Settings,
    day: date,
    *,
    progress: Callable[[int, int], None] | None = None,
    **select_options,
) -> StagedSample:
    """select, every shard and merge in this process (the CLI, the benches); a failure leaves no
    folder behind. `select_options` are `select_trace_sample`'s keywords (rate, strata,
    min_per_stratum, shard_count, attempt)."""
    planned = select_trace_sample(settings, day, **select_options)
    try:
        for shard in planned:
            offset, total = shard.rows[0], planned[-1].rows[1]
            write_trace_shard(
                settings,
                shard,
                None if progress is None else lambda done, _: progress(offset + done, total),
            )
        return merge_trace_sample(settings, planned)
    except BaseException:
        discard_attempt(settings, day, planned[0].attempt, staged=True)
        raise


def discard_attempt(settings: Settings, day: date, attempt: str, *, staged: bool) -> None:
    """Remove an attempt's selection (and, with `staged`, its staged partition)."""
    workspace = Workspace.from_settings(settings)
    shutil.rmtree(workspace.traces_selection(day, attempt).root, ignore_errors=True)
    if staged:
        shutil.rmtree(workspace.traces_staging(day, attempt).root, ignore_errors=True)


def validate_trace_sample(staged: StagedSample) -> ValidationPassed:
    from pipelines.traces.quality import validate_trace_partition

    report = validate_trace_partition(PartitionPaths(staged.staged))
    return report.passed_or_raise(f"the previous version of dt={staged.counts.day}", staged.staged)


def promote_trace_sample(settings: Settings, staged: StagedSample) -> PromotedSample:
    """Swap the validated staged partition into place (readers see the old one or the new one)."""
    workspace = Workspace.from_settings(settings)
    final = workspace.traces_partition(staged.counts.day)
    promote(staged.staged, final.root)
    if staged.attempt:
        discard_attempt(settings, staged.counts.day, staged.attempt, staged=False)
    return PromotedSample(day=staged.counts.day, partition=workspace.relative(final.root))


def promoted_sample(settings: Settings, day: date) -> PromotedSample:
    """The day's promoted partition, for a version step run on its own (`ragwatch traces
    version`)."""
    workspace = Workspace.from_settings(settings)
    partition = workspace.traces_partition(day)
    if not partition.manifest.exists():
        raise FileNotFoundError(
            f"no promoted sample for {day}: run `ragwatch traces sample --date {day}`"
        )
    return PromotedSample(day=day, partition=workspace.relative(partition.root))


def version_trace_sample(settings: Settings, promoted: PromotedSample) -> SampleVersion:
    """Version the promoted partition, after completing any other that a stopped run left
    unversioned.

    Promotion and versioning are separate tasks (versioning waits in the one-slot DVC pool), so a
    run killed between them, or inside `dvc add`, leaves a promoted partition whose `.dvc` file is
    missing, names the previous sample or is not committed. Readers refuse such a partition
    (`Workspace.data_version`); this step, in a rerun of that day or in the next run of any day,
    versions it.
    """
    from pipelines.core.versioning import ensure_workspace, version_directory, workspace_lock

    workspace = Workspace.from_settings(settings)
    ensure_workspace(workspace, settings.resolved_dvc_remote)
    with workspace_lock(workspace):
        for day in unfinished_versions(workspace):
            if day != promoted.day:
                # Its run may be waiting for this lock, or dead: versioning what is promoted is
                # right either way.
                log.info(
                    "dt=%s is promoted but not versioned (by a run still queued, or stopped): versioning it",
                    day,
                )
                version_directory(
                    workspace, workspace.traces_partition(day).root, f"traces: sample of {day}"
                )
        version = version_directory(
            workspace, workspace.root / promoted.partition, f"traces: sample of {promoted.day}"
        )
    return SampleVersion(dvc_md5=version.md5, workspace_rev=version.git_rev, remote=version.remote)


def unfinished_versions(workspace: Workspace) -> list[date]:
    """Promoted days whose `.dvc` file is missing, names other data, or is not committed in the
    workspace."""
    from pipelines.core.versioning import uncommitted_dvc_files

    uncommitted = uncommitted_dvc_files(workspace, workspace.traces_root)
    unfinished = []
    for day in workspace.promoted_trace_days():
        partition = workspace.traces_partition(day).root
        try:
            versioned = workspace.traces_version(day) is not None
        except StaleVersion:
            versioned = False
        if not versioned or workspace.dvc_file(partition) in uncommitted:
            unfinished.append(day)
    return unfinished


def run_trace_sampling(
    settings: Settings, day: date, *, version: bool = True, **sample_options
) -> TraceSampling:
    """Every step in one process (`ragwatch traces sample`), its memory returned between the steps.

    Each Airflow task is a process of its own and gives its memory back when it ends. Here the
    stage's freed heap would stay with the process while validation imports Great Expectations and
    starts its workers, when the run peaks: on a 1 M-trace day, returning it lowers the process's
    peak from 552 to 511 MB and the tree's from 961 to 936 MB (2 CPUs: each validation worker then
    added ~200 MB, 70-95 MB since the workers import only what their work needs:
    `traces/prepare.py`).
    """
    attempt = uuid.uuid4().hex
    # Owned until promotion: if this process is killed, the next run removes what it staged at once.
    with own_attempt(Workspace.from_settings(settings), day, attempt):
        staged = stage_trace_sample(settings, day, attempt=attempt, **sample_options)
        return_freed_memory()
        validation = validate_trace_sample(staged)
        return_freed_memory()
        promoted = promote_trace_sample(settings, staged)
    versioned = version_trace_sample(settings, promoted) if version else None
    return TraceSampling(
        counts=staged.counts, validation=validation, partition=promoted.partition, version=versioned
    )


def published_counts(settings: Settings, day: date) -> SampleCounts:
    """The counts of a day's promoted partition, from its manifest."""
    return SampleCounts.model_validate(
        read_manifest(Workspace.from_settings(settings).traces_partition(day).manifest)
    )
