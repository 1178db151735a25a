"""LLM-as-judge metrics: ragwatch's consolidated judge by default, ragas' metrics as the reference.

| metric | definition (ragas') | needs | ragwatch requests | ragas requests |
|---|---|---|---|---|
| faithfulness | supported answer claims / answer claims | answer, contexts | shared: 1 claim extraction + 1 verification | 2 |
| answer_relevancy | mean cosine(question, N questions generated back), 0 when all noncommittal | answer | 1 (n = N) + local embeddings | N |
| context_precision | average precision of the per-context usefulness verdicts, in rank order | reference, contexts | shared verification | 1 per context |
| context_precision_share | useful contexts / contexts given: the same verdicts, unweighted (ragwatch's) | reference, contexts | the same verification, no extra request | 1 per context (ContextPrecisionWithReference's verdicts, counted) |
| context_recall | attributed reference claims / reference claims | reference, contexts | shared: extraction + verification | 1 |
| ragas_noise_sensitivity | share of answer claims both wrong (not in the reference) and supported by a relevant context | answer, reference, contexts | shared extraction + 1 claim-sources request | 3 + 2 per context |

`RAGWATCH_JUDGE_IMPLEMENTATION` picks the path (`judge_items(..., implementation=)` overrides it):
- `ragwatch` (default): per item, one claim-extraction request for the answer and the reference
  (`pipelines.evaluation.metrics.judge_prompts`), the N relevancy questions in one request with
  OpenAI's `n` (in parallel with the extraction), then one verification request that gives every
  answer claim, every reference claim and every context its verdict — 3 requests for the four main
  metrics, where ragas sends 6 + the number of contexts. Claims are extracted once per (judge,
  question, text) and reused: faithfulness, context recall and ragas' noise sensitivity share them,
  and noise ΔF (noise.py) reuses the clean answer's and extracts only the noisy one's.
- `ragas`: ragas' collections metrics on our model layer (`pipelines.models.ragas_adapter`), one
  ragas request per call — the reference implementation. Its metric definitions are the ones above;
  `tests/unit/pipelines/evaluation/metrics/test_judge.py` runs both paths on the same scripted
  verdicts and gets the same scores.

Replies are checked, not trusted, on both paths: a verdict list that skips, repeats or invents a
claim (or a context), or fewer relevancy questions than the N asked, fails the score with the reason
instead of averaging over what came back. ragas' own ContextRecall lists the reference's statements
and classifies them in one reply, so on the ragas path only an empty or unnamed classification is
caught; ragwatch extracts the reference claims first and checks every one got a verdict.

Every (item, metric) becomes one `Score`, and one item's failure never touches another's. A
metric that could not be computed is `failed` with the reason and no value: a judge call that
failed in our layer ("judge claim extraction failed: timeout after 3 attempts (60 s each)"), a
reply that does not answer what was asked, a ragas error, or nothing to count (no claims in the
answer). A metric whose inputs are missing (online traces have no reference answer), or the
faithfulness of an answer that only abstains, is `skipped` with the reason. Never 0, never NaN.

Note on context precision: ragas' judge version is rank-weighted (average precision over the
verdicts of each retrieved context, in rank order), so 3 useful chunks of 5 score between 0.48 and
1.0 depending on their ranks, and one useful chunk followed by four useless ones scores 1.0.
`context_precision_share` counts the same verdicts unweighted, 3/5 = 0.60: the operating table's
context precision, judged, which the diagnosis' < 0.60 band reads (the id-based precision@5 of
retrieval.py counts gold ids only, at most 1/5 with one gold chunk).
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from ragas.metrics.collections import (
    AnswerRelevancy,
    ContextPrecisionWithReference,
    ContextRecall,
    Faithfulness,
    NoiseSensitivity,
)
from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceOutput
from ragas.metrics.collections.context_precision.util import ContextPrecisionOutput
from ragas.metrics.collections.context_recall.util import ContextRecallOutput
from ragas.metrics.collections.faithfulness.util import NLIStatementOutput
from ragas.metrics.collections.noise_sensitivity.util import StatementFaithfulnessOutput

from pipelines.core.records import Score, ScoreStatus, Suite
from pipelines.core.settings import load_settings
from pipelines.core.text import abstains
from pipelines.evaluation.metrics.judge_prompts import (
    ClaimExtraction,
    ClaimsInput,
    ClaimSources,
    ClaimVerification,
    QuestionsBack,
    QuestionsInput,
    ReplyProblem,
    SourcesInput,
    VerificationInput,
)
from pipelines.models.embedding_batches import EmbeddingBatches
from pipelines.models.embeddings import Embedder
from pipelines.models.llm import LLM, Progress

# isort: off  (ragas_adapter sets RAGAS_DO_NOT_TRACK, which must precede the first ragas import)
from pipelines.models.ragas_adapter import (
    JudgeCallError,
    RagasEmbeddings,
    RagasLLM,
    embed_remembered,
)
from pipelines.models.usage import scope, scoped

# isort: on

log = logging.getLogger(__name__)

RELEVANCY_QUESTIONS = 3
"""N: questions generated back from each answer for answer relevance."""
JudgeImplementation = Literal["ragwatch", "ragas"]
IMPLEMENTATIONS: tuple[JudgeImplementation, ...] = ("ragwatch", "ragas")


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

    def score(
        self,
        *,
        run_id: str,
        suite: Suite,
        item_id: str,
        stratum: str,
        metric: str,
        dataset_version: str,
        judge_model: str | None = None,
    ) -> Score:
        return Score(
            run_id=run_id,
            suite=suite,
            item_id=item_id,
            stratum=stratum,
            metric=metric,
            value=self.value,
            status=self.status,
            error=self.error,
            judge_model=judge_model,
            dataset_version=dataset_version,
        )


@dataclass(frozen=True)
class JudgeMetric:
    """One metric: the inputs it needs, and on the ragas path how to build it, check its replies and
    read its NaN."""

    needs: tuple[str, ...]
    """JudgeInput fields that must be present: answer, reference, contexts."""
    build: Callable[[RagasLLM, RagasEmbeddings | None], Any]
    arguments: Callable[[JudgeInput], dict[str, Any]]
    nothing_to_count: str
    """Why ragas returns NaN for this metric (ragwatch fails the score with the same words)."""
    check: Callable[[RagasLLM, JudgeInput], str | None]
    """Why ragas' replies do not answer what it asked (the score then fails), or None."""
    value: Callable[[RagasLLM], float] | None = None
    """The score read from ragas' replies instead of its result: another figure from the same
    verdicts."""


