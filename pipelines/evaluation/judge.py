"""LLM-as-judge metrics, computed by ragas' collections metrics on our model layer.

| metric | ragas metric | needs | judge calls per item |
|---|---|---|---|
| faithfulness | Faithfulness | answer, contexts | 2 |
| answer_relevancy | AnswerRelevancy (N = `RELEVANCY_QUESTIONS`) | answer | N, plus 2 embedding calls |
| context_precision | ContextPrecisionWithReference | reference, contexts | 1 per context |
| context_recall | ContextRecall | reference, contexts | 1 |
| ragas_noise_sensitivity | NoiseSensitivity, mode "relevant" | answer, reference, contexts | 3 + 2 per context |

Within one item a metric's calls are sequential (ragas awaits each before the next); items and
metrics run concurrently, bounded by the LLM endpoint's concurrency limit.

Every (item, metric) becomes one `Score`, and one item's failure never touches another's. A
metric that could not be computed is `failed` with the reason and no value: a judge call that
failed in our layer ("judge claim extraction failed: timeout after 3 attempts (60 s each)"), a
ragas error, or a NaN — ragas returns NaN when the judge found nothing to count (no claims in the
answer). A metric whose inputs are missing (online traces have no reference answer) is `skipped`
with the reason. Never 0, never NaN.

Note on context precision: ragas' judge version is rank-weighted (average precision over the
verdicts of each retrieved context, in rank order), so 3 useful chunks of 5 score between 0.48 and
1.0 depending on their ranks; the plain 3/5 = 0.60 is the id-based precision@5 of retrieval.py.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipelines.models.embeddings import Embedder
from pipelines.models.llm import LLM, Progress
from pipelines.records import Score, ScoreStatus, Suite
from pipelines.text import abstains

# isort: off  (ragas_adapter sets RAGAS_DO_NOT_TRACK, which must precede the first ragas import)
from pipelines.models.ragas_adapter import JudgeCallError, RagasEmbeddings, RagasLLM
from ragas.metrics.collections import (
    AnswerRelevancy,
    ContextPrecisionWithReference,
    ContextRecall,
    Faithfulness,
    NoiseSensitivity,
)
from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceOutput

# isort: on

log = logging.getLogger(__name__)

RELEVANCY_QUESTIONS = 3
"""N: questions generated back from each answer for answer relevance."""


class JudgeInput(BaseModel):
    """What the judge sees of one item: a golden item's run offline, a sampled trace online."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    stratum: str
    question: str = Field(min_length=1)
    answer: str | None
    """None when the system under test gave no answer (metrics that need one are skipped)."""
    contexts: list[str] = Field(default_factory=list)
    """Retrieved context texts, in rank order."""
    reference: str | None = None
    """The golden reference answer; None online."""
    reference_contexts: list[str] = Field(default_factory=list)
    """The golden item's reference contexts; carried for reports (no metric here reads them)."""
    context_ids: list[str] = Field(default_factory=list)
    """Chunk ids of `contexts`; noise injection never picks these."""
    gold_chunk_ids: list[str] = Field(default_factory=list)
    """Gold chunk ids (offline); noise injection never picks these."""


@dataclass(frozen=True)
class Outcome:
    """A metric's result for one item, before it is labelled with the run: value, status, reason."""

    value: float | None
    status: ScoreStatus
    error: str | None = None

    @classmethod
    def ok(cls, value: float) -> Outcome:
        return cls(float(value), "ok")

    @classmethod
    def failed(cls, reason: str) -> Outcome:
        return cls(None, "failed", reason)

    @classmethod
    def skipped(cls, reason: str) -> Outcome:
        return cls(None, "skipped", reason)

    def score(self, *, run_id: str, suite: Suite, item_id: str, stratum: str, metric: str, dataset_version: str,
              judge_model: str | None = None) -> Score:  # fmt: skip
        return Score(run_id=run_id, suite=suite, item_id=item_id, stratum=stratum, metric=metric,
                     value=self.value, status=self.status, error=self.error, judge_model=judge_model,
                     dataset_version=dataset_version)  # fmt: skip


@dataclass(frozen=True)
class JudgeMetric:
    """One ragas metric: the inputs it needs, how to build it, and what its NaN means."""

    needs: tuple[str, ...]
    """JudgeInput fields that must be present: answer, reference, contexts."""
    build: Callable[[RagasLLM, RagasEmbeddings | None], Any]
    arguments: Callable[[JudgeInput], dict[str, Any]]
    nothing_to_count: str
    """Why ragas returns NaN for this metric."""


JUDGE_METRICS: dict[str, JudgeMetric] = {
    "faithfulness": JudgeMetric(
        needs=("answer", "contexts"),
        build=lambda llm, _: Faithfulness(llm=llm),
        arguments=lambda i: {"user_input": i.question, "response": i.answer, "retrieved_contexts": i.contexts},
        nothing_to_count="the judge found no claims in the answer",
    ),
    "answer_relevancy": JudgeMetric(
        needs=("answer",),
        build=lambda llm, embeddings: AnswerRelevancy(llm=llm, embeddings=embeddings, strictness=RELEVANCY_QUESTIONS),
        arguments=lambda i: {"user_input": i.question, "response": i.answer},
        nothing_to_count="no question could be compared",
    ),
    "context_precision": JudgeMetric(
        needs=("reference", "contexts"),
        build=lambda llm, _: ContextPrecisionWithReference(llm=llm),
        arguments=lambda i: {"user_input": i.question, "reference": i.reference, "retrieved_contexts": i.contexts},
        nothing_to_count="the judge gave no usable verdicts",
    ),
    "context_recall": JudgeMetric(
        needs=("reference", "contexts"),
        build=lambda llm, _: ContextRecall(llm=llm),
        arguments=lambda i: {"user_input": i.question, "reference": i.reference, "retrieved_contexts": i.contexts},
        nothing_to_count="the judge found no claims in the reference answer",
    ),
    "ragas_noise_sensitivity": JudgeMetric(
        needs=("answer", "reference", "contexts"),
        build=lambda llm, _: NoiseSensitivity(llm=llm, mode="relevant"),
        arguments=lambda i: {"user_input": i.question, "response": i.answer, "reference": i.reference,
                             "retrieved_contexts": i.contexts},  # fmt: skip
        nothing_to_count="the judge found no claims in the answer",
    ),
}
MISSING = {
    "answer": "no answer: {metric} needs one",
    "reference": "no reference answer: {metric} needs one",
    "contexts": "no retrieved contexts: {metric} needs them",
}


