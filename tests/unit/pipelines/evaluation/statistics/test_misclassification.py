"""The corrected mean by the labels' origin: this run's own, earlier runs', or both."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.evaluation.statistics.misclassification import (
    Strata,
    _rates,
    after_a_shift,
    combine,
    error_rates,
    judge_beats_coin,
    labels_for_half_width,
    own_labels,
    rogan_gladen,
)


def _run(rng, reps, p, sens, spec, judged):
    cells = rng.multinomial(
        judged, [p * sens, (1 - p) * (1 - spec), p * (1 - sens), (1 - p) * spec], reps
    )
    per_verdict = np.stack([cells[:, 2] + cells[:, 3], cells[:, 0] + cells[:, 1]], -1)
    return (
        per_verdict,
        np.stack([cells[:, 2], cells[:, 0]], -1),
        (cells[:, 0] + cells[:, 2]) / judged,
    )


def test_rogan_gladen_on_the_runs_own_labels_is_the_labels_weighted_mean():
    # Why the run's own labels need no correction: the error rates they give, put back into
    # Rogan–Gladen with the run's q, return the labels' stratified mean exactly.
    human, verdicts = [1] * 14 + [0] + [1] * 6 + [0] * 9, [1] * 15 + [0] * 15
    rates = error_rates(human, verdicts, ["r"] * 30, {"r": 0.8})
    corrected = rogan_gladen(0.8, 2000, rates)
    own = own_labels(np.array([6, 14]), np.array([15, 15]), np.array([400, 1600]))
    assert (
        float(corrected.mean)
        == pytest.approx(0.2 * 6 / 15 + 0.8 * 14 / 15)
        == pytest.approx(float(own.mean))
    )
    assert own.ci[0] < own.mean < own.ci[1]


def test_error_rates_come_with_jeffreys_intervals_and_no_clamp():
    human, verdicts = [1] * 15 + [1] * 7 + [0] * 8, [1] * 15 + [0] * 15
    rates = error_rates(human, verdicts, ["r"] * 30, {"r": 0.5})
    assert (
        rates.spec == 1.0
        and rates.spec_ci[0] < 1.0
        and rates.spec_ci[1] == pytest.approx(1.0, abs=1e-3)
    )
    assert rates.sens_ci[0] < rates.sens < rates.sens_ci[1]


def test_the_judge_beats_a_coin_by_an_exact_test_on_thirty_labels():
    # p = 0.9, sens = spec = 0.9: 15 labels per verdict, 15 of 15 yes-verdicts and 8 of 15
    # no-verdicts truly yes.
    strong = Strata(
        *(np.array(c, dtype=float) for c in ([8, 15], [15, 15], [0.18, 0.82], [0, 1], [30, 30]))
    )
    assert float(judge_beats_coin(strong)) < 0.025
    coin = Strata(
        *(np.array(c, dtype=float) for c in ([8, 9], [15, 15], [0.5, 0.5], [0, 1], [30, 30]))
    )
    assert float(judge_beats_coin(coin)) > 0.025


def test_earlier_runs_labels_cover_at_p_0_9_with_thirty_labels():
    rng = np.random.default_rng(11)
    reps, judged, p = 1000, 2000, 0.9
    columns = []
    for _ in range(5):
        per_verdict, truly_yes, _ = _run(rng, reps, p, 0.9, 0.9, judged)
        labelled = np.minimum(3, per_verdict)
        columns.append(
            (
                rng.hypergeometric(truly_yes, per_verdict - truly_yes, labelled),
                labelled,
                per_verdict / judged,
            )
        )
    yes, labelled, share = (np.concatenate(c, -1).astype(float) for c in zip(*columns))
    strata = Strata(yes, labelled, share, np.tile([0.0, 1.0], 5), np.full(yes.shape, 6.0))
    per_verdict, _, truth = _run(rng, reps, p, 0.9, 0.9, judged)
    corrected = rogan_gladen(per_verdict[:, 1] / judged, judged, _rates(strata))
    given = judge_beats_coin(strata) < 0.025
    covered = (corrected.ci[0] <= truth) & (truth <= corrected.ci[1])
    assert given.mean() >= 0.9 and covered[given].mean() >= 0.94


def _two_runs():
    # Two earlier runs judging 80 % and 30 % yes, 15 labels per verdict each.
    human = [1] * 14 + [0] + [1] * 5 + [0] * 10 + [1] * 12 + [0] * 3 + [1] * 2 + [0] * 13
    verdicts = ([1] * 15 + [0] * 15) * 2
    return error_rates(human, verdicts, ["a"] * 30 + ["b"] * 30, {"a": 0.8, "b": 0.3})


def test_the_mix_of_own_and_earlier_labels_is_never_wider_than_either():
    own = own_labels(np.array([6.0, 14.0]), np.array([15.0, 15.0]), np.array([400.0, 1600.0]))
    rates = _two_runs()
    earlier = rogan_gladen(0.8, 2000, rates)
    mixed = combine(own, earlier)
    widths = [c.ci[1] - c.ci[0] for c in (own, earlier, mixed)]
    assert widths[2] < min(widths[:2])
    assert 0 < float(mixed.own_weight) < 1
    # Each part weighs by the variance its own interval's width implies.
    v_own, v_earlier = (((c.ci[1] - c.ci[0]) / (2 * 1.959964)) ** 2 for c in (own, earlier))
    assert float(mixed.own_weight) == pytest.approx(float(v_earlier / (v_own + v_earlier)))
    assert min(own.mean, earlier.mean) <= mixed.mean <= max(own.mean, earlier.mean)


def test_labels_for_half_width_scales_the_plug_in_variance():
    own = own_labels(np.array([6.0, 14.0]), np.array([15.0, 15.0]), np.array([400.0, 1600.0]))
    # The half-width the plug-in variance gives at 30 labels takes 30 labels.
    half = 1.959964 * float(np.sqrt(own.label_variance + own.fixed_variance))
    assert labels_for_half_width(half, own, 30) == pytest.approx(30, abs=1)
    # Half the width takes about four times the labels, fewer with the finite population correction.
    assert 100 <= labels_for_half_width(half / 2, own, 30) <= 120
    # After a pilot of 30 labels at p = 0.5, the count named for ±0.05 gives ±0.05 when its labels
    # come in (the pilot's shares scaled up; the label count check of `ragwatch bench judge-shift`).
    pilot = own_labels(np.array([2.0, 13.0]), np.array([15.0, 15.0]), np.array([250.0, 250.0]))
    named = labels_for_half_width(0.05, pilot, 30)
    scaled = own_labels(
        np.array([2.0, 13.0]) * named / 30,
        np.array([1.0, 1.0]) * named / 2,
        np.array([250.0, 250.0]),
    )
    assert float(scaled.ci[1] - scaled.ci[0]) / 2 == pytest.approx(0.05, rel=0.1)
    # Earlier runs' labels cannot shrink the run's own part: a width below it is out of reach.
    rates = _two_runs()
    assert labels_for_half_width(0.001, rogan_gladen(0.8, 2000, rates), 60) is None


def test_after_a_shift_the_later_runs_estimate_keeps_every_runs_interval_inside():
    rates = _two_runs()
    later = rogan_gladen(0.5, 2000, error_rates(*_run_b()))
    every = rogan_gladen(0.5, 2000, rates)
    stretched = after_a_shift(later, every)
    assert float(stretched.mean) == float(later.mean)
    for inner in (later, every):
        assert stretched.ci[0] <= inner.ci[0] and inner.ci[1] <= stretched.ci[1]
    assert stretched.ci[0] in (later.ci[0], every.ci[0]) and stretched.ci[1] in (
        later.ci[1],
        every.ci[1],
    )


def _run_b():
    human = [1] * 12 + [0] * 3 + [1] * 2 + [0] * 13
    return human, [1] * 15 + [0] * 15, ["b"] * 30, {"b": 0.3}
