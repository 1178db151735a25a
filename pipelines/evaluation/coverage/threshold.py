"""The question-to-passage similarity above which a day's question counts as covered, calibrated on
user questions.

A question is covered when the golden set holds a passage that answers it (estimate.py matches each
question to the golden items' reference passages). The threshold is learnt from golden items whose
question a user asked: items built from production traces (`source == "trace"`) and items people
imported (`source == "human"`). The golden set's generated questions do not qualify: the offline
backend writes them from templates that reuse the passage's words, and even an LLM's paraphrases are
far easier to match than a user's question (a threshold learnt from them, cosine 0.773, is one
no real question reaches).

For each such item in a language the golden set has passages in:
- positive (answerable: it has gold passages): its nearest golden passage, as matching sees a
  covered question;
- negative: its nearest golden passage of another document than its gold passages' — what matching
  sees for a question whose subject the golden set lacks — and, for a trace the generator found no
  answer for in the corpus (no gold passage), its nearest golden passage of all.

The cut is the cosine maximizing Youden's J = TPR − FPR; the report states it with TPR, FPR, ROC AUC
and counts. The same rates are also measured on each language's user questions at that cut
(`by_language`): the matcher errs more in some languages (GNOME Help: TPR 0.44–0.71 in Italian,
0.75–0.92 in Spanish), and a topic is one language's questions (topic_gaps.py). Fewer than
MIN_POSITIVES positives (or no negative), or an AUC below MIN_AUC (the embedding model cannot tell a
user's question's own passage from another document's, e.g. an English-only model on French
questions), leave it uncalibrated: coverage is then `failed` with that reason, unless the user set
RAGWATCH_COVERAGE_THRESHOLD, which is used and said to be theirs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pipelines.core.records import GoldenItem
from pipelines.evaluation.results.coverage import CoverageThreshold, LanguageRates

MIN_POSITIVES = 10
"""Fewest user questions with a gold passage for a calibrated threshold."""
MIN_AUC = 0.7
"""Below this ROC AUC a question's own passage does not stand out from other documents' passages."""
EVIDENCE_SOURCES = ("trace", "human")
"""Golden items whose question a user asked: the only evidence of what a user's question looks
like."""


@dataclass(frozen=True)
class GoldenPassages:
    """The golden items' reference passages, once each: what a day's question is matched against."""

    chunk_ids: list[str]
    texts: list[str]
    languages: list[str]
    documents: list[str]


def document_of(ref: str) -> str:
    """`guides/deploy.md#rollback/0` -> `guides/deploy.md`: a chunk's (or seed passage's)
    document."""
    return ref.split("#", 1)[0]


def golden_passages(items: Sequence[GoldenItem]) -> GoldenPassages:
    """Each distinct (chunk id, language) of the items' gold passages, in first-seen order. A
    passage without a chunk id (an imported item) is keyed by its text and is its own document."""
    seen: dict[tuple[str, str], int] = {}
    out = GoldenPassages([], [], [], [])
    for item in items:
        ids = (
            item.gold_chunk_ids if len(item.gold_chunk_ids) == len(item.reference_contexts) else []
        )
        for k, text in enumerate(item.reference_contexts):
            chunk_id = ids[k] if ids else f"text:{hash_text(text)}"
            if not text.strip() or (chunk_id, item.language) in seen:
                continue
            seen[(chunk_id, item.language)] = len(out.chunk_ids)
            out.chunk_ids.append(chunk_id)
            out.texts.append(text)
            out.languages.append(item.language)
            out.documents.append(document_of(chunk_id))
    return out


def hash_text(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()[:16]


def evidence_items(items: Sequence[GoldenItem]) -> list[GoldenItem]:
    """The golden items whose question a user asked (traces, human imports), tool triples aside."""
    return [i for i in items if i.source in EVIDENCE_SOURCES and i.qtype != "tool"]


def calibrate_threshold(
    evidence: Sequence[GoldenItem],
    question_vectors: np.ndarray,
    passages: GoldenPassages,
    passage_vectors: np.ndarray,
    *,
    setting: float | None = None,
    signal: str = "embedding cosine",
) -> CoverageThreshold:
    """The threshold from the user questions `evidence` (`question_vectors`, one row each) against
    the golden `passages` (`passage_vectors`), their dot product being the `signal`'s similarity."""
    scores = _scores(evidence, question_vectors, passages, passage_vectors)
    positives, negatives, used = scores.positives, scores.negatives, scores.used
    measured = _roc(np.array(positives), np.array(negatives))
    counts = {
        "signal": signal,
        "evidence": used,
        "positives": len(positives),
        "negatives": len(negatives),
        "auc": measured.get("auc"),
    }
    if setting is not None:
        return CoverageThreshold(
            value=setting,
            method="setting",
            **counts,
            **_rates(np.array(positives), np.array(negatives), setting),
            note="set by RAGWATCH_COVERAGE_THRESHOLD, not calibrated",
            by_language=_by_language(scores, setting),
        )
    if len(positives) < MIN_POSITIVES or not negatives:
        return CoverageThreshold(
            value=None,
            method="uncalibrated",
            **counts,
            note=f"uncalibrated: the golden set has {len(positives)} user questions (items from "
            f"traces or imported by people) with a gold passage to calibrate on (need "
            f"{MIN_POSITIVES}), and {len(negatives)} negatives (need 1); its generated "
            "questions do not qualify. Build it with from_traces > 0, import reviewed "
            "questions, or set RAGWATCH_COVERAGE_THRESHOLD to a cosine you checked",
        )
    if measured["auc"] < MIN_AUC:
        return CoverageThreshold(
            value=None,
            method="uncalibrated",
            **counts,
            note=f"uncalibrated: the {signal} does not tell a user question's own passage "
            f"from other documents' (ROC AUC {measured['auc']:.2f} < {MIN_AUC} on "
            f"{len(positives)} user questions): set RAGWATCH_COVERAGE_THRESHOLD to an "
            "embedding cosine you checked, or use an embedding model made for this "
            "language",
        )
    return CoverageThreshold(
        value=measured["threshold"],
        method="calibrated",
        tpr=measured["tpr"],
        fpr=measured["fpr"],
        **counts,
        by_language=_by_language(scores, measured["threshold"]),
    )


