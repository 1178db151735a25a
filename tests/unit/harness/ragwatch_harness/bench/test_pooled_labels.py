"""The stratified score interval of labels pooled from many runs (bench judge-shift's labels-only
row)."""

from __future__ import annotations

import numpy as np
import pytest

from ragwatch_harness.bench.pooled_labels import score_interval


def test_the_score_interval_holds_the_estimate_and_is_not_exact_when_a_strata_agrees():
    estimate, low, high = score_interval(
        np.array([6.0, 15.0]),
        np.array([15.0, 15.0]),
        np.array([0.2, 0.8]),
        np.array([400.0, 1600.0]),
    )
    assert low < estimate < high <= 1.0
    # All 15 yes-verdict labels truly yes: Wald's plug-in variance would call that stratum exact;
    # the score interval still reaches well below, as 15 labels cannot rule out 80 % there.
    assert estimate - low > 0.05


def test_with_one_stratum_it_is_wilsons_interval_with_the_finite_population_correction():
    _, low, high = score_interval(
        np.array([[7.0]]), np.array([[20.0]]), np.array([[1.0]]), np.array([[1e9]])
    )
    z, n, x = 1.959963984540054, 20, 7 / 20
    centre, spread = (
        (x + z * z / (2 * n)) / (1 + z * z / n),
        z / (1 + z * z / n) * np.sqrt(x * (1 - x) / n + z * z / (4 * n * n)),
    )
    wilson = (centre - spread, centre + spread)
    assert (float(low[0]), float(high[0])) == pytest.approx(wilson, abs=1e-6)
    # Every item labelled: nothing left to sample, the interval is the point.
    _, low, high = score_interval(
        np.array([7.0]), np.array([20.0]), np.array([1.0]), np.array([20.0])
    )
    assert float(high - low) < 1e-6


def test_it_covers_near_95_percent_where_wald_did_not():
    rng = np.random.default_rng(3)
    reps, judged, p, sens, spec = 1000, 2000, 0.9, 0.9, 0.9
    cells = rng.multinomial(
        judged, [p * sens, (1 - p) * (1 - spec), p * (1 - sens), (1 - p) * spec], reps
    )
    per_verdict = np.stack([cells[:, 2] + cells[:, 3], cells[:, 0] + cells[:, 1]], -1)
    truly_yes = np.stack([cells[:, 2], cells[:, 0]], -1)
    yes = rng.hypergeometric(truly_yes, per_verdict - truly_yes, np.full_like(per_verdict, 15))
    _, low, high = score_interval(yes, np.full(yes.shape, 15.0), per_verdict / judged, per_verdict)
    truth = (cells[:, 0] + cells[:, 2]) / judged
    assert 0.935 <= ((low <= truth) & (truth <= high)).mean() <= 0.98
