"""The regression gate: failures, missing items, metrics not gated, score drops, the worst case, the
Westfall–Young correction over every check; against which runs it compares (the baseline, the pinned
reference), across golden versions and renamed item ids.

Decisions are checked against values computed by hand (exact sign-flip distributions, Jeffreys
bounds combined by MOVER) and against simulated error rates
(tests/unit/harness/ragwatch_harness/bench/test_gate_power.py).
"""

from __future__ import annotations

import json
import math
from datetime import date, timedelta

import numpy as np
import pytest
from scipy import stats

from pipelines.core.records import Score
from pipelines.evaluation.outputs.report import render_report
from pipelines.evaluation.outputs.summary import run_summary
from pipelines.evaluation.statistics.compare import paired_comparison
from pipelines.evaluation.statistics.gate.rule import (
    GATE_ALPHA,
    NOT_IN_BASELINE,
    NOT_MEASURED,
    RECOVERY,
    regression_gate,
)
from pipelines.evaluation.statistics.gate.run_gate import RunGate, gate_against_baseline
from pipelines.evaluation.statistics.intervals import (
    ALPHA,
    MOVER_INDEPENDENT,
    MOVER_PAIRED,
    paired_difference_interval,
)
from pipelines.evaluation.statistics.multiplicity import WESTFALL_YOUNG, holm
from pipelines.evaluation.statistics.randomization import sign_flip_test
from pipelines.stores.results import EvalRun, ResultsStore, run_id


def score(
    item: str, metric: str, value: float | None, *, status: str = "ok", run_id: str = "run"
) -> Score:
    return Score(
        run_id=run_id,
        suite="offline",
        item_id=item,
        stratum="single_hop/es",
        metric=metric,
        value=value,
        status=status,
        error=None if status == "ok" else "judge timed out",
        dataset_version="v1",
    )


def failed(item: str, metric: str) -> Score:
    return score(item, metric, None, status="failed", run_id="cand")


def recall_run(values, run_id: str) -> list[Score]:
    return [score(f"q{i}", "recall@5", float(v), run_id=run_id) for i, v in enumerate(values)]


BASELINE = recall_run([i % 5 != 0 for i in range(50)], "base")
"""50 items, recall@5 0 on every fifth (10 items), 1 elsewhere."""


# --- Failures and missing items -------------------------------------------------------------------


def test_a_candidate_that_failed_48_of_50_items_fails_the_gate():
    candidate = [s.model_copy(update={"run_id": "cand"}) for s in BASELINE[:2]]
    candidate += [failed(f"q{i}", "recall@5") for i in range(2, 50)]
    # On its two survivors the candidate equals the baseline: the paired comparison alone sees
    # nothing.
    assert paired_comparison(candidate, BASELINE, "recall@5").mean_diff == 0.0
    gate = regression_gate(candidate, BASELINE, ["recall@5"])
    [metric] = gate.metrics
    assert not gate.passed
    # Two pairs are too few to test the score ("not gated: n < 10"); the failure rise still fails
    # it, and so does the worst case, which stands on the baseline's 50 items (40 hits, the
    # candidate kept 1: 0.02 − 0.80).
    assert metric.checks_failed == ("worst_case_drop", "failure_rise") and not metric.gated
    assert metric.status == "not gated: n = 2 < 10" and metric.worst_case_diff == pytest.approx(
        -0.78
    )
    assert (metric.candidate_not_ok_share, metric.baseline_not_ok_share) == (0.96, 0.0)
    assert (
        "rose from 0.00 to 0.96" in metric.reason
        and "only 2 items scored ok in both runs" in metric.reason
    )
    stored = json.loads(
        json.dumps(gate.to_dict(), allow_nan=False)
    )  # the results DB keeps it as JSON
    assert (
        stored["metrics"][0]["checks_failed"] == ["worst_case_drop", "failure_rise"]
        and not stored["passed"]
    )
    assert stored["gated_metrics"] == [] and stored["correction"] == WESTFALL_YOUNG


def test_a_candidate_that_failed_exactly_the_items_the_baseline_got_wrong_fails_the_gate():
    candidate = [
        failed(s.item_id, "recall@5") if s.value == 0.0 else s.model_copy(update={"run_id": "cand"})
        for s in BASELINE
    ]
    paired = paired_comparison(candidate, BASELINE, "recall@5")
    assert (paired.n_pairs, paired.mean_diff) == (40, 0.0)  # what the old gate decided on: no drop
    gate = regression_gate(candidate, BASELINE, ["recall@5"])
    # The worst case puts the failed items at 0, which they scored in the baseline: no drop; the
    # rise fails it.
    assert not gate.passed and gate.metrics[0].checks_failed == ("failure_rise",)
    assert (
        gate.metrics[0].failure_rise == pytest.approx(0.2)
        and gate.metrics[0].worst_case_diff == 0.0
    )
    assert "failed, skipped or missing share rose from 0.00 to 0.20" in gate.summary()