def _verdicts_per_statement(
    model: type[BaseModel], field: str
) -> Callable[[RagasLLM, JudgeInput], str | None]:
    """One verdict per statement sent, in every reply of `model` (and, for noise sensitivity, in the
    order sent: ragas lines the verdicts up by position)."""

    def check(judge: RagasLLM, item: JudgeInput) -> str | None:
        for request, reply in judge.exchanges_of(model):
            sent = [str(s) for s in request.get("statements", [])]
            verdicts = getattr(reply, field)
            if len(verdicts) != len(sent):
                return f"the judge returned {len(verdicts)} verdicts for {len(sent)} claims"
            echoed = [" ".join(v.statement.split()) for v in verdicts]
            wanted = [" ".join(s.split()) for s in sent]
            if (
                model is StatementFaithfulnessOutput
                and echoed != wanted
                and sorted(echoed) == sorted(wanted)
            ):
                return "the judge returned the verdicts in another order than the claims it was asked about"
        return None

    return check


def _every_question(judge: RagasLLM, item: JudgeInput) -> str | None:
    questions = [r.question.strip() for r in judge.replies_of(AnswerRelevanceOutput)]
    if sum(bool(q) for q in questions) < RELEVANCY_QUESTIONS:
        return f"the judge generated {sum(bool(q) for q in questions)} of the {RELEVANCY_QUESTIONS} questions asked"
    return None


def _every_context(judge: RagasLLM, item: JudgeInput) -> str | None:
    verdicts = judge.replies_of(ContextPrecisionOutput)
    if len(verdicts) != len(item.contexts):
        return f"the judge returned {len(verdicts)} verdicts for {len(item.contexts)} contexts"
    return None


