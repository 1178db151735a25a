"""Noise sensitivity as ΔF: how much faithfulness drops when irrelevant chunks are injected.

For each item, `k` chunks from a pool are injected into its clean contexts at positions seeded by
the item id; the system under test answers again from the noisy contexts (`answer_fn`); both
answers are judged by the same ragas Faithfulness as `judge_items`, and
ΔF = F(clean) − F(noisy) is reported as metric `noise_delta_f`. Positive means the answer got
worse with noise; above `FRAGILE` (0.15) the prompt or model is fragile.

Both answers are judged against the clean contexts. The injected chunks are irrelevant by
construction, so a claim that only they support is a distraction, not grounding; judged against
the noisy contexts, an answer copied from the noise would look perfectly faithful.

Two ways to choose the noise:
- `random`: uniformly among the chunks of other documents (no gold or retrieved chunk's document),
  seeded by the item id, so a rerun injects the same chunks and hits the judge cache;
- `hard`: the chunks most similar to the question (embedding cosine when the pool has an embedder,
  else the share of the question's content words they contain) that are neither gold nor
  retrieved: the distractors a retriever plausibly returns next.

How this differs from ragas NoiseSensitivity (metric `ragas_noise_sensitivity`, judge.py): ragas
injects nothing and regenerates nothing. It takes one answer with its retrieved contexts and, against
the reference answer, counts the share of the answer's claims that are incorrect yet supported by
a relevant (mode "relevant") or irrelevant ("irrelevant") retrieved context — lower is better, it
needs a reference (offline only) and costs 3 + 2 per context judge calls. ΔF is an intervention:
it needs no reference, so it runs online too, but it needs the system under test to answer again,
and costs 2 judge calls per answer judged (4 per item, 2 when F(clean) is passed in).
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pipelines.evaluation.judge import JudgeInput, Outcome, judge_metric, log_outcomes
from pipelines.models.embeddings import Embedder
from pipelines.models.llm import LLM, Progress
from pipelines.records import Score, Suite
from pipelines.text import content_tokens

METRIC = "noise_delta_f"
FRAGILE = 0.15
"""ΔF above this means the prompt or model is fragile (brief § Metrics)."""
DEFAULT_K = 2
NoiseMode = Literal["random", "hard"]
AnswerFn = Callable[[str, list[str]], Awaitable[str | None] | str | None]
"""(question, contexts) -> the system's answer; None when it cannot answer from given contexts. An
exception's message becomes the item's failure reason. Coroutine functions run on the event loop,
plain functions in a worker thread."""


class NoiseChunk(Protocol):
    """What the pool needs of a chunk (`pipelines.corpus.chunking.Chunk` fits)."""

    chunk_id: str
    document: str
    text: str


def delta_f(f_clean: float, f_noisy: float) -> float:
    """ΔF = F(clean) − F(noisy): positive when injected noise made the answer less faithful."""
    return f_clean - f_noisy


def is_fragile(delta: float) -> bool:
    return delta > FRAGILE


NEIGHBOURS = 20
"""Dense neighbours read back per question to form the candidate pool."""


class NoisePool:
    """The chunks noise is drawn from (the indexed corpus, or a candidate set such as a deeper search).

    With an embedder, hard negatives are ranked by cosine and every chunk is embedded once, on the
    first hard pick: pass a candidate pool rather than a whole large corpus.
    """

    @classmethod
    def from_index(cls, index, items: Sequence[JudgeInput]) -> NoisePool:
        """Candidate distractors: each question's dense neighbours, read back from the index.

        Hard negatives are then the candidates closest to the question in words that are neither gold
        nor retrieved; taking candidates from the index's stored vectors avoids embedding the corpus
        again in every batch.
        """
        ids = {hit.chunk_id for item in items for hit in index.search(item.question, k=NEIGHBOURS, mode="dense")}
        return cls(index.get(sorted(ids)))

    def __init__(self, chunks: Iterable[NoiseChunk], embedder: Embedder | None = None):
        self.chunks = sorted(chunks, key=lambda c: c.chunk_id)  # a stable order keeps seeded picks reproducible
        self.embedder = embedder
        self._documents = {c.chunk_id: c.document for c in self.chunks}
        self._tokens = [set(content_tokens(c.text)) for c in self.chunks]
        self._vectors: list[list[float]] | None = None
        self._lock = threading.Lock()

    def pick(self, item: JudgeInput, mode: NoiseMode, k: int) -> list[NoiseChunk]:
        """Up to k chunks to inject, never a gold or retrieved chunk nor one with a clean context's text."""
        excluded_ids = set(item.gold_chunk_ids) | set(item.context_ids)
        clean_texts = {text.strip() for text in item.contexts}
        eligible = [
            i for i, c in enumerate(self.chunks) if c.chunk_id not in excluded_ids and c.text.strip() not in clean_texts
        ]
        if mode == "random":
            excluded_documents = {self._documents[i] for i in excluded_ids if i in self._documents}
            eligible = [i for i in eligible if self.chunks[i].document not in excluded_documents]
            picked = random.Random(f"noise:{item.item_id}").sample(eligible, min(k, len(eligible)))
        elif mode == "hard":
            similarity = self._similarities(item.question)
            picked = sorted(eligible, key=lambda i: (-similarity[i], self.chunks[i].chunk_id))[:k]
        else:
            raise ValueError(f"unknown noise mode {mode!r}; expected 'random' or 'hard'")
        return [self.chunks[i] for i in picked]

    def _similarities(self, question: str) -> list[float]:
        if self.embedder is None:
            wanted = set(content_tokens(question))
            return [len(wanted & tokens) / (len(wanted) or 1) for tokens in self._tokens]
        with self._lock:
            if self._vectors is None:
                self._vectors = self.embedder.embed([c.text for c in self.chunks])
            query = self.embedder.embed([question])[0]
        return [sum(a * b for a, b in zip(query, vector)) for vector in self._vectors]


