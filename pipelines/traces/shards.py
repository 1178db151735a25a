"""A day's sample in parts and shards: the selection is written once, mapped tasks write the parts,
one step merges.

The selected trace ids, sorted, are cut into parts of `RAGWATCH_SAMPLE_PART_ROWS` ids (the last one
holds the rest; an empty day has one empty part). Part `i` becomes `part-<i>.parquet` and
`_quarantine/part-<i>.parquet` of the partition, so the published files depend on the day, the
sampling parameters and the part size only. The shards (`RAGWATCH_SAMPLE_SHARDS` mapped tasks, never
more than there are parts) each take a contiguous range of parts: which task writes a part never
changes its bytes, so a day sampled by 1, 2 or 4 shards publishes the same files, manifest and DVC
hash. Each shard records its counts when its parts are in place; the merge checks every planned
shard's record and parts are there and writes the manifest.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, Field

from pipelines.core.batching import batch_ranges
from pipelines.core.files import atomic_write_text, reset_dir
from pipelines.core.handoff import batch_label, check_parts
from pipelines.core.records import ANONYMIZER_VERSION, SAMPLER_VERSION
from pipelines.core.workspace import PartitionPaths, SelectionPaths
from pipelines.traces.sampling import SampleSummary, WrittenCounts
from pipelines.traces.select import Selection

RERUN_SHARD = (
    "rerun the trace_sampling `shard` task with that map index (clear it in the Airflow UI; outside Airflow, "
    "`ragwatch traces sample` runs every shard)"
)


class SamplePlan(BaseModel):
    """What the selection decided, written beside the selected ids: every shard and the merge read
    it."""

    day: date
    rate: float
    strata_keys: list[str]
    min_per_stratum: int
    max_field_chars: int
    population: int
    selected: int
    strata: list[dict[str, Any]]
    """Per stratum its values, population and selected count, as the manifest publishes them."""
    part_rows: int
    parts: list[tuple[int, int]]
    """Each part's range of selected rows."""
    shards: list[tuple[int, int]]
    """Each shard's range of parts: shard `i` is the `shard` task's map index `i`."""
    source_counts: dict[str, int] = Field(default_factory=dict)
    """A span-file source's counts of the day (`FileTraceStore.source_counts`), published in the
    manifest."""

    def shard_rows(self, index: int) -> tuple[int, int]:
        first, end = self.shards[index]
        return self.parts[first][0], self.parts[end - 1][1]


class ShardRecord(BaseModel):
    """What one shard wrote: its parts' counts, recorded once its parts are in place."""

    index: int
    parts: tuple[int, int]
    selected: int
    sampled: int
    quarantined: int
    quarantine_reasons: dict[str, int] = Field(default_factory=dict)
    pii_counts: dict[str, int] = Field(default_factory=dict)