def _named_classifications(judge: RagasLLM, item: JudgeInput) -> str | None:
    # ragas' ContextRecall lists the reference's statements itself, in the same reply: there is no
    # list to check them against, only that each classification names its statement.
    for reply in judge.replies_of(ContextRecallOutput):
        if any(not c.statement.strip() for c in reply.classifications):
            return "the judge classified a reference statement without naming it"
    return None


def _with_reference(item: JudgeInput) -> dict[str, Any]:
    """What ragas' reference-based context metrics read of an item."""
    return {
        "user_input": item.question,
        "reference": item.reference,
        "retrieved_contexts": item.contexts,
    }


_CONTEXT_PRECISION = JudgeMetric(
    needs=("reference", "contexts"),
    build=lambda llm, _: ContextPrecisionWithReference(llm=llm),
    arguments=_with_reference,
    nothing_to_count="the judge gave no usable verdicts",
    check=_every_context,
)


JUDGE_METRICS: dict[str, JudgeMetric] = {
    "faithfulness": JudgeMetric(
        needs=("answer", "contexts"),
        build=lambda llm, _: Faithfulness(llm=llm),
        arguments=lambda i: {
            "user_input": i.question,
            "response": i.answer,
            "retrieved_contexts": i.contexts,
        },
        nothing_to_count="the judge found no claims in the answer",
        check=_verdicts_per_statement(NLIStatementOutput, "statements"),
    ),
    "answer_relevancy": JudgeMetric(
        needs=("answer",),
        build=lambda llm, embeddings: AnswerRelevancy(
            llm=llm, embeddings=embeddings, strictness=RELEVANCY_QUESTIONS
        ),
        arguments=lambda i: {"user_input": i.question, "response": i.answer},
        nothing_to_count="no question could be compared",
        check=_every_question,
    ),
    "context_precision": _CONTEXT_PRECISION,
    # The same judge and verdicts, counted unweighted: the share of the chunks given that are
    # useful.
    "context_precision_share": replace(
        _CONTEXT_PRECISION,
        value=lambda judge: share(
            [reply.verdict for reply in judge.replies_of(ContextPrecisionOutput)]
        ),
    ),
    "context_recall": JudgeMetric(
        needs=("reference", "contexts"),
        build=lambda llm, _: ContextRecall(llm=llm),
        arguments=_with_reference,
        nothing_to_count="the judge found no claims in the reference answer",
        check=_named_classifications,
    ),
    "ragas_noise_sensitivity": JudgeMetric(
        needs=("answer", "reference", "contexts"),
        build=lambda llm, _: NoiseSensitivity(llm=llm, mode="relevant"),
        arguments=lambda i: {
            "user_input": i.question,
            "response": i.answer,
            "reference": i.reference,
            "retrieved_contexts": i.contexts,
        },
        nothing_to_count="the judge found no claims in the answer",
        check=_verdicts_per_statement(StatementFaithfulnessOutput, "statements"),
    ),
}
MISSING = {
    "answer": "no answer: {metric} needs one",
    "reference": "no reference answer: {metric} needs one",
    "contexts": "no retrieved contexts: {metric} needs them",
}
ABSTAINS = "the answer abstains (not enough information): no claim to check"


def configured_implementation() -> JudgeImplementation:
    """`RAGWATCH_JUDGE_IMPLEMENTATION` (settings.judge_implementation)."""
    return load_settings().judge_implementation


def skip_reason(metric: str, item: JudgeInput) -> str | None:
    """Why `metric` does not apply to `item`, or None when it does."""
    missing = next(
        (name for name in JUDGE_METRICS[metric].needs if not _present(getattr(item, name))), None
    )
    if missing is not None:
        return MISSING[missing].format(metric=metric)
    if metric == "faithfulness" and abstains(item.answer, item.question):
        # An abstention asserts nothing about the corpus: scoring it 0 would punish the right answer
        # to an adversarial question; answer_relevancy still marks it noncommittal. An answer that
        # hedges and then asserts something ("I'm not sure, but ...") is judged like any other.
        return ABSTAINS
    return None


