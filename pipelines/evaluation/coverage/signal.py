"""Which similarity a day's questions are matched by: the embedding model's cosine, or the lexical one.

Both are calibrated on the golden set's user questions (threshold.py) and the one with the higher ROC AUC is used:
the embedding cosine where the model reads the language (the demo's English traffic: AUC 0.71 against the
lexical 0.68; the English Debian FAQ: 0.80 against 0.72), the character n-gram cosine (lexical.py) where it does
not (the Debian FAQ in French, Portuguese, Italian, German and Dutch: 0.72 against the English-only model's 0.62). Neither above the bar leaves coverage uncalibrated, with both figures in the reason. Picking the
better of two on the same evidence flatters the chosen AUC a little; the report names both. A threshold the user
set (RAGWATCH_COVERAGE_THRESHOLD) is an embedding cosine, and nothing is chosen.
The uncovered questions' topics are cut in the chosen signal's vectors too (clusters.py, topic_cut.py). On the FAQ
neither signal groups questions by chapter (adjusted Rand index 0.03 with the lexical one; 0.02 when its idf is
learnt from the questions themselves), so the topic cut falls back to its default and says the topics are rough.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.evaluation.coverage import lexical
from pipelines.evaluation.coverage.lexical import LexicalSpace
from pipelines.evaluation.coverage.threshold import CoverageThreshold, GoldenPassages, calibrate_threshold
from pipelines.records import GoldenItem

log = logging.getLogger(__name__)
EMBEDDING = "embedding cosine"
EMBED_ROWS = 256
"""Texts per embedding call: the log says how far it got after each."""
LOG_EVERY_S = 30.0

Place = Callable[[Sequence[str], Sequence[str], str], np.ndarray]
"""(texts, their languages, what they are for the log) -> one row each."""


@dataclass(frozen=True)
class MatchSignal:
    threshold: CoverageThreshold
    place: Place
    """Texts as vectors whose dot product with `passage_vectors` is the signal's similarity."""
    passage_vectors: np.ndarray
    evidence_vectors: np.ndarray
    """The user questions, placed."""


def choose_signal(
    embedder, passages: GoldenPassages, evidence: Sequence[GoldenItem], setting: float | None
) -> MatchSignal:
    """The signal that best tells the user questions' (`evidence`) own passages from other documents'."""

    def embedded(texts, languages, what):
        return embed_texts(embedder, list(texts), what)

    signals: list[tuple[str, Place]] = [(EMBEDDING, embedded)]
    if setting is None:
        space = LexicalSpace(passages.texts, passages.languages)
        signals.append((lexical.SIGNAL, lambda texts, languages, what: space.vectors(texts, languages)))
    candidates = []
    for name, place in signals:
        passage_vectors = place(passages.texts, passages.languages, "golden passages")
        evidence_vectors = place(
            [i.question for i in evidence], [i.language for i in evidence], "golden user questions"
        )
        threshold = calibrate_threshold(
            evidence, evidence_vectors, passages, passage_vectors, setting=setting, signal=name
        )
        candidates.append(MatchSignal(threshold, place, passage_vectors, evidence_vectors))
    chosen = max(candidates, key=lambda c: (c.threshold.value is not None, c.threshold.auc or 0.0))
    others = [c.threshold for c in candidates if c is not chosen and c.threshold.auc is not None]
    if others:
        also = "; ".join(f"{t.signal}: ROC AUC {t.auc:.2f}" for t in others)
        note = f"{chosen.threshold.note} (also measured: {also})" if chosen.threshold.note else f"also measured: {also}"
        chosen = MatchSignal(
            chosen.threshold.model_copy(update={"note": note}),
            chosen.place,
            chosen.passage_vectors,
            chosen.evidence_vectors,
        )
    return chosen


def embed_texts(embedder, texts: list[str], what: str) -> np.ndarray:
    """Normalised vectors of `texts`, one row each, logging the count every LOG_EVERY_S seconds."""
    vectors, logged = [], time.monotonic()
    for start in range(0, len(texts), EMBED_ROWS):
        vectors += embedder.embed(texts[start : start + EMBED_ROWS])
        if time.monotonic() - logged > LOG_EVERY_S:
            log.info("golden coverage: embedded %d of %d %s", len(vectors), len(texts), what)
            logged = time.monotonic()
    return np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1) if texts else np.zeros((0, 1))