async def judge_metric(metric: str, item: JudgeInput, llm: LLM, embeddings: RagasEmbeddings | None = None) -> Outcome:
    """One metric of one item through ragas; failures come back as the Outcome's reason."""
    spec = JUDGE_METRICS[metric]
    missing = next((name for name in spec.needs if not _present(getattr(item, name))), None)
    if missing is not None:
        return Outcome.skipped(MISSING[missing].format(metric=metric))
    if metric == "faithfulness" and abstains(item.answer):
        # An abstention asserts nothing about the corpus: scoring it 0 would punish the right answer
        # to an adversarial question; answer_relevancy still marks it noncommittal.
        return Outcome.skipped("the answer abstains (not enough information): no claim to check")
    judge = RagasLLM(llm)  # one per score: it numbers the repeated prompts of answer relevancy
    try:
        result = await spec.build(judge, embeddings).ascore(**spec.arguments(item))
    except JudgeCallError as error:
        return Outcome.failed(str(error))
    except NotImplementedError:
        raise  # a setup error (no offline judgement for a ragas request): every item would hit it
    except Exception as error:  # ragas' own checks and arithmetic: the item fails, the batch goes on
        return Outcome.failed(f"ragas {metric} raised {type(error).__name__}: {error}")
    if metric == "answer_relevancy" and not any(r.question.strip() for r in judge.replies_of(AnswerRelevanceOutput)):
        # ragas scores an answer 0 when no question came back; that is a judge failure, not irrelevance.
        return Outcome.failed("the judge generated no question from the answer")
    value = result.value
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return Outcome.failed(f"ragas returned {value!r}: {spec.nothing_to_count}")
    return Outcome.ok(value)


async def judge_items(
    items: Sequence[JudgeInput],
    metrics: Sequence[str],
    llm: LLM,
    embedder: Embedder | None,
    *,
    run_id: str,
    suite: Suite,
    dataset_version: str,
    progress: Progress | None = None,
) -> list[Score]:
    """Scores for every (item, metric), item by item in input order; `progress(done, total)` per item."""
    unknown = [m for m in metrics if m not in JUDGE_METRICS]
    if unknown:
        raise ValueError(f"unknown judge metrics {unknown}; choose from {sorted(JUDGE_METRICS)}")
    if "answer_relevancy" in metrics and embedder is None:
        raise ValueError("answer_relevancy needs an embedder (build_embedder(settings))")
    embeddings = RagasEmbeddings(embedder) if embedder is not None else None
    done, total = 0, len(items)

    async def one(item: JudgeInput) -> list[Score]:
        nonlocal done
        outcomes = await asyncio.gather(*(judge_metric(m, item, llm, embeddings) for m in metrics))
        done += 1
        if progress is not None:
            progress(done, total)
        return [
            outcome.score(run_id=run_id, suite=suite, item_id=item.item_id, stratum=item.stratum, metric=metric,
                          dataset_version=dataset_version, judge_model=llm.model)  # fmt: skip
            for metric, outcome in zip(metrics, outcomes)
        ]

    scores = [score for item_scores in await asyncio.gather(*(one(i) for i in items)) for score in item_scores]
    log_outcomes(scores, f"judge {llm.model}")
    return scores


def judge_items_sync(items: Sequence[JudgeInput], metrics: Sequence[str], llm: LLM, embedder: Embedder | None,
                     **options: Any) -> list[Score]:  # fmt: skip
    """`judge_items` from synchronous code (a DAG task, the CLI)."""
    # The layer's blocking helper also closes the HTTP client of the event loop it ran in.
    return llm._blocking(lambda: judge_items(items, metrics, llm, embedder, **options))


def log_outcomes(scores: Sequence[Score], label: str) -> None:
    """One line per metric: how many items scored, failed (with the commonest reasons) and were skipped."""
    by_metric: dict[str, Counter[str]] = {}
    reasons: dict[str, Counter[str]] = {}
    for score in scores:
        by_metric.setdefault(score.metric, Counter())[score.status] += 1
        if score.status == "failed":
            reasons.setdefault(score.metric, Counter())[score.error or "?"] += 1
    for metric, counts in by_metric.items():
        common = "; ".join(f"{reason} ×{n}" for reason, n in reasons.get(metric, Counter()).most_common(3))
        level = logging.WARNING if counts["failed"] else logging.INFO
        failed = f"{counts['failed']} failed" + (f" ({common})" if common else "")
        log.log(level, "%s: %s %d ok, %s, %d skipped", label, metric, counts["ok"], failed, counts["skipped"])


def _present(value: str | list[str] | None) -> bool:
    if isinstance(value, list):
        return any(text.strip() for text in value)
    return bool(value and value.strip())