async def judge_metric(
    metric: str,
    item: JudgeInput,
    llm: LLM,
    embeddings: Embedder | RagasEmbeddings | None = None,
    *,
    implementation: JudgeImplementation | None = None,
) -> Outcome:
    """One metric of one item; failures come back as the Outcome's reason. `judge_items` shares
    requests between the metrics of an item: prefer it for several metrics."""
    reason = skip_reason(metric, item)
    if reason is not None:
        return Outcome.skipped(reason)
    embedder = embeddings.embedder if isinstance(embeddings, RagasEmbeddings) else embeddings
    if _implementation(implementation) == "ragas":
        return await ragas_metric(
            metric, item, llm, RagasEmbeddings(embedder) if embedder is not None else None
        )
    return (await RagwatchJudge(llm, embedder).judge(item, [metric]))[metric]


async def ragas_metric(
    metric: str, item: JudgeInput, llm: LLM, embeddings: RagasEmbeddings | None = None
) -> Outcome:
    """One metric of one item through ragas, its replies checked; the item must have the metric's
    inputs."""
    spec = JUDGE_METRICS[metric]
    judge = RagasLLM(llm)  # one per score: it numbers the repeated prompts of answer relevancy
    try:
        result = await spec.build(judge, embeddings).ascore(**spec.arguments(item))
    except JudgeCallError as error:
        return Outcome.failed(str(error))
    except NotImplementedError:
        raise  # a setup error (no offline judgement for a ragas request): every item would hit it
    except (
        Exception
    ) as error:  # ragas' own checks and arithmetic: the item fails, the batch goes on
        problem = spec.check(judge, item)  # mismatched verdict lists often break ragas' arithmetic
        return Outcome.failed(problem or f"ragas {metric} raised {type(error).__name__}: {error}")
    problem = spec.check(judge, item)
    if problem is not None:
        return Outcome.failed(problem)
    value = spec.value(judge) if spec.value is not None else result.value
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return Outcome.failed(f"ragas returned {value!r}: {spec.nothing_to_count}")
    return Outcome.ok(value)


# --- ragwatch's consolidated judge ----------------------------------------------------------------

CLAIM_MEMORY = 20_000
"""Claims remembered per judge model instance (question, text) -> claims, most recent kept."""
_CLAIMS: weakref.WeakKeyDictionary[LLM, OrderedDict[tuple[str, str], list[str]]] = (
    weakref.WeakKeyDictionary()
)
ANSWER_CLAIM_METRICS = ("faithfulness", "ragas_noise_sensitivity")
CONTEXT_VERDICT_METRICS = ("context_precision", "context_precision_share")
VERIFIED_METRICS = ("faithfulness", "context_recall", *CONTEXT_VERDICT_METRICS)
REFERENCE_CLAIM_METRICS = ("context_recall", "ragas_noise_sensitivity")


