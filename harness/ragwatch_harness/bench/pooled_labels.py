"""The stratified score interval (the stratified Wilson interval) of labels pooled from many runs, a
handful per stratum, for `bench judge-shift`'s labels-only row of earlier days: MOVER's per-stratum
intervals (the product's, statistics/stratified.py) would add up far wider there.

It inverts the score test: θ is inside when (θ̂ − θ)² ≤ z²·Var(θ̂ | θ), the variance at the strata's
shares that fit the labels best with Σ share_v·t_v = θ.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from pipelines.evaluation.statistics.stratified import stratified_mean, stratified_variance

_BISECTIONS = 60


def _fitted_shares(yes, labelled, share, lam):
    """Per stratum, the share maximizing the binomial likelihood minus lam·Σ share_v·t_v (Lagrange):
    the root in [0, 1] of lam·w·t² − (lam·w + n)·t + y = 0 — the smaller one for lam > 0, the larger
    for lam < 0."""
    a = lam[..., None] * share
    b = a + labelled
    root = np.sqrt(np.maximum(b * b - 4 * a * yes, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = 2 * yes / (b + root)
        upper = (b - root) / (2 * a)
        plain = yes / labelled
    t = np.where(a > 0, lower, np.where(a < 0, upper, plain))
    return np.clip(np.nan_to_num(t), 0.0, 1.0)


def _constrained_shares(yes, labelled, share, theta):
    """The stratum shares that fit the labels best with Σ share_v·t_v = theta (bisection on the
    multiplier, mapped from (−1, 1): Σ share·t falls from 1 to 0 as the multiplier rises)."""
    scale = labelled.sum(-1) / np.maximum(share.max(-1), 1e-12)
    low, high = np.full(theta.shape, -1.0), np.full(theta.shape, 1.0)
    for _ in range(_BISECTIONS):
        u = (low + high) / 2
        fitted = (
            share * _fitted_shares(yes, labelled, share, scale * u / (1 - np.abs(u) + 1e-15))
        ).sum(-1)
        above = fitted > theta
        low, high = np.where(above, u, low), np.where(above, high, u)
    u = (low + high) / 2
    return _fitted_shares(yes, labelled, share, scale * u / (1 - np.abs(u) + 1e-15))


def score_interval(
    yes: np.ndarray,
    labelled: np.ndarray,
    share: np.ndarray,
    judged: np.ndarray,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(θ̂, low, high): the stratified score interval. `yes`, `labelled`: labels per stratum (yes
    answers, all); `share`: the run's share of each stratum; `judged`: the run's judged items in
    each stratum (N_v)."""
    yes, labelled, share, judged = (
        np.asarray(a, dtype=float) for a in (yes, labelled, share, judged)
    )
    z2 = norm.ppf(0.5 + confidence / 2) ** 2
    estimate = stratified_mean(yes, labelled, share)

    def outside(theta):
        t = _constrained_shares(yes, labelled, share, theta)
        variance = stratified_variance(t, labelled, share, judged)
        gap = (estimate - theta) ** 2
        return gap > z2 * variance + 1e-15

    bounds = []
    for lower in (True, False):
        # The statistic grows away from θ̂ on each side: bisect between θ̂ and the end of [0, 1].
        inner, outer = estimate.copy(), np.full(estimate.shape, 0.0 if lower else 1.0)
        for _ in range(40):
            middle = (inner + outer) / 2
            out = outside(middle)
            inner, outer = np.where(out, inner, middle), np.where(out, middle, outer)
        bounds.append(np.where(outside(outer), inner, outer))
    return estimate, bounds[0], bounds[1]