def plan_sample(
    day: date,
    selection: Selection,
    *,
    rate: float,
    strata: list[str],
    min_per_stratum: int,
    max_field_chars: int,
    part_rows: int,
    shards: int,
    source_counts: dict[str, int] | None = None,
) -> SamplePlan:
    selected = len(selection.trace_ids)
    parts = batch_ranges(selected, part_rows) or [(0, 0)]
    n = min(shards, len(parts))
    return SamplePlan(
        day=day,
        rate=rate,
        strata_keys=strata,
        min_per_stratum=min_per_stratum,
        max_field_chars=max_field_chars,
        population=selection.population,
        selected=selected,
        strata=[
            {
                "stratum": dict(zip(strata, s.stratum)),
                "population": s.population,
                "selected": s.selected,
            }
            for s in selection.strata
        ],
        part_rows=part_rows,
        parts=parts,
        shards=[(i * len(parts) // n, (i + 1) * len(parts) // n) for i in range(n)],
        source_counts=source_counts or {},
    )


def write_selection(paths: SelectionPaths, selection: Selection, plan: SamplePlan) -> None:
    """The sorted ids, one parquet row group per part (a shard reads only its own), and the plan,
    written last."""
    reset_dir(paths.root)
    ids = pa.table({"trace_id": pa.array(selection.trace_ids, pa.string())})
    pq.write_table(ids, paths.ids, row_group_size=plan.part_rows, compression="zstd")
    atomic_write_text(paths.plan, plan.model_dump_json(indent=1) + "\n")


def read_plan(paths: SelectionPaths) -> SamplePlan:
    if not paths.plan.exists():
        raise FileNotFoundError(
            f"no selection at {paths.root}: it was never written, or it was cleaned up once the "
            f"sample was promoted. Clear the trace_sampling `select` task and the tasks after it."
        )
    return SamplePlan.model_validate_json(paths.plan.read_text())


def part_ids(paths: SelectionPaths, plan: SamplePlan, index: int) -> list[str]:
    start, end = plan.parts[index]
    if start == end:
        return []
    with pq.ParquetFile(paths.ids) as file:
        ids = file.read_row_group(index, columns=["trace_id"]).column(0).to_pylist()
    if len(ids) != end - start:
        raise RuntimeError(
            f"{paths.ids}: part {index} holds {len(ids)} ids where its plan has {end - start}; "
            "clear the trace_sampling `select` task and the tasks after it"
        )
    return ids


def shard_label(plan: SamplePlan, index: int) -> str:
    first, end = plan.shards[index]
    return f"shard {index} (parts {first}-{end - 1}): " + batch_label(index, plan.shard_rows(index))


def write_shard_record(
    paths: SelectionPaths, plan: SamplePlan, index: int, counts: WrittenCounts
) -> ShardRecord:
    record = ShardRecord(
        index=index,
        parts=plan.shards[index],
        selected=counts.selected,
        sampled=counts.sampled,
        quarantined=counts.quarantined,
        quarantine_reasons=dict(sorted(counts.quarantine_reasons.items())),
        pii_counts=dict(sorted(counts.pii_counts.items())),
    )
    atomic_write_text(paths.shard_record(index), record.model_dump_json() + "\n")
    return record


def check_shards(paths: SelectionPaths, out: PartitionPaths, plan: SamplePlan) -> list[ShardRecord]:
    """Every planned shard's record and part files, and nothing else, or IncompleteHandoff naming
    the shards."""
    planned = {}
    for index, (first, end) in enumerate(plan.shards):
        label = shard_label(plan, index)
        planned[paths.shard_record(index)] = label
        for part in range(first, end):
            planned[out.part(part)] = planned[out.quarantine_part(part)] = label
    found = [*paths.shard_records, *out.parts, *out.quarantine_parts]
    check_parts(f"trace sample of {plan.day}: shard outputs", planned, found, rerun=RERUN_SHARD)
    records = [
        ShardRecord.model_validate_json(paths.shard_record(i).read_text())
        for i in range(len(plan.shards))
    ]
    for record, rows in zip(records, map(plan.shard_rows, range(len(records)))):
        if (
            record.selected != rows[1] - rows[0]
            or record.sampled + record.quarantined != record.selected
        ):
            raise RuntimeError(
                f"{shard_label(plan, record.index)} recorded {record.selected} rows "
                f"({record.sampled} sampled + {record.quarantined} quarantined) for {rows[1] - rows[0]} "
                f"selected: {RERUN_SHARD}"
            )
    return records


def merged_summary(plan: SamplePlan, records: list[ShardRecord]) -> SampleSummary:
    summary = SampleSummary(
        day=plan.day.isoformat(),
        population=plan.population,
        selected=plan.selected,
        source_counts=plan.source_counts,
    )
    for record in records:
        summary.sampled += record.sampled
        summary.quarantined += record.quarantined
        summary.quarantine_reasons.update(record.quarantine_reasons)
        summary.pii_counts.update(record.pii_counts)
    return summary


def manifest(plan: SamplePlan, summary: SampleSummary) -> dict[str, Any]:
    """The published manifest: nothing in it depends on how many shards wrote the parts."""
    return {
        "dataset": "traces",
        **summary.as_dict(),
        "sample_rate": plan.rate,
        "strata_keys": plan.strata_keys,
        "min_per_stratum": plan.min_per_stratum,
        "strata": plan.strata,
        "part_rows": plan.part_rows,
        "sampler_version": SAMPLER_VERSION,
        "anonymizer_version": ANONYMIZER_VERSION,
    }
