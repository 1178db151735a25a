"""Noise sensitivity as ΔF: how much faithfulness drops when irrelevant chunks are injected.

For each item, `k` chunks from a pool are injected into its clean contexts at positions seeded by
the item id; the system under test answers again from the noisy contexts (`answer_fn`); both
answers are judged by the same faithfulness as `judge_items` (`judge_metric`, with the configured
judge implementation), and
ΔF = F(clean) − F(noisy) is reported as metric `noise_delta_f` (or the name the caller gives:
the online eval reports the reference generator's as `noise_delta_f_reference`). Positive means the
answer got worse with noise; above `FRAGILE` (0.15) the prompt or model is fragile.

Both arms must come from the same system with the same prompt and settings, or ΔF measures the
difference between two systems. And a system that samples answers differently each time moves F
with no noise at all, so with `control=True` the same `answer_fn` also answers again from the clean
contexts, and F(clean) − F(clean again) is reported beside ΔF as `noise_delta_f_control`: the spread
ΔF has when the noise changes nothing. Callers make the noisy and the control arm the same kind of
draw (the targets' `answer_with(..., sample=1)`), so ΔF − control isolates what the noise did.

Both answers are judged against the clean contexts. The injected chunks are irrelevant by
construction, so a claim that only they support is a distraction, not grounding; judged against
the noisy contexts, an answer copied from the noise would look perfectly faithful.

Two ways to choose the noise:
- `random`: uniformly among the chunks of other documents (no gold or retrieved chunk's document),
  seeded by the item id, so a rerun injects the same chunks and hits the judge cache;
- `hard`: the chunks most similar to the question (embedding cosine when the pool has an embedder,
  else the share of the question's content words they contain) that are not retrieved and not from a
  gold chunk's document (online, where gold is unknown, not from a retrieved chunk's document): the
  distractors a retriever plausibly returns next, and still irrelevant — a neighbouring chunk of the
  gold chunk's own document often holds part of the answer.
A chunk's document comes from the pool (the index's payload), else from its id (`<document>#…`).

How this differs from ragas NoiseSensitivity (metric `ragas_noise_sensitivity`, judge.py): ragas
injects nothing and regenerates nothing. It takes one answer with its retrieved contexts and,
against the reference answer, counts the share of the answer's claims that are incorrect yet
supported by a relevant (mode "relevant") or irrelevant ("irrelevant") retrieved context — lower is
better, it needs a reference (offline only) and costs 3 + 2 per context judge calls through ragas,
one request beyond the shared claim extraction with ragwatch's judge. ΔF is an intervention: it
needs no reference, so it runs online too, but it needs the system under test to answer again, and
costs 2 judge calls per answer judged (claim extraction, verification): 2 per item when F(clean) is
passed in, 3 otherwise with ragwatch's judge, whose claims of the clean answer are remembered from
`judge_items` (one verification more), 4 with ragas'; the control arm costs one answer and its
judging more.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
from scipy import sparse

from pipelines.core.records import Score, Suite
from pipelines.core.text import content_tokens
from pipelines.evaluation.metrics.judge import (
    JudgeImplementation,
    JudgeInput,
    Outcome,
    judge_metric,
    log_outcomes,
)
from pipelines.models.embeddings import Embedder
from pipelines.models.llm import LLM, Progress
from pipelines.models.usage import scoped

METRIC = "noise_delta_f"
REFERENCE_METRIC = "noise_delta_f_reference"
"""ΔF of the reference generator answering both arms from a trace's contexts (online, no production
endpoint)."""
CONTROL_METRIC = "noise_delta_f_control"
"""F(clean) − F(clean again): the same arm twice, no noise; the spread ΔF has when noise changes
nothing."""
FRAGILE = 0.15
"""ΔF above this means the prompt or model is fragile (the operating thresholds,
statistics/diagnose.py)."""
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
SIMILARITY_BLOCK = 4_000_000
"""Question-chunk similarities held at once (float64: 32 MB): hard picks rank a batch's questions
against the pool in blocks of rows, so a large batch on a large pool stays bounded."""


class NoisePool:
    """The chunks noise is drawn from (the indexed corpus, or a candidate set such as a deeper
    search).

    Picks are batched (`pick_many`): eligibility is a mask over the pool, and hard mode scores a
    block of questions against every chunk with one matrix product — the chunks' vectors, or their
    content words as a sparse matrix without an embedder — instead of a Python scan per question.
    With an embedder, every chunk is embedded once, on the first hard pick: pass a candidate pool
    rather than a whole large corpus.
    """

    @classmethod
    def from_index(cls, index, items: Sequence[JudgeInput]) -> NoisePool:
        """Candidate distractors: each question's dense neighbours, read back from the index.

        Hard negatives are then the candidates closest to the question in words that are neither
        gold nor retrieved; taking candidates from the index's stored vectors avoids embedding the
        corpus again in every batch. The questions are embedded in one call and searched in one
        batched query (`search_many`). The documents of the items' gold and retrieved chunks are
        read too, so that their documents can be excluded.
        """
        questions = list(dict.fromkeys(item.question for item in items))
        ids = {
            hit.chunk_id
            for hits in index.search_many(questions, k=NEIGHBOURS, mode="dense")
            for hit in hits
        }
        known = sorted(
            {cid for item in items for cid in (*item.gold_chunk_ids, *item.context_ids)} - ids
        )
        return cls(
            index.get(sorted(ids)), documents={c.chunk_id: c.document for c in index.get(known)}
        )

    def __init__(
        self,
        chunks: Iterable[NoiseChunk],
        embedder: Embedder | None = None,
        *,
        documents: Mapping[str, str] | None = None,
    ):
        """`documents`: chunk id -> document of chunks that are not candidates (gold, retrieved)."""
        self.chunks = sorted(
            chunks, key=lambda c: c.chunk_id
        )  # a stable order keeps seeded picks reproducible
        self.embedder = embedder
        self._documents = {**(documents or {}), **{c.chunk_id: c.document for c in self.chunks}}
        # Positions by id, document and clean text: an item's ineligible chunks are looked up, not
        # scanned.
        self._by_id = _positions(c.chunk_id for c in self.chunks)
        self._by_document = _positions(c.document for c in self.chunks)
        self._by_text = _positions(c.text.strip() for c in self.chunks)
        self._vectors: tuple[np.ndarray, np.ndarray] | None = None
        self._words: tuple[dict[str, int], sparse.csr_matrix] | None = None
        self._lock = threading.Lock()

    def document_of(self, chunk_id: str) -> str | None:
        """The chunk's document: from the pool, else from its id (`<document>#<section>/…`)."""
        if chunk_id in self._documents:
            return self._documents[chunk_id]
        return chunk_id.split("#", 1)[0] if "#" in chunk_id else None

    def excluded_documents(self, item: JudgeInput, mode: NoiseMode) -> set[str]:
        """Documents no noise may come from: the gold chunks' (every mode); the retrieved chunks'
        too in random mode, and in hard mode when the item has no gold chunks (online: any of them
        may hold the answer)."""
        sources = list(item.gold_chunk_ids)
        if mode == "random" or not item.gold_chunk_ids:
            sources += item.context_ids
        return {doc for doc in map(self.document_of, sources) if doc is not None}

    def pick(self, item: JudgeInput, mode: NoiseMode, k: int) -> list[NoiseChunk]:
        """Up to k chunks to inject: never a gold or retrieved chunk, one with a clean context's
        text, or one of an excluded document (`excluded_documents`)."""
        return self.pick_many([item], mode, k)[0]

    def pick_many(
        self, items: Sequence[JudgeInput], mode: NoiseMode, k: int
    ) -> list[list[NoiseChunk]]:
        """`pick` for each item, in order. Random: `k` eligible chunks drawn with a generator seeded
        by the item id. Hard: the `k` eligible chunks most similar to the question, ties by chunk
        id; the questions are embedded in one call and scored a block at a time
        (`SIMILARITY_BLOCK`)."""
        if mode not in ("random", "hard"):
            raise ValueError(f"unknown noise mode {mode!r}; expected 'random' or 'hard'")
        if k < 0:
            raise ValueError(f"k must be 0 or more, got {k}")
        if not self.chunks or not items:
            return [[] for _ in items]
        if mode == "random":
            return [self._chunks(self._draw(item, k)) for item in items]
        scores = self._scorer([item.question for item in items])
        rows = max(1, SIMILARITY_BLOCK // len(self.chunks))
        picks: list[list[NoiseChunk]] = []
        for start in range(0, len(items), rows):
            block = items[start : start + rows]
            for item, similarity in zip(block, scores(start, start + len(block))):
                picks.append(self._chunks(_top(similarity, self._eligible(item, mode), k)))
        return picks

    def _chunks(self, positions: np.ndarray) -> list[NoiseChunk]:
        return [self.chunks[i] for i in positions.tolist()]

    def _eligible(self, item: JudgeInput, mode: NoiseMode) -> np.ndarray:
        """Mask over the pool: not the item's gold or retrieved chunk, not a clean context's text,
        not an excluded document's."""
        mask = np.ones(len(self.chunks), dtype=bool)
        for positions, keys in (
            (self._by_id, (*item.gold_chunk_ids, *item.context_ids)),
            (self._by_document, self.excluded_documents(item, mode)),
            (self._by_text, {text.strip() for text in item.contexts}),
        ):
            for key in keys:
                if key in positions:
                    mask[positions[key]] = False
        return mask

    def _draw(self, item: JudgeInput, k: int) -> np.ndarray:
        eligible = np.flatnonzero(self._eligible(item, "random"))
        # Drawing positions in range(n) picks what drawing from the list of n eligible chunks would.
        drawn = random.Random(f"noise:{item.item_id}").sample(
            range(len(eligible)), min(k, len(eligible))
        )
        return eligible[drawn]

    def _scorer(self, questions: list[str]) -> Callable[[int, int], np.ndarray]:
        """Similarities of questions[start:end] to every chunk (rows: questions, columns:
        chunks)."""
        if self.embedder is None:
            vocabulary, words = self._content_words()
            wanted = [set(content_tokens(question)) for question in questions]
            known = [[vocabulary[t] for t in tokens if t in vocabulary] for tokens in wanted]
            asked = _incidence(known, len(vocabulary))
            sizes = np.array([len(tokens) or 1 for tokens in wanted], dtype=np.float64)[:, None]
            # The share of the question's content words a chunk contains: shared words / question
            # words.
            return lambda start, end: (asked[start:end] @ words).toarray() / sizes[start:end]
        with (
            self._lock
        ):  # one embedding call at a time per pool, the chunks' on the first hard pick
            if self._vectors is None:
                vectors = np.asarray(
                    self.embedder.embed([c.text for c in self.chunks]), dtype=np.float64
                )
                # Equal vectors (equal texts) score from one column, so they tie exactly as a
                # ranking expects.
                distinct, owner = np.unique(vectors, axis=0, return_inverse=True)
                self._vectors = distinct.T.copy(), owner.reshape(-1)
            unique = list(dict.fromkeys(questions))
            queries = np.asarray(self.embedder.embed(unique), dtype=np.float64)
        distinct, owner = self._vectors
        row = {question: i for i, question in enumerate(unique)}
        order = np.array([row[q] for q in questions])
        return lambda start, end: (queries[order[start:end]] @ distinct)[:, owner]

    def _content_words(self) -> tuple[dict[str, int], sparse.csr_matrix]:
        """The pool's vocabulary and its words × chunks incidence matrix, built on the first hard
        pick."""
        with self._lock:
            if self._words is None:
                vocabulary: dict[str, int] = {}
                columns = [
                    [vocabulary.setdefault(t, len(vocabulary)) for t in set(content_tokens(c.text))]
                    for c in self.chunks
                ]
                self._words = vocabulary, _incidence(columns, len(vocabulary)).T.tocsr()
            return self._words


def _positions(keys: Iterable[str]) -> dict[str, np.ndarray]:
    grouped: dict[str, list[int]] = {}
    for position, key in enumerate(keys):
        grouped.setdefault(key, []).append(position)
    return {key: np.array(positions) for key, positions in grouped.items()}


def _incidence(rows: list[list[int]], width: int) -> sparse.csr_matrix:
    """A 0/1 matrix with a 1 at each listed column of each row (columns distinct within a row)."""
    indptr = np.cumsum([0, *map(len, rows)])
    indices = np.fromiter(
        (column for row in rows for column in row), dtype=np.int64, count=int(indptr[-1])
    )
    return sparse.csr_matrix(
        (np.ones(len(indices), dtype=np.int64), indices, indptr), shape=(len(rows), width)
    )


def _top(similarity: np.ndarray, eligible: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k eligible chunks of highest similarity, ties by position (= chunk id
    order)."""
    candidates = np.flatnonzero(eligible)
    if k == 0 or not len(candidates):
        return candidates[:0]
    scores = similarity[candidates]
    if len(candidates) > k:
        # Keep the k-th best score and all that tie with it; only those few are sorted.
        kth = _kth_best(scores, k)
        candidates, scores = candidates[scores >= kth], scores[scores >= kth]
    return candidates[np.lexsort((candidates, -scores))][:k]


def _kth_best(scores: np.ndarray, k: int) -> float:
    """The k-th highest of `scores` (k ≤ len(scores)), counting ties. For a small k, walking down
    the distinct top scores beats a partition: shares of content words are a few values tied many
    times over, which numpy's partition handles twenty times slower."""
    if k > 8:
        return np.partition(scores, len(scores) - k)[len(scores) - k]
    remaining, level = k, np.inf
    while True:
        scores = scores[scores < level]
        level = scores.max()
        remaining -= np.count_nonzero(scores == level)
        if remaining <= 0:
            return level


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
    control: Score | None = None
    """`noise_delta_f_control` of the item, when asked for."""
    control_answer: str | None = None
    f_control: float | None = None

    @property
    def scores(self) -> list[Score]:
        return [self.score] + ([self.control] if self.control is not None else [])

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
    metric: str = METRIC,
    control: bool = False,
    implementation: JudgeImplementation | None = None,
) -> list[NoiseResult]:
    """ΔF per item, in input order, as `metric`. `clean_scores` (item id -> its faithfulness Score
    from `judge_items`) saves judging the clean answers again. With `control`, each result also
    carries `noise_delta_f_control`: `answer_fn` answering from the clean contexts, F(clean) −
    F(that answer). `implementation`: the judge's, as in `judge_items` (None:
    RAGWATCH_JUDGE_IMPLEMENTATION)."""
    done, total = 0, len(items)
    labels = dict(
        run_id=run_id, suite=suite, dataset_version=dataset_version, judge_model=llm.model
    )
    applicable = [item for item in items if _applicable(item)]
    # One batched pick for the whole batch, off the loop: it scores (and may embed) the pool.
    picks = iter(await asyncio.to_thread(pool.pick_many, applicable, mode, k))
    noise = [next(picks) if _applicable(item) else None for item in items]

    async def one(item: JudgeInput, noise: list[NoiseChunk] | None) -> NoiseResult:
        nonlocal done
        outcome, control_outcome, details = await _one_item(
            item,
            noise,
            answer_fn,
            llm,
            mode,
            (clean_scores or {}).get(item.item_id),
            metric,
            control,
            implementation,
        )
        done += 1
        if progress is not None:
            progress(done, total)
        score = outcome.score(item_id=item.item_id, stratum=item.stratum, metric=metric, **labels)
        control_score = (
            control_outcome.score(
                item_id=item.item_id, stratum=item.stratum, metric=CONTROL_METRIC, **labels
            )
            if control_outcome
            else None
        )
        return NoiseResult(score=score, mode=mode, control=control_score, **details)

    results = list(await asyncio.gather(*(one(i, n) for i, n in zip(items, noise))))
    log_outcomes([s for r in results for s in r.scores], f"noise ({mode}, k={k}) {llm.model}")
    return results


def _applicable(item: JudgeInput) -> bool:
    return bool(item.answer and item.answer.strip()) and any(c.strip() for c in item.contexts)


async def _one_item(
    item: JudgeInput,
    noise: list[NoiseChunk] | None,
    answer_fn: AnswerFn,
    llm: LLM,
    mode: NoiseMode,
    clean_score: Score | None,
    metric: str,
    control: bool,
    implementation: JudgeImplementation | None,
) -> tuple[Outcome, Outcome | None, dict]:
    """`noise`: the item's picks, None when the item has no answer or no contexts."""
    if noise is None:
        reason = Outcome.skipped(f"no answer or no retrieved contexts: {metric} needs both")
        return reason, (reason if control else None), {}
    no_noise = Outcome.skipped(f"no eligible {mode} noise chunk in the pool")
    if not noise and not control:
        return no_noise, None, {}
    details: dict = {"injected_ids": [c.chunk_id for c in noise]}
    noisy_contexts = inject(item.contexts, [c.text for c in noise], item.item_id) if noise else None

    async def nothing() -> None:
        return None

    # Each arm's requests (its answer, its judgement) count under the arm's stage (usage.py).
    clean, noisy_answer, control_answer = await asyncio.gather(
        scoped(_clean_faithfulness(item, llm, clean_score, implementation), stage="noise_clean"),
        scoped(_answer(answer_fn, item.question, noisy_contexts), stage="noise_noisy")
        if noise
        else nothing(),
        scoped(
            _answer(answer_fn, item.question, list(item.contexts), arm="the clean contexts again"),
            stage="noise_control",
        )
        if control
        else nothing(),
    )
    if isinstance(noisy_answer, str):
        details["noisy_answer"] = noisy_answer
    if isinstance(control_answer, str):
        details["control_answer"] = control_answer
    if clean.status == "ok":
        details["f_clean"] = clean.value
    (delta, f_noisy), (control_delta, f_control) = await asyncio.gather(
        scoped(_delta(item, llm, clean, noisy_answer, "noisy", implementation), stage="noise_noisy")
        if noise
        else _given(no_noise),
        scoped(
            _delta(item, llm, clean, control_answer, "clean again", implementation),
            stage="noise_control",
        )
        if control
        else _given(None),
    )
    details.update(
        {k: v for k, v in (("f_noisy", f_noisy), ("f_control", f_control)) if v is not None}
    )
    return delta, control_delta, details


async def _given(outcome: Outcome | None) -> tuple[Outcome | None, None]:
    return outcome, None


async def _delta(
    item: JudgeInput,
    llm: LLM,
    clean: Outcome,
    answer: str | Outcome,
    arm: str,
    implementation: JudgeImplementation | None,
) -> tuple[Outcome, float | None]:
    """F(clean) − F(answer), the answer judged against the clean contexts (see the module
    docstring)."""
    if isinstance(answer, Outcome):
        return answer, None
    if clean.status == "skipped":
        return Outcome.skipped(f"F(clean) not applicable: {clean.error}"), None
    if clean.status != "ok":
        return Outcome.failed(f"F(clean) not available: {clean.error}"), None
    other = await judge_metric(
        "faithfulness",
        item.model_copy(update={"answer": answer}),
        llm,
        implementation=implementation,
    )
    if other.status == "skipped":
        # The system abstained in this arm: it lost the answer but asserted nothing unfaithful.
        return Outcome.skipped(f"F({arm}) not applicable: {other.error}"), None
    if other.status != "ok":
        return Outcome.failed(f"F({arm}) not available: {other.error}"), None
    return Outcome.ok(delta_f(clean.value, other.value)), other.value


async def _clean_faithfulness(
    item: JudgeInput,
    llm: LLM,
    clean_score: Score | None,
    implementation: JudgeImplementation | None,
) -> Outcome:
    if clean_score is not None:
        return Outcome(clean_score.value, clean_score.status, clean_score.error)
    return await judge_metric("faithfulness", item, llm, implementation=implementation)


async def _answer(
    answer_fn: AnswerFn, question: str, contexts: list[str], arm: str = "noisy contexts"
) -> str | Outcome:
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
        return Outcome.failed(f"answer from {arm} failed: {type(error).__name__}: {error}")
    if answer is None:
        return Outcome.failed("the system under test cannot answer from given contexts")
    if not answer.strip():
        return Outcome.failed(f"the answer from {arm} is empty")
    return answer
