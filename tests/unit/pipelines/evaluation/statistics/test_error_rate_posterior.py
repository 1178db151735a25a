"""This run's mean from earlier runs' labels: the posterior of the judge's error rates."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pipelines.evaluation.statistics.error_rate_posterior import posterior_interval, run_variance
from pipelines.evaluation.statistics.misclassification import (
    Strata,
    _rates,
    judge_beats_coin,
    rogan_gladen,
)

RUNS, JUDGED = 5, 2000


def _labelled_runs(rng, reps, p, each, sens=0.9, spec=0.9):
    """Strata (run, verdict) of `RUNS` earlier runs at true mean p, `each` labels per verdict."""
    columns = []
    for _ in range(RUNS):
        cells = rng.multinomial(
            JUDGED, [p * sens, (1 - p) * (1 - spec), p * (1 - sens), (1 - p) * spec], reps
        )
        per_verdict = np.stack([cells[:, 2] + cells[:, 3], cells[:, 0] + cells[:, 1]], -1)
        truly_yes = np.stack([cells[:, 2], cells[:, 0]], -1)
        labelled = np.minimum(each, per_verdict)
        yes = rng.hypergeometric(truly_yes, per_verdict - truly_yes, labelled)
        columns.append((yes, labelled, per_verdict / JUDGED))
    yes, labelled, share = (np.concatenate(c, -1).astype(float) for c in zip(*columns))
    return Strata(yes, labelled, share, np.tile([0.0, 1.0], RUNS), np.full(yes.shape, 2.0 * each))


def _this_run(rng, reps, p, sens=0.9, spec=0.9):
    cells = rng.multinomial(
        JUDGED, [p * sens, (1 - p) * (1 - spec), p * (1 - sens), (1 - p) * spec], reps
    )
    return (cells[:, 0] + cells[:, 1]) / JUDGED, (cells[:, 0] + cells[:, 2]) / JUDGED


def test_the_run_part_is_the_verdicts_spread_given_the_truth():
    # Given an item's truth, f/J − y varies only with its verdict: Var = (p·s(1 − s) + (1 − p)·c(1 −
    # c))/J² per item.
    p, s, c = 0.3, 0.85, 0.95
    expected = (p * s * (1 - s) + (1 - p) * c * (1 - c)) / (s + c - 1) ** 2 / 400
    assert float(run_variance(p, s, c, 400)) == pytest.approx(expected)


def test_with_many_labels_the_posterior_is_the_delta_methods_interval():
    # 600 labels a verdict per run: the grid must resolve a posterior a few thousandths wide.
    strata = _labelled_runs(np.random.default_rng(1), 1, 0.6, 600)
    rates = _rates(strata)
    posterior = rogan_gladen(0.6, JUDGED, rates)
    delta = rogan_gladen(0.6, JUDGED, replace(rates, strata=None))
    widths = [float(c.ci[1][0] - c.ci[0][0]) for c in (posterior, delta)]
    assert widths[0] == pytest.approx(widths[1], rel=0.05)
    assert float(np.mean(posterior.ci)) == pytest.approx(float(np.mean(delta.ci)), abs=0.003)


def test_a_run_alone_and_in_a_batch_get_the_same_interval():
    rng = np.random.default_rng(2)
    strata = _labelled_runs(rng, 3, 0.3, 6)
    q, _ = _this_run(rng, 3, 0.3)
    batch = posterior_interval(q, JUDGED, strata.yes, strata.labelled, strata.share, strata.verdict)
    alone = posterior_interval(
        q[1], JUDGED, strata.yes[1], strata.labelled[1], strata.share[1], strata.verdict
    )
    assert np.shape(alone[0]) == () and [float(a) for a in alone] == pytest.approx(
        [float(b[1]) for b in batch]
    )
    low, middle, high, spread = alone
    assert low < middle < high and spread > 0


def test_at_thirty_labels_it_covers_near_95_percent_and_is_narrower_than_the_delta_method():
    rng = np.random.default_rng(3)
    reps = 600
    strata = _labelled_runs(rng, reps, 0.5, 3)
    q, truth = _this_run(rng, reps, 0.5)
    rates = _rates(strata)
    given = judge_beats_coin(strata) < 0.025
    posterior = rogan_gladen(q, JUDGED, rates)
    delta = rogan_gladen(q, JUDGED, replace(rates, strata=None))
    covered = (posterior.ci[0] <= truth) & (truth <= posterior.ci[1])
    assert 0.93 <= covered[given].mean() <= 0.975
    widths = [(c.ci[1] - c.ci[0])[given].mean() for c in (posterior, delta)]
    assert widths[0] < widths[1]
