"""Retrieval metrics from chunk ids, per query and aggregated (docs/reference/metrics.md states each
definition).

recall@k and precision@k are reported separately, never blended; a gap between recall@5 and MRR
means gold chunks are found but rank low.

Every figure is taken over the retrieved list with duplicate ids counted once (the first occurrence
keeps its rank), and @k is measured the standard way (trec_eval, ir_measures) for every target and
every k: on what the system returned, a rank it did not fill counting as not relevant. A service
that returns only its 2 best passages is measured at k = 10 too: recall@10 is then its recall over
those 2, and precision@10 is the gold ids among them / 10 (it can be at most 0.2: returning fewer
passages than k is what precision@k measures). k < 1 is an error.

Which ir_measures measure (trec_eval's, through its `pytrec_eval` provider) each one equals, per
query:

| ragwatch | ir_measures | trec_eval |
|---|---|---|
| `recall@k` (ragwatch's: 1 if any gold id is in the top k) | `Success@k` | `success_k` |
| `precision@k` | `P@k` | `P_k` |
| `mrr` (per query: 1 / rank of the first gold id) | `RR` | `recip_rank` |

ir_measures' `R@k` (gold ids in the top k / all gold ids) is another measure, not computed here. One
difference in aggregates: trec_eval leaves out a query whose run is empty; ragwatch counts it, every
figure 0 (the target answered and found nothing).
tests/unit/pipelines/evaluation/metrics/test_retrieval.py checks the equalities.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

DEFAULT_KS = (1, 3, 5, 10)


def check_ks(ks: Iterable[int]) -> list[int]:
    """The cut-offs, sorted and distinct; a ValueError naming the first k that is not an integer ≥
    1."""
    checked = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k = {k!r}: a cut-off of recall@k / precision@k is an integer ≥ 1")
        checked.append(k)
    if not checked:
        raise ValueError("no cut-off k given: recall@k / precision@k need at least one k ≥ 1")
    return sorted(set(checked))


def distinct(retrieved: Iterable[str]) -> list[str]:
    """The retrieved ids with repeats removed, each at the rank of its first occurrence."""
    return list(dict.fromkeys(retrieved))


def depth(retrieved: Iterable[str]) -> int:
    """How many distinct ids were retrieved (reported beside the @k figures: a list shorter than k
    caps precision@k at depth / k)."""
    return len(distinct(retrieved))


def recall_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1 if any gold chunk is among the top k distinct retrieved ids, else 0 (ir_measures
    `Success@k`)."""
    check_ks([k])
    gold = set(gold)
    return float(any(cid in gold for cid in distinct(retrieved)[:k]))


def precision_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Gold ids among the top k distinct retrieved ids / k, a rank the list does not reach counting
    as not relevant (ir_measures `P@k`)."""
    check_ks([k])
    gold = set(gold)
    return sum(cid in gold for cid in distinct(retrieved)[:k]) / k


def reciprocal_rank(retrieved: Sequence[str], gold: Iterable[str]) -> float:
    """1 / rank of the first gold id among the distinct retrieved ids, 0 if none was retrieved
    (ir_measures `RR`)."""
    gold = set(gold)
    return next(
        (1.0 / rank for rank, cid in enumerate(distinct(retrieved), start=1) if cid in gold), 0.0
    )


def metric_names(ks: Sequence[int]) -> list[str]:
    """Every figure `query_metrics` returns for these cut-offs."""
    return [name for k in check_ks(ks) for name in (f"recall@{k}", f"precision@{k}")] + ["mrr"]


def query_metrics(
    retrieved: Sequence[str], gold: Sequence[str], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, float]:
    """recall@k and precision@k for each k, and MRR: every name of `metric_names(ks)`, whatever the
    list's length."""
    metrics = {}
    for k in check_ks(ks):
        metrics[f"recall@{k}"] = recall_at_k(retrieved, gold, k)
        metrics[f"precision@{k}"] = precision_at_k(retrieved, gold, k)
    metrics["mrr"] = reciprocal_rank(retrieved, gold)
    return metrics


ATTRIBUTIONS = (
    "ok",
    "retrieval_failure",
    "partial_retrieval_failure",
    "generation_failure",
    "unknown",
    "not_applicable",
)
"""Per-item labels of `attribute`, in the order reports list them."""


def attribute(
    contexts: Sequence[str],
    gold: Sequence[str],
    correct: bool | None,
    supported: bool | None = None,
) -> str:
    """Why an item's answer failed, from the chunk ids the generator was given (`contexts`), the
    answer correctness judge's verdict (`correct`) and whether the answer was supported
    (faithfulness in a healthy band; None when not scored):

    - not_applicable: the item has no gold chunks (online traces, questions the corpus cannot
      answer);
    - unknown: the correctness judge gave no verdict (no answer, a failed judge call);
    - ok: correct and not unsupported — with or without the gold chunk (the contexts held the
      facts);
    - generation_failure: correct but unsupported (it asserted what its contexts do not hold: it
      should have cited or abstained), or wrong although every gold chunk was in its contexts;
    - partial_retrieval_failure: wrong, with some but not all gold chunks in its contexts
      (multi-hop);
    - retrieval_failure: wrong, with none of the gold chunks in its contexts.
    """
    gold_ids = set(gold)
    if not gold_ids:
        return "not_applicable"
    if correct is None:
        return "unknown"
    if correct:
        return "generation_failure" if supported is False else "ok"
    found = gold_ids & set(contexts)
    if not found:
        return "retrieval_failure"
    return "partial_retrieval_failure" if found != gold_ids else "generation_failure"


def score_run_file(path: Path, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float | int]:
    """Mean metrics over a JSONL run file of {"query_id", "retrieved_ids", "gold_ids"} lines.

    Every figure is a mean over all `n` queries. `mean_depth` is the mean number of distinct ids a
    query retrieved and `n_short@k` the queries that retrieved fewer than k: their missing ranks
    count as not relevant, which caps precision@k below 1.
    """
    ks = check_ks(ks)
    totals: dict[str, float] = dict.fromkeys(metric_names(ks), 0.0)
    short: dict[int, int] = dict.fromkeys(ks, 0)
    depths = 0
    n = 0
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            query_id, retrieved, gold = str(row["query_id"]), row["retrieved_ids"], row["gold_ids"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(
                f'{path}:{number}: expected {{"query_id", "retrieved_ids", "gold_ids"}} ({exc})'
            ) from exc
        if not isinstance(retrieved, list) or not isinstance(gold, list):
            raise ValueError(
                f"{path}:{number}: retrieved_ids and gold_ids must be lists of chunk ids"
            )
        if query_id in seen:
            raise ValueError(f"{path}:{number}: query_id {query_id!r} appears twice")
        if not gold:
            raise ValueError(
                f"{path}:{number}: query {query_id!r} has no gold_ids; retrieval metrics need at least one"
            )
        seen.add(query_id)
        retrieved = [str(r) for r in retrieved]
        for name, value in query_metrics(retrieved, [str(g) for g in gold], ks).items():
            totals[name] += value
        reached = depth(retrieved)
        depths += reached
        for k in ks:
            short[k] += reached < k
        n += 1
    if not n:
        raise ValueError(f"{path} has no queries")
    result: dict[str, float | int] = {name: round(total / n, 6) for name, total in totals.items()}
    result.update({f"n_short@{k}": short[k] for k in ks})
    result["mean_depth"] = round(depths / n, 6)
    result["n"] = n
    return result