def test_missing_items_count_as_failed_and_a_few_do_not_fail_the_gate_alone():
    candidate = [s.model_copy(update={"run_id": "cand"}) for s in BASELINE[:45]]
    gate = regression_gate(candidate, BASELINE, ["recall@5"])
    # Five of 50 missing: a rise of 0.10 in the not-ok share, 5 losses and no gain, exact p = 2⁻⁵ =
    # 0.031.
    [metric] = gate.metrics
    assert not gate.passed and metric.checks_failed == ("failure_rise",) and metric.n_missing == 5
    assert metric.failure_rise_p_value == pytest.approx(2**-5)
    assert "rose from 0.00 to 0.10 (+0.10 > 0.05, 5 missing" in metric.reason
    # One missing: the worst case (it scores 0) is a drop of 1/50 with p = 1/2, the rise 0.02: it
    # passes.
    one = regression_gate(
        [s for s in BASELINE if s.item_id != "q3"], BASELINE, ["recall@5"]
    ).metrics[0]
    assert one.passed and one.n_missing == 1 and one.worst_case_diff == pytest.approx(-1 / 50)
    assert one.worst_case_p_value == 0.5 and one.failure_rise_p_value == 0.5
    # New items in the candidate are not a problem: they are simply not paired.
    grown = [s.model_copy(update={"run_id": "cand"}) for s in BASELINE] + recall_run(
        [1.0] * 55, "cand"
    )[50:]
    assert regression_gate(grown, BASELINE, ["recall@5"]).passed


def test_failed_items_cannot_hide_a_drop():
    # 60 answers at 0.9. The candidate cannot be judged on 3 of them (a rise of 0.05, not above the
    # 0.05 tolerated) and loses 0.3 on 3 others: 0.9/57 = 0.016 on the pairs, within min_tolerance
    # 0.02, p = 1/8. The gate before the earlier gate passed it. With the 3 failed answers at 0 (the
    # worst case) the drop is 3.6/60 = 0.06 on 6 items that all got worse: p = 2⁻⁶, and the checks
    # it competes with (pairs: 3 items; failures: 3 items) reach at most z = √3, below the worst
    # case's z = 3.6/√2.7, so its adjusted p is 2⁻⁶ too.
    base = [score(f"q{i}", "faithfulness", 0.9, run_id="base") for i in range(60)]
    cand = [
        failed(f"q{i}", "faithfulness")
        if i < 3
        else score(f"q{i}", "faithfulness", 0.6 if i < 6 else 0.9)
        for i in range(60)
    ]
    metric = regression_gate(cand, base, ["faithfulness"]).metrics[0]
    assert metric.diff == pytest.approx(-0.9 / 57) and metric.p_value == pytest.approx(1 / 8)
    assert metric.worst_case_diff == pytest.approx(
        -0.06
    ) and metric.worst_case_p_adjusted == pytest.approx(2**-6)
    assert not metric.passed and metric.checks_failed == ("worst_case_drop",)
    assert metric.reason.startswith(
        "worst case (3 failed, skipped or missing at 0): drop of 0.0600 exceeds"
    )


def test_failures_that_leave_too_few_pairs_cannot_hide_a_drop():
    # 12 tool items, every one chosen right by the baseline. The candidate's agent errors on 3
    # (failed: a rise of 0.25 over 3 discordant items, p = 1/8, not significant) and picks the wrong
    # tool on the other 9. Only 9 pairs remain, below min_pairs, so the score drop is not tested;
    # the gate before this fix passed the candidate as "not gated: n = 9 < 10". The baseline
    # measured 12 items: the worst case over them (the 3 failed at 0) is a drop of 1.0 on 12 items
    # that all got worse, p = 2⁻¹², and fails the metric although it stays "not gated".
    base = [score(f"t{i}", "tool_selection_accuracy", 1.0, run_id="base") for i in range(12)]
    cand = [
        failed(f"t{i}", "tool_selection_accuracy")
        if i < 3
        else score(f"t{i}", "tool_selection_accuracy", 0.0, run_id="cand")
        for i in range(12)
    ]
    gate = regression_gate(cand, base, ["tool_selection_accuracy"])
    [metric] = gate.metrics
    assert not gate.passed and not metric.gated and metric.status == "not gated: n = 9 < 10"
    assert metric.checks_failed == ("worst_case_drop",) and metric.worst_case_diff == pytest.approx(
        -1.0
    )
    assert metric.worst_case_p_adjusted == pytest.approx(2**-12) and metric.tolerance is None
    assert metric.reason.startswith(
        "worst case (3 failed, skipped or missing at 0): drop of 1.0000 exceeds"
    )
    assert (
        "not gated: only 9 items scored ok in both runs (need ≥ 10); observed change -1.0000"
        in metric.reason
    )
    # The same failures with the 9 others unchanged: the worst case (a drop of 0.25, p = 1/8) is not
    # significant.
    unchanged = [
        failed(f"t{i}", "tool_selection_accuracy") if i < 3 else base[i] for i in range(12)
    ]
    assert regression_gate(unchanged, base, ["tool_selection_accuracy"]).passed
    # A baseline that measured fewer than min_pairs items has no worst case to hold the candidate
    # to.
    few = regression_gate(cand[:9], base[:9], ["tool_selection_accuracy"])
    assert few.passed and few.metrics[0].worst_case_diff is None


def test_too_few_pairs_are_not_gated_and_min_pairs_is_a_parameter():
    base, cand = recall_run([1.0] * 8, "base"), recall_run([1.0] * 7 + [0.0], "cand")
    gate = regression_gate(cand, base, ["recall@5"])
    [metric] = gate.metrics
    assert (
        gate.passed
        and not metric.gated
        and metric.status == "not gated: n = 8 < 10"
        and metric.tolerance is None
    )
    assert (
        metric.reason
        == "not gated: only 8 items scored ok in both runs (need ≥ 10); observed change -0.1250"
    )
    assert (
        metric.diff == pytest.approx(-0.125) and metric.ci_low is not None
    )  # the change is still shown
    assert gate.summary() == "nothing gated; recall@5 (not gated: n = 8 < 10)" and not gate.measured
    assert regression_gate(cand, base, ["recall@5"], min_pairs=5).metrics[0].gated
    with pytest.raises(ValueError, match="min_pairs"):
        regression_gate(cand, base, ["recall@5"], min_pairs=1)


