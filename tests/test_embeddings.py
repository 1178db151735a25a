"""Embedders: the local model shipped on PyPI, and the OpenAI-compatible client against the simulator."""

from __future__ import annotations

import math

import pytest

from pipelines.models.embeddings import EmbeddingError, LocalEmbedder, OpenAIEmbedder, build_embedder, embed_texts
from pipelines.models.prompts import PromptRegistry
from pipelines.models.simulator import SimulatorKnobs, running_simulator
from pipelines.settings import ModelEndpoint, Settings

TEXTS = ["la factura se emite el día 1", "the with statement", "lambda", "rollback del despliegue", "assert"]


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


def test_build_embedder_follows_settings(tmp_path) -> None:
    assert isinstance(build_embedder(Settings(home=tmp_path)), LocalEmbedder)
    remote = build_embedder(Settings(home=tmp_path, embeddings_backend="openai"))
    assert isinstance(remote, OpenAIEmbedder) and remote.name == "BAAI/bge-m3"


def test_openai_embedder_batches_in_order_and_retries() -> None:
    with running_simulator(SimulatorKnobs(fail_first_n=1), prompts=PromptRegistry()) as url:
        endpoint = ModelEndpoint(base_url=url, model="sim-embed", max_retries=2, max_concurrency=2)
        embedder = OpenAIEmbedder(endpoint, batch_size=2)
        vectors = embedder.embed(TEXTS)  # 3 batches; the first request fails with 500 and is retried
        assert len(vectors) == len(TEXTS) and embedder.dim == len(vectors[0])
        assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-4) for v in vectors)
        assert embedder.embed([TEXTS[3]])[0] == pytest.approx(vectors[3], abs=1e-5)
        embedder.close()


def test_openai_embedder_errors_name_the_endpoint() -> None:
    with running_simulator(SimulatorKnobs(rate_limit_rate=1.0), prompts=PromptRegistry()) as url:
        embedder = OpenAIEmbedder(ModelEndpoint(base_url=url, model="sim-embed", max_retries=0))
        with pytest.raises(EmbeddingError, match=r"answered 429 for model 'sim-embed'"):
            embedder.embed(["x"])
    unreachable = OpenAIEmbedder(ModelEndpoint(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0))
    with pytest.raises(EmbeddingError, match="127.0.0.1:9/v1/embeddings unreachable"):
        unreachable.embed(["x"])
