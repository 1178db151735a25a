"""The Great Expectations suite of a sampled trace partition: contract, interval, rate, counts, no
residual PII.

The written part files are read back, in order, in batches of rows and every batch is checked by the
same suite, so memory does not grow with the sample. Checks across rows stay exact: the sampler
writes rows in trace_id order, part after part, and each row carries whether its id follows the
previous row's (unique and ordered).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.core.batching import available_cpus, map_in_processes
from pipelines.core.records import SAMPLED_TRACE_SCHEMA, SAMPLER_VERSION
from pipelines.core.validation import (
    ValidationReport,
    run_expectations,
    run_expectations_in_batches,
)
from pipelines.core.workspace import PartitionPaths
from pipelines.stores.partitions import count_rows, iter_part_batches, read_manifest
from pipelines.traces.residual_fields import residual_findings
from pipelines.traces.sampling import day_interval

log = logging.getLogger(__name__)
RESIDUAL_COLUMN = "_residual_pii"
"""Per row, the residual rules its free-text fields trip ("answer: long_digit_run"), empty when
clean."""


VALIDATION_BATCH_ROWS = 250
"""Rows the residual scan reads at a time; a few batches are in memory at once (read ahead for the
workers), as Python objects pickled to them: 250 rows of 5-10 KB are ~2 MB of text, 1,000 kept ~60
MB more in this process."""
SUITE_BATCH_ROWS = 10_000
"""Rows the suite checks at a time. GX spends ~0.6 s of CPU per batch whatever its size, and a suite
batch holds the long text columns as lengths only (`_suite_frame`): 10,000 rows are a few MB."""
LONG_TEXT_COLUMNS = ("answer", "contexts", "tool_calls", "metadata")
"""Columns no row check reads beyond their presence and nullness; the residual scan reads their
text."""


def validate_trace_partition(
    partition: PartitionPaths,
    *,
    workers: int | None = None,
    batch_rows: int = VALIDATION_BATCH_ROWS,
    suite_rows: int = SUITE_BATCH_ROWS,
) -> ValidationReport:
    """Validate a staged `golden/traces` partition against its manifest and the Trace contract.

    `workers`: processes looking for residual PII; one per CPU by default.
    """
    import great_expectations as gx

    manifest = read_manifest(partition.manifest)
    rows = count_rows(partition.parts)
    start, end = day_interval(date.fromisoformat(manifest["day"]))
    rate = manifest["sample_rate"]
    summary = pd.DataFrame(
        [
            {
                "effective_rate": manifest["selected"] / manifest["population"]
                if manifest["population"]
                else rate,
                "accounted": manifest["sampled"] + manifest["quarantined"] - manifest["selected"],
                "rows_vs_manifest": rows - manifest["sampled"],
            }
        ]
    )
    low, high = _rate_bounds(manifest)

    E = gx.expectations
    derived = [RESIDUAL_COLUMN, "_ts_in_interval", "_id_ascending"]
    row_checks = [
        E.ExpectTableColumnsToMatchSet(
            column_set=SAMPLED_TRACE_SCHEMA.names + derived, exact_match=True
        ),
        E.ExpectColumnValuesToBeUnique(column="trace_id"),
        E.ExpectColumnValuesToBeInSet(column="_id_ascending", value_set=[True]),
        *(
            E.ExpectColumnValuesToNotBeNull(column=c)
            for c in (
                "trace_id",
                "ts",
                "question",
                "answer",
                "app",
                "language",
                "sample_rate",
                "pii_counts",
            )
        ),
        E.ExpectColumnValueLengthsToBeBetween(column="question", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="sample_rate", value_set=[rate]),
        E.ExpectColumnValuesToBeInSet(column="sampler_version", value_set=[SAMPLER_VERSION]),
        E.ExpectColumnValuesToBeInSet(column="user_feedback", value_set=[-1, 0, 1]),
        E.ExpectColumnValuesToBeInSet(column="_ts_in_interval", value_set=[True]),
        # The independent shape rules, not the anonymizer's detectors (which would pass what they
        # missed). Staging already quarantined every row they flag, so a hit here means the
        # partition did not come from the sampling step as written: the day fails.
        E.ExpectColumnValuesToBeInSet(column=RESIDUAL_COLUMN, value_set=[""]),
    ]
    summary_checks = [
        E.ExpectColumnValuesToBeBetween(column="effective_rate", min_value=low, max_value=high),
        E.ExpectColumnValuesToBeInSet(column="accounted", value_set=[0]),
        E.ExpectColumnValuesToBeInSet(column="rows_vs_manifest", value_set=[0]),
    ]
    frames = _row_batches(
        partition, start, end, workers or available_cpus(), batch_rows, suite_rows
    )
    checks = run_expectations_in_batches(
        "sampled_traces_rows", frames, row_checks, index_column="trace_id", sensitive={"question"}
    ) + run_expectations("sampled_traces_summary", summary, summary_checks, index_column="trace_id")
    report = ValidationReport(
        suite="sampled_traces", success=all(c["success"] for c in checks), checks=checks
    )
    log.info(report.describe())
    return report


def _row_batches(
    partition: PartitionPaths,
    start: datetime,
    end: datetime,
    workers: int,
    batch_rows: int,
    suite_rows: int,
) -> Iterator[pd.DataFrame]:
    """The partition's rows as the row checks read them, `suite_rows` at a time.

    The residual-PII rules scan every free-text field, `batch_rows` rows at a time in `workers`
    processes; each batch waits here, in order, for its findings (rule names per field, never a
    value).
    """
    # An empty partition still has its columns checked: it is validated as one empty batch.
    parts = partition.parts
    rows = count_rows(parts)
    batches = (
        iter_part_batches(parts, batch_size=batch_rows)
        if rows
        else [_written_schema(parts).empty_table()]
    )
    waiting: deque[pd.DataFrame] = deque()

    def texts() -> Iterator[list[dict[str, Any]]]:
        for batch in batches:
            waiting.append(_suite_frame(batch))
            # Python values, not Arrow buffers: a worker that unpickled a RecordBatch would import
            # pyarrow (~80 MB of RSS each), and the residual rules read Python strings anyway.
            yield batch.select(TEXT_COLUMNS).to_pylist()

    previous_id: str | None = None
    collected: list[pd.DataFrame] = []
    for findings in map_in_processes(
        residual_findings, texts(), workers=workers if rows > batch_rows else 1
    ):
        frame = waiting.popleft()
        frame[RESIDUAL_COLUMN] = findings
        frame["_ts_in_interval"] = (
            (frame["ts"] >= start) & (frame["ts"] < end) if len(frame) else []
        )
        ids = frame["trace_id"].tolist()
        frame["_id_ascending"] = [
            prev is None or prev < now for prev, now in zip([previous_id, *ids[:-1]], ids)
        ]
        previous_id = ids[-1] if ids else previous_id
        collected.append(frame)
        if sum(map(len, collected)) >= suite_rows:
            yield pd.concat(collected, ignore_index=True)
            collected = []
    if collected:
        yield pd.concat(collected, ignore_index=True)


def _written_schema(parts: list) -> pa.Schema:
    """The schema the partition's files were written with (the contract's when there is no file at
    all)."""
    if not parts:
        return SAMPLED_TRACE_SCHEMA
    with pq.ParquetFile(parts[0]) as file:
        return file.schema_arrow


def _suite_frame(batch: pa.RecordBatch | pa.Table) -> pd.DataFrame:
    """The batch with each long text column as its length in characters or items, null where the
    value is."""
    columns = [
        (pc.list_value_length(column) if pa.types.is_list(column.type) else pc.utf8_length(column))
        if name in LONG_TEXT_COLUMNS
        else column
        for name, column in zip(batch.schema.names, batch.columns)
    ]
    return pa.table(columns, names=batch.schema.names).to_pandas()


TEXT_COLUMNS = ("question", "answer", "contexts", "tool_calls", "metadata")
"""The columns `free_text_fields` reads: all a worker needs of a row."""


def _rate_bounds(manifest: dict[str, Any]) -> tuple[float, float]:
    """Bounds on selected/population implied by the allocation rule (rounding + floors)."""
    population, rate = manifest["population"], manifest["sample_rate"]
    if not population:
        return 0.0, 1.0
    n_strata = max(1, len(manifest["strata"]))
    slack_low = 0.5 * n_strata / population
    slack_high = (manifest["min_per_stratum"] + 0.5) * n_strata / population
    return max(0.0, rate - slack_low), min(1.0, rate + slack_high)