class RagwatchJudge:
    """ragwatch's judge on one LLM: per item, claims extracted once, the relevancy questions in one
    request, and one verification request for every claim and context verdict (module docstring)."""

    def __init__(self, llm: LLM, embedder: Embedder | None = None):
        self.llm, self.embedder = llm, embedder
        self._claims = _CLAIMS.setdefault(llm, OrderedDict())
        # Every item embeds its question and N questions back: one call for all that are waiting.
        self._embeddings = (
            EmbeddingBatches(lambda texts: embed_remembered(embedder, texts))
            if embedder is not None
            else None
        )

    async def judge(self, item: JudgeInput, metrics: Sequence[str]) -> dict[str, Outcome]:
        """An Outcome for each metric of one item."""
        outcomes = {
            m: Outcome.skipped(reason)
            for m in metrics
            if (reason := skip_reason(m, item)) is not None
        }
        todo = [m for m in metrics if m not in outcomes]
        claimed = [m for m in todo if m != "answer_relevancy"]
        # A request's usage counts under the metrics it serves: the claim requests serve every claim
        # metric at once.
        jobs = [scoped(self._claim_metrics(item, claimed), metric="+".join(claimed) or None)]
        if "answer_relevancy" in todo:
            jobs.append(scoped(self._relevancy(item), metric="answer_relevancy"))
        for part in await asyncio.gather(*jobs):
            outcomes.update(part)
        return {m: outcomes[m] for m in metrics}

    async def claims(self, question: str, texts: list[str]) -> list[list[str]] | str:
        """The claims of each text (one request unless all were extracted before), or the failure
        reason."""
        # The request names all the texts, not only those not remembered: what is remembered depends
        # on which item finished first, and a request that depended on it would miss the cache on a
        # rerun.
        missing = (
            list(dict.fromkeys(texts))
            if any((question, t) not in self._claims for t in texts)
            else []
        )
        if missing:
            result = await self.llm.run(
                ClaimExtraction(), ClaimsInput(question=question, texts=missing)
            )
            if not result.ok:
                return f"judge claim extraction failed: {result.error}"
            try:
                extracted = result.value.claims_of(len(missing))
            except ReplyProblem as problem:
                return f"judge claim extraction: {problem}"
            for text, found in zip(missing, extracted):
                self._claims[(question, text)] = found
                while len(self._claims) > CLAIM_MEMORY:
                    self._claims.popitem(last=False)
        for text in texts:
            self._claims.move_to_end((question, text))
        return [self._claims[(question, t)] for t in texts]

    async def _claim_metrics(self, item: JudgeInput, metrics: list[str]) -> dict[str, Outcome]:
        if not metrics:
            return {}
        outcomes: dict[str, Outcome] = {}
        sides = {
            "answer": item.answer if any(m in metrics for m in ANSWER_CLAIM_METRICS) else None,
            "reference": item.reference
            if any(m in metrics for m in REFERENCE_CLAIM_METRICS)
            else None,
        }
        texts = {side: text for side, text in sides.items() if text is not None}
        extracted = await self.claims(item.question, list(texts.values())) if texts else []
        if isinstance(extracted, str):
            outcomes = {
                m: Outcome.failed(extracted) for m in metrics if m not in CONTEXT_VERDICT_METRICS
            }
            extracted = []
        claims = dict(zip(texts, extracted))
        answer_claims, reference_claims = claims.get("answer"), claims.get("reference")
        if answer_claims == []:
            for metric in ANSWER_CLAIM_METRICS:
                outcomes[metric] = Outcome.failed(JUDGE_METRICS[metric].nothing_to_count)
        if reference_claims == []:
            for metric in REFERENCE_CLAIM_METRICS:
                outcomes.setdefault(
                    metric, Outcome.failed(JUDGE_METRICS["context_recall"].nothing_to_count)
                )
        pending = [m for m in metrics if m not in outcomes]
        jobs = []
        if set(VERIFIED_METRICS) & set(pending):
            jobs.append(
                self._verification(item, pending, answer_claims or [], reference_claims or [])
            )
        if "ragas_noise_sensitivity" in pending:
            jobs.append(self._noise_sensitivity(item, answer_claims or [], reference_claims or []))
        for part in await asyncio.gather(*jobs):
            outcomes.update(part)
        return {m: outcomes[m] for m in metrics}

    async def _verification(
        self,
        item: JudgeInput,
        metrics: list[str],
        answer_claims: list[str],
        reference_claims: list[str],
    ) -> dict[str, Outcome]:
        asked = {m for m in metrics if m in VERIFIED_METRICS}
        request = VerificationInput(
            contexts=item.contexts,
            question=item.question,
            reference=item.reference
            if asked & {"context_recall", *CONTEXT_VERDICT_METRICS}
            else None,
            judge_contexts=bool(asked & set(CONTEXT_VERDICT_METRICS)),
            reference_claims=reference_claims if "context_recall" in asked else [],
            answer_claims=answer_claims if "faithfulness" in asked else [],
        )
        result = await self.llm.run(ClaimVerification(), request)
        if not result.ok:
            return {
                m: Outcome.failed(f"judge claim verification failed: {result.error}") for m in asked
            }
        reply, outcomes = result.value, {}
        for metric, verdicts, score in (
            ("faithfulness", lambda: reply.answer_verdicts(len(request.answer_claims)), share),
            (
                "context_recall",
                lambda: reply.reference_verdicts(len(request.reference_claims)),
                share,
            ),
            (
                "context_precision",
                lambda: reply.context_verdicts(len(request.contexts)),
                average_precision,
            ),
            (
                "context_precision_share",
                lambda: reply.context_verdicts(len(request.contexts)),
                share,
            ),
        ):
            if metric in asked:
                try:
                    outcomes[metric] = Outcome.ok(score(verdicts()))
                except ReplyProblem as problem:
                    outcomes[metric] = Outcome.failed(str(problem))
        return outcomes

    async def _noise_sensitivity(
        self, item: JudgeInput, answer_claims: list[str], reference_claims: list[str]
    ) -> dict[str, Outcome]:
        request = SourcesInput(
            contexts=item.contexts,
            question=item.question,
            reference=item.reference or "",
            reference_claims=reference_claims,
            answer_claims=answer_claims,
        )
        result = await self.llm.run(ClaimSources(), request)
        if not result.ok:
            return {
                "ragas_noise_sensitivity": Outcome.failed(
                    f"judge claim sources failed: {result.error}"
                )
            }
        try:
            matrices = result.value.matrices(
                len(reference_claims), len(answer_claims), len(item.contexts)
            )
        except ReplyProblem as problem:
            return {"ragas_noise_sensitivity": Outcome.failed(str(problem))}
        return {"ragas_noise_sensitivity": Outcome.ok(noise_sensitivity(*matrices))}

    async def _relevancy(self, item: JudgeInput) -> dict[str, Outcome]:
        def failed(reason: str) -> dict[str, Outcome]:
            return {"answer_relevancy": Outcome.failed(reason)}

        if self._embeddings is None:
            return failed("answer_relevancy needs an embedder (build_embedder(settings))")
        n = RELEVANCY_QUESTIONS
        result = await self.llm.run_samples(
            QuestionsBack(), QuestionsInput(response=item.answer or ""), n
        )
        if not result.ok:
            return failed(f"judge question generation failed: {result.error}")
        questions = [sample.question.strip() for sample in result.value]
        if len(questions) != n or not all(questions):
            return failed(
                f"the judge generated {sum(bool(q) for q in questions)} of the {n} questions asked"
            )
        try:
            vectors = await self._embeddings.embed([item.question, *questions])
        except JudgeCallError as error:
            return failed(str(error))
        all_noncommittal = all(sample.noncommittal for sample in result.value)
        return {
            "answer_relevancy": Outcome.ok(
                answer_relevancy(vectors[0], vectors[1:], all_noncommittal)
            )
        }