def test_a_failure_rise_within_tolerance_passes():
    base = [score(f"q{i}", "faithfulness", 0.9, run_id="base") for i in range(100)]
    cand = [failed("q0", "faithfulness")] + [
        score(f"q{i}", "faithfulness", 0.9, run_id="cand") for i in range(1, 100)
    ]
    metric = regression_gate(cand, base, ["faithfulness"]).metrics[0]
    assert metric.passed and metric.failure_rise == pytest.approx(0.01)


def test_a_failure_rise_must_be_material_and_significant():
    def gate(n: int, extra_failures: int):
        base = [score(f"q{i}", "faithfulness", 0.9, run_id="base") for i in range(n)]
        cand = [
            failed(f"q{i}", "faithfulness")
            if i < extra_failures
            else score(f"q{i}", "faithfulness", 0.9)
            for i in range(n)
        ]
        return regression_gate(cand, base, ["faithfulness"]).metrics[0]

    # k items newly failed and none recovered: McNemar's exact one-sided p = 2⁻ᵏ.
    small = gate(20, 2)  # +0.10 is material, but p = 1/4
    assert (
        small.passed
        and small.failure_rise == pytest.approx(0.10)
        and small.failure_rise_p_value == 0.25
    )
    four = gate(50, 4)  # +0.08, p = 1/16 > 0.05
    assert four.passed and four.failure_rise_p_value == pytest.approx(1 / 16)
    six = gate(
        50, 6
    )  # +0.12, p = 1/64 < 0.05; and the six answers at 0 are a worst-case drop of 0.108
    assert not six.passed and six.checks_failed == ("worst_case_drop", "failure_rise")
    assert six.failure_rise_p_value == pytest.approx(
        1 / 64
    ) and six.failure_rise_p_adjusted == pytest.approx(1 / 64)
    # Skipped scores count too: a candidate that abstains where the baseline answered loses items
    # the same way.
    base = [score(f"q{i}", "faithfulness", 0.9, run_id="base") for i in range(50)]
    skipping = [
        score(f"q{i}", "faithfulness", None, status="skipped")
        if i < 10
        else score(f"q{i}", "faithfulness", 0.9)
        for i in range(50)
    ]
    assert (
        "failure_rise" in regression_gate(skipping, base, ["faithfulness"]).metrics[0].checks_failed
    )


# --- Score drops ----------------------------------------------------------------------------------


def test_a_gate_decision_computed_by_hand():
    # 50 pairs of 0/1 scores, 10 items dropped 1 -> 0, none gained: the sign-flip test flips the
    # signs of the 10 non-zero differences. With K of them drops (K ~ Bin(10, ½) when nothing
    # changed) the worsening is (2K − 10)/50; observed K = 10: p = 2⁻¹⁰. P(K ≥ 9) = 11/1024 ≤ 0.05 <
    # P(K ≥ 8) = 56/1024, so the largest worsening that is not significant is (2·8 − 10)/50 = 0.12:
    # tolerance max(0.02, 0.12). Nothing failed, so there is no worst case besides the drop itself,
    # and the failures cannot move: a family of one.
    base = recall_run([1.0] * 50, "base")
    gate = regression_gate(recall_run([0.0] * 10 + [1.0] * 40, "cand"), base, ["recall@5"])
    metric = gate.metrics[0]
    assert (
        metric.test_method == "sign-flip-exact"
        and metric.diff == pytest.approx(-0.2)
        and gate.family_size == 1
    )
    assert metric.p_value == pytest.approx(2**-10) and metric.p_adjusted == metric.p_value
    assert metric.tolerance == pytest.approx(0.12) and metric.worst_case_diff is None
    assert not metric.passed and metric.checks_failed == ("score_drop",)
    assert "drop of 0.2000 exceeds tolerance 0.1200" in metric.reason
    # The interval shown beside it is the MOVER-Jeffreys one: upper bound −0.2 + √(u_gain² + (0.2 −
    # l_loss)²), u_gain the Jeffreys upper bound of 0/50, l_loss the lower bound of 10/50, each at
    # α/2 (a 95 % interval).
    u_gain, l_loss = (
        stats.beta.isf(GATE_ALPHA / 2, 0.5, 50.5),
        stats.beta.ppf(GATE_ALPHA / 2, 10.5, 40.5),
    )
    assert metric.ci_method == MOVER_PAIRED
    assert metric.ci_high == pytest.approx(-0.2 + math.sqrt(u_gain**2 + (0.2 - l_loss) ** 2))
    # 2 drops of 50: 0.04 is above min_tolerance 0.02, but p = 1/4 and the noise band is (2·2 −
    # 2)/50 = 0.04.
    two = regression_gate(recall_run([0.0] * 2 + [1.0] * 48, "cand"), base, ["recall@5"]).metrics[0]
    assert two.passed and two.p_value == 0.25 and two.tolerance == pytest.approx(0.04)


def test_the_same_drop_passes_at_50_items_and_fails_at_500():
    def runs(n: int):
        baseline = [score(f"q{i}", "faithfulness", 0.5, run_id="base") for i in range(n)]
        candidate = [
            score(f"q{i}", "faithfulness", 0.62 if i % 2 else 0.32, run_id="cand") for i in range(n)
        ]
        return candidate, baseline

    small = regression_gate(*runs(50), ["faithfulness"]).metrics[0]
    assert small.design == "paired" and small.n_pairs == 50 and small.diff == pytest.approx(-0.03)
    assert small.passed and small.tolerance > 0.03
    large = regression_gate(*runs(500), ["faithfulness"])
    assert large.metrics[0].tolerance == pytest.approx(0.02)  # noise band below the floor
    assert not large.passed and "exceeds tolerance 0.0200" in large.summary()


