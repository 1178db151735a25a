"""Great Expectations suites, run inside the task on the staged data (never at DAG parse time).

Results keep counts and row ids only: an unexpected *value* in a text column may be PII, so it
is never copied into a report or a log.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from pipelines.privacy.recognizers import RESIDUAL_PII_PATTERNS, find_pii
from pipelines.records import SAMPLED_TRACE_SCHEMA, SAMPLER_VERSION
from pipelines.stores.partitions import DATA_FILE, read_manifest
from pipelines.traces.sampling import day_interval

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
log = logging.getLogger(__name__)
TEXT_COLUMN = "_all_text"
SENSITIVE_COLUMNS = {TEXT_COLUMN}


@dataclass
class ValidationReport:
    suite: str
    success: bool
    checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if not c["success"]]

    def describe(self) -> str:
        if self.success:
            return f"{self.suite}: all {len(self.checks)} expectations passed"
        lines = [f"{self.suite}: {len(self.failures)} of {len(self.checks)} expectations failed"]
        lines += [f"  - {c['expectation']}({c.get('column') or ''}): {c['detail']}" for c in self.failures]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "success": self.success, "checks": self.checks}


def validate_trace_partition(partition: Path) -> ValidationReport:
    """Validate a staged `golden/traces` partition against its manifest and the Trace contract."""
    import great_expectations as gx

    manifest = read_manifest(partition)
    frame = pq.read_table(partition / DATA_FILE).to_pandas()
    frame[TEXT_COLUMN] = _all_text(frame)
    frame["_residual_pii"] = frame[TEXT_COLUMN].map(lambda text: len(find_pii(text)))
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
        E.ExpectTableColumnsToMatchSet(column_set=SAMPLED_TRACE_SCHEMA.names + [TEXT_COLUMN, "_residual_pii", "_ts_in_interval"], exact_match=True),
        E.ExpectColumnValuesToBeUnique(column="trace_id"),
        *(E.ExpectColumnValuesToNotBeNull(column=c) for c in ("trace_id", "ts", "question", "answer", "app", "language", "sample_rate", "pii_counts")),
        E.ExpectColumnValueLengthsToBeBetween(column="question", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="sample_rate", value_set=[rate]),
        E.ExpectColumnValuesToBeInSet(column="sampler_version", value_set=[SAMPLER_VERSION]),
        E.ExpectColumnValuesToBeInSet(column="user_feedback", value_set=[-1, 0, 1]),
        E.ExpectColumnValuesToBeInSet(column="_ts_in_interval", value_set=[True]),
        E.ExpectColumnValuesToNotMatchRegexList(column=TEXT_COLUMN, regex_list=list(RESIDUAL_PII_PATTERNS.values())),
        E.ExpectColumnValuesToBeInSet(column="_residual_pii", value_set=[0]),
    ]  # fmt: skip
    summary_checks = [
        E.ExpectColumnValuesToBeBetween(column="effective_rate", min_value=low, max_value=high),
        E.ExpectColumnValuesToBeInSet(column="accounted", value_set=[0]),
        E.ExpectColumnValuesToBeInSet(column="rows_vs_manifest", value_set=[0]),
    ]
    checks = _run("sampled_traces_rows", frame, row_checks) + _run("sampled_traces_summary", summary, summary_checks)
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


def _all_text(frame: pd.DataFrame) -> pd.Series:
    """Every free-text field of a row in one string, so no column escapes the PII checks."""
    def row_text(row) -> str:
        parts = [row["question"] or "", row["answer"] or "", row["metadata"] or ""]
        parts += [c["text"] or "" for c in row["contexts"] if c is not None] if row["contexts"] is not None else []
        parts += [c["arguments"] or "" for c in row["tool_calls"] if c is not None] if row["tool_calls"] is not None else []
        return "\n".join(parts)

    return frame.apply(row_text, axis=1) if len(frame) else pd.Series([], dtype=str)


def _run(name: str, frame: pd.DataFrame, expectations: list, index_column: str = "trace_id") -> list[dict[str, Any]]:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        context.data_sources.add_pandas(name).add_dataframe_asset(name).add_batch_definition_whole_dataframe(name)
    )
    suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
    index_columns = [index_column] if index_column in frame.columns else []
    result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
        suite,
        result_format={"result_format": "SUMMARY", "unexpected_index_column_names": index_columns,
                       "partial_unexpected_count": 5},
    )  # fmt: skip
    return [_check(r, index_column) for r in result.results]


def _check(result, index_column: str) -> dict[str, Any]:
    config = result.expectation_config
    column = config.kwargs.get("column")
    details = result.result or {}
    check = {"expectation": config.type, "column": column, "success": bool(result.success)}
    if result.exception_info and result.exception_info.get("raised_exception"):
        check["detail"] = f"could not run: {result.exception_info.get('exception_message')}"
    elif not result.success:
        rows = [i[index_column] for i in details.get("partial_unexpected_index_list") or [] if isinstance(i, dict) and i.get(index_column)]
        sample = [] if column in SENSITIVE_COLUMNS else details.get("partial_unexpected_list") or []
        check["detail"] = json.dumps(
            {"unexpected_count": details.get("unexpected_count"), "rows": rows,
             "examples": [str(v)[:80] for v in sample], "observed": details.get("observed_value")},
            default=str,
        )  # fmt: skip
    return check


QTYPES = ["single_hop", "multi_hop", "adversarial", "tool"]
PLANNED_KIND_TO_QTYPE = {"chunk_questions": "single_hop", "multi_hop": "multi_hop", "adversarial": "adversarial",
                         "tool": "tool"}  # fmt: skip


def validate_golden_dataset(staged: Path) -> ValidationReport:
    """Validate a staged golden set: contract, index coverage, strata and the frozen test split."""
    import great_expectations as gx

    from pipelines.golden.store import ITEMS_FILE

    manifest = read_manifest(staged)
    current = set(json.loads((staged / "_current_chunk_ids.json").read_text()))
    frame = pq.read_table(staged / ITEMS_FILE).to_pandas()
    frame["_gold_missing"] = frame["gold_chunk_ids"].map(lambda ids: sum(i not in current for i in ids))
    frame["_adversarial_with_gold"] = (frame["qtype"] == "adversarial") & frame["gold_chunk_ids"].map(len).gt(0)
    frame["_tool_without_expectation"] = (frame["qtype"] == "tool") & (frame["expected_tool"].isna() | frame["expected_args"].isna())

    E = gx.expectations
    row_checks = [
        E.ExpectColumnValuesToBeUnique(column="item_id"),
        *(E.ExpectColumnValuesToNotBeNull(column=c) for c in ("item_id", "question", "reference_answer", "qtype", "language", "source", "split", "generator_model", "corpus_version")),
        *(E.ExpectColumnValueLengthsToBeBetween(column=c, min_value=1) for c in ("question", "reference_answer", "language")),
        E.ExpectColumnValuesToBeInSet(column="qtype", value_set=QTYPES),
        E.ExpectColumnValuesToBeInSet(column="source", value_set=["corpus", "trace", "human"]),
        E.ExpectColumnValuesToBeInSet(column="split", value_set=["dev", "test"]),
        E.ExpectColumnValuesToBeInSet(column="review", value_set=["unreviewed", "pending", "accepted", "rejected"]),
        E.ExpectColumnValuesToBeInSet(column="_gold_missing", value_set=[0]),
        E.ExpectColumnValuesToBeInSet(column="_adversarial_with_gold", value_set=[False]),
        E.ExpectColumnValuesToBeInSet(column="_tool_without_expectation", value_set=[False]),
    ]  # fmt: skip
    summary = pd.DataFrame([_golden_summary(frame, manifest)])
    summary_checks = [E.ExpectTableRowCountToBeBetween(min_value=1, max_value=1)]
    for qtype, (low, high) in _qtype_bounds(manifest).items():
        summary_checks.append(E.ExpectColumnValuesToBeBetween(column=f"share_{qtype}", min_value=low, max_value=high))
    summary_checks += [
        E.ExpectColumnValuesToBeBetween(column="items", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="test_removed_not_stale", value_set=[0]),
        E.ExpectColumnValuesToBeInSet(column="test_added_not_replacement", value_set=[0]),
    ]
    checks = _run("golden_items", frame, row_checks, index_column="item_id") + _run("golden_summary", summary, summary_checks)
    report = ValidationReport(suite="golden_dataset", success=all(c["success"] for c in checks), checks=checks)
    log.info(report.describe())
    return report


def _golden_summary(frame: pd.DataFrame, manifest: dict[str, Any]) -> dict[str, Any]:
    shares = frame["qtype"].value_counts(normalize=True) if len(frame) else pd.Series(dtype=float)
    row = {"items": len(frame), **{f"share_{q}": float(shares.get(q, 0.0)) for q in QTYPES}}
    test_now = set(frame.loc[frame["split"] == "test", "item_id"])
    baseline = set(manifest["baseline_test_ids"] or [])
    stale = set(manifest["stale"])
    # Hand-imported items (people's own questions, reviewed candidates from traces) may join the test split.
    allowed_new = set(manifest["replacements"]) | set(frame.loc[frame["generator_model"] == "human", "item_id"])
    human_rejected = set(manifest["human_rejected_ids"])
    row["test_removed_not_stale"] = len(baseline - test_now - stale - human_rejected)
    row["test_added_not_replacement"] = len(test_now - baseline - allowed_new) if manifest["baseline_test_ids"] is not None else 0
    return row


def _qtype_bounds(manifest: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Loose bounds on each question type's share, from what was planned.

    Trace-seeded items become single-hop or (when the corpus cannot answer them) adversarial,
    so they widen both upper bounds; the bounds catch a collapsed stratum, not noise.
    """
    planned, params = manifest["planned"], manifest["params"]
    least = Counter({
        "single_hop": planned.get("chunk_questions", 0) * params["questions_per_seed"],
        "multi_hop": planned.get("multi_hop", 0),
        "adversarial": planned.get("adversarial", 0),
        "tool": planned.get("tool", 0),
    })  # fmt: skip
    traces = planned.get("trace", 0)
    most = least + Counter({"single_hop": traces, "adversarial": traces})
    total = sum(least.values()) + traces
    if not total:
        return {}
    return {q: (0.4 * least[q] / total, min(1.0, 2.5 * most[q] / total)) for q in least if least[q]}
