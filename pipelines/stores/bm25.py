"""BM25 sparse vectors for Qdrant's `Modifier.IDF`: we send saturated term frequencies, Qdrant
multiplies them by the IDF it keeps up to date over the whole collection.

Term indices come from a fixed hash of the token, so the same word maps to the same index in
every process and every release (Python's `hash()` is salted per process).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from pipelines.core.text import STOPWORDS, fold

K1 = 1.2
B = 0.75
AVG_DOC_TOKENS = 120
"""Length normaliser. A constant rather than the live corpus mean, so that re-indexing one
document never changes the vectors of the documents left alone; ~120 content tokens is what a
200-300 word chunk keeps after stopwords."""

_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Folded words without stopwords; identifiers keep inner underscores (`__init__` -> `init`)."""
    tokens = []
    for raw in _TOKEN.findall(fold(text)):
        token = raw.strip("_")
        if token and token not in STOPWORDS:
            tokens.append(token)
    return tokens


def term_index(token: str) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little")


def document_vector(text: str) -> tuple[list[int], list[float]]:
    """(indices, values) with BM25 term-frequency saturation and length normalisation."""
    tokens = tokenize(text)
    norm = K1 * (1 - B + B * len(tokens) / AVG_DOC_TOKENS)
    weights: Counter[int] = Counter()
    for token, tf in Counter(tokens).items():
        # Two tokens may share a hash bucket; adding their weights is the usual hashing trick.
        weights[term_index(token)] += tf * (K1 + 1) / (tf + norm)
    return _sorted(weights)


def query_vector(text: str) -> tuple[list[int], list[float]]:
    """Each distinct query term counts once; the IDF applied by Qdrant does the weighting."""
    return _sorted(Counter(term_index(token) for token in set(tokenize(text))))


def _sorted(weights: Counter[int]) -> tuple[list[int], list[float]]:
    indices = sorted(weights)
    return indices, [float(weights[i]) for i in indices]
