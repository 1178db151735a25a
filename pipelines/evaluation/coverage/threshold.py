"""The similarity above which a day's question counts as covered, calibrated on the golden set's paraphrase pairs.

A golden build writes, for each seed passage, plain questions and one paraphrase that avoids the passage's
wording: the paraphrase asks what its siblings ask, in other words, as a user would. Matching takes a
question's nearest golden question, so the calibration asks the same of each paraphrase:

- positive: its similarity to its nearest sibling (a plain question of its passage, same language);
- negative: its similarity to its nearest question of another document, same language — what nearest-neighbour
  matching sees for a question the golden set does not cover;

and takes the cosine that maximizes Youden's J = TPR − FPR (the share of positives at or above it minus the
share of negatives at or above it). The report states the threshold with its TPR, FPR, the ROC AUC and the
count. Fewer than MIN_PAIRS paraphrases, or an AUC below MIN_AUC (the embedding model cannot tell the
golden set's paraphrases from other documents' questions, e.g. a set written from templates), leave it
uncalibrated: coverage is then `failed` with that reason, unless the user set RAGWATCH_COVERAGE_THRESHOLD (a
similarity they checked), which is used and said to be theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from pipelines.records import GoldenItem

MIN_PAIRS = 10
"""Fewest paraphrases (with a sibling and an other-document question) for a calibrated threshold."""
MIN_AUC = 0.7
"""Below this ROC AUC the paraphrase pairs do not separate from other documents' neighbours."""
PARAPHRASE = "paraphrase"


class CoverageThreshold(BaseModel):
    value: float | None
    """Cosine similarity at or above which a question is covered; None: none could be calibrated nor was set."""
    method: str
    """"calibrated" (Youden's J on the paraphrase pairs), "setting" (RAGWATCH_COVERAGE_THRESHOLD) or "none"."""
    pairs: int
    """Paraphrases calibrated on: each gives a positive (nearest sibling) and a negative (nearest other document)."""
    negatives: int
    tpr: float | None = None
    """Share of paraphrases whose nearest sibling is at or above the threshold: matched as covered."""
    fpr: float | None = None
    """Share of paraphrases whose nearest other-document question is at or above it: how often a question on a
    topic the golden set lacks would still pass for covered."""
    auc: float | None = None
    """P(a paraphrase's nearest sibling is more similar than a nearest other-document question), ties half."""
    other_document: float | None = None
    """The median similarity of a paraphrase to its nearest question of another document: "a different topic"."""
    note: str = ""

    @property
    def topic_similarity(self) -> float | None:
        """Where the uncovered questions' topics are cut (clusters.py): halfway between "the same question" (the
        threshold) and "another document's question" (`other_document`), a topic being broader than one question;
        the threshold itself when there is nothing below it to go halfway to."""
        if self.value is None or self.other_document is None or self.other_document >= self.value:
            return self.value
        return (self.value + self.other_document) / 2


def document_of(source_ref: str) -> str:
    """`guides/deploy.md#rollback/0` -> `guides/deploy.md`: the seed passage's document."""
    return source_ref.split("#", 1)[0]


def paraphrase_pairs(items: Sequence[GoldenItem]) -> list[tuple[int, int]]:
    """(paraphrase, plain) index pairs of questions written from one seed passage in one language."""
    by_seed: dict[tuple[str, str], list[int]] = {}
    for i, item in enumerate(items):
        if item.qtype == "single_hop" and item.source == "corpus":
            by_seed.setdefault((item.source_ref, item.language), []).append(i)
    pairs = []
    for members in by_seed.values():
        paraphrases = [i for i in members if items[i].variant == PARAPHRASE]
        plain = [i for i in members if items[i].variant != PARAPHRASE]
        pairs += [(a, b) for a in paraphrases for b in plain]
    return pairs