def test_a_drop_within_min_tolerance_passes_however_significant():
    baseline = [score(f"q{i}", "faithfulness", 0.8) for i in range(400)]
    slightly_worse = [score(f"q{i}", "faithfulness", 0.785) for i in range(400)]
    better = [score(f"q{i}", "faithfulness", 0.9) for i in range(400)]
    assert regression_gate(slightly_worse, baseline, ["faithfulness"]).passed  # drop 0.015 ≤ 0.02
    assert regression_gate(better, baseline, ["faithfulness"]).passed


def test_westfall_young_over_the_gated_metrics():
    metrics = ("recall@5", "mrr", "faithfulness")

    def runs(mrr_moves: bool) -> tuple[list, list]:
        base = [
            score(
                f"q{i}", m, 0.5 if m == "mrr" and mrr_moves and 13 <= i < 16 else 1.0, run_id="base"
            )
            for i in range(100)
            for m in metrics
        ]
        # recall: 6 drops of 100, nothing gained (one-sided p = 2⁻⁶); mrr, when it moves: 6 other
        # items, 3 down by 0.5 and 3 up by 0.5, as exchangeable as can be.
        cand = [
            score(
                f"q{i}",
                m,
                0.0
                if m == "recall@5" and i < 6
                else 0.5
                if m == "mrr" and mrr_moves and 10 <= i < 13
                else 1.0,
                run_id="cand",
            )
            for i in range(100)
            for m in metrics
        ]
        return cand, base

    alone = regression_gate(*runs(False), ["recall@5"]).metrics[0]
    assert alone.p_value == pytest.approx(1 / 64) and not alone.passed
    # mrr and faithfulness cannot move (every pair equal): they take no share of α, where Holm
    # charges a factor 3.
    still = regression_gate(*runs(False), list(metrics))
    assert (
        still.metrics[0].p_adjusted == pytest.approx(1 / 64)
        and not still.passed
        and still.family_size == 1
    )
    assert holm([1 / 64, 1.0, 1.0])[0] == pytest.approx(3 / 64)
    # When mrr moves on 6 other items (all 2^12 sign patterns are enumerated), the null maximum of
    # the two independent blocks reaches recall's z = √6 exactly when either block has all six of
    # its signs one way: adjusted p = 1 − (1 − 2⁻⁶)² (Šidák, exact here), below Holm's 2 · 2⁻⁶.
    gate = regression_gate(*runs(True), list(metrics))
    recall = gate.metrics[0]
    assert recall.p_value == pytest.approx(1 / 64) and recall.test_method == "sign-flip-exact"
    assert recall.p_adjusted == pytest.approx(1 - (1 - 1 / 64) ** 2) and gate.family_size == 2
    assert (
        not gate.passed
        and gate.correction == WESTFALL_YOUNG
        and gate.failed_metrics == ["recall@5"]
    )


def test_float_rounding_of_unchanged_scores_is_no_change():
    """Answer relevancy's cosines come from float32 vectors whose last bits depend on the batch they
    were computed in: the same texts score ±1e-7 apart in two runs. The gate treats that as no
    change (SCORE_RESOLUTION), so its p-values and intervals do not depend on how requests were
    batched."""
    rng = np.random.default_rng(3)
    base = [
        score(f"q{i}", "answer_relevancy", float(v), run_id="base")
        for i, v in enumerate(rng.uniform(0.3, 0.9, 60))
    ]
    # Eight items really drop by 0.3; the other 52 are the same texts, embedded in other batches.
    exact = [
        s.model_copy(update={"run_id": "cand", "value": s.value - 0.3 * (i < 8)})
        for i, s in enumerate(base)
    ]
    rounded = [
        s.model_copy(
            update={"value": s.value + (0.0 if i < 8 else float(rng.choice([-1, 1])) * 1e-7)}
        )
        for i, s in enumerate(exact)
    ]
    [as_exact], [as_rounded] = (
        regression_gate(c, base, ["answer_relevancy"]).metrics for c in (exact, rounded)
    )
    assert (
        as_exact.test_method == as_rounded.test_method == "sign-flip-exact"
    )  # 8 moves: all 2^8 patterns
    assert as_rounded.p_value == as_exact.p_value == pytest.approx(1 / 256)
    assert (as_rounded.passed, as_rounded.checks_failed) == (
        as_exact.passed,
        as_exact.checks_failed,
    )
    # The paired interval's pseudo-pairs are sized by the largest difference seen: 1e-7 is none.
    unchanged = [s.model_copy(update={"run_id": "cand", "value": s.value + 1e-7}) for s in base]
    [same], [rounding] = (
        regression_gate(c, base, ["answer_relevancy"]).metrics
        for c in ([s.model_copy(update={"run_id": "cand"}) for s in base], unchanged)
    )
    assert (rounding.ci_low, rounding.ci_high, rounding.p_value) == (
        same.ci_low,
        same.ci_high,
        same.p_value,
    )


