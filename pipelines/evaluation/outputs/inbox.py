"""The review inbox: the online eval's lowest-scoring traces, as golden candidates for people to
complete.

Written as `inbox/candidates-<day>.csv` in the data workspace (not versioned: it holds production
text a person has not reviewed yet), with the columns `ragwatch golden import` reads: a reviewer
writes the reference answer and the gold passages, then imports the file, and the rows join the
golden set with `source=trace`. Beside it, `inbox/uncovered-<day>.csv`: the largest topics of the
day's traffic the golden set does not cover (the coverage step's clusters), three questions each,
importable the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from pipelines.core.files import write_filled_in_rows
from pipelines.core.records import Score
from pipelines.core.workspace import Workspace

CANDIDATES = 5
"""Lowest-scoring traces per day sent to the inbox."""
RANKED_BY = ("faithfulness", "answer_relevancy")
COLUMNS = [
    "trace_id",
    "question",
    "reference_answer",
    "gold_passages",
    "split",
    "production_answer",
    "mean_score",
    "language",
]


def queue_candidates(
    workspace: Workspace,
    day: date,
    traces: Sequence[dict[str, Any]],
    scores: Sequence[Score],
    limit: int = CANDIDATES,
) -> tuple[int, Path]:
    """Write the day's `limit` lowest-scoring traces to the inbox; returns (rows written, file)."""
    by_trace: dict[str, list[float]] = {}
    for score in scores:
        if score.status == "ok" and score.metric in RANKED_BY:
            by_trace.setdefault(score.item_id, []).append(score.value)
    ranked = sorted((sum(v) / len(v), trace_id) for trace_id, v in by_trace.items())[:limit]
    traces_by_id = {t["trace_id"]: t for t in traces}
    path = workspace.review_candidates(day)
    rows = (
        {
            "trace_id": trace_id,
            "question": traces_by_id[trace_id]["question"],
            "reference_answer": "",
            "gold_passages": "",
            "split": "",
            "production_answer": traces_by_id[trace_id]["answer"],
            "mean_score": f"{mean:.3f}",
            "language": traces_by_id[trace_id]["language"],
        }
        for mean, trace_id in ranked
    )
    return write_filled_in_rows(path, COLUMNS, rows), path


UNCOVERED_COLUMNS = [
    "topic",
    "language",
    "day_share",
    "estimated_traces",
    "gap_traces",
    "coverage",
    "trace_id",
    "app",
    "question",
    "reference_answer",
    "gold_passages",
    "split",
]
"""`ragwatch golden import` reads the last five: a reviewer writes an answer for a topic's question
and imports it."""


def queue_uncovered_topics(
    workspace: Workspace, day: date, clusters: Sequence[Any], limit: int
) -> tuple[int, Path]:
    """Write the day's `limit` largest topics the golden set misses (coverage/topic_gaps.py), three
    questions each; returns (topics written, file). The file is rewritten on a rerun: the same day
    gives the same topics."""
    chosen = list(clusters)[:limit]
    rows = (
        {
            "topic": cluster.cluster_id,
            "language": cluster.language,
            "day_share": f"{cluster.share:.4f}",
            "estimated_traces": f"{cluster.estimated_traces:.0f}",
            "gap_traces": f"{cluster.gap_traces:.0f}",
            "coverage": "" if cluster.coverage is None else f"{cluster.coverage:.3f}",
            "trace_id": rep.trace_id,
            "app": rep.app,
            "question": rep.question,
            "reference_answer": "",
            "gold_passages": "",
            "split": "",
        }
        for cluster in chosen
        for rep in cluster.representatives
    )
    path = workspace.uncovered_topics(day)
    write_filled_in_rows(path, UNCOVERED_COLUMNS, rows)
    return len(chosen), path
