"""Which similarity a day's questions are matched by: the embedding model's cosine, or the lexical
one.

Both are calibrated on the golden set's user questions (threshold.py) and the one with the higher
ROC AUC is used: the embedding cosine where the model reads the language (the English Debian
FAQ: 0.80 against the lexical 0.72), the
character n-gram cosine (lexical.py) where it reads it less well (GNOME Help in Spanish, French,
Italian, Portuguese and German: 0.84 against 0.75; the Debian FAQ in French, Portuguese, Italian,
German and Dutch: 0.72 against 0.62). Neither above the bar leaves coverage uncalibrated, with both
figures in the reason. Picking the better of two on the same evidence flatters the chosen AUC a
little; the report names both. A threshold the user set (RAGWATCH_COVERAGE_THRESHOLD) is an
embedding cosine, and nothing is chosen. (Their mean was tried as a third signal: a higher AUC on
every corpus, 0.90 on GNOME Help, yet on the FAQ a quarter of the traffic moving to the held-back
chapter moved coverage 0.716 → 0.695 only, and half of the small test's GPU questions passed for
covered: the user questions' other-document passages are easier negatives than an unseen subject's
questions.)

Topics are cut on both signals side by side (`MatchSignal.describe`): each question's vectors of
each signal normalised and concatenated, so two questions' cosine is the mean of their cosines in
each. On GNOME Help that makes the held-back subject the largest uncovered topic for each of 7
subjects held back in turn (6 of 7 in the lexical vectors alone), and on the FAQ the five largest
topics are the held-back chapter, one per language (in the lexical vectors alone the largest held
none of it).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.core.records import GoldenItem
from pipelines.evaluation.coverage import lexical
from pipelines.evaluation.coverage.lexical import LexicalSpace
from pipelines.evaluation.coverage.threshold import (
    CoverageThreshold,
    GoldenPassages,
    calibrate_threshold,
)

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
    places: tuple[Place, ...]
    """Every signal measured, this one among them."""
    evidence_topic_vectors: np.ndarray
    """The user questions, described."""

    def describe(
        self,
        texts: Sequence[str],
        languages: Sequence[str],
        what: str,
        placed: np.ndarray | None = None,
    ):
        """Texts as the vectors topics are cut in (clusters.py, topic_cut.py): every signal's
        vectors side by side; `placed`, the texts already placed by this signal, saves placing them
        twice."""
        return side_by_side(
            [
                placed if placed is not None and p is self.place else p(texts, languages, what)
                for p in self.places
            ]
        )


def choose_signal(
    embedder, passages: GoldenPassages, evidence: Sequence[GoldenItem], setting: float | None
) -> MatchSignal:
    """The signal that best tells the user questions' (`evidence`) own passages from other
    documents'."""

    def embedded(texts, languages, what):
        return embed_texts(embedder, list(texts), what)

    signals: list[tuple[str, Place]] = [(EMBEDDING, embedded)]
    if setting is None:
        space = LexicalSpace(passages.texts, passages.languages)
        signals.append(
            (lexical.SIGNAL, lambda texts, languages, what: space.vectors(texts, languages))
        )
    questions, languages = [i.question for i in evidence], [i.language for i in evidence]
    placed = [
        (
            name,
            place,
            place(passages.texts, passages.languages, "golden passages"),
            place(questions, languages, "golden user questions"),
        )
        for name, place in signals
    ]
    evidence_topic_vectors = side_by_side([e for *_, e in placed])
    candidates = [
        MatchSignal(
            calibrate_threshold(evidence, e, passages, p, setting=setting, signal=name),
            place,
            p,
            e,
            tuple(place for _, place in signals),
            evidence_topic_vectors,
        )
        for name, place, p, e in placed
    ]
    chosen = max(candidates, key=lambda c: (c.threshold.value is not None, c.threshold.auc or 0.0))
    others = [c.threshold for c in candidates if c is not chosen and c.threshold.auc is not None]
    if others:
        also = "; ".join(f"{t.signal}: ROC AUC {t.auc:.2f}" for t in others)
        note = (
            f"{chosen.threshold.note} (also measured: {also})"
            if chosen.threshold.note
            else f"also measured: {also}"
        )
        chosen = dataclasses.replace(
            chosen, threshold=chosen.threshold.model_copy(update={"note": note})
        )
    return chosen


def side_by_side(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """Each block's rows normalised (a zero row stays zero), the blocks concatenated and the rows
    normalised again: two rows without a zero block have as cosine the mean of their blocks'
    cosines."""
    normalised = [b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12) for b in blocks]
    joined = np.hstack(normalised)
    return joined / np.maximum(np.linalg.norm(joined, axis=1, keepdims=True), 1e-12)


def embed_texts(embedder, texts: list[str], what: str) -> np.ndarray:
    """Normalised vectors of `texts`, one row each, logging the count every LOG_EVERY_S seconds."""
    vectors, logged = [], time.monotonic()
    for start in range(0, len(texts), EMBED_ROWS):
        vectors += embedder.embed(texts[start : start + EMBED_ROWS])
        if time.monotonic() - logged > LOG_EVERY_S:
            log.info("golden coverage: embedded %d of %d %s", len(vectors), len(texts), what)
            logged = time.monotonic()
    return (
        np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1) if texts else np.zeros((0, 1))
    )