# --- the arithmetic, as ragas does it -------------------------------------------------------------


def share(verdicts: Sequence[int]) -> float:
    """Faithfulness and context recall: the share of claims with verdict 1 (context_precision_share:
    of contexts)."""
    if not verdicts:
        raise ReplyProblem("no verdict to count")
    return sum(bool(v) for v in verdicts) / len(verdicts)


def average_precision(verdicts: Sequence[int]) -> float:
    """ragas' context precision: mean over useful contexts of the precision at their rank (0 when
    none is useful; ragas' 1e-10 keeps the empty case finite, and the same arithmetic gives the same
    float)."""
    numerator = sum(sum(verdicts[: i + 1]) / (i + 1) * verdicts[i] for i in range(len(verdicts)))
    return numerator / (sum(verdicts) + 1e-10)


def answer_relevancy(
    question: Sequence[float], generated: Sequence[Sequence[float]], all_noncommittal: bool
) -> float:
    """Mean cosine between the question and each generated question; 0 when every sample was
    noncommittal.

    ragas' arithmetic (numpy, one matrix product): the same floats, and no per-element Python loop
    on the event loop that sends the other items' requests."""
    if all_noncommittal:
        return 0.0
    asked = np.asarray(question, dtype=np.float64).reshape(1, -1)
    back = np.asarray(generated, dtype=np.float64).reshape(len(generated), -1)
    norms = np.linalg.norm(back, axis=1) * np.linalg.norm(asked, axis=1)
    cosines = np.divide(
        (back @ asked.T).reshape(-1), norms, out=np.zeros(len(back)), where=norms > 0
    )
    return float(cosines.mean())


def noise_sensitivity(
    reference_by_context: list[list[int]],
    answer_by_context: list[list[int]],
    answer_by_reference: list[int],
) -> float:
    """ragas NoiseSensitivity, mode "relevant": the share of answer claims that the reference does
    not support (incorrect) yet a relevant context — one that supports a reference claim — does."""
    contexts = len(reference_by_context[0]) if reference_by_context else 0
    relevant = [any(row[c] for row in reference_by_context) for c in range(contexts)]
    flagged = [
        not by_reference and any(relevant[c] and row[c] for c in range(contexts))
        for row, by_reference in zip(answer_by_context, answer_by_reference)
    ]
    if not flagged:
        raise ReplyProblem("no answer claim to count")
    return sum(flagged) / len(flagged)


