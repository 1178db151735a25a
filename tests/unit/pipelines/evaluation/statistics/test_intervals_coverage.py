"""Do the printed 95 % intervals cover the truth? Exact binomial sums for 0/1 scores, seeded
vectorised simulations for bounded scores and paired differences; each cell must reach 0.93.

Each check also shows the interval it replaced failing, so the test can tell a good method from a
bad one.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pipelines.evaluation.statistics.bootstrap import bootstrap_ci
from pipelines.evaluation.statistics.intervals import (
    bounded_mean_interval,
    jeffreys_interval,
    paired_difference_interval,
)

SIZES = (10, 20, 50)
REPS = 4_000
FLOOR = 0.93


def exact_binomial_coverage(interval_of_count, n: int, p: float) -> float:
    """P(p in interval) = Σ_x Binom(x; n, p)·[p in interval(x)]: what a simulation estimates,
    exactly."""
    x = np.arange(n + 1)
    low, high = interval_of_count(x, n)
    return float(stats.binom.pmf(x, n, p)[(low <= p) & (p <= high)].sum())


def coverage(low, high, truth: float) -> float:
    return float(np.mean((low <= truth) & (truth <= high)))


def student_t(samples: np.ndarray):
    n = samples.shape[1]
    half = stats.t.isf(0.025, n - 1) * samples.std(axis=1, ddof=1) / np.sqrt(n)
    return samples.mean(axis=1) - half, samples.mean(axis=1) + half


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("p", [0.5, 0.9])
def test_jeffreys_covers_proportions(n, p):
    # Exact values: n = 10: 0.979 / 0.987; n = 20: 0.959 / 0.957; n = 50: 0.935 / 0.942 (p = 0.5 /
    # 0.9).
    assert exact_binomial_coverage(lambda x, size: jeffreys_interval(x, size), n, p) >= FLOOR


def test_the_percentile_bootstrap_it_replaces_did_not():
    def percentile_bootstrap(x, n):
        bounds = [bootstrap_ci([1.0] * k + [0.0] * (n - k)) or (k / n, k / n) for k in x]
        return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])

    # At n = 10, p = 0.9 the coverage was once 0.64: 9/10 gives [0.7, 1.0] and 10/10 gives [1, 1].
    assert exact_binomial_coverage(percentile_bootstrap, 10, 0.9) < 0.70


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("p", [0.5, 0.9])
def test_zero_one_scores_through_the_bounded_mean_path(n, p):
    # Every possible sample of n 0/1 scores, one row per count of ones: the exact coverage of the
    # interval `aggregate` prints for recall@k and tool selection accuracy (a simulation of 4,000
    # samples would put ±0.004 of noise on a cell whose truth is 0.935).
    def through_scores(x, size):
        rows = (np.arange(size)[None, :] < x[:, None]).astype(float)
        return bounded_mean_interval(rows)

    assert exact_binomial_coverage(through_scores, n, p) >= FLOOR


def _beta(rng, shape):
    return rng.beta(5, 2, shape)


def _faithfulness(rng, shape):  # 85 % perfect answers, the rest spread over (0, 1)
    return np.where(rng.random(shape) < 0.85, 1.0, rng.beta(2, 2, shape))


def _mostly_perfect(
    rng, shape
):  # 95 % perfect: 10 scores are all 1.0 about 60 % of the time at n = 10
    return np.where(rng.random(shape) < 0.95, 1.0, rng.random(shape))


def _claims(rng, shape):  # faithfulness of 4-claim answers: k/4 with k ~ Binomial(4, 0.85)
    return rng.binomial(4, 0.85, shape) / 4.0


def _noise_delta_f(rng, shape):  # on [−1, 1]: 70 % exactly 0, else uniform on (−0.4, 0.8)
    return np.where(rng.random(shape) < 0.7, 0.0, rng.uniform(-0.4, 0.8, shape))


BOUNDED = {
    "beta(5,2)": (_beta, 5 / 7, (0.0, 1.0)),
    "85% at 1 + beta(2,2)": (_faithfulness, 0.85 + 0.15 * 0.5, (0.0, 1.0)),
    "95% at 1 + uniform": (_mostly_perfect, 0.95 + 0.05 * 0.5, (0.0, 1.0)),
    "claims k/4": (_claims, 0.85, (0.0, 1.0)),
    "noise ΔF on [-1, 1]": (_noise_delta_f, 0.3 * 0.2, (-1.0, 1.0)),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(BOUNDED))
def test_bounded_scores(name, n):
    draw, truth, span = BOUNDED[name]
    rng = np.random.default_rng(7 * n + len(name))
    samples = draw(rng, (REPS, n))
    assert coverage(*bounded_mean_interval(samples, span), truth) >= FLOOR


def test_student_t_fails_where_the_bounded_mean_interval_holds():
    rng = np.random.default_rng(5)
    samples = _mostly_perfect(rng, (REPS, 10))
    assert coverage(*student_t(samples), 0.975) < 0.5  # all-1.0 samples give a zero-width interval
    assert coverage(*bounded_mean_interval(samples), 0.975) >= FLOOR


def _binary_drop(rng, shape):  # recall 0.8 -> 0.7: 15 % of hits lost, 10 % of misses found
    base = (rng.random(shape) < 0.8).astype(float)
    cand = np.where(base == 1, rng.random(shape) < 0.85, rng.random(shape) < 0.1).astype(float)
    return cand, base, -0.10


def _rare_flips(rng, shape):  # 5 % of items flip: rare discordant pairs
    base = (rng.random(shape) < 0.9).astype(float)
    cand = np.where(rng.random(shape) < 0.05, 1.0 - base, base)
    return cand, base, 0.9 * 0.95 + 0.1 * 0.05 - 0.9


def _faithfulness_pairs(
    rng, shape
):  # 70 % of answers unchanged, the rest redrawn from a worse system
    base = _faithfulness(rng, shape)
    worse = np.where(rng.random(shape) < 0.75, 1.0, rng.beta(2, 2, shape))
    cand = np.where(rng.random(shape) < 0.7, base, worse)
    return cand, base, 0.3 * ((0.75 + 0.25 * 0.5) - (0.85 + 0.15 * 0.5))


PAIRED = {
    "0/1 drop of 0.10": _binary_drop,
    "rare flips": _rare_flips,
    "faithfulness": _faithfulness_pairs,
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(PAIRED))
def test_paired_differences(name, n):
    rng = np.random.default_rng(31 * n + len(name))
    cand, base, truth = PAIRED[name](rng, (REPS, n))
    assert coverage(*paired_difference_interval(cand, base), truth) >= FLOOR


def test_paired_student_t_fails_where_the_mover_interval_holds():
    rng = np.random.default_rng(8)
    cand, base, truth = _rare_flips(rng, (REPS, 10))
    assert (
        coverage(*student_t(cand - base), truth) < 0.6
    )  # no flip seen: a zero-width interval at 0
    assert coverage(*paired_difference_interval(cand, base), truth) >= FLOOR