def _by_language(scores: _Scores, threshold: float) -> list[LanguageRates]:
    """The rates at `threshold` on each language's user questions alone."""
    positives, negatives = np.array(scores.positives), np.array(scores.negatives)
    of_positive, of_negative = (
        np.array(scores.positive_languages),
        np.array(scores.negative_languages),
    )
    return [
        LanguageRates(
            language=str(language),
            positives=int((of_positive == language).sum()),
            negatives=int((of_negative == language).sum()),
            **_rates(
                positives[of_positive == language], negatives[of_negative == language], threshold
            ),
        )
        for language in np.unique(np.concatenate([of_positive, of_negative]))
    ]


class _Scores(NamedTuple):
    positives: list[float]
    negatives: list[float]
    positive_languages: list[str]
    """The language of each positive's question."""
    negative_languages: list[str]
    used: int


def _scores(
    evidence: Sequence[GoldenItem],
    question_vectors: np.ndarray,
    passages: GoldenPassages,
    passage_vectors: np.ndarray,
) -> _Scores:
    languages, documents = np.asarray(passages.languages), np.asarray(passages.documents)
    scores = _Scores([], [], [], [], 0)
    used = 0
    for k, item in enumerate(evidence):
        mine = languages == item.language
        if not mine.any():
            continue
        used += 1
        sims = (
            np.where(mine, passage_vectors @ question_vectors[k], -np.inf)
            if len(passage_vectors)
            else np.zeros(0)
        )
        own_documents = {document_of(c) for c in item.gold_chunk_ids}
        if not item.gold_chunk_ids and not item.reference_contexts:
            # the corpus has no answer: nothing in the golden set covers it
            scores.negatives.append(float(sims.max()))
            scores.negative_languages.append(item.language)
            continue
        if (
            not own_documents
        ):  # an imported item's passages have no chunk ids: each is its own document
            own_documents = {f"text:{hash_text(t)}" for t in item.reference_contexts}
        scores.positives.append(float(sims.max()))
        scores.positive_languages.append(item.language)
        other = np.where(np.isin(documents, list(own_documents)), -np.inf, sims)
        if np.isfinite(other.max()):
            scores.negatives.append(float(other.max()))
            scores.negative_languages.append(item.language)
    return scores._replace(used=used)


def _rates(
    positives: np.ndarray, negatives: np.ndarray, threshold: float
) -> dict[str, float | None]:
    return {
        "tpr": float(np.mean(positives >= threshold)) if len(positives) else None,
        "fpr": float(np.mean(negatives >= threshold)) if len(negatives) else None,
    }


def _roc(positives: np.ndarray, negatives: np.ndarray) -> dict[str, float]:
    """Youden's best cut over every observed similarity (the stricter one of equals: coverage is not
    overstated), and the AUC (Mann–Whitney, ties half)."""
    if not len(positives) or not len(negatives):
        return {}
    greater = (positives[:, None] > negatives[None, :]).mean()
    ties = (positives[:, None] == negatives[None, :]).mean()
    best = max(
        np.unique(np.concatenate([positives, negatives])),
        key=lambda t: (np.mean(positives >= t) - np.mean(negatives >= t), t),
    )
    return {
        "threshold": float(best),
        "auc": float(greater + ties / 2),
        **_rates(positives, negatives, float(best)),
    }
