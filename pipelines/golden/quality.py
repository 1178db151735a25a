"""The Great Expectations suite of a staged golden set: contract, index coverage, strata, frozen
test split."""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from pipelines.core.validation import ValidationReport, run_expectations
from pipelines.core.workspace import GoldenPaths
from pipelines.stores.partitions import read_manifest

log = logging.getLogger(__name__)
QTYPES = ["single_hop", "multi_hop", "adversarial", "tool"]


def validate_golden_dataset(paths: GoldenPaths) -> ValidationReport:
    """Validate a staged golden set: contract, index coverage, strata and the frozen test split."""
    import great_expectations as gx

    manifest = read_manifest(paths.staged_manifest)
    current = set(json.loads(paths.staged_chunk_ids.read_text()))
    frame = pq.read_table(paths.staged_items).to_pandas()
    frame["_gold_missing"] = frame["gold_chunk_ids"].map(
        lambda ids: sum(i not in current for i in ids)
    )
    frame["_adversarial_with_gold"] = (frame["qtype"] == "adversarial") & frame[
        "gold_chunk_ids"
    ].map(len).gt(0)
    frame["_tool_without_expectation"] = (frame["qtype"] == "tool") & (
        frame["expected_tool"].isna() | frame["expected_args"].isna()
    )

    E = gx.expectations
    row_checks = [
        E.ExpectColumnValuesToBeUnique(column="item_id"),
        *(
            E.ExpectColumnValuesToNotBeNull(column=c)
            for c in (
                "item_id",
                "question",
                "reference_answer",
                "qtype",
                "language",
                "source",
                "split",
                "generator_model",
                "corpus_version",
            )
        ),
        *(
            E.ExpectColumnValueLengthsToBeBetween(column=c, min_value=1)
            for c in ("question", "reference_answer", "language")
        ),
        E.ExpectColumnValuesToBeInSet(column="qtype", value_set=QTYPES),
        E.ExpectColumnValuesToBeInSet(column="source", value_set=["corpus", "trace", "human"]),
        E.ExpectColumnValuesToBeInSet(column="split", value_set=["dev", "test"]),
        E.ExpectColumnValuesToBeInSet(
            column="review", value_set=["unreviewed", "pending", "accepted", "rejected"]
        ),
        E.ExpectColumnValuesToBeInSet(column="_gold_missing", value_set=[0]),
        E.ExpectColumnValuesToBeInSet(column="_adversarial_with_gold", value_set=[False]),
        E.ExpectColumnValuesToBeInSet(column="_tool_without_expectation", value_set=[False]),
    ]
    summary = pd.DataFrame([_golden_summary(frame, manifest)])
    summary_checks = [E.ExpectTableRowCountToBeBetween(min_value=1, max_value=1)]
    for qtype, (low, high) in _qtype_bounds(manifest).items():
        summary_checks.append(
            E.ExpectColumnValuesToBeBetween(column=f"share_{qtype}", min_value=low, max_value=high)
        )
    summary_checks += [
        E.ExpectColumnValuesToBeBetween(column="items", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="test_removed_not_stale", value_set=[0]),
        E.ExpectColumnValuesToBeInSet(column="test_added_not_replacement", value_set=[0]),
    ]
    checks = run_expectations(
        "golden_items", frame, row_checks, index_column="item_id"
    ) + run_expectations("golden_summary", summary, summary_checks, index_column="item_id")
    report = ValidationReport(
        suite="golden_dataset", success=all(c["success"] for c in checks), checks=checks
    )
    log.info(report.describe())
    return report


def _golden_summary(frame: pd.DataFrame, manifest: dict[str, Any]) -> dict[str, Any]:
    shares = frame["qtype"].value_counts(normalize=True) if len(frame) else pd.Series(dtype=float)
    row = {"items": len(frame), **{f"share_{q}": float(shares.get(q, 0.0)) for q in QTYPES}}
    test_now = set(frame.loc[frame["split"] == "test", "item_id"])
    baseline = set(manifest["baseline_test_ids"] or [])
    stale = set(manifest["stale"])
    # Hand-imported items (people's own questions, reviewed candidates from traces) may join the
    # test split, and new items that fill a question type's floor (split.py).
    allowed_new = (
        set(manifest["replacements"])
        | set(frame.loc[frame["generator_model"] == "human", "item_id"])
        | set(manifest.get("test_floor_additions", []))
    )
    human_rejected = set(manifest["human_rejected_ids"])
    row["test_removed_not_stale"] = len(baseline - test_now - stale - human_rejected)
    row["test_added_not_replacement"] = (
        len(test_now - baseline - allowed_new) if manifest["baseline_test_ids"] is not None else 0
    )
    return row


def _qtype_bounds(manifest: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Loose bounds on each question type's share, from what was planned.

    Trace-seeded items become single-hop or (when the corpus cannot answer them) adversarial,
    so they widen both upper bounds; the bounds catch a collapsed stratum, not noise.
    """
    planned, params = manifest["planned"], manifest["params"]
    least = Counter(
        {
            "single_hop": planned.get("chunk_questions", 0) * params["questions_per_seed"],
            "multi_hop": planned.get("multi_hop", 0),
            "adversarial": planned.get("adversarial", 0),
            "tool": planned.get("tool", 0),
        }
    )
    traces = planned.get("trace", 0)
    most = least + Counter({"single_hop": traces, "adversarial": traces})
    total = sum(least.values()) + traces
    if not total:
        return {}
    return {q: (0.4 * least[q] / total, min(1.0, 2.5 * most[q] / total)) for q in least if least[q]}
