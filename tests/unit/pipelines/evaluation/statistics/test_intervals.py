"""Aggregates, intervals, paired comparisons and multiplicity corrections, against hand-computed
values.

Beta quantiles are written out as numbers (R's qbeta gives the same): the tests check that the right
distribution is built from the scores, which is where a mistake would hide.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pipelines.core.records import Score
from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.evaluation.statistics.bootstrap import bootstrap_ci
from pipelines.evaluation.statistics.compare import compare_runs, paired_comparison
from pipelines.evaluation.statistics.intervals import (
    ADJUSTED_PAIRED,
    JEFFREYS,
    JEFFREYS_BOUNDED_MEAN,
    STUDENT_T,
    adjusted_paired_interval,
    bounded_mean_interval,
    jeffreys_interval,
    paired_difference_interval,
    proportion_ci,
)
from pipelines.evaluation.statistics.multiplicity import benjamini_hochberg, holm
from pipelines.evaluation.statistics.randomization import (
    family_sign_flip_test,
    permutation_test,
    sign_flip_test,
)
from pipelines.evaluation.statistics.scores import OVERALL, value_range


def score(
    item: str,
    metric: str,
    value: float | None,
    *,
    stratum: str = "single_hop/es",
    status: str = "ok",
    run_id: str = "run",
) -> Score:
    return Score(
        run_id=run_id,
        suite="offline",
        item_id=item,
        stratum=stratum,
        metric=metric,
        value=value,
        status=status,
        error=None if status == "ok" else "judge timed out",
        dataset_version="v1",
    )


def by_stratum(aggs):
    return {(a.metric, a.stratum): a for a in aggs}


# --- Aggregates -----------------------------------------------------------------------------------


def test_failed_and_skipped_are_counted_never_averaged():
    scores = [
        score("a", "faithfulness", 0.5),
        score("b", "faithfulness", 1.0),
        score("c", "faithfulness", None, status="failed"),
        score("d", "faithfulness", 0.25, stratum="multi_hop/en"),
        score("e", "faithfulness", None, stratum="multi_hop/en", status="skipped"),
    ]
    aggs = by_stratum(aggregate(scores))
    es = aggs[("faithfulness", "single_hop/es")]
    # (0.5 + 1.0) / 2; averaging the failure as 0 would give 0.5.
    assert (es.n, es.n_failed, es.n_skipped, es.n_items) == (2, 1, 0, 3)
    assert es.mean == pytest.approx(0.75)
    assert es.std == pytest.approx(math.sqrt(0.125))  # sample sd of {0.5, 1.0}
    pooled = aggs[("faithfulness", OVERALL)]
    assert (pooled.n, pooled.n_failed, pooled.n_skipped) == (3, 1, 1)
    assert pooled.mean == pytest.approx(1.75 / 3)
    assert [a.stratum for a in aggregate(scores)] == [OVERALL, "multi_hop/en", "single_hop/es"]


def test_a_single_score_gets_a_wide_interval_computed_by_hand():
    # One faithfulness score 0.25 on [0, 1]: m = (0.25 + ½) / 2 = 0.375;
    # spread = (0.25 − 0.375)² + ½·0.375² + ½·0.625² = 0.28125; V = 0.28125 / (2·3) = 0.046875;
    # a + b = 0.375·0.625 / 0.046875 − 1 = 4, so Beta(1.5, 2.5), whose 2.5 % / 97.5 % quantiles are:
    [agg] = [a for a in aggregate([score("d", "faithfulness", 0.25)]) if a.stratum == OVERALL]
    assert agg.beta_shape == pytest.approx((1.5, 2.5))
    assert (agg.ci_low, agg.ci_high) == pytest.approx((0.038748, 0.823264), abs=1e-6)
    assert agg.ci_method == JEFFREYS_BOUNDED_MEAN and agg.std is None


def test_a_metric_with_only_failures_has_no_mean():
    agg = aggregate([score("a", "context_recall", None, status="failed")])[0]
    assert (agg.n, agg.n_failed, agg.mean, agg.ci_low, agg.ci_high, agg.ci_method) == (
        0,
        1,
        None,
        None,
        None,
        None,
    )


def test_an_ok_score_without_value_is_a_bug_not_a_zero():
    with pytest.raises(ValueError, match="ok but has no finite value"):
        aggregate([score("a", "faithfulness", None, status="ok")])


def test_n_resamples_zero_still_skips_the_intervals():
    agg = aggregate(
        [score("a", "faithfulness", 0.5), score("b", "faithfulness", 1.0)], n_resamples=0
    )[0]
    assert agg.mean == pytest.approx(0.75) and agg.ci_low is None and agg.ci_method is None


# --- Intervals ------------------------------------------------------------------------------------


def test_jeffreys_interval_matches_the_beta_quantiles():
    # 7/10: Beta(7.5, 3.5) quantiles 0.025 / 0.975.
    assert np.array(jeffreys_interval(7, 10)) == pytest.approx([0.394182, 0.907305], abs=1e-6)
    # 52/52 is not [1, 1]: lower = Beta(52.5, 0.5) quantile 0.025, upper = 1 (x = n).
    assert np.array(jeffreys_interval(52, 52)) == pytest.approx([0.953063, 1.0], abs=1e-6)
    # 0/10: lower = 0 (x = 0), upper = Beta(0.5, 10.5) quantile 0.975.
    assert np.array(jeffreys_interval(0, 10)) == pytest.approx([0.0, 0.217196], abs=1e-6)
    assert proportion_ci(7, 10) == pytest.approx((0.394182, 0.907305), abs=1e-6)
    with pytest.raises(ValueError):
        jeffreys_interval(11, 10)


def test_zero_one_scores_get_the_jeffreys_interval_through_the_bounded_mean_path():
    for x, n in ((0, 5), (3, 10), (9, 10), (10, 10), (26, 52)):
        values = [1.0] * x + [0.0] * (n - x)
        assert np.array(bounded_mean_interval(values)) == pytest.approx(
            np.array(jeffreys_interval(x, n)), abs=1e-9
        )
    scores = [score(f"q{i}", "recall@5", float(i < 7)) for i in range(10)]
    agg = by_stratum(aggregate(scores))[("recall@5", OVERALL)]
    assert agg.ci_method == JEFFREYS and agg.beta_shape == pytest.approx((7.5, 3.5))
    assert (agg.ci_low, agg.ci_high) == pytest.approx((0.394182, 0.907305), abs=1e-6)


def test_bounded_mean_interval_computed_by_hand():
    # {0.5, 1, 1}: m = (2.5 + ½) / 4 = 0.75; spread = 0.25² + 2·0.25² + ½·0.75² + ½·0.25² = 0.5;
    # V = 0.5 / (4·5) = 0.025; a + b = 0.75·0.25 / 0.025 − 1 = 6.5 -> Beta(4.875, 1.625).
    assert np.array(bounded_mean_interval([0.5, 1.0, 1.0])) == pytest.approx(
        [0.385806, 0.973837], abs=1e-6
    )


def test_all_perfect_scores_are_not_a_zero_width_interval():
    low, high = bounded_mean_interval([1.0] * 10)
    assert high == 1.0 and low == pytest.approx(
        0.782804, abs=1e-6
    )  # Beta(10.5, 0.5) quantile 0.025
    agg = by_stratum(aggregate([score(f"q{i}", "faithfulness", 1.0) for i in range(52)]))[
        ("faithfulness", OVERALL)
    ]
    assert agg.ci_high == 1.0 and agg.ci_low == pytest.approx(0.953063, abs=1e-6)


def test_noise_delta_f_lives_on_minus_one_to_one():
    values = [-0.2, 0.0, 0.0, 0.1, 0.4]
    assert value_range("noise_delta_f", values) == (-1.0, 1.0)
    unit_low, unit_high = bounded_mean_interval([(v + 1) / 2 for v in values])
    low, high = bounded_mean_interval(values, (-1.0, 1.0))
    assert (low, high) == pytest.approx((2 * unit_low - 1, 2 * unit_high - 1))
    agg = by_stratum(aggregate([score(f"q{i}", "noise_delta_f", v) for i, v in enumerate(values)]))
    assert agg[("noise_delta_f", OVERALL)].value_range == (-1.0, 1.0)
    assert (
        agg[("noise_delta_f", OVERALL)].ci_low,
        agg[("noise_delta_f", OVERALL)].ci_high,
    ) == pytest.approx((low, high))


def test_value_range_is_the_nominal_one_widened_to_the_data_or_unknown():
    assert value_range("recall@10") == (0.0, 1.0)
    assert value_range("answer_relevancy", [-0.1, 0.9]) == (
        -0.1,
        1.0,
    )  # a negative cosine widens it
    assert value_range("some_new_rate", [0.2, 0.9]) == (0.0, 1.0)
    assert value_range("latency_ms", [120.0, 80.0]) is None


def test_a_metric_of_unknown_range_gets_a_student_t_interval():
    scores = [score(f"q{i}", "latency_ms", v) for i, v in enumerate((100.0, 200.0, 300.0))]
    agg = by_stratum(aggregate(scores))[("latency_ms", OVERALL)]
    half = 4.302653 * 100.0 / math.sqrt(3)  # t(0.975, 2 df) · sd / √n
    assert agg.ci_method == STUDENT_T
    assert (agg.ci_low, agg.ci_high) == pytest.approx((200 - half, 200 + half), abs=1e-3)


def test_one_sided_p_values_agree_with_the_interval():
    scores = [score(f"q{i}", "recall@5", float(i < 7)) for i in range(10)]
    agg = by_stratum(aggregate(scores))[("recall@5", OVERALL)]
    # The 97.5 % upper bound is 0.9073: "mean < 0.91" has p just under 0.025, "mean < 0.90" just
    # over.
    assert agg.p_below(0.91) < 0.025 < agg.p_below(0.90)
    assert agg.p_above(0.39) < 0.025 < agg.p_above(0.40)


# --- Paired comparison ----------------------------------------------------------------------------


def test_paired_comparison_uses_only_items_both_runs_scored_ok():
    candidate = [
        score("a", "faithfulness", 0.8),
        score("b", "faithfulness", 0.6),
        score("c", "faithfulness", 0.9),
        score("d", "faithfulness", None, status="failed"),
    ]
    baseline = [
        score(i, "faithfulness", v)
        for i, v in (("a", 0.7), ("b", 0.7), ("c", 0.6), ("d", 0.5), ("e", 0.9))
    ]
    result = paired_comparison(candidate, baseline, "faithfulness")
    # Pairs a, b, c: differences 0.1, −0.1, 0.3 -> mean 0.1, sample sd 0.2.
    assert (result.n_pairs, result.ci_method) == (3, ADJUSTED_PAIRED)
    assert (result.ci_low, result.ci_high) == pytest.approx(
        adjusted_paired_interval([0.1, -0.1, 0.3])
    )
    assert result.mean_diff == pytest.approx(0.1) and result.sd_diff == pytest.approx(0.2)
    assert result.candidate_mean == pytest.approx(
        2.3 / 3
    ) and result.baseline_mean == pytest.approx(2.0 / 3)


def test_paired_difference_interval_computed_by_hand():
    # 50 pairs of 0/1 scores: 10 items dropped 1 -> 0, none gained. The gains are all 0 (r = 0), the
    # losses are 10 of 50, so MOVER gives lower = −u(losses), upper = −0.2 + √(u(gains)² + (0.2 −
    # l(losses))²), each part a Jeffreys bound.
    baseline = np.array([1.0] * 40 + [0.0] * 10)
    candidate = np.array([1.0] * 30 + [0.0] * 20)
    u_loss, l_loss = stats.beta.isf(0.025, 10.5, 40.5), stats.beta.ppf(0.025, 10.5, 40.5)
    u_gain = stats.beta.isf(0.025, 0.5, 50.5)
    low, high = paired_difference_interval(candidate, baseline)
    assert low == pytest.approx(-u_loss) and high == pytest.approx(
        -0.2 + math.sqrt(u_gain**2 + (0.2 - l_loss) ** 2)
    )
    assert (low, high) == pytest.approx((-0.3258, -0.0956), abs=1e-4)


def test_adjusted_paired_interval_computed_by_hand():
    # Differences 0.1, −0.1, 0.3: below 10 pairs the pseudo-pairs sit at the range's width, ±1
    # (weight ½ each), and 0 (weight 1). Centre 0.3 / 5 = 0.06; squared deviations 0.0016 + 0.0256 +
    # 0.0576 + ½·0.94² + ½·1.06² + 0.06² = 1.092; SE = √1.092 / 5.
    low, high = adjusted_paired_interval([0.1, -0.1, 0.3])
    half = 1.959964 * math.sqrt(1.092) / 5
    assert (low, high) == pytest.approx((0.06 - half, 0.06 + half), abs=1e-6)
    # 40 differences, the largest |d| 0.3: the pseudo-pairs move to 0.3 + 0.7 · (10/40)² = 0.34375.
    d = np.array([0.3, -0.2] + [0.05, -0.05] * 19)
    centre, h = d.sum() / 42, 0.3 + 0.7 / 16
    spread = (
        ((d - centre) ** 2).sum() + 0.5 * (h - centre) ** 2 + 0.5 * (h + centre) ** 2 + centre**2
    )
    low, high = adjusted_paired_interval(d)
    assert (low, high) == pytest.approx(
        (centre - 1.959964 * math.sqrt(spread) / 42, centre + 1.959964 * math.sqrt(spread) / 42),
        abs=1e-6,
    )
    # Scores on [0, 1] that are not all 0/1 take this interval; 0/1 scores keep MOVER-Jeffreys
    # (below).
    cand, base = np.array([0.5] * 20 + [1.0] * 20), np.array([0.75] * 20 + [1.0] * 20)
    assert paired_difference_interval(cand, base) == pytest.approx(
        adjusted_paired_interval(cand - base)
    )


def test_family_sign_flip_test_by_hand():
    # Two statistics on 3 items: D = [[1, 0], [1, 1], [−1, 1]], each a mean over 3 items.
    # Standardized by their null sd: z1 = (s1 + s2 − s3)/√3, z2 = (s2 + s3)/√2 for signs s; observed
    # (all +) z1 = 1/√3, z2 = √2.
    family = family_sign_flip_test([[1.0, 0.0], [1.0, 1.0], [-1.0, 1.0]], [3, 3], alpha=0.05)
    assert family.exact and family.draws == 8 and family.size == 2
    # Alone: z1* ≥ 1/√3 in 4 of the 8 patterns, z2* ≥ √2 in 2 (s2 = s3 = +).
    assert family.observed == pytest.approx([1 / 3, 2 / 3]) and family.p_values == pytest.approx(
        [4 / 8, 2 / 8]
    )
    # Step 1 (z2, the larger): max(z1*, z2*) ≥ √2 in those 2 patterns and in (+, +, −), where z1* =
    # √3: 3/8. Step 2 (z1): z1* ≥ 1/√3 in 4 of 8; adjusted p = max(3/8, 4/8).
    assert family.p_adjusted == pytest.approx([4 / 8, 3 / 8])
    # A statistic that cannot move is no test: p = 1, and it leaves the family.
    still = family_sign_flip_test([[0.0, 1.0], [0.0, 1.0]], [2, 2], alpha=0.05)
    assert (
        still.size == 1 and still.p_values[0] == 1.0 and still.p_adjusted[1] == pytest.approx(1 / 4)
    )


def test_identical_runs_get_an_interval_around_zero_not_zero_width():
    values = np.array([1.0] * 40 + [0.0] * 10)
    low, high = paired_difference_interval(values, values)
    # Nothing discordant in 50 pairs: each part's upper bound is the Jeffreys 0/50 bound, Beta(0.5,
    # 50.5).
    assert (low, high) == pytest.approx((-0.048758, 0.048758), abs=1e-6)


def test_sign_flip_test_by_hand():
    # Differences 0.1, −0.1, 0.3 (sum 0.3): the 8 sign patterns give sums ±0.5, ±0.3, ±0.3, ±0.1;
    # |sum| ≥ 0.3 in 6 of 8, sum ≥ 0.3 in 3, sum ≤ 0.3 in 7.
    test = sign_flip_test([0.1, -0.1, 0.3])
    assert test.exact and test.p_two_sided() == pytest.approx(6 / 8)
    assert test.p_greater() == pytest.approx(3 / 8) and test.p_less() == pytest.approx(7 / 8)
    # On 0/1 scores it is McNemar's exact test: 10 losses, 0 gains, 40 ties -> one-sided 2⁻¹⁰.
    assert sign_flip_test([-1.0] * 10 + [0.0] * 40).p_less() == pytest.approx(2**-10)
    # Past 16 non-zero differences: seeded draws plus the observed pattern, reproducible and
    # order-free.
    rng = np.random.default_rng(4)
    d = rng.normal(-0.05, 0.2, 40)
    big = sign_flip_test(d)
    assert (
        not big.exact
        and big.null.size == 10_001
        and sign_flip_test(d[::-1]).p_less() == big.p_less()
    )
    # ... and close to the t-test it generalises: t = mean / (sd/√n).
    t_p = stats.t.cdf(d.mean() / (d.std(ddof=1) / np.sqrt(40)), 39)
    assert big.p_less() == pytest.approx(t_p, abs=0.02)


def test_permutation_test_by_hand():
    # Candidate {1, 1, 1}, baseline {0, 0, 0}: one split of C(6, 3) = 20 puts every 1 in the
    # candidate.
    test = permutation_test([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    assert test.p_greater() == pytest.approx(1 / 20, abs=0.006)  # Monte Carlo, 10,000 splits
    assert permutation_test([0.5, 0.7], [0.6, 0.6]).p_two_sided() == pytest.approx(1.0)


def test_the_paired_comparison_p_value_is_the_sign_flip_test():
    candidate = [score(f"q{i}", "recall@5", 0.0 if i < 8 else 1.0) for i in range(20)]
    baseline = [score(f"q{i}", "recall@5", 1.0) for i in range(20)]
    result = paired_comparison(candidate, baseline, "recall@5")
    assert result.p_value == pytest.approx(2 * 2**-8)  # two-sided McNemar, 8 losses and no gain


def test_compare_runs_adjusts_p_values_with_benjamini_hochberg():
    arm_a, arm_b = [], []
    for i in range(60):
        stratum = ("single_hop/es", "multi_hop/es", "adversarial/es")[i % 3]
        base = float(i % 5 != 0)
        # Arm B loses recall on a third of the multi-hop items and nothing else.
        dropped = stratum == "multi_hop/es" and i % 2 == 0
        arm_a.append(score(f"q{i}", "recall@5", base, stratum=stratum))
        arm_b.append(score(f"q{i}", "recall@5", 0.0 if dropped else base, stratum=stratum))
        arm_a.append(score(f"q{i}", "faithfulness", 0.9, stratum=stratum))
        arm_b.append(score(f"q{i}", "faithfulness", 0.9, stratum=stratum))
    rows = compare_runs(arm_b, arm_a)
    assert [(r["metric"], r["stratum"]) for r in rows][:4] == [
        ("faithfulness", OVERALL),
        ("faithfulness", "adversarial/es"),
        ("faithfulness", "multi_hop/es"),
        ("faithfulness", "single_hop/es"),
    ]
    assert [r["p_adjusted"] for r in rows] == pytest.approx(
        benjamini_hochberg([r["p_value"] for r in rows])
    )
    assert all(r["correction"] == "benjamini-hochberg" for r in rows)
    significant = {(r["metric"], r["stratum"]) for r in rows if r["significant"]}
    assert significant == {("recall@5", "multi_hop/es"), ("recall@5", OVERALL)}
    multi = next(r for r in rows if (r["metric"], r["stratum"]) == ("recall@5", "multi_hop/es"))
    assert multi["n_pairs"] == 20 and multi["diff"] == pytest.approx(
        -8 / 20
    )  # 8 of its 10 dropped items had recall 1


# --- Multiple testing -----------------------------------------------------------------------------


def test_holm_by_hand():
    # Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 -> running max 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_benjamini_hochberg_by_hand():
    # m = 4, descending: 0.04·4/4 = 0.04, 0.03·4/3 = 0.04, 0.01·4/2 = 0.02, 0.005·4/1 = 0.02
    # (running minimum).
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert benjamini_hochberg([0.5, 0.01]) == pytest.approx([0.5, 0.02])
    assert benjamini_hochberg([]) == []


# --- The interval ragwatch printed before ---------------------------------------------------------


def test_the_percentile_bootstrap_collapses_on_perfect_scores():
    # A report once printed 52 of 52 successes printed as [1.000, 1.000].
    assert bootstrap_ci([1.0] * 52) == (1.0, 1.0)
    assert bootstrap_ci([0.4]) is None