def test_a_target_failure_counts_once_across_metrics():
    # The target failed 6 of 50 items: every metric of them fails. Three failure rises (and three
    # worst cases) move together, item by item: the family behaves as one test, adjusted p = 2⁻⁶,
    # where Holm would give 6 · 2⁻⁶.
    metrics = ("faithfulness", "answer_relevancy", "context_recall")
    base = [score(f"q{i}", m, 0.9, run_id="base") for i in range(50) for m in metrics]
    cand = [
        failed(f"q{i}", m) if i < 6 else score(f"q{i}", m, 0.9, run_id="cand")
        for i in range(50)
        for m in metrics
    ]
    gate = regression_gate(cand, base, list(metrics))
    assert [m.failure_rise_p_adjusted for m in gate.metrics] == pytest.approx([2**-6] * 3)
    assert [m.worst_case_p_adjusted for m in gate.metrics] == pytest.approx([2**-6] * 3)
    assert gate.family_size == 6 and not gate.passed


def test_for_noise_sensitivity_a_rise_is_the_regression():
    baseline = [score(f"q{i}", "noise_delta_f", (0.0, 0.05, 0.1)[i % 3]) for i in range(200)]
    worse = [s.model_copy(update={"value": s.value + 0.05}) for s in baseline]
    better = [s.model_copy(update={"value": s.value - 0.05}) for s in baseline]
    failed_gate = regression_gate(worse, baseline, ["noise_delta_f"]).metrics[0]
    assert (
        not failed_gate.passed
        and not failed_gate.higher_is_better
        and "rise of 0.0500" in failed_gate.reason
    )
    assert regression_gate(better, baseline, ["noise_delta_f"]).passed
    # Its worst end is the top of its range, +1: a failed item could be as fragile as can be.
    lost = [failed(f"q{i}", "noise_delta_f") if i < 2 else s for i, s in enumerate(baseline)]
    assert "at 1)" in regression_gate(lost, baseline, ["noise_delta_f"]).metrics[0].reason


# --- Independent runs and metrics that are not gated ----------------------------------------------


def test_online_runs_without_shared_items_are_compared_as_independent_samples():
    values = [0.6, 0.7, 0.8, 0.9, 1.0]
    candidate = [score(f"t{i}", "faithfulness", values[i % 5], run_id="cand") for i in range(30)]
    baseline = [
        score(f"u{i}", "faithfulness", values[(i + 2) % 5], run_id="base") for i in range(30)
    ]
    gate = regression_gate(candidate, baseline, ["faithfulness"]).metrics[0]
    assert (
        gate.design == "independent" and gate.n_pairs == 0 and gate.ci_method == MOVER_INDEPENDENT
    )
    assert (
        gate.diff == pytest.approx(0.0)
        and gate.passed
        and gate.test_method == "permutation-monte-carlo"
    )
    assert gate.standard_error == pytest.approx(
        math.sqrt(2 * np.var(values * 6, ddof=1) / 30)
    )  # Welch, shown only
    few = regression_gate(candidate[:5], baseline[:5], ["faithfulness"]).metrics[0]
    assert few.passed and not few.gated and few.status == "not gated: n = 5 < 10"
    broken = [failed(f"t{i}", "faithfulness") if i % 2 else s for i, s in enumerate(candidate * 2)]
    broken = [s.model_copy(update={"item_id": f"v{i}"}) for i, s in enumerate(broken)]
    lossy = regression_gate(broken, baseline, ["faithfulness"]).metrics[0]
    assert "failure_rise" in lossy.checks_failed and lossy.candidate_not_ok_share == pytest.approx(
        0.5
    )
    assert lossy.worst_case_diff == pytest.approx(
        -0.4
    )  # half of the candidate at 0: 0.4 below the baseline's 0.8


def test_a_metric_is_gated_only_where_the_baseline_measured_it():
    baseline = [score(f"q{i}", "context_recall", 0.9) for i in range(30)]
    baseline += [
        failed(f"q{i}", "faithfulness") for i in range(30)
    ]  # every faithfulness score of it failed
    candidate = [
        score(f"q{i}", m, 0.8) for i in range(30) for m in ("context_recall", "faithfulness", "mrr")
    ]
    candidate += [failed(f"q{i}", "tool_call_accuracy") for i in range(30)]
    gate = regression_gate(
        candidate, baseline, ["context_recall", "faithfulness", "mrr", "tool_call_accuracy"]
    )
    recall, faithfulness, mrr, tools = gate.metrics
    assert (
        recall.gated and not recall.passed and recall.checks_failed == ("score_drop",)
    )  # 0.1 lower on 30 items
    # The baseline failed every faithfulness item and the candidate scored them: a recovery, not a
    # block.
    assert faithfulness.passed and not faithfulness.gated and faithfulness.status == RECOVERY
    assert faithfulness.reason == "recovery: the baseline measured no item"
    assert faithfulness.candidate_mean == pytest.approx(0.8)
    assert (
        mrr.passed
        and mrr.status == NOT_IN_BASELINE
        and tools.passed
        and tools.status == NOT_MEASURED
    )
    assert gate.gated_metrics == ["context_recall"] and gate.measured
    fixed = regression_gate(
        [s for s in candidate if s.metric == "faithfulness"], baseline, ["faithfulness"]
    )
    assert fixed.passed and fixed.summary() == f"nothing gated; faithfulness ({RECOVERY})"
    # The baseline measured context_recall; a candidate without a single score of it fails, whatever
    # n.
    dropped = regression_gate(candidate[1::3], baseline[:3], ["context_recall"]).metrics[0]
    assert not dropped.passed and dropped.checks_failed == ("missing_metric",) and not dropped.gated
    assert dropped.reason == "the candidate has no score of it (the baseline measured 3 items)"
    with pytest.raises(ValueError, match="at least one metric"):
        regression_gate(baseline, baseline, [])


