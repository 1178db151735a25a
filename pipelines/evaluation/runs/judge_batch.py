"""Step 2 of an offline eval, in batches: the ragas judge metrics, noise ΔF and answer correctness.

A failed target call fails the item's judge metrics with its reason, never a 0.

Noise ΔF compares the system's own answer (sample 0) with the same system answering from noisy
contexts as an independent draw (`answer_with(..., sample=1)`); the control `noise_delta_f_control`
is the same draw from the clean contexts.

Answer correctness (`pipelines.evaluation.metrics.correctness`) grades each answer against the
item's reference answer; its one-sentence reason goes to a verdict file for the report.

A share of the judged items (`judge_retest_share`) is judged a second time
(metrics/judge_retest.py); those second judgements go to the batch's retest file, never to its
scores.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from pipelines.evaluation.metrics.correctness import (
    CORRECTNESS,
    AnswerCorrectnessPrompt,
    CorrectnessInput,
    correctness_input,
    correctness_score,
)
from pipelines.evaluation.metrics.judge import JudgeInput, judge_items
from pipelines.evaluation.metrics.judge_retest import build_retest_judge, retest_items
from pipelines.evaluation.metrics.noise import CONTROL_METRIC, METRIC, NoisePool, noise_delta_f
from pipelines.evaluation.runs.budget import batch_budget, skipped_for_budget
from pipelines.evaluation.runs.cost import write_usage
from pipelines.evaluation.runs.folder import (
    JudgedBatch,
    judge_part,
    read_meta,
    read_rows,
    run_and_close,
    stratum_of,
)
from pipelines.evaluation.runs.params import judge_metric_key, reported_metric
from pipelines.evaluation.runs.target import build_target
from pipelines.core.files import write_jsonl
from pipelines.models.embeddings import build_embedder
from pipelines.models.backends import build_llm, check_models_differ
from pipelines.models.usage import scope
from pipelines.core.records import GoldenItem, Score
from pipelines.core.settings import Settings
from pipelines.stores.corpus import open_corpus_index
from pipelines.core.workspace import RunPaths

log = logging.getLogger(__name__)


def judge_input(row: dict[str, Any]) -> JudgeInput:
    """What the judge sees of one response row (responses.jsonl)."""
    item = GoldenItem.model_validate(row["item"])
    # An adversarial item's reference ("not enough information") has no claim a context could hold:
    # the reference-based metrics are skipped for it rather than scored 0.
    reference = item.reference_answer if item.gold_chunk_ids else None
    return JudgeInput(
        item_id=item.item_id,
        stratum=stratum_of(item),
        question=item.question,
        answer=row["answer"],
        contexts=[c["text"] for c in row["contexts"]],
        reference=reference,
        reference_contexts=item.reference_contexts,
        context_ids=[c["chunk_id"] for c in row["contexts"]],
        gold_chunk_ids=item.gold_chunk_ids,
    )


def judge_offline_batch(settings: Settings, run_dir: Path, start: int, end: int) -> JudgedBatch:
    """Judge metrics and noise ΔF for responses[start:end]."""
    run = RunPaths(run_dir)
    meta = read_meta(run)
    params = meta.params
    rows = [r for r in read_rows(run.responses, start, end) if r["item"]["qtype"] != "tool"]
    check_models_differ(settings, log)
    judge, embedder = build_llm(settings, "judge"), build_embedder(settings)
    judge.budget = budget = batch_budget(
        meta.budget
    )  # the judge and the noise arms' generator share the batch's
    retest_judge = build_retest_judge(settings, budget)
    scores: list[Score] = []
    for row in rows:
        if row["error"] is not None:
            scores += [
                Score(
                    run_id=meta.run_id,
                    suite=meta.suite,
                    item_id=row["item"]["item_id"],
                    stratum=judge_input(row).stratum,
                    metric=m,
                    value=None,
                    status="failed",
                    error=f"target failed: {row['error']}",
                    dataset_version=meta.dataset_version,
                )
                for m in [*params.metrics, METRIC, CONTROL_METRIC, CORRECTNESS]
            ]
    judged = [r for r in rows if r["error"] is None]
    inputs = [judge_input(r) for r in judged]
    labels = dict(run_id=meta.run_id, suite=meta.suite, dataset_version=meta.dataset_version)
    requests = [correctness_input(r) for r in judged]
    graded = [(i, g) for i, g in zip(inputs, requests) if isinstance(g, CorrectnessInput)]
    with open_corpus_index(settings) as index:
        target = build_target(settings, params, index)
        if getattr(target, "llm", None) is not None:
            target.llm.budget = budget
        pool = NoisePool.from_index(index, inputs)

        async def all_of_it():
            metric_keys = [judge_metric_key(m) for m in params.metrics]
            # The retest runs beside the first judgement (its own client, claim memory and cache
            # namespace).
            with scope(stage="judge"):
                judged_scores, retests = await asyncio.gather(
                    judge_items(inputs, metric_keys, judge, embedder, **labels),
                    retest_items(
                        inputs,
                        metric_keys,
                        retest_judge,
                        embedder,
                        share=params.judge_retest_share,
                        **labels,
                    ),
                )
            judged_scores = [
                s.model_copy(update={"metric": reported_metric(s.metric)}) for s in judged_scores
            ]
            retests = [s.model_copy(update={"metric": reported_metric(s.metric)}) for s in retests]
            clean = {s.item_id: s for s in judged_scores if s.metric == "faithfulness"}
            language = {r["item"]["question"]: r["item"]["language"] for r in judged}
            noise = (
                await noise_delta_f(
                    inputs,
                    pool,
                    lambda q, ctx: target.answer_with(q, language.get(q, "en"), ctx, sample=1),
                    judge,
                    **labels,
                    mode=params.noise_mode,
                    k=params.noise_k,
                    clean_scores=clean,
                    control=True,
                )
                if inputs
                else []
            )
            with scope(stage="judge", metric=CORRECTNESS):
                verdicts = await judge.run_many(AnswerCorrectnessPrompt(), [g for _, g in graded])
            return judged_scores + [s for n in noise for s in n.scores], verdicts, retests

        judged_scores, verdicts, retests = run_and_close(
            all_of_it(), getattr(target, "llm", None), judge, retest_judge
        )
        scores += judged_scores
    verdict_of = {i.item_id: v for (i, _), v in zip(graded, verdicts)}
    scores += [
        correctness_score(
            i.item_id, i.stratum, g, verdict_of.get(i.item_id), **labels, judge_model=judge.model
        )
        for i, g in zip(inputs, requests)
    ]
    scores = skipped_for_budget(scores)
    # Before the scores, as online: a batch with scores has its usage and its retests.
    write_usage(run, judge_part(start), (judge, retest_judge, getattr(target, "llm", None)))
    write_jsonl(run.retests(judge_part(start)), (s.model_dump() for s in retests))
    write_jsonl(run.scores(judge_part(start)), (s.model_dump() for s in scores))
    write_jsonl(
        run.verdicts(judge_part(start)),
        (
            {
                "item_id": i.item_id,
                "correct": v.value.correct if v.ok else None,
                "reason": v.value.reason if v.ok else f"correctness judge failed: {v.error}",
            }
            for (i, _), v in zip(graded, verdicts)
        ),
    )
    judge.counters.log(log, f"judge batch {start}-{end}")
    return JudgedBatch.of((start, end), scores, judge)
