"""How far the judge can be trusted on a 0/1 metric, from the items people labelled.

Agreement: Cohen's κ, accuracy and the confusion matrix of human label vs judge verdict. The audit queue
draws the same number of items per judge verdict (outputs/judge_audit.py), so the labelled items
over-represent the rarer verdict: each labelled item is weighted by (share of its verdict among the judged
items) / (its share among the labelled ones), which makes κ, accuracy and the PPI estimate describe the
judged population, not the queue. The confusion matrix shows the raw counts.

Prediction-powered inference (Angelopoulos et al., Science 2023) through `ppi_py`, the authors' library:
the mean of the N judged-only verdicts, corrected by the judge's average error on the n labelled items,
with an interval that is valid whatever the judge's error rates. The judge-only interval treats the
verdicts as truth: it is narrow and, when the judge errs one way more than the other, wrong.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import norm

TRUSTED_FROM_KAPPA = 0.6
"""κ from which the judge is trustworthy for a metric ("substantial" agreement, Landis & Koch)."""
MIN_LABELS = 20
"""Fewest labelled items for the report to call the judge trustworthy and to put a PPI interval on the mean."""
CONFIDENCE = 0.95


def trustworthy(labels: int, kappa: float | None) -> bool:
    """κ ≥ 0.6 on at least MIN_LABELS labelled items."""
    return labels >= MIN_LABELS and kappa is not None and kappa >= TRUSTED_FROM_KAPPA


@dataclass(frozen=True)
class Agreement:
    n: int
    kappa: float | None
    """None when chance alone explains every agreement (humans or judge all gave one answer)."""
    accuracy: float
    confusion: dict[str, int]
    """Raw counts: `judge_yes_human_yes`, `judge_yes_human_no`, `judge_no_human_yes`, `judge_no_human_no`."""


def agreement(human: Sequence[int], judge: Sequence[int], weights: Sequence[float] | None = None) -> Agreement:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) and accuracy p_o, from the (weighted) 2×2 table of human vs judge."""
    y, f = np.asarray(human, dtype=int), np.asarray(judge, dtype=int)
    if y.shape != f.shape or not len(y):
        raise ValueError("agreement needs as many judge verdicts as human labels, at least one")
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    table = np.array([[w[(f == j) & (y == h)].sum() for h in (1, 0)] for j in (1, 0)]) / w.sum()
    observed = table[0, 0] + table[1, 1]
    judge_yes, human_yes = table[0].sum(), table[:, 0].sum()
    expected = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    kappa = None if math.isclose(expected, 1.0) else float((observed - expected) / (1 - expected))
    counts = {f"judge_{j}_human_{h}": int(((f == jv) & (y == hv)).sum())
              for j, jv in (("yes", 1), ("no", 0)) for h, hv in (("yes", 1), ("no", 0))}  # fmt: skip
    return Agreement(n=len(y), kappa=kappa, accuracy=float(observed), confusion=counts)


def verdict_weights(labelled_verdicts: Sequence[int], judged_verdicts: Sequence[int]) -> np.ndarray:
    """Per labelled item: share of its judge verdict among the judged items / its share among the labelled."""
    f, pop = np.asarray(labelled_verdicts, dtype=int), np.asarray(judged_verdicts, dtype=int)
    weights = np.ones(len(f))
    for v in (0, 1):
        in_sample = (f == v).mean() if len(f) else 0.0
        if in_sample > 0:
            weights[f == v] = ((pop == v).mean() if len(pop) else in_sample) / in_sample
    return weights


def labels_for_half_width(half_width: float, *, judged_sd: float, error_sd: float, judged: int,
                          confidence: float = CONFIDENCE) -> int | None:  # fmt: skip
    """Labelled items for a PPI interval of ±`half_width`, from PPI's variance (λ = 1):

        Var(θ̂_PP) = σ²_f / N + σ²_Δ / n,   half-width = z · √Var

    with σ_f the spread of the judge's verdicts over the N judged items and σ_Δ that of its error
    Y − f on the labelled ones; so n = σ²_Δ / ((h/z)² − σ²_f / N). None when N judged items alone already
    leave more than ±h (only more judged items help). σ_Δ is weighted like the estimate (verdict_weights)."""
    z = norm.ppf(0.5 + confidence / 2)
    room = (half_width / z) ** 2 - judged_sd**2 / max(judged, 1)
    if room <= 0:
        return None
    return max(1, math.ceil(error_sd**2 / room))


