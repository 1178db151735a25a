"""Aggregates, paired comparisons and the regression gate, checked against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipelines.evaluation.stats import OVERALL, aggregate, bootstrap_ci, paired_comparison, regression_gate
from pipelines.records import Score


def score(item: str, metric: str, value: float | None, *, stratum: str = "single_hop/es", status: str = "ok",
          run_id: str = "run") -> Score:  # fmt: skip
    return Score(run_id=run_id, suite="offline", item_id=item, stratum=stratum, metric=metric, value=value,
                 status=status, error=None if status == "ok" else "judge timed out", dataset_version="v1")  # fmt: skip


def by_stratum(aggs):
    return {(a.metric, a.stratum): a for a in aggs}


def test_failed_and_skipped_are_counted_never_averaged():
    scores = [
        score("a", "faithfulness", 0.5), score("b", "faithfulness", 1.0),
        score("c", "faithfulness", None, status="failed"),
        score("d", "faithfulness", 0.25, stratum="multi_hop/en"),
        score("e", "faithfulness", None, stratum="multi_hop/en", status="skipped"),
    ]  # fmt: skip
    aggs = by_stratum(aggregate(scores))
    es = aggs[("faithfulness", "single_hop/es")]
    # (0.5 + 1.0) / 2; averaging the failure as 0 would give 0.5.
    assert (es.n, es.n_failed, es.n_skipped, es.n_items) == (2, 1, 0, 3)
    assert es.mean == pytest.approx(0.75)
    assert es.std == pytest.approx(math.sqrt(0.125))  # sample sd of {0.5, 1.0}
    en = aggs[("faithfulness", "multi_hop/en")]
    assert (en.n, en.n_skipped, en.mean) == (1, 1, 0.25)
    assert en.ci_low is None and en.std is None  # one value has no spread to show
    pooled = aggs[("faithfulness", OVERALL)]
    assert (pooled.n, pooled.n_failed, pooled.n_skipped) == (3, 1, 1)
    assert pooled.mean == pytest.approx(1.75 / 3)
    assert [a.stratum for a in aggregate(scores)] == [OVERALL, "multi_hop/en", "single_hop/es"]


def test_a_metric_with_only_failures_has_no_mean():
    agg = aggregate([score("a", "context_recall", None, status="failed")])[0]
    assert (agg.n, agg.n_failed, agg.mean, agg.ci_low, agg.ci_high) == (0, 1, None, None, None)


def test_an_ok_score_without_value_is_a_bug_not_a_zero():
    with pytest.raises(ValueError, match="ok but has no finite value"):
        aggregate([score("a", "faithfulness", None, status="ok")])


def test_bootstrap_ci_covers_the_mean_and_matches_the_normal_approximation():
    values = [1.0] * 70 + [0.0] * 30
    low, high = bootstrap_ci(values)
    half_width = 1.96 * math.sqrt(0.7 * 0.3 / 100)  # 0.0898
    assert low < 0.7 < high
    assert low == pytest.approx(0.7 - half_width, abs=0.02) and high == pytest.approx(0.7 + half_width, abs=0.02)
    # Seeded and order-independent: the same scores read back in another order give the same interval.
    assert bootstrap_ci(values[::-1]) == (low, high)
    assert bootstrap_ci([0.4, 0.4, 0.4]) == pytest.approx((0.4, 0.4))
    # Ten times the items: an interval about √10 narrower.
    narrow = bootstrap_ci(values * 10)
    assert (narrow[1] - narrow[0]) == pytest.approx((high - low) / math.sqrt(10), rel=0.15)


def test_every_aggregate_interval_contains_its_mean():
    rng = np.random.default_rng(7)
    scores = [score(f"i{i}", m, float(rng.beta(5, 2)), stratum=f"s{i % 3}")
              for i in range(60) for m in ("faithfulness", "answer_relevancy")]  # fmt: skip
    for agg in aggregate(scores):
        assert agg.ci_low <= agg.mean <= agg.ci_high


def test_paired_comparison_uses_only_items_both_runs_scored_ok():
    candidate = [score("a", "faithfulness", 0.8), score("b", "faithfulness", 0.6), score("c", "faithfulness", 0.9),
                 score("d", "faithfulness", None, status="failed")]  # fmt: skip
    baseline = [score(i, "faithfulness", v) for i, v in (("a", 0.7), ("b", 0.7), ("c", 0.6), ("d", 0.5), ("e", 0.9))]
    result = paired_comparison(candidate, baseline, "faithfulness")
    # Pairs a, b, c: differences 0.1, −0.1, 0.3 -> mean 0.1, sample sd √(((0)² + 0.2² + 0.2²) / 2) = 0.2.
    assert result.n_pairs == 3
    assert result.mean_diff == pytest.approx(0.1)
    assert result.sd_diff == pytest.approx(0.2)
    assert result.candidate_mean == pytest.approx(2.3 / 3) and result.baseline_mean == pytest.approx(2.0 / 3)
    assert result.ci_low <= result.mean_diff <= result.ci_high


def runs_with_drop(n: int) -> tuple[list[Score], list[Score]]:
    """Baseline 0.5 everywhere; candidate alternates 0.62 / 0.32: a mean drop of 0.03 with paired sd ≈ 0.15."""
    baseline = [score(f"q{i}", "recall@5", 0.5, run_id="base") for i in range(n)]
    candidate = [score(f"q{i}", "recall@5", 0.62 if i % 2 else 0.32, run_id="cand") for i in range(n)]
    return candidate, baseline


def test_the_same_drop_passes_at_50_items_and_fails_at_500():
    small = regression_gate(*runs_with_drop(50), ["recall@5"]).metrics[0]
    # sd_diff = 0.15·√(50/49) = 0.15152; tolerance = 1.96 · 0.15152 / √50 = 0.0420 > 0.03 drop.
    assert small.design == "paired" and small.n_pairs == 50
    assert small.diff == pytest.approx(-0.03)
    assert small.tolerance == pytest.approx(1.96 * 0.15 * math.sqrt(50 / 49) / math.sqrt(50))
    assert small.tolerance == pytest.approx(0.0420, abs=1e-4)
    assert small.passed
    large = regression_gate(*runs_with_drop(500), ["recall@5"])
    # 1.96 · 0.15015 / √500 = 0.0132, floored at min_tolerance 0.02 < 0.03 drop.
    assert large.metrics[0].tolerance == pytest.approx(0.02)
    assert not large.passed and large.failed_metrics == ["recall@5"]
    assert "exceeds tolerance 0.0200" in large.summary()


def test_gate_passes_within_the_floor_and_an_improvement_always_passes():
    baseline = [score(f"q{i}", "faithfulness", 0.8) for i in range(100)]
    slightly_worse = [score(f"q{i}", "faithfulness", 0.785) for i in range(100)]
    better = [score(f"q{i}", "faithfulness", 0.9) for i in range(100)]
    assert regression_gate(slightly_worse, baseline, ["faithfulness"]).passed  # drop 0.015 ≤ 0.02
    assert regression_gate(better, baseline, ["faithfulness"]).passed


def test_for_noise_sensitivity_a_rise_is_the_regression():
    baseline = [score(f"q{i}", "noise_delta_f", 0.05) for i in range(40)]
    worse = [score(f"q{i}", "noise_delta_f", 0.10) for i in range(40)]
    better = [score(f"q{i}", "noise_delta_f", 0.0) for i in range(40)]
    failed = regression_gate(worse, baseline, ["noise_delta_f"]).metrics[0]
    assert not failed.passed and not failed.higher_is_better and "rise of 0.0500" in failed.reason
    assert regression_gate(better, baseline, ["noise_delta_f"]).passed


def test_online_runs_without_shared_items_are_compared_as_independent_samples():
    candidate = [score("t1", "faithfulness", 0.8), score("t2", "faithfulness", 0.6)]
    baseline = [score("t3", "faithfulness", 0.9), score("t4", "faithfulness", 0.7)]
    gate = regression_gate(candidate, baseline, ["faithfulness"]).metrics[0]
    # Welch SE = √(0.02/2 + 0.02/2) = 0.14142; tolerance 1.96 · 0.14142 = 0.2772 ≥ 0.1 drop.
    assert gate.design == "independent" and gate.n_pairs == 0
    assert gate.standard_error == pytest.approx(math.sqrt(0.02))
    assert gate.tolerance == pytest.approx(1.96 * math.sqrt(0.02))
    assert gate.diff == pytest.approx(-0.1) and gate.passed


def test_a_gated_metric_that_cannot_be_compared_fails_the_gate():
    baseline = [score(f"q{i}", "context_recall", 0.9) for i in range(10)]
    candidate = [score(f"q{i}", "context_recall", None, status="failed") for i in range(10)]
    result = regression_gate(candidate, baseline, ["context_recall"])
    assert not result.passed
    assert result.metrics[0].design == "none" and "not comparable" in result.metrics[0].reason
    assert result.to_dict()["summary"].startswith("gate failed")
    with pytest.raises(ValueError, match="at least one metric"):
        regression_gate(candidate, baseline, [])
