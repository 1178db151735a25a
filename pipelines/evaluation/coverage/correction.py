"""The share of the day's questions the golden set covers, corrected for how matching errs.

Matching errs both ways. A covered question's nearest golden passage can fall below the threshold:
it is matched at the true-match rate (TPR) only. A question on a subject the golden set lacks can
pass: the false-match rate (FPR). The matched share o is then about TPR·c + FPR·(1 − c), c the share
truly covered. The level reported is c = (o − FPR)/(TPR − FPR) (Rogan & Gladen 1978), clipped to [0,
1], with two 95 % intervals. The level's own carries the day's sampling and the two rates'
uncertainty (delta method, statistics/misclassification.py). The day's holds the rates at their
calibration: two days measured against one golden set share its rates, so their levels differ by the
day's sampling alone, and it is what a drop is read against (the alert).

The rates are those of the threshold's calibration on the golden set's user questions
(threshold.py): TPR on each question with its own passages present, FPR on the same question with
its own document left out, as a question on a missing subject is matched. Their variances are
binomial over the positives and the negatives, at the Jeffreys shares: a rate of 0 or 1 on a few
questions is not exact.
"""

from __future__ import annotations

import numpy as np

from pipelines.evaluation.coverage.threshold import MIN_POSITIVES
from pipelines.evaluation.results.coverage import CoverageThreshold, StratumCoverage
from pipelines.evaluation.statistics.intervals import proportion_ci
from pipelines.evaluation.statistics.misclassification import ErrorRates, rogan_gladen

METHOD = "corrected for the matcher's error rates (Rogan–Gladen, delta method)"


def matcher_error_rates(threshold: CoverageThreshold) -> ErrorRates | None:
    """TPR as the sensitivity and 1 − FPR as the specificity, with their covariance; None without
    both counts."""
    if (
        threshold.tpr is None
        or threshold.fpr is None
        or not threshold.positives
        or not threshold.negatives
    ):
        return None
    true_matches = round(threshold.tpr * threshold.positives)
    false_matches = round(threshold.fpr * threshold.negatives)
    # Positives and negatives are separate counts, so the two rates' covariance is diagonal.
    sens_j = (true_matches + 0.5) / (threshold.positives + 1)
    fpr_j = (false_matches + 0.5) / (threshold.negatives + 1)
    cov = np.diag(
        [sens_j * (1 - sens_j) / threshold.positives, fpr_j * (1 - fpr_j) / threshold.negatives]
    )
    fpr_low, fpr_high = proportion_ci(false_matches, threshold.negatives)
    return ErrorRates(
        sens=threshold.tpr,
        spec=1 - threshold.fpr,
        cov=cov,
        labels=threshold.positives + threshold.negatives,
        sens_ci=proportion_ci(true_matches, threshold.positives),
        spec_ci=(1 - fpr_high, 1 - fpr_low),
    )


def uncorrectable(threshold: CoverageThreshold) -> str:
    """Why the matched share cannot be corrected into a level (empty when it can)."""
    if matcher_error_rates(threshold) is None or threshold.positives < MIN_POSITIVES:
        return (
            f"the matcher's error rates are unknown: the golden set has {threshold.positives} user questions (items "
            f"from traces or imported by people) with a gold passage to measure them on (need {MIN_POSITIVES})"
        )
    if threshold.tpr <= threshold.fpr:
        return (
            f"the matcher does not tell covered questions from others at this threshold (true matches "
            f"{threshold.tpr:.0%}, false {threshold.fpr:.0%})"
        )
    return ""


def in_language(threshold: CoverageThreshold, language: str) -> CoverageThreshold:
    """The threshold with the rates measured on `language`'s user questions, where they can correct
    (MIN_POSITIVES positives, a negative, TPR > FPR); else as it is, with the pooled rates."""
    own = next((r for r in threshold.by_language if r.language == language), None)
    if own is None:
        return threshold
    candidate = threshold.model_copy(
        update={
            "positives": own.positives,
            "negatives": own.negatives,
            "tpr": own.tpr,
            "fpr": own.fpr,
        }
    )
    return threshold if uncorrectable(candidate) else candidate


def corrected(rows: list[StratumCoverage], threshold: CoverageThreshold) -> list[StratumCoverage]:
    """Each row's level from its matched share (`matched`, at n = its distinct questions; the day's:
    their effective number), with two intervals: the matched share's Jeffreys interval mapped
    through the correction, the rates held at their calibration (`ci_low`, `ci_high`: the day's
    sampling alone, what two days against one golden set are compared by), and the delta-method one
    with the rates' own uncertainty added (`level_ci_low`, `level_ci_high`). The level is None where
    `uncorrectable` says why."""
    rates = None if uncorrectable(threshold) else matcher_error_rates(threshold)
    out = []
    for row in rows:
        if rates is None or row.matched is None:
            out.append(row.model_copy(update={"ratio": None, "ci_low": None, "ci_high": None}))
            continue
        n = row.effective_questions or row.questions
        level = rogan_gladen(row.matched, n, rates)
        day_low, day_high = day_interval(row.matched, n, threshold)
        out.append(
            row.model_copy(
                update={
                    "ratio": float(level.mean),
                    "ci_low": day_low,
                    "ci_high": day_high,
                    "level_ci_low": float(level.ci[0]),
                    "level_ci_high": float(level.ci[1]),
                }
            )
        )
    return out


def covered_share(matched: float, threshold: CoverageThreshold) -> float:
    """The share covered, c = (matched − FPR)/(TPR − FPR), clipped to [0, 1]; the threshold's rates
    must be known (`uncorrectable` says so)."""
    return _clipped((matched - threshold.fpr) / (threshold.tpr - threshold.fpr))


def day_interval(matched: float, n: float, threshold: CoverageThreshold) -> tuple[float, float]:
    """The matched share's Jeffreys 95 % interval at `n` distinct questions, through the correction
    with the rates held at their calibration."""
    low, high = proportion_ci(matched * n, n)
    return covered_share(low, threshold), covered_share(high, threshold)


def _clipped(value: float) -> float:
    return min(max(float(value), 0.0), 1.0)