@dataclass(frozen=True)
class Calibration:
    """One metric of one suite: agreement over every label so far, and the run's mean three ways."""

    suite: str
    metric: str
    meaning: str
    labels: int
    judged: int
    """Judged items of the run (ok scores) the estimates are about."""
    agreement: Agreement | None
    judge_mean: float | None
    judge_ci: tuple[float, float] | None
    """The judge-only interval: the verdicts taken as truth (normal approximation, as PPI's)."""
    ppi_mean: float | None = None
    ppi_ci: tuple[float, float] | None = None
    half_width: float = 0.05
    labels_needed: int | None = None
    """Labelled items for a PPI interval of ±`half_width` (see labels_for_half_width); None when unreachable
    or unknown (fewer than MIN_LABELS labels)."""
    notes: list[str] = field(default_factory=list)

    @property
    def more_labels(self) -> int | None:
        return None if self.labels_needed is None else max(0, self.labels_needed - self.labels)

    @property
    def trusted(self) -> bool | None:
        """None without a label; False below κ 0.6 or with fewer than MIN_LABELS labels."""
        if not self.labels:
            return None
        return trustworthy(self.labels, self.agreement.kappa if self.agreement else None)

    @property
    def verdict(self) -> str:
        if self.trusted is None:
            return "no human labels yet"
        if self.trusted:
            return "trustworthy"
        kappa = self.agreement.kappa if self.agreement else None
        if self.labels < MIN_LABELS:
            return f"not trustworthy yet: {self.labels} labels, {MIN_LABELS} needed"
        if kappa is None:
            return "not trustworthy: κ undefined (one answer only)"
        return f"not trustworthy: κ {kappa:.2f} < {TRUSTED_FROM_KAPPA}"

    def to_dict(self) -> dict:
        return {**asdict(self), "more_labels": self.more_labels, "trusted": self.trusted, "verdict": self.verdict}


def calibrate(suite: str, metric: str, meaning: str, *, human: Sequence[int], labelled_verdicts: Sequence[int],
              judged_verdicts: Sequence[int], half_width: float = 0.05, confidence: float = CONFIDENCE) -> Calibration:  # fmt: skip
    """Agreement on the n labelled items (human label Y, judge verdict Ŷ) and the mean of the metric's 0/1 form over
    the N judged-only items (Ŷ): judge-only and prediction-powered (`ppi_py.ppi_mean_ci`, PPI++ power tuning)."""
    y, f, pop = (np.asarray(v, dtype=float) for v in (human, labelled_verdicts, judged_verdicts))
    alpha = 1 - confidence
    judge_mean = float(pop.mean()) if len(pop) else None
    # The classical interval ppi_py compares PPI with (its classical_mean_ci), written out: no label, no ppi_py import.
    judge_se = float(pop.std()) / math.sqrt(len(pop)) if len(pop) > 1 else None
    judge_ci = _pair((judge_mean - norm.ppf(1 - alpha / 2) * judge_se, judge_mean + norm.ppf(1 - alpha / 2) * judge_se)) \
        if judge_se is not None else None
    base = dict(suite=suite, metric=metric, meaning=meaning, labels=len(y), judged=len(pop), judge_mean=judge_mean,
                judge_ci=judge_ci, half_width=half_width)  # fmt: skip
    if not len(y):
        return Calibration(**base, agreement=None)
    weights = verdict_weights(f.astype(int), pop.astype(int))
    agreed = agreement(y.astype(int), f.astype(int), weights)
    if len(y) < MIN_LABELS or len(pop) < 2:
        note = f"the PPI interval needs at least {MIN_LABELS} labels and 2 judged items"
        return Calibration(**base, agreement=agreed, notes=[note])
    # Imported only with labels (it loads scikit-learn and statsmodels), and inside catch_warnings: its import calls
    # warnings.simplefilter("ignore"), which would otherwise silence every warning of the process.
    with warnings.catch_warnings():
        from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    low, high = _pair(ppi_mean_ci(y, f, pop, alpha=alpha, w=weights, lam=1.0))
    w = weights / weights.sum() * len(y)
    needed = labels_for_half_width(half_width, judged_sd=float(pop.std()), error_sd=float((w * (y - f)).std()),
                                   judged=len(pop), confidence=confidence)  # fmt: skip
    notes = [] if needed is not None else [f"±{half_width} is out of reach with {len(pop)} judged items: judge more"]
    ppi_mean = float(np.ravel(ppi_mean_pointestimate(y, f, pop, w=weights, lam=1.0))[0])
    return Calibration(**base, agreement=agreed, ppi_mean=ppi_mean, ppi_ci=(low, high), labels_needed=needed,
                       notes=notes)  # fmt: skip


def _pair(ci) -> tuple[float, float]:
    low, high = (float(np.ravel(v)[0]) for v in ci)
    return max(0.0, low), min(1.0, high)