def inject(contexts: Sequence[str], noise: Sequence[str], item_id: str) -> list[str]:
    """The clean contexts with the noise inserted at positions seeded by the item id, so noise is
    not always last (where a model may ignore it) nor always first."""
    noisy = list(contexts)
    positions = random.Random(f"noise-positions:{item_id}")
    for text in noise:
        noisy.insert(positions.randint(0, len(noisy)), text)
    return noisy


@dataclass(frozen=True)
class NoiseResult:
    score: Score
    mode: NoiseMode
    injected_ids: list[str] = field(default_factory=list)
    noisy_answer: str | None = None
    f_clean: float | None = None
    f_noisy: float | None = None

    @property
    def fragile(self) -> bool:
        return self.score.value is not None and is_fragile(self.score.value)


async def noise_delta_f(
    items: Sequence[JudgeInput],
    pool: NoisePool,
    answer_fn: AnswerFn,
    llm: LLM,
    *,
    run_id: str,
    suite: Suite,
    dataset_version: str,
    mode: NoiseMode = "hard",
    k: int = DEFAULT_K,
    clean_scores: Mapping[str, Score] | None = None,
    progress: Progress | None = None,
) -> list[NoiseResult]:
    """ΔF per item, in input order. `clean_scores` (item id -> its faithfulness Score from
    `judge_items`) saves judging the clean answers again."""
    done, total = 0, len(items)

    async def one(item: JudgeInput) -> NoiseResult:
        nonlocal done
        outcome, details = await _one_item(item, pool, answer_fn, llm, mode, k, (clean_scores or {}).get(item.item_id))
        done += 1
        if progress is not None:
            progress(done, total)
        score = outcome.score(run_id=run_id, suite=suite, item_id=item.item_id, stratum=item.stratum, metric=METRIC,
                              dataset_version=dataset_version, judge_model=llm.model)  # fmt: skip
        return NoiseResult(score=score, mode=mode, **details)

    results = list(await asyncio.gather(*(one(i) for i in items)))
    log_outcomes([r.score for r in results], f"noise ({mode}, k={k}) {llm.model}")
    return results


async def _one_item(item: JudgeInput, pool: NoisePool, answer_fn: AnswerFn, llm: LLM, mode: NoiseMode, k: int,
                    clean_score: Score | None) -> tuple[Outcome, dict]:  # fmt: skip
    if not (item.answer and item.answer.strip()) or not any(c.strip() for c in item.contexts):
        return Outcome.skipped(f"no answer or no retrieved contexts: {METRIC} needs both"), {}
    noise = await asyncio.to_thread(pool.pick, item, mode, k)  # scans (and may embed) the pool: off the loop
    if not noise:
        return Outcome.skipped(f"no eligible {mode} noise chunk in the pool"), {}
    details: dict = {"injected_ids": [c.chunk_id for c in noise]}
    noisy_contexts = inject(item.contexts, [c.text for c in noise], item.item_id)

    clean, noisy_answer = await asyncio.gather(
        _clean_faithfulness(item, llm, clean_score), _answer(answer_fn, item.question, noisy_contexts)
    )
    if isinstance(noisy_answer, Outcome):
        return noisy_answer, details
    details["noisy_answer"] = noisy_answer
    if clean.status == "skipped":
        return Outcome.skipped(f"F(clean) not applicable: {clean.error}"), details
    if clean.status != "ok":
        return Outcome.failed(f"F(clean) not available: {clean.error}"), details
    details["f_clean"] = clean.value
    # Judged against the clean contexts: see the module docstring.
    noisy = await judge_metric("faithfulness", item.model_copy(update={"answer": noisy_answer}), llm)
    if noisy.status == "skipped":
        # With the noise the system abstained: it lost the answer but asserted nothing unfaithful.
        return Outcome.skipped(f"F(noisy) not applicable: {noisy.error}"), details
    if noisy.status != "ok":
        return Outcome.failed(f"F(noisy) not available: {noisy.error}"), details
    details["f_noisy"] = noisy.value
    return Outcome.ok(delta_f(clean.value, noisy.value)), details


async def _clean_faithfulness(item: JudgeInput, llm: LLM, clean_score: Score | None) -> Outcome:
    if clean_score is not None:
        return Outcome(clean_score.value, clean_score.status, clean_score.error)
    return await judge_metric("faithfulness", item, llm)


async def _answer(answer_fn: AnswerFn, question: str, contexts: list[str]) -> str | Outcome:
    """The regenerated answer, or the failed Outcome saying why there is none."""
    try:
        if inspect.iscoroutinefunction(answer_fn):
            answer = await answer_fn(question, contexts)
        else:
            answer = await asyncio.to_thread(answer_fn, question, contexts)
            if inspect.isawaitable(answer):
                answer = await answer
    except NotImplementedError:
        raise
    except Exception as error:  # the system under test failed for this item only
        return Outcome.failed(f"answer from noisy contexts failed: {type(error).__name__}: {error}")
    if answer is None:
        return Outcome.failed("the system under test cannot answer from given contexts")
    if not answer.strip():
        return Outcome.failed("the answer from noisy contexts is empty")
    return answer
