"""The run's mean from labels of its own items, stratified by the judge's verdict."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.evaluation.statistics.intervals import jeffreys_interval
from pipelines.evaluation.statistics.stratified import (
    mover_interval,
    stratified_mean,
)


def test_the_estimate_weights_each_verdicts_labels_by_the_runs_share_of_that_verdict():
    # 80 % judged yes, 15 labels per verdict: 14 of 15 yes-verdicts truly yes, 6 of 15 no-verdicts.
    assert stratified_mean([6, 14], [15, 15], [0.2, 0.8]) == pytest.approx(
        0.2 * 6 / 15 + 0.8 * 14 / 15
    )


def _run_with_own_labels(rng, reps, p, each, sens=0.9, spec=0.9, judged=2000):
    cells = rng.multinomial(
        judged, [p * sens, (1 - p) * (1 - spec), p * (1 - sens), (1 - p) * spec], reps
    )
    per_verdict = np.stack([cells[:, 2] + cells[:, 3], cells[:, 0] + cells[:, 1]], -1)
    truly_yes = np.stack([cells[:, 2], cells[:, 0]], -1)
    yes = rng.hypergeometric(truly_yes, per_verdict - truly_yes, np.full_like(per_verdict, each))
    return yes, per_verdict, (cells[:, 0] + cells[:, 2]) / judged


def test_mover_with_one_stratum_is_the_jeffreys_interval_and_exact_when_all_are_labelled():
    _, low, high = mover_interval(
        np.array([7.0]), np.array([20.0]), np.array([1.0]), np.array([1e12])
    )
    assert (float(low), float(high)) == pytest.approx(jeffreys_interval(7, 20), abs=1e-6)
    _, low, high = mover_interval(
        np.array([7.0]), np.array([20.0]), np.array([1.0]), np.array([20.0])
    )
    assert float(high - low) < 1e-9


def test_mover_keeps_each_strata_skew():
    # A rare truth: none of 15 no-verdict labels truly yes. That stratum can only raise the mean,
    # so it widens the upper side alone; the yes verdicts' 15 of 15 widen the lower side alone.
    estimate, low, high = mover_interval(
        np.array([0.0, 15.0]), np.array([15.0, 15.0]), np.array([0.8, 0.2]), np.array([1e9, 1e9])
    )
    assert float(estimate) == pytest.approx(0.2)
    rare_up = 0.8 * float(jeffreys_interval(0, 15)[1][()])
    all_down = 0.2 * (1 - float(jeffreys_interval(15, 15)[0][()]))
    assert float(high - estimate) == pytest.approx(rare_up, rel=1e-6)
    assert float(estimate - low) == pytest.approx(all_down, rel=1e-6)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_mover_covers_near_95_percent_at_60_labels(p):
    rng = np.random.default_rng(7)
    yes, per_verdict, truth = _run_with_own_labels(rng, 1500, p, 30)
    _, low, high = mover_interval(
        yes, np.full(yes.shape, 30.0), per_verdict / per_verdict.sum(-1, keepdims=True), per_verdict
    )
    assert 0.935 <= ((low <= truth) & (truth <= high)).mean() <= 0.97