def test_the_printed_interval_uses_the_callers_alpha():
    rng = np.random.default_rng(11)
    base = rng.beta(4, 2, 60)
    cand = np.clip(base + rng.normal(-0.03, 0.1, 60), 0, 1)
    runs = (
        [score(f"q{i}", "faithfulness", float(v)) for i, v in enumerate(cand)],
        [score(f"q{i}", "faithfulness", float(v)) for i, v in enumerate(base)],
    )
    for alpha in (0.05, 0.01):
        gate = regression_gate(*runs, ["faithfulness"], alpha=alpha)
        metric = gate.metrics[0]
        assert gate.confidence == pytest.approx(1 - alpha) and gate.alpha == alpha
        interval = paired_difference_interval(cand, base, confidence=1 - alpha)
        assert (metric.ci_low, metric.ci_high) == pytest.approx(interval)
    assert "two-sided 99 %" in gate.rule
    # An alpha outside (0, 1) is no level: 0 printed (-inf, inf) and passed every drop, 1 printed a
    # point.
    for alpha in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            regression_gate(*runs, ["faithfulness"], alpha=alpha)


# --- Simulated error rates ------------------------------------------------------------------------


def test_the_gate_uses_the_vectorised_paired_interval():
    rng = np.random.default_rng(3)
    base = rng.beta(4, 2, 40)
    cand = np.clip(base + rng.normal(-0.05, 0.1, 40), 0, 1)
    metric = regression_gate(
        [score(f"q{i}", "faithfulness", float(v)) for i, v in enumerate(cand)],
        [score(f"q{i}", "faithfulness", float(v)) for i, v in enumerate(base)],
        ["faithfulness"],
        min_pairs=10,
    ).metrics[0]
    assert (metric.ci_low, metric.ci_high) == pytest.approx(paired_difference_interval(cand, base))


def test_false_failures_stay_below_alpha_and_real_drops_are_caught():
    """A metric alone fails on its score exactly when its one-sided p-value is ≤ α (here 0.025)."""
    rng = np.random.default_rng(2024)

    def false_alarm_rate(pairs) -> float:
        return float(
            np.mean([sign_flip_test(c - b).negated().p_greater() <= ALPHA for c, b in pairs])
        )

    # Nothing changed: each item's two scores are exchangeable (a noisy judge, a reshuffled index).
    binary = []
    for _ in range(1_000):  # 0/1 scores, 50 items, 20 % of the items discordant either way
        base = (rng.random(50) < 0.8).astype(float)
        flip = rng.random(50) < 0.2
        cand = np.where(flip, 1.0 - base, base)
        swap = rng.random(50) < 0.5
        binary.append((np.where(swap, base, cand), np.where(swap, cand, base)))
    assert false_alarm_rate(binary) <= 0.035
    faithful = []
    for _ in range(1_000):  # faithfulness-like scores, 12 items, judge noise on the same answers
        truth = np.where(rng.random(12) < 0.6, 1.0, rng.beta(3, 2, 12))
        faithful.append(
            tuple(np.clip(truth + rng.normal(0, 0.08, 12) * (truth < 1), 0, 1) for _ in range(2))
        )
    assert false_alarm_rate(faithful) <= 0.035
    # A real drop of 0.10 in recall over 200 items (12 % lose it, 2 % gain it) is caught nearly
    # always.
    caught = []
    for _ in range(100):
        u = rng.random(200)
        base = np.where(u < 0.02, 0.0, 1.0)
        cand = np.where(u < 0.02, 1.0, np.where(u < 0.14, 0.0, 1.0))
        caught.append(sign_flip_test(cand - base).negated().p_greater() <= ALPHA)
    assert np.mean(caught) >= 0.95


def test_a_metric_of_unknown_range_is_gated_with_a_paired_t_interval():
    # Differences alternate −1 and −3 over 12 items: mean −2, sample sd √(12/11) = 1.0445.
    base = [score(f"q{i}", "tokens_saved", 10.0 * (i + 1), run_id="base") for i in range(12)]
    cand = [
        score(f"q{i}", "tokens_saved", 10.0 * (i + 1) - (1 if i % 2 else 3), run_id="cand")
        for i in range(12)
    ]
    metric = regression_gate(cand, base, ["tokens_saved"]).metrics[0]
    half = 2.200985 * math.sqrt(12 / 11) / math.sqrt(12)  # t(0.975, 11 df) · sd / √n
    assert metric.ci_method == "student-t-paired" and metric.diff == pytest.approx(-2.0)
    assert (metric.ci_low, metric.ci_high) == pytest.approx((-2 - half, -2 + half), abs=1e-5)
    assert metric.p_value == pytest.approx(
        2**-12
    )  # all 12 differences negative: one sign pattern of 4,096
    assert not metric.passed and metric.checks_failed == ("score_drop",)
    # One pair: no interval, the score is not gated; 11 of 12 items missing fail it on the failure
    # rise.
    lone = regression_gate(cand[:1], base, ["tokens_saved"]).metrics[0]
    assert lone.ci_low is None and lone.p_value is None and not lone.gated
    assert lone.checks_failed == ("failure_rise",) and lone.n_missing == 11
    # Its range is unknown: there is no worst end to put the missing items at.
    assert lone.worst_case_diff is None and "worst case" not in lone.reason


# --- Against which runs: baselines, references, golden versions, renamed ids ----------------------

DAY0 = date(2026, 1, 5)


@pytest.fixture
def store(tmp_path):
    results = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    results.create()
    yield results
    results.dispose()


def offline_run(week: int, *, version: str = "golden@v3", target: str = "prod") -> EvalRun:
    day = DAY0 + timedelta(weeks=week)
    return EvalRun(
        run_id=run_id("offline", day, target),
        suite="offline",
        logical_date=day,
        target=target,
        dataset_version=version,
    )


