"""Step 1 of an offline eval: run the system under test on the golden split, score retrieval and
tools.

The responses and these scores are written to the run folder; the judge batches read them next.

Retrieval is scored at every k of the run's parameters plus the context depth (the number of chunks
the generator was given: the reference RAG's `retrieval_k`, an HTTP target's most common number of
contexts), where precision@k reads as "gold chunks given / chunks given". @k is measured the
standard way for every item (retrieval.py): a target that returned fewer distinct chunks than k has
its missing ranks counted as not relevant, and the log says how many items that was and how many
chunks they returned.

`limit` draws a subset stratified by question type (`stratified_subset`): a plain first-n of a
golden set where tool triples are a few percent leaves too few of them to gate the tool metrics.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter
from datetime import date
from typing import Any

from pydantic import BaseModel

from pipelines.evaluation.allocation import allocate
from pipelines.core.batching import batch_ranges
from pipelines.evaluation.metrics.retrieval import distinct, metric_names, query_metrics
from pipelines.evaluation.metrics.tools import ToolTurn, score_tool_turns
from pipelines.evaluation.runs.budget import divide_budget, skipped_for_budget
from pipelines.evaluation.runs.cost import PREPARE_PART, write_usage
from pipelines.evaluation.runs.folder import (
    RETRIEVAL_TOOLS_PART,
    PreparedRun,
    RunMeta,
    run_and_close,
    stratum_of,
    write_meta,
)
from pipelines.evaluation.runs.params import EvalParams
from pipelines.evaluation.runs.target import (
    ReferenceRAG,
    TargetResponse,
    build_target,
    generator_label,
    respond_all,
)
from pipelines.core.files import reset_dir, write_jsonl
from pipelines.models.budget import TokenBudget, is_refusal
from pipelines.models.usage import scope
from pipelines.golden.dataset import load_golden_items, released_version
from pipelines.core.records import GoldenItem, Score
from pipelines.core.settings import Settings
from pipelines.stores.corpus import open_corpus_index
from pipelines.stores.results import ResultsStore, run_id
from pipelines.core.workspace import Workspace

log = logging.getLogger(__name__)
SUITE = "offline"


def prepare_offline_eval(
    settings: Settings, params: EvalParams, *, logical_date: date
) -> PreparedRun:
    """Run the system under test on the golden test split; score retrieval and tool use."""
    items, subset, version = planned_items(settings, params)
    dataset_version = f"{params.golden_name}@{version}"
    for role, named in (("baseline", params.baseline_run), ("reference", params.reference_run)):
        if named:
            _check_baseline(settings, named, role)
    run = Workspace.from_settings(settings).run_folder(SUITE, logical_date, params.target_name)
    reset_dir(run.root)
    rid = run_id(SUITE, logical_date, params.target_name)
    with open_corpus_index(settings) as index:
        target = build_target(settings, params, index)
        # The system under test's answers come first: they may spend the whole budget, the batches
        # share the rest.
        spent = TokenBudget(settings.llm_budget_tokens)
        if getattr(target, "llm", None) is not None:
            target.llm.budget = spent
        if isinstance(target, ReferenceRAG):
            target.retrieve_all(items)
        with scope(stage="target"):
            responses = run_and_close(respond_all(target, items), getattr(target, "llm", None))
    write_usage(run, PREPARE_PART, [getattr(target, "llm", None)])
    write_jsonl(run.responses, (_response_row(i, r) for i, r in zip(items, responses)))
    depth = context_depth(params, items, responses)
    ks = sorted(set(params.k) | ({depth} if depth else set()))
    _log_short_lists(rid, [r.retrieved_ids for i, r in zip(items, responses) if _scored(i, r)], ks)
    scores = _retrieval_scores(items, responses, ks, rid, dataset_version)
    turns = [
        ToolTurn(
            item_id=i.item_id,
            stratum=stratum_of(i),
            question=i.question,
            expected_tool=i.expected_tool,
            expected_args=i.expected_args,
            tool_calls=r.tool_calls,
            error=r.error,
        )
        for i, r in zip(items, responses)
        if i.qtype == "tool"
    ]
    scores += asyncio.run(
        score_tool_turns(turns, run_id=rid, suite=SUITE, dataset_version=dataset_version)
    )
    scores = skipped_for_budget(scores)
    write_jsonl(run.scores(RETRIEVAL_TOOLS_PART), (s.model_dump() for s in scores))
    failed = sum(r.error is not None for r in responses)
    batches = batch_ranges(len(items), params.batch_size)
    write_meta(
        run,
        RunMeta(
            run_id=rid,
            suite=SUITE,
            logical_date=logical_date,
            target=params.target_name,
            dataset_version=dataset_version,
            items=len(items),
            target_failures=failed,
            generator_model=generator_label(getattr(target, "llm", None)),
            params=params,
            context_depth=depth,
            subset=subset.model_dump() if subset else None,
            batches=batches,
            budget=divide_budget(spent.cap, prepare_tokens=spent.spent, batches=len(batches)),
        ),
    )
    log.info(
        "offline eval %s: %d items on %s, %d target failures",
        rid,
        len(items),
        params.target_name,
        failed,
    )
    return PreparedRun(
        run_id=rid, run_dir=run.root, items=len(items), target_failures=failed, batches=batches
    )


def planned_items(
    settings: Settings, params: EvalParams
) -> tuple[list[GoldenItem], Subset | None, str]:
    """The golden items the run evaluates (the split, or its `limit` subset), how the subset was
    drawn, the version."""
    version = params.golden_version or released_version(settings, params.golden_name)
    items = [
        i
        for i in load_golden_items(settings, params.golden_name, version)
        if i.split == params.split
    ]
    if not items:
        raise ValueError(f"golden set {params.golden_name} {version} has no {params.split} items")
    subset = None
    if params.limit:
        items, subset = stratified_subset(items, params.limit, floor=settings.gate_min_pairs)
        log.info("%s@%s: %s", params.golden_name, version, subset.line())
    return items, subset, version


class Subset(BaseModel):
    """How a `limit` subset was drawn: per question type, the items drawn and those available."""

    limit: int
    floor: int
    drawn: dict[str, int]
    available: dict[str, int]

    def line(self) -> str:
        counts = ", ".join(
            f"{q} {self.drawn[q]}/{self.available[q]}" for q in sorted(self.available)
        )
        return (
            f"a subset of {sum(self.drawn.values())} of {sum(self.available.values())}, stratified by question "
            f"type (at least {self.floor} of each where available, the rest in proportion): {counts}"
        )


def _hash_order(item: GoldenItem) -> str:
    return hashlib.sha256(item.item_id.encode()).hexdigest()


def stratified_subset(
    items: list[GoldenItem], limit: int, *, floor: int
) -> tuple[list[GoldenItem], Subset]:
    """`limit` items stratified by question type: each type first gets min(`floor`, its items) (the
    gate's min pairs: enough tool items to gate the tool metrics), evenly shared when the limit is
    below the floors' sum; the rest go in proportion to each type's size. Within a type, items are
    taken in the order of a hash of their id.

    The counts come from `allocation.allocate` (Webster's divisor method after the floors), so the
    same limit draws the same items on every run, and a larger limit draws a superset of a smaller
    one."""
    by_qtype: dict[str, list[GoldenItem]] = {}
    for item in sorted(items, key=_hash_order):
        by_qtype.setdefault(item.qtype, []).append(item)
    available = {q: len(group) for q, group in sorted(by_qtype.items())}
    drawn = allocate(available, limit, floor=floor)
    chosen = sorted(
        (i for q, group in by_qtype.items() for i in group[: drawn[q]]), key=_hash_order
    )
    return chosen, Subset(limit=limit, floor=floor, drawn=drawn, available=available)


def _check_baseline(settings: Settings, baseline_run: str, role: str = "baseline") -> None:
    """Fail before the work when the gate's explicit baseline (or reference) is not in the results
    DB."""
    store = ResultsStore.from_settings(settings)
    try:
        found = store.exists() and store.get_run(baseline_run) is not None
    finally:
        store.dispose()
    if not found:
        raise ValueError(
            f"{role} run {baseline_run!r} is not in the results DB (run ids look like "
            f"offline/2026-11-30/reference-rag; `ragwatch eval summary` shows the latest)"
        )


def context_depth(
    params: EvalParams, items: list[GoldenItem], responses: list[TargetResponse]
) -> int | None:
    """Chunks the generator was given: the reference RAG's `retrieval_k`; for an HTTP target, the
    most common number of contexts among its ok answers (the smallest on a tie), None when it
    answered none."""
    if not params.target_url:
        return params.retrieval_k
    counts = Counter(
        len(r.contexts) for i, r in zip(items, responses) if _scored(i, r) and r.contexts
    )
    if not counts:
        return None
    top = max(counts.values())
    return min(n for n, c in counts.items() if c == top)


def _scored(item: GoldenItem, response: TargetResponse) -> bool:
    return bool(item.gold_chunk_ids) and item.qtype != "tool" and response.error is None


def _response_row(item: GoldenItem, response: TargetResponse) -> dict[str, Any]:
    return {
        "item": item.model_dump(mode="json"),
        "answer": response.answer,
        "contexts": response.contexts,
        "ranking": response.retrieved_ids,
        "tool_calls": [c.model_dump() for c in response.tool_calls],
        "error": response.error,
        "latency_s": round(response.latency_s, 4),
    }


def _retrieval_scores(items, responses, ks, rid: str, dataset_version: str) -> list[Score]:
    scores = []
    for item, response in zip(items, responses):
        if not item.gold_chunk_ids or item.qtype == "tool":
            continue  # retrieval metrics need gold chunks (adversarial items have none by design)
        labels = dict(
            run_id=rid,
            suite=SUITE,
            item_id=item.item_id,
            stratum=stratum_of(item),
            dataset_version=dataset_version,
        )
        # An answer the budget refused still had its chunks retrieved (free): those are scored.
        if response.error is not None and not (
            is_refusal(response.error) and response.ranking is not None
        ):
            scores += [
                Score(
                    **labels,
                    metric=m,
                    value=None,
                    status="failed",
                    error=f"target failed: {response.error}",
                )
                for m in metric_names(ks)
            ]
            continue
        for metric, value in query_metrics(response.retrieved_ids, item.gold_chunk_ids, ks).items():
            scores.append(Score(**labels, metric=metric, value=value, status="ok"))
    return scores


def _log_short_lists(rid: str, rankings: list[list[str]], ks: list[int]) -> None:
    """Say how deep the target retrieved where that caps precision@k (a service with a similarity
    cut-off)."""
    depths = [len(distinct(r)) for r in rankings]
    for k in ks:
        short = [d for d in depths if d < k]
        if short:
            log.info(
                "%s: %d of %d item(s) retrieved fewer than %d distinct chunks (%.1f on average): their "
                "missing ranks count as not relevant at @%d",
                rid,
                len(short),
                len(depths),
                k,
                sum(short) / len(short),
                k,
            )
