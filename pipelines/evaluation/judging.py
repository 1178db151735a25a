"""Step 2 of an offline eval, in batches: the ragas judge metrics and noise ΔF of the responses.

A failed target call fails the item's judge metrics with its reason, never a 0.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pipelines.evaluation.judge import JudgeInput, judge_items
from pipelines.evaluation.noise import NoisePool, noise_delta_f
from pipelines.evaluation.runs import read_meta, run_and_close, stratum_of
from pipelines.evaluation.target import build_target
from pipelines.files import read_jsonl, write_jsonl
from pipelines.models.embeddings import build_embedder
from pipelines.models.llm import build_llm, check_models_differ
from pipelines.records import GoldenItem, Score
from pipelines.settings import Settings
from pipelines.stores.corpus import open_corpus_index
from pipelines.workspace import RunPaths

log = logging.getLogger(__name__)


class JudgedBatch(BaseModel):
    batch: tuple[int, int]
    scores: int
    failed: int
    judge: dict[str, Any]
    """The judge's counters for this batch (requests, tokens, failures)."""


def judge_input(row: dict[str, Any]) -> JudgeInput:
    """What the judge sees of one response row (responses.jsonl)."""
    item = GoldenItem.model_validate(row["item"])
    # An adversarial item's reference ("not enough information") has no claim a context could hold:
    # the reference-based metrics are skipped for it rather than scored 0.
    reference = item.reference_answer if item.gold_chunk_ids else None
    return JudgeInput(item_id=item.item_id, stratum=stratum_of(item), question=item.question, answer=row["answer"],
                      contexts=[c["text"] for c in row["contexts"]], reference=reference,
                      reference_contexts=item.reference_contexts, context_ids=[c["chunk_id"] for c in row["contexts"]],
                      gold_chunk_ids=item.gold_chunk_ids)  # fmt: skip


def judge_offline_batch(settings: Settings, run_dir: Path, start: int, end: int) -> JudgedBatch:
    """Judge metrics and noise ΔF for responses[start:end]."""
    run = RunPaths(run_dir)
    meta = read_meta(run)
    params = meta.params
    rows = [r for r in read_jsonl(run.responses)[start:end] if r["item"]["qtype"] != "tool"]
    check_models_differ(settings, log)
    judge, embedder = build_llm(settings, "judge"), build_embedder(settings)
    scores: list[Score] = []
    for row in rows:
        if row["error"] is not None:
            scores += [Score(run_id=meta.run_id, suite=meta.suite, item_id=row["item"]["item_id"], stratum=judge_input(row).stratum,
                             metric=m, value=None, status="failed", error=f"target failed: {row['error']}",
                             dataset_version=meta.dataset_version) for m in [*params.metrics, "noise_delta_f"]]  # fmt: skip
    judged = [r for r in rows if r["error"] is None]
    inputs = [judge_input(r) for r in judged]
    labels = dict(run_id=meta.run_id, suite=meta.suite, dataset_version=meta.dataset_version)
    with open_corpus_index(settings) as index:
        target = build_target(settings, params, index)
        pool = NoisePool.from_index(index, inputs)

        async def both():
            judged_scores = await judge_items(inputs, params.metrics, judge, embedder, **labels)
            clean = {s.item_id: s for s in judged_scores if s.metric == "faithfulness"}
            language = {r["item"]["question"]: r["item"]["language"] for r in judged}
            noise = await noise_delta_f(
                inputs, pool, lambda q, ctx: target.answer_with(q, language.get(q, "en"), ctx), judge, **labels,
                mode=params.noise_mode, k=params.noise_k, clean_scores=clean,
            ) if inputs else []  # fmt: skip
            return judged_scores + [n.score for n in noise]

        scores += run_and_close(both(), getattr(target, "llm", None))
    write_jsonl(run.scores(f"judge-{start:06d}"), (s.model_dump() for s in scores))
    judge.counters.log(log, f"judge batch {start}-{end}")
    return JudgedBatch(batch=(start, end), scores=len(scores), failed=sum(s.status == "failed" for s in scores),
                       judge=judge.counters.summary())  # fmt: skip