def calibrate_threshold(items: Sequence[GoldenItem], vectors: np.ndarray, *,
                        setting: float | None = None) -> CoverageThreshold:  # fmt: skip
    """The threshold for `items` (golden questions) with their normalised question `vectors` (one row each)."""
    nearest_sibling: dict[int, float] = {}
    for a, b in paraphrase_pairs(items):
        nearest_sibling[a] = max(nearest_sibling.get(a, -1.0), float(vectors[a] @ vectors[b]))
    paraphrases = list(nearest_sibling)
    other = _nearest_other_document(paraphrases, items, vectors)
    scored = [(nearest_sibling[a], float(n)) for a, n in zip(paraphrases, other) if n > -np.inf]
    positives, negatives = np.array([s for s, _ in scored]), np.array([n for _, n in scored])
    measured = _roc(positives, negatives)
    counts = dict(pairs=len(scored), negatives=len(scored),
                  other_document=float(np.median(negatives)) if len(negatives) else None)  # fmt: skip
    if setting is not None:
        return CoverageThreshold(value=setting, method="setting", **counts, **_rates(positives, negatives, setting),
                                 auc=measured.get("auc"), note="set by RAGWATCH_COVERAGE_THRESHOLD")  # fmt: skip
    if len(scored) < MIN_PAIRS:
        return CoverageThreshold(value=None, method="none", **counts,
                                 note=f"the golden set has {len(scored)} paraphrases with a sibling and an "
                                      f"other-document question to calibrate on (need {MIN_PAIRS}): build it from more "
                                      "seed passages (with questions_per_seed ≥ 2 each gives one paraphrase), or set "
                                      "RAGWATCH_COVERAGE_THRESHOLD to a cosine you checked")  # fmt: skip
    if measured["auc"] < MIN_AUC:
        return CoverageThreshold(value=None, method="none", **counts, auc=measured["auc"],
                                 note=f"the embedding model does not tell the golden set's paraphrases from other "
                                      f"documents' questions (ROC AUC {measured['auc']:.2f} < {MIN_AUC}): set "
                                      "RAGWATCH_COVERAGE_THRESHOLD to a cosine you checked")  # fmt: skip
    return CoverageThreshold(value=measured["threshold"], method="calibrated", **counts, tpr=measured["tpr"],
                             fpr=measured["fpr"], auc=measured["auc"])


def _nearest_other_document(rows: list[int], items: Sequence[GoldenItem], vectors: np.ndarray) -> np.ndarray:
    """Per item of `rows`, its highest cosine to a question of its language from another document (−inf: none), in
    one matrix product."""
    if not rows:
        return np.zeros(0)
    documents = np.array([document_of(item.source_ref) for item in items])
    languages = np.array([item.language for item in items])
    other = (languages[None, :] == languages[rows][:, None]) & (documents[None, :] != documents[rows][:, None])
    return np.where(other, vectors[rows] @ vectors.T, -np.inf).max(axis=1)


def _rates(positives: np.ndarray, negatives: np.ndarray, threshold: float) -> dict[str, float | None]:
    return {"tpr": float(np.mean(positives >= threshold)) if len(positives) else None,
            "fpr": float(np.mean(negatives >= threshold)) if len(negatives) else None}  # fmt: skip


def _roc(positives: np.ndarray, negatives: np.ndarray) -> dict[str, float]:
    """Youden's best cut over every observed similarity (the stricter one of equals: coverage is not overstated),
    and the AUC (Mann–Whitney, ties half)."""
    if not len(positives) or not len(negatives):
        return {}
    greater = (positives[:, None] > negatives[None, :]).mean()
    ties = (positives[:, None] == negatives[None, :]).mean()
    best = max(np.unique(np.concatenate([positives, negatives])),
               key=lambda t: (np.mean(positives >= t) - np.mean(negatives >= t), t))  # fmt: skip
    return {"threshold": float(best), "auc": float(greater + ties / 2), **_rates(positives, negatives, float(best))}
