"""The noise pool's batched picks are the per-item picks they replaced, ties included.

`reference_pick` is `NoisePool.pick` as it was before picks were batched (a Python scan of the pool
per item, a dot product per chunk): the batched masks, matrix products and partial sorts must choose
the same chunks in the same order, in both modes, with and without an embedder.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from dataclasses import dataclass

import pytest

from pipelines.core.text import content_tokens
from pipelines.evaluation.metrics import noise
from pipelines.evaluation.metrics.judge import JudgeInput
from pipelines.evaluation.metrics.noise import NoisePool, noise_delta_f
from pipelines.models.llm import OfflineLLM

RUN = {"run_id": "run-1", "suite": "offline", "dataset_version": "v1"}
WORDS = (
    "kafka broker port snapshot billing invoice deploy rollback latency replica shard token".split()
)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    document: str
    text: str


class DyadicEmbedder:
    """Vectors of quarter-integers from a hash of the text: every product and sum is exact in
    floating point, and different texts often score exactly alike, so tie-breaking is exercised as
    no real model would. Counts its calls."""

    name, dim = "dyadic-test", 6

    def __init__(self):
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return [
            [(b % 7 - 3) / 4 for b in hashlib.blake2b(t.encode(), digest_size=self.dim).digest()]
            for t in texts
        ]


def reference_pick(pool: NoisePool, item: JudgeInput, mode: str, k: int, embedder) -> list[str]:
    """The pick before batching, verbatim but for the similarity helper inlined."""
    excluded_ids = set(item.gold_chunk_ids) | set(item.context_ids)
    excluded_documents = pool.excluded_documents(item, mode)
    clean_texts = {text.strip() for text in item.contexts}
    eligible = [
        i
        for i, c in enumerate(pool.chunks)
        if c.chunk_id not in excluded_ids
        and c.text.strip() not in clean_texts
        and c.document not in excluded_documents
    ]
    if mode == "random":
        picked = random.Random(f"noise:{item.item_id}").sample(eligible, min(k, len(eligible)))
    else:
        if embedder is None:
            wanted = set(content_tokens(item.question))
            tokens = [set(content_tokens(c.text)) for c in pool.chunks]
            similarity = [len(wanted & t) / (len(wanted) or 1) for t in tokens]
        else:
            query = embedder.embed([item.question])[0]
            similarity = [
                sum(a * b for a, b in zip(query, v))
                for v in embedder.embed([c.text for c in pool.chunks])
            ]
        picked = sorted(eligible, key=lambda i: (-similarity[i], pool.chunks[i].chunk_id))[:k]
    return [pool.chunks[i].chunk_id for i in picked]


def random_case(seed: int) -> tuple[list[Chunk], list[JudgeInput], dict[str, str]]:
    """A pool of short texts over a dozen words (many equal overlaps), with repeated texts across
    documents; items with gold and without (online), contexts that repeat pool texts, ids not in the
    pool."""
    draw = random.Random(seed)
    texts = [" ".join(draw.choices(WORDS, k=draw.randint(2, 6))) for _ in range(120)]
    chunks = [Chunk(f"d{draw.randrange(25):02d}#{n}", "", draw.choice(texts)) for n in range(300)]
    chunks = [Chunk(c.chunk_id, c.chunk_id.split("#")[0], c.text) for c in chunks]
    # Gold chunks the pool does not hold: their document known from the index, or read from the id.
    outside = {f"x{n}": f"d{n:02d}" for n in range(3)}
    orphans = [f"d1{n}#orphan" for n in range(3)]
    items = []
    for n in range(40):
        retrieved = draw.sample(chunks, draw.randint(0, 3))
        gold = [
            c.chunk_id
            for c in draw.sample([*retrieved, *draw.sample(chunks, 2)], draw.randint(0, 2))
        ]
        gold += draw.sample([*outside, *orphans], 1)
        question = " ".join(draw.choices([*WORDS, "zebra", "the", "of"], k=draw.randint(1, 5)))
        contexts = [
            f"  {c.text}\n" for c in retrieved
        ]  # a pool text with other spacing is still the context's
        items.append(
            JudgeInput(
                item_id=f"i{n}",
                stratum="s",
                question=question,
                answer="a",
                contexts=contexts,
                context_ids=[c.chunk_id for c in retrieved],
                gold_chunk_ids=gold if n % 4 else [],
            )
        )  # every fourth item is online: no gold
    return chunks, items, outside


@pytest.mark.parametrize("embedded", [False, True], ids=["words", "embedder"])
def test_batched_picks_equal_the_per_item_picks_ties_included(embedded: bool, monkeypatch) -> None:
    chunks, items, outside = random_case(seed=18)
    embedder = DyadicEmbedder() if embedded else None
    pool = NoisePool(chunks, embedder, documents=outside)
    for mode in ("random", "hard"):
        for k in (
            0,
            1,
            3,
            20,
            400,
        ):  # 20: a partition finds the k-th score, below 9 a walk down the levels
            wanted = [reference_pick(pool, item, mode, k, embedder) for item in items]
            assert [[c.chunk_id for c in p] for p in pool.pick_many(items, mode, k)] == wanted, (
                mode,
                k,
            )
    hard = [reference_pick(pool, item, "hard", 3, embedder) for item in items]
    assert len({tuple(p) for p in hard}) > 10  # the questions rank the pool differently
    # pick is a one-item pick_many; a pool built again from the chunks in another order picks the
    # same.
    assert [[c.chunk_id for c in pool.pick(item, "hard", 3)] for item in items] == hard
    again = NoisePool(list(reversed(chunks)), embedder and DyadicEmbedder(), documents=outside)
    assert [[c.chunk_id for c in p] for p in again.pick_many(items, "hard", 3)] == hard
    # Blocks of 3 questions (the bound on the similarities held at once) change nothing.
    monkeypatch.setattr(noise, "SIMILARITY_BLOCK", 3 * len(chunks))
    assert [[c.chunk_id for c in p] for p in again.pick_many(items, "hard", 3)] == hard
    if embedder is not None:  # the chunks once, then one call per batch for its distinct questions
        questions = len({i.question for i in items})
        assert again.embedder.calls == [len(chunks), questions, questions]


def test_noise_delta_f_picks_once_per_batch_and_keeps_each_items_noise() -> None:
    chunks, items, outside = random_case(seed=7)
    embedder = DyadicEmbedder()
    pool = NoisePool(chunks, embedder, documents=outside)
    items = [
        i.model_copy(update={"answer": f"{i.question} {w}", "contexts": i.contexts or [WORDS[n]]})
        for n, (i, w) in enumerate(zip(items[:8], WORDS))
    ]
    items[3] = items[3].model_copy(update={"answer": " "})  # no answer: skipped, and no pick
    results = asyncio.run(
        noise_delta_f(items, pool, lambda q, ctx: ctx[0], OfflineLLM(), mode="hard", k=2, **RUN)
    )
    assert embedder.calls == [len(chunks), len({i.question for n, i in enumerate(items) if n != 3})]
    assert results[3].score.status == "skipped" and results[3].injected_ids == []
    for n, (item, result) in enumerate(zip(items, results)):
        if n != 3:
            assert result.injected_ids == reference_pick(pool, item, "hard", 2, DyadicEmbedder()), n


def test_unknown_mode_and_negative_k_are_refused() -> None:
    pool = NoisePool([Chunk("a#0", "a", "kafka broker")])
    item = JudgeInput(item_id="x", stratum="s", question="kafka", answer="a", contexts=["c"])
    with pytest.raises(ValueError, match="unknown noise mode"):
        pool.pick_many([item], "nearest", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be 0 or more"):
        pool.pick(item, "hard", -1)
    assert NoisePool([]).pick_many([item, item], "hard", 2) == [[], []]