# --- batches --------------------------------------------------------------------------------------


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
    implementation: JudgeImplementation | None = None,
) -> list[Score]:
    """Scores for every (item, metric), item by item in input order; `progress(done, total)` per
    item. `implementation`: "ragwatch" or "ragas"; None reads RAGWATCH_JUDGE_IMPLEMENTATION (default
    ragwatch)."""
    unknown = [m for m in metrics if m not in JUDGE_METRICS]
    if unknown:
        raise ValueError(f"unknown judge metrics {unknown}; choose from {sorted(JUDGE_METRICS)}")
    if "answer_relevancy" in metrics and embedder is None:
        raise ValueError("answer_relevancy needs an embedder (build_embedder(settings))")
    path = _implementation(implementation)
    ours = RagwatchJudge(llm, embedder)
    embeddings = RagasEmbeddings(embedder) if embedder is not None else None
    done, total = 0, len(items)
    labels = {
        "run_id": run_id,
        "suite": suite,
        "dataset_version": dataset_version,
        "judge_model": llm.model,
    }

    async def through_ragas(metric: str, item: JudgeInput) -> Outcome:
        reason = skip_reason(metric, item)
        if reason is not None:
            return Outcome.skipped(reason)
        with scope(metric=metric):
            return await ragas_metric(metric, item, llm, embeddings)

    async def outcomes_of(item: JudgeInput) -> list[Outcome]:
        if path == "ragwatch":
            return list((await ours.judge(item, metrics)).values())
        return list(await asyncio.gather(*(through_ragas(m, item) for m in metrics)))

    async def one(item: JudgeInput) -> list[Score]:
        nonlocal done
        outcomes = await outcomes_of(item)
        done += 1
        if progress is not None:
            progress(done, total)
        return [
            outcome.score(item_id=item.item_id, stratum=item.stratum, metric=metric, **labels)
            for metric, outcome in zip(metrics, outcomes)
        ]

    scores = [
        score
        for item_scores in await asyncio.gather(*(one(i) for i in items))
        for score in item_scores
    ]
    log_outcomes(scores, f"judge {llm.model} ({path})")
    return scores


def judge_items_sync(
    items: Sequence[JudgeInput],
    metrics: Sequence[str],
    llm: LLM,
    embedder: Embedder | None,
    **options: Any,
) -> list[Score]:
    """`judge_items` from synchronous code (a DAG task, the CLI)."""
    # The layer's blocking helper also closes the HTTP client of the event loop it ran in.
    return llm._blocking(lambda: judge_items(items, metrics, llm, embedder, **options))


def _implementation(implementation: JudgeImplementation | None) -> JudgeImplementation:
    chosen = implementation or configured_implementation()
    if chosen not in IMPLEMENTATIONS:
        raise ValueError(
            f"unknown judge implementation {chosen!r}; choose from {', '.join(IMPLEMENTATIONS)}"
        )
    return chosen


def log_outcomes(scores: Sequence[Score], label: str) -> None:
    """One line per metric: how many items scored, failed (with the commonest reasons) and were
    skipped."""
    by_metric: dict[str, Counter[str]] = {}
    reasons: dict[str, Counter[str]] = {}
    for score in scores:
        by_metric.setdefault(score.metric, Counter())[score.status] += 1
        if score.status == "failed":
            reasons.setdefault(score.metric, Counter())[score.error or "?"] += 1
    for metric, counts in by_metric.items():
        common = "; ".join(
            f"{reason} ×{n}" for reason, n in reasons.get(metric, Counter()).most_common(3)
        )
        level = logging.WARNING if counts["failed"] else logging.INFO
        failed = f"{counts['failed']} failed" + (f" ({common})" if common else "")
        log.log(
            level,
            "%s: %s %d ok, %s, %d skipped",
            label,
            metric,
            counts["ok"],
            failed,
            counts["skipped"],
        )


def _present(value: str | list[str] | None) -> bool:
    if isinstance(value, list):
        return any(text.strip() for text in value)
    return bool(value and value.strip())
