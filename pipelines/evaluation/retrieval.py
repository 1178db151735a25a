"""Retrieval metrics from chunk ids, per query and aggregated (BRIEF.md § Metrics, exactly).

recall@k and precision@k are reported separately, never blended; a gap between recall@5 and
MRR means gold chunks are found but rank low.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

DEFAULT_KS = (1, 3, 5, 10)


def recall_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1 if any gold chunk is in the top k, else 0."""
    gold = set(gold)
    return float(any(cid in gold for cid in retrieved[:k]))


def precision_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Relevant ids in the top k / k (a short list is not rewarded for being short)."""
    gold = set(gold)
    return sum(cid in gold for cid in retrieved[:k]) / k


def reciprocal_rank(retrieved: Sequence[str], gold: Iterable[str]) -> float:
    gold = set(gold)
    return next((1.0 / rank for rank, cid in enumerate(retrieved, start=1) if cid in gold), 0.0)


def query_metrics(retrieved: Sequence[str], gold: Sequence[str], ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    metrics = {}
    for k in ks:
        metrics[f"recall@{k}"] = recall_at_k(retrieved, gold, k)
        metrics[f"precision@{k}"] = precision_at_k(retrieved, gold, k)
    metrics["mrr"] = reciprocal_rank(retrieved, gold)
    return metrics


def attribute(retrieved: Sequence[str], gold: Sequence[str], answer_ok: bool | None) -> str:
    """retrieval_failure: no gold chunk retrieved; generation_failure: retrieved but the answer is wrong or unsupported."""
    if not gold:
        return "not_applicable"
    if not set(gold) & set(retrieved):
        return "retrieval_failure"
    if answer_ok is None:
        return "unknown"
    return "ok" if answer_ok else "generation_failure"


def score_run_file(path: Path, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float | int]:
    """Mean metrics over a JSONL run file of {"query_id", "retrieved_ids", "gold_ids"} lines."""
    totals: dict[str, float] = {}
    n = 0
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            query_id, retrieved, gold = str(row["query_id"]), row["retrieved_ids"], row["gold_ids"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: expected {{\"query_id\", \"retrieved_ids\", \"gold_ids\"}} ({exc})") from exc
        if not isinstance(retrieved, list) or not isinstance(gold, list):
            raise ValueError(f"{path}:{number}: retrieved_ids and gold_ids must be lists of chunk ids")
        if query_id in seen:
            raise ValueError(f"{path}:{number}: query_id {query_id!r} appears twice")
        if not gold:
            raise ValueError(f"{path}:{number}: query {query_id!r} has no gold_ids; retrieval metrics need at least one")
        seen.add(query_id)
        for name, value in query_metrics([str(r) for r in retrieved], [str(g) for g in gold], ks).items():
            totals[name] = totals.get(name, 0.0) + value
        n += 1
    if not n:
        raise ValueError(f"{path} has no queries")
    return {**{name: round(total / n, 6) for name, total in totals.items()}, "n": n}
