"""The review inbox: the online eval's lowest-scoring traces, as golden candidates for people to complete.

Written as `inbox/candidates-<day>.csv` in the data workspace (not versioned: it holds production
text a person has not reviewed yet), with the columns `ragwatch golden import` reads: a reviewer
writes the reference answer and the gold passages, then imports the file, and the rows join the
golden set with `source=trace`.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from pipelines.files import spreadsheet_safe
from pipelines.records import Score
from pipelines.workspace import Workspace

CANDIDATES = 5
"""Lowest-scoring traces per day sent to the inbox."""
RANKED_BY = ("faithfulness", "answer_relevancy")
COLUMNS = ["trace_id", "question", "reference_answer", "gold_passages", "split", "production_answer", "mean_score",
           "language"]  # fmt: skip


def queue_candidates(workspace: Workspace, day: date, traces: Sequence[dict[str, Any]], scores: Sequence[Score],
                     limit: int = CANDIDATES) -> tuple[int, Path]:  # fmt: skip
    """Write the day's `limit` lowest-scoring traces to the inbox; returns (rows written, file)."""
    by_trace: dict[str, list[float]] = {}
    for score in scores:
        if score.status == "ok" and score.metric in RANKED_BY:
            by_trace.setdefault(score.item_id, []).append(score.value)
    ranked = sorted((sum(v) / len(v), trace_id) for trace_id, v in by_trace.items())[:limit]
    traces_by_id = {t["trace_id"]: t for t in traces}
    path = workspace.review_candidates(day)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        for mean, trace_id in ranked:
            trace = traces_by_id[trace_id]
            row = {"trace_id": trace_id, "question": trace["question"], "reference_answer": "", "gold_passages": "",
                   "split": "", "production_answer": trace["answer"], "mean_score": f"{mean:.3f}", "language": trace["language"]}
            # Production text is user input: "=HYPERLINK(...)" must stay text in the reviewer's spreadsheet.
            writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
    return len(ranked), path