def scored(
    run: EvalRun, values: dict[str, float | None], metric: str = "faithfulness"
) -> list[Score]:
    """One score per item; None is a skipped one."""
    return [
        Score(
            run_id=run.run_id,
            suite="offline",
            item_id=item,
            stratum="single_hop/es",
            metric=metric,
            value=v,
            status="ok" if v is not None else "skipped",
            error=None if v is not None else "no contexts",
            dataset_version=run.dataset_version,
        )
        for item, v in values.items()
    ]


def record(store: ResultsStore, run: EvalRun, scores: list[Score], **named) -> RunGate | None:
    """What finalize does: gate against the chosen runs, keep the verdict with the run."""
    gate = gate_against_baseline(store, run, scores, **named)
    run.gate_passed, run.gate = (
        (gate.passed, json.loads(json.dumps(gate.to_dict()))) if gate else (None, None)
    )
    store.save_run(run, scores)
    return gate


GOOD = {f"g{i:02d}": 0.5 + 0.4 * i / 59 for i in range(60)}
"""60 golden items, faithfulness from 0.50 to 0.90."""


def test_a_run_that_measured_no_gated_metric_never_becomes_the_baseline(store):
    assert (
        record(store, offline_run(0), scored(offline_run(0), GOOD)) is None
    )  # the first run: nothing to compare
    judge_off = record(store, offline_run(1), scored(offline_run(1), GOOD, metric="precision@3"))
    # The judge switched off: the baseline measured faithfulness and this run has none, so it fails.
    assert judge_off.passed is False and "the candidate has no score of it" in judge_off.summary()
    all_skipped = offline_run(2)
    record(store, all_skipped, scored(all_skipped, dict.fromkeys(GOOD)))
    worse = offline_run(3)
    gate = record(store, worse, scored(worse, {i: v - 0.2 for i, v in GOOD.items()}))
    assert gate.baseline.against.run_id == offline_run(0).run_id
    assert gate.passed is False and "faithfulness" in gate.summary()


def test_after_an_all_failed_run_alone_the_next_run_is_compared_with_it_and_says_so(store):
    record(store, offline_run(0), scored(offline_run(0), dict.fromkeys(GOOD)))
    gate = record(store, offline_run(1), scored(offline_run(1), GOOD))
    assert gate.baseline.against.run_id == offline_run(0).run_id
    assert "measured no gated metric" in gate.baseline.chosen
    assert gate.reference is None and "no reference yet" in gate.reference_note


def drifted(week: int, target: str) -> tuple[EvalRun, list[Score]]:
    """Release `week`: every item 0.012 worse than the release before, ±0.003 of item-level judge
    jitter."""
    run = offline_run(week, target=target)
    jitter = lambda i: 0.003 * math.sin(7 * i + 3 * week)  # noqa: E731
    return run, scored(
        run, {item: v - 0.012 * week + jitter(i) for i, (item, v) in enumerate(GOOD.items())}
    )


def test_ten_small_drops_that_each_pass_against_the_previous_run_fail_against_the_reference(store):
    # The ratchet of hole (b): each release compared with the one before passes (a drop of 0.012 is
    # within the 0.02 tolerance); the reference, the first accepted run of the golden version, sees
    # −0.12.
    record(store, *drifted(0, "ratchet"))
    gates = [
        record(
            store,
            *drifted(week, "ratchet"),
            baseline_run=offline_run(week - 1, target="ratchet").run_id,
        )
        for week in range(1, 11)
    ]
    assert all(g.baseline.passed for g in gates)
    assert {g.reference.against.run_id for g in gates[1:]} == {
        offline_run(0, target="ratchet").run_id
    }
    assert gates[0].reference is None and "the reference is the baseline" in gates[0].reference_note
    last = gates[-1]
    assert not last.passed and not last.reference.passed
    [faithfulness] = last.reference.gate.metrics
    assert (
        faithfulness.diff == pytest.approx(-0.12, abs=0.006)
        and "score_drop" in faithfulness.checks_failed
    )
    stored = store.get_run(offline_run(10, target="ratchet").run_id)
    assert stored.gate_passed is False and [c["role"] for c in stored.gate["comparisons"]] == [
        "baseline",
        "reference",
    ]
    summary = run_summary(stored, [], items=60)
    assert (
        summary.reference == offline_run(0, target="ratchet").run_id
        and summary.reference_rows[0].passed is False
    )
    assert (
        summary.gate_rows[0].passed and summary.baseline == offline_run(9, target="ratchet").run_id
    )
    html = render_report(stored, drifted(10, "ratchet")[1], run_gate=last)
    assert "Against the baseline offline/2026-03-09/ratchet" in html
    assert "Against the reference offline/2026-01-05/ratchet" in html
    assert html.count("<th>metric</th><th>status</th>") == 2 and "slow drift" in html

    # A new target's first run named against the release of another: the reference alone.
    named = record(
        store, *drifted(10, "rewrite"), reference_run=offline_run(0, target="ratchet").run_id
    )
    assert (
        named.baseline is None
        and named.reference.passed is False
        and named.to_dict()["baseline"] is None
    )

    # Chosen automatically, the second release already fails: −0.024 against the reference.
    automatic = [record(store, *drifted(week, "auto")) for week in range(0, 4)]
    assert automatic[0] is None and automatic[1].passed
    assert automatic[2].baseline.passed and automatic[2].reference.passed is False
    # The failed release is the next one's baseline (a pass, −0.012), and the reference fails it.
    assert (
        automatic[3].baseline.against.run_id == offline_run(2, target="auto").run_id
        and automatic[3].baseline.passed
        and automatic[3].reference.passed is False
    )


