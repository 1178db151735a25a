"""The Great Expectations suite of a sampled trace partition: contract, interval, rate, counts, no residual PII."""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from pipelines.records import SAMPLED_TRACE_SCHEMA, SAMPLER_VERSION
from pipelines.stores.partitions import read_manifest
from pipelines.traces.sampling import day_interval, describe_residual, residual_pii_by_field
from pipelines.validation import ValidationReport, run_expectations
from pipelines.workspace import PartitionPaths

log = logging.getLogger(__name__)
RESIDUAL_COLUMN = "_residual_pii"
"""Per row, the residual rules its free-text fields trip ("answer: long_digit_run"), empty when clean."""


def validate_trace_partition(partition: PartitionPaths) -> ValidationReport:
    """Validate a staged `golden/traces` partition against its manifest and the Trace contract."""
    import great_expectations as gx

    manifest = read_manifest(partition.manifest)
    frame = pq.read_table(partition.data).to_pandas()
    # The independent shape rules, not the anonymizer's detectors (which would pass what they missed).
    # Staging already quarantined every row they flag, so a hit here means the partition did not come
    # from the sampling step as written: the day fails.
    frame[RESIDUAL_COLUMN] = [describe_residual(residual_pii_by_field(row)) for row in frame.to_dict("records")]
    start, end = day_interval(date.fromisoformat(manifest["day"]))
    frame["_ts_in_interval"] = (frame["ts"] >= start) & (frame["ts"] < end) if len(frame) else []
    rate = manifest["sample_rate"]
    summary = pd.DataFrame(
        [{
            "effective_rate": manifest["selected"] / manifest["population"] if manifest["population"] else rate,
            "accounted": manifest["sampled"] + manifest["quarantined"] - manifest["selected"],
            "rows_vs_manifest": len(frame) - manifest["sampled"],
        }]
    )  # fmt: skip
    low, high = _rate_bounds(manifest)

    E = gx.expectations
    row_checks = [
        E.ExpectTableColumnsToMatchSet(column_set=SAMPLED_TRACE_SCHEMA.names + [RESIDUAL_COLUMN, "_ts_in_interval"], exact_match=True),
        E.ExpectColumnValuesToBeUnique(column="trace_id"),
        *(E.ExpectColumnValuesToNotBeNull(column=c) for c in ("trace_id", "ts", "question", "answer", "app", "language", "sample_rate", "pii_counts")),
        E.ExpectColumnValueLengthsToBeBetween(column="question", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="sample_rate", value_set=[rate]),
        E.ExpectColumnValuesToBeInSet(column="sampler_version", value_set=[SAMPLER_VERSION]),
        E.ExpectColumnValuesToBeInSet(column="user_feedback", value_set=[-1, 0, 1]),
        E.ExpectColumnValuesToBeInSet(column="_ts_in_interval", value_set=[True]),
        E.ExpectColumnValuesToBeInSet(column=RESIDUAL_COLUMN, value_set=[""]),
    ]  # fmt: skip
    summary_checks = [
        E.ExpectColumnValuesToBeBetween(column="effective_rate", min_value=low, max_value=high),
        E.ExpectColumnValuesToBeInSet(column="accounted", value_set=[0]),
        E.ExpectColumnValuesToBeInSet(column="rows_vs_manifest", value_set=[0]),
    ]
    checks = (run_expectations("sampled_traces_rows", frame, row_checks, index_column="trace_id", sensitive={"question", "answer", "metadata", "contexts", "tool_calls"})
              + run_expectations("sampled_traces_summary", summary, summary_checks, index_column="trace_id"))
    report = ValidationReport(suite="sampled_traces", success=all(c["success"] for c in checks), checks=checks)
    log.info(report.describe())
    return report


def _rate_bounds(manifest: dict[str, Any]) -> tuple[float, float]:
    """Bounds on selected/population implied by the allocation rule (rounding + floors)."""
    population, rate = manifest["population"], manifest["sample_rate"]
    if not population:
        return 0.0, 1.0
    n_strata = max(1, len(manifest["strata"]))
    slack_low = 0.5 * n_strata / population
    slack_high = (manifest["min_per_stratum"] + 0.5) * n_strata / population
    return max(0.0, rate - slack_low), min(1.0, rate + slack_high)

