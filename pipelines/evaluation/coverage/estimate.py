"""Coverage of a day's questions by the golden set: the nearest golden passage, and the share
matched, per stratum.

A question is matched as covered when its nearest golden passage (a golden item's reference passage,
same language) is at least the threshold's similarity (threshold.py). A language the golden set has
no passage in is uncovered. The unit is the distinct question: a question asked six times is one
piece of evidence about the golden set, not six. The matched share of an app/language stratum is the
share of its traffic (the embedded traces) whose question is matched, its n the stratum's distinct
questions. The day's weights each stratum by its share of the day's sample (`day_traces`), p = Σ W_h
p_h, so a stratum embedded at its floor counts for its traffic, not its floor; its n is the
effective sample size n_eff = p(1 − p) / Σ W_h² p_h(1 − p_h) / n_h (Korn & Graubard 1998), the
distinct questions an unweighted sample would need for the same variance. correction.py turns each
matched share into the level, the share covered, with its interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.evaluation.results.coverage import ALL, StratumCoverage

BLOCK_ROWS = 2_048
"""Questions compared with the golden set per matrix product: 2,048 × 2,000 golden passages is 16
MB."""


@dataclass(frozen=True)
class Matches:
    similarity: np.ndarray
    """Per question, the cosine of its nearest golden passage of the same language (−1 without
    one)."""
    nearest: np.ndarray
    """Per question, the index of that golden passage (−1 without one)."""

    def covered(self, threshold: float) -> np.ndarray:
        return self.similarity >= threshold


def nearest_golden(
    vectors: np.ndarray,
    languages: Sequence[str],
    golden_vectors: np.ndarray,
    golden_languages: Sequence[str],
) -> Matches:
    """Each question's nearest golden passage of its own language, in blocks (memory: BLOCK_ROWS ×
    golden)."""
    similarity = np.full(len(vectors), -1.0)
    nearest = np.full(len(vectors), -1, dtype=np.int64)
    languages, golden_languages = np.asarray(languages), np.asarray(golden_languages)
    for language in np.unique(languages):
        rows, candidates = (
            np.flatnonzero(languages == language),
            np.flatnonzero(golden_languages == language),
        )
        if not len(candidates):
            continue
        for start in range(0, len(rows), BLOCK_ROWS):
            block = rows[start : start + BLOCK_ROWS]
            sims = vectors[block] @ golden_vectors[candidates].T
            best = np.argmax(sims, axis=1)
            similarity[block] = sims[np.arange(len(block)), best]
            nearest[block] = candidates[best]
    return Matches(similarity=similarity, nearest=nearest)


def coverage_by_stratum(
    strata: Sequence[str],
    covered: np.ndarray,
    day_traces: dict[str, int],
    traces: np.ndarray | None = None,
) -> list[StratumCoverage]:
    """Per stratum, then the day ("all", weighted by `day_traces`): the matched share of the traces,
    at n = the distinct questions. One row of `strata`/`covered` per distinct question, asked
    `traces` times (1)."""
    strata = np.asarray(strata)
    traces = np.ones(len(strata), dtype=np.int64) if traces is None else np.asarray(traces)
    rows = []
    for stratum in sorted(day_traces):
        mask = strata == stratum
        n, hits = int(mask.sum()), int(covered[mask].sum())
        volume, covered_volume = int(traces[mask].sum()), int(traces[mask & covered].sum())
        rows.append(
            StratumCoverage(
                stratum=stratum,
                day_traces=day_traces[stratum],
                questions=n,
                covered=hits,
                traces=volume,
                covered_traces=covered_volume,
                matched=covered_volume / volume if volume else None,
                effective_questions=n,
                ratio=None,
                ci_low=None,
                ci_high=None,
            )
        )
    return [*rows, _weighted_day(rows)]


def _weighted_day(rows: list[StratumCoverage]) -> StratumCoverage:
    measured = [r for r in rows if r.questions]
    total = sum(r.day_traces for r in rows)
    common = dict(
        stratum=ALL,
        day_traces=total,
        questions=sum(r.questions for r in rows),
        covered=sum(r.covered for r in rows),
        traces=sum(r.traces for r in rows),
        covered_traces=sum(r.covered_traces for r in rows),
    )
    weight = sum(r.day_traces for r in measured)
    empty = {"ratio": None, "ci_low": None, "ci_high": None}
    if not weight:
        return StratumCoverage(**common, **empty)
    w = np.array([r.day_traces / weight for r in measured])
    p_h = np.array([r.matched for r in measured])
    n_h = np.array([r.questions for r in measured])
    p = float(w @ p_h)
    variance = float(np.sum(w**2 * p_h * (1 - p_h) / n_h))
    # All strata at 0 % or 100 % have no sampling variance to speak of: the plain count is the
    # interval's n then.
    n_eff = p * (1 - p) / variance if variance > 0 else float(n_h.sum())
    n_eff = min(max(n_eff, 1.0), float(n_h.sum()))
    return StratumCoverage(**common, matched=p, effective_questions=n_eff, **empty)