def test_a_run_named_as_its_own_baseline_or_reference_is_refused_before_and_after_it_is_saved(
    store,
):
    record(store, offline_run(0), scored(offline_run(0), GOOD))
    first = offline_run(1)
    for param in ("baseline_run", "reference_run"):
        with pytest.raises(ValueError, match=f"cannot be its own {param.removesuffix('_run')}"):
            record(
                store, first, scored(first, GOOD), **{param: first.run_id}
            )  # its first attempt: not saved yet
    record(store, first, scored(first, GOOD))
    with pytest.raises(ValueError, match="cannot be its own reference"):
        record(store, first, scored(first, GOOD), reference_run=first.run_id)  # a rerun


def test_renamed_item_ids_fail_as_not_comparable_instead_of_an_unpaired_comparison(store):
    base = offline_run(0)
    record(store, base, scored(base, GOOD))
    # The 20 hardest items dropped and every id renamed: unpaired, the easier rest looks better.
    easier = {f"renamed-{item}": v for item, v in list(GOOD.items())[20:]}
    candidate = offline_run(1)
    unpaired = regression_gate(scored(candidate, easier), scored(base, GOOD), ["faithfulness"])
    assert unpaired.metrics[0].design == "independent"
    gate = record(store, candidate, scored(candidate, easier))
    assert gate.passed is False and gate.baseline.gate is None
    assert (
        "candidate and baseline share 0 of 60 item ids (need ≥ 10 to pair them): the same golden version golden@v3 "
        "with other item ids: renamed ids or another subset; pass --baseline-run"
    ) in gate.summary()
    other_set = offline_run(2, version="golden@v4")
    gate = record(store, other_set, scored(other_set, easier), baseline_run=base.run_id)
    assert (
        "golden@v3 and golden@v4 are a different golden set or renamed ids"
        in gate.baseline.not_comparable
    )
    # The next run on the set's own ids is compared with the last run that shares them, not failed
    # again by the renamed one before it.
    proper = offline_run(3)
    gate = record(store, proper, scored(proper, GOOD))
    assert gate.baseline.against.run_id == base.run_id and gate.passed


def test_a_limit_run_is_compared_on_the_subset_it_drew(store):
    full = offline_run(0)
    record(store, full, scored(full, GOOD))
    drawn = dict(
        list(GOOD.items())[::3]
    )  # `--limit 20`: the subset's items, every one of them scored
    subset_run = offline_run(1)
    subset_run.params = {
        "limit": 20,
        "subset": {"drawn": {"single_hop": 20}, "available": {"single_hop": 60}},
    }
    gate = record(store, subset_run, scored(subset_run, drawn))
    assert (
        gate.passed
        and gate.baseline.gate.metrics[0].n_missing == 0
        and gate.baseline.gate.metrics[0].n_pairs == 20
    )
    assert (
        gate.baseline.scope
        == "compared on this run's subset: 20 of the baseline's 60 items; 40 not drawn"
    )
    # Within the subset a drop still fails, and a drawn item that lost its score is still missing.
    worse = offline_run(2)
    worse.params = subset_run.params
    lost = {item: v - 0.2 for item, v in list(drawn.items())[1:]}
    gate = record(
        store, worse, scored(worse, lost) + scored(worse, {"g00": None}, metric="precision@3")
    )
    metric = gate.baseline.gate.metrics[0]
    assert not gate.passed and metric.n_missing == 1 and metric.n_pairs == 19
    # Without `limit`, items an earlier run had and this run lacks are missing ones: against the
    # reference (the full first run) 40 are.
    plain = offline_run(3)
    gate = record(store, plain, scored(plain, drawn))
    assert gate.reference.against.run_id == full.run_id
    assert gate.reference.scope is None and gate.reference.gate.metrics[0].n_missing == 40


def test_a_golden_refresh_compares_the_items_both_versions_share_and_says_so(store):
    v3 = offline_run(0)
    record(store, v3, scored(v3, GOOD))
    kept = dict(list(GOOD.items())[10:])  # 10 stale items retired
    refreshed = {
        **kept,
        **{f"new{i}": 0.2 for i in range(15)},
    }  # 15 new items, much lower: not compared
    first_v4 = offline_run(1, version="golden@v4")
    gate = record(store, first_v4, scored(first_v4, refreshed))
    assert (
        gate.passed
        and gate.baseline.gate.metrics[0].n_pairs == 50
        and not gate.baseline.gate.metrics[0].n_missing
    )
    assert (
        gate.baseline.scope
        == "compared on the 50 items golden@v3 and golden@v4 share; 10 retired, 15 new not gated"
    )
    assert (
        "(none yet on golden@v4)" in gate.baseline.chosen
        and "compared on the 50 items" in gate.summary()
    )
    assert (
        "the reference is the baseline (the first accepted run of golden (golden@v3))"
        in gate.reference_note
    )
    worse = offline_run(2, version="golden@v4")
    gate = record(store, worse, scored(worse, {i: v - 0.2 for i, v in refreshed.items()}))
    assert (
        gate.baseline.against.run_id == first_v4.run_id
        and gate.baseline.scope is None
        and not gate.passed
    )
    # The refresh did not move the reference: v3's run, on the 50 items the versions share.
    assert gate.reference.against.run_id == v3.run_id and not gate.reference.passed
    assert (
        gate.reference.scope
        == "compared on the 50 items golden@v3 and golden@v4 share; 10 retired, 15 new not gated"
    )
