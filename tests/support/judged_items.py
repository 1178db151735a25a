"""What the judge's tests share: a run, a question about Qdrant with its two passages, items to
judge built from them, and helpers to read the scores back
(tests/unit/pipelines/evaluation/metrics/)."""

from __future__ import annotations

from pipelines.core.records import Score
from pipelines.evaluation.metrics.judge import JudgeInput

RUN = {"run_id": "run-1", "suite": "offline", "dataset_version": "v1"}
PORTS = "Qdrant listens on port 6333 for the REST API. The gRPC interface of Qdrant uses port 6334."
SNAPSHOTS = "Snapshots are written to the snapshots directory. A snapshot is restored through the recover endpoint."
QUESTION = "Which port does the Qdrant REST API listen on?"
REFERENCE = "The Qdrant REST API listens on port 6333."


def item(
    item_id: str,
    answer: str | None,
    *,
    reference: str | None = REFERENCE,
    contexts=(PORTS, SNAPSHOTS),
    question: str = QUESTION,
) -> JudgeInput:
    return JudgeInput(
        item_id=item_id,
        stratum="single_hop/en",
        question=question,
        answer=answer,
        contexts=list(contexts),
        reference=reference,
    )


def by(scores: list[Score], metric: str) -> dict[str, Score]:
    return {s.item_id: s for s in scores if s.metric == metric}


def assert_failed(score: Score, reason: str) -> None:
    assert score.status == "failed" and score.value is None and reason in (score.error or ""), score
