"""The matched share corrected for the matcher's error rates: the level is the share covered."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.evaluation.coverage.correction import corrected, uncorrectable
from pipelines.evaluation.coverage.estimate import coverage_by_stratum
from pipelines.evaluation.results.coverage import CoverageThreshold


def threshold(
    tpr: float, fpr: float, positives: int = 400, negatives: int = 400
) -> CoverageThreshold:
    return CoverageThreshold(
        value=0.5,
        method="calibrated",
        tpr=tpr,
        fpr=fpr,
        positives=positives,
        negatives=negatives,
        evidence=positives,
    )


def day(covered: np.ndarray) -> list:
    return coverage_by_stratum(["a/en"] * len(covered), covered, {"a/en": len(covered)})


def test_the_level_undoes_the_matchers_errors():
    # 600 of 1,000 questions covered; the matcher finds 70 % of them and lets 20 % of the rest pass:
    # 500 matched.
    covered = np.array([True] * 500 + [False] * 500)
    row = corrected(day(covered), threshold(0.7, 0.2))[-1]
    assert row.matched == pytest.approx(0.5) and row.ratio == pytest.approx(0.6)
    # The rates rest on 400 questions each: the level's own interval is wider than the day's.
    assert row.level_ci_low < row.ci_low < 0.6 < row.ci_high < row.level_ci_high
    # A perfect matcher leaves the matched share as it is, and its interval the Jeffreys one.
    exact = corrected(day(covered), threshold(1.0, 0.0))[-1]
    assert exact.ratio == pytest.approx(0.5) and exact.ci_low == pytest.approx(0.4685, abs=1e-3)


def test_the_levels_interval_holds_the_truth_over_simulated_days_and_calibrations():
    rng = np.random.default_rng(7)
    true_tpr, true_fpr, share, n, positives = 0.65, 0.2, 0.8, 500, 120
    held, held_by_the_day = 0, 0
    for _ in range(400):
        truth = rng.random(n) < share
        matched = np.where(truth, rng.random(n) < true_tpr, rng.random(n) < true_fpr)
        measured = threshold(
            rng.binomial(positives, true_tpr) / positives,
            rng.binomial(positives, true_fpr) / positives,
            positives,
            positives,
        )
        row = corrected(day(matched), measured)[-1]
        held += row.level_ci_low <= truth.mean() <= row.level_ci_high
        held_by_the_day += row.ci_low <= truth.mean() <= row.ci_high
    # The level's interval covers the truth about 95 % of the time; the day's, blind to the rates'
    # errors, would not.
    print(f"level's interval {held / 400:.3f}, day's {held_by_the_day / 400:.3f}")
    assert held / 400 >= 0.92 and held_by_the_day / 400 < 0.8


def test_without_rates_or_with_a_chance_matcher_the_level_is_none_with_the_reason():
    covered = np.array([True] * 5 + [False] * 5)
    unknown = CoverageThreshold(value=0.6, method="setting")
    assert all(r.ratio is None and r.matched == 0.5 for r in corrected(day(covered), unknown))
    assert "0 user questions" in uncorrectable(unknown)
    assert "9 user questions" in uncorrectable(threshold(0.7, 0.2, positives=9))
    assert "does not tell" in uncorrectable(threshold(0.3, 0.4))
    assert corrected(day(covered), threshold(0.3, 0.4))[-1].ratio is None
    assert uncorrectable(threshold(0.7, 0.2)) == ""
