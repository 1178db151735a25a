"""A run's true mean of a 0/1 metric from its judge's verdicts, corrected by the judge's error rates.

Why not prediction-powered inference (PPI) with the labels we have: PPI corrects the run's judge mean by the
judge's average error E[Y − Ŷ] on labelled items, which must be drawn from the run's own items. Ours come from
earlier runs (the audit queue's labels arrive days later), and E[Y − Ŷ] = p·(1 − sens) − (1 − p)·(1 − spec)
moves with the true mean p: with the judge unchanged and p going 0.7 → 0.5, PPI's interval covered 37–40 % of
the time (`ragwatch bench judge-shift`). What does not move with p are the judge's error rates,
sens = P(verdict yes | truth yes) and spec = P(verdict no | truth no). So:

1. `error_rates`: sens and spec from every labelled run, each label weighted to its own run's verdict mix
   (the queue draws as many items per verdict, so a label stands for (run's share of its verdict) / (labelled
   share of it)); a mixture of runs whose judge erred at the same rates has those same rates.
2. `rogan_gladen`: the run's true mean p = (q + spec − 1) / (sens + spec − 1), q the run's judge-yes share
   (Rogan & Gladen 1978), with a delta-method interval over q's, sens's and spec's sampling errors.
3. `error_rate_shift`: the assumption step 1 rests on, tested: the earlier half of the labelled runs against
   the later half, a Wald χ² (2 df) on the differences of (sens, spec). When it rejects, the estimate is
   withheld and the report says the judge's error rates moved.

Assumption, stated: the judge errs at the same rates on this run's items as on the labelled runs' items
(same judge model and prompt, items alike in difficulty given their truth). The test checks it between
labelled runs; a judge that changed on this very run, with none of its items labelled yet, goes unseen
until its labels arrive.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2, norm

SHIFT_ALPHA = 0.05
"""The error-rate shift test's level: below this p-value the judge's error rates moved between labelled runs."""


@dataclass(frozen=True)
class ErrorRates:
    sens: float
    spec: float
    cov: np.ndarray
    """2×2 sampling covariance of (sens, spec) (delta method over the labelled strata)."""
    labels: int


def label_weights(verdicts: Sequence[int], runs: Sequence[Hashable], run_yes_share: dict) -> np.ndarray:
    """Per label: (its run's judged share of its verdict) / (the share of that verdict among its run's labels).

    Within each run the weights sum to the run's labels, so every run counts by its labels."""
    f = np.asarray(verdicts, dtype=int)
    groups, shares = np.asarray([str(r) for r in runs]), {str(k): v for k, v in run_yes_share.items()}
    weights = np.ones(len(f))
    for run in np.unique(groups):
        mine = groups == run
        share_yes = float(shares[run])
        for v, share in ((1, share_yes), (0, 1.0 - share_yes)):
            labelled = (f[mine] == v).mean()
            if labelled > 0:
                weights[mine & (f == v)] = share / labelled
    return weights


def covers_both_verdicts(verdicts: Sequence[int], runs: Sequence[Hashable], run_yes_share: dict) -> np.ndarray:
    """Per label: False when its run judged both verdicts but only one of them was labelled — its labels
    then stand for part of the run only, and weighting cannot restore the missing verdict's errors."""
    f = np.asarray(verdicts, dtype=int)
    groups, shares = np.asarray([str(r) for r in runs]), {str(k): v for k, v in run_yes_share.items()}
    keep = np.ones(len(f), dtype=bool)
    for run in np.unique(groups):
        mine = groups == run
        share_yes = float(shares[run])
        missing = [v for v in (0, 1) if not (f[mine] == v).any() and (share_yes if v else 1 - share_yes) > 0]
        keep[mine] = not missing
    return keep


def error_rates(
    human: Sequence[int], verdicts: Sequence[int], runs: Sequence[Hashable], run_yes_share: dict
) -> ErrorRates | None:
    """Weighted sens and spec over the labels (see label_weights), with their covariance; None when the labels
    hold no truth-yes or no truth-no item."""
    y, f = np.asarray(human, dtype=int), np.asarray(verdicts, dtype=int)
    groups = np.asarray([str(r) for r in runs])
    w = label_weights(f, groups, run_yes_share)
    d1, d0 = float((w * y).sum()), float((w * (1 - y)).sum())
    if d1 <= 0 or d0 <= 0:
        return None
    sens, spec = float((w * y * f).sum()) / d1, float((w * (1 - y) * (1 - f)).sum()) / d0
    # Ratio estimators linearized: label i moves sens by w_i·Y_i·(f_i − sens)/d1 and spec by
    # w_i·(1 − Y_i)·((1 − f_i) − spec)/d0. Within a stratum (run, verdict) w and f are fixed and only Y varies,
    # and the queue fixes each stratum's size: Var = Σ_s n_s·coef²·Var_s(Y). Var_s(Y) = P_s(1 − P_s) with P_s
    # = P(truth yes | verdict v) on run r as the fitted rates imply it (sens·π_r/q_r, (1 − sens)·π_r/(1 − q_r),
    # π_r the run's corrected mean), not the stratum's own share: a stratum holds a handful of labels, often
    # all alike, and its own share would call it exact (0/n) or, with a pseudo-count, inflate every interval.
    shares = {str(k): float(v) for k, v in run_yes_share.items()}
    youden = sens + spec - 1
    cov = np.zeros((2, 2))
    for run in np.unique(groups):
        q = shares[run]
        prevalence = min(1.0, max(0.0, (q + spec - 1) / youden)) if youden > 0 else None
        for v in (0, 1):
            s = (groups == run) & (f == v)
            n = int(s.sum())
            if not n:
                continue
            if prevalence is None or not 0 < (q if v else 1 - q) < 1:
                p = (y[s].sum() + 0.5) / (n + 1)  # no model to lean on: the stratum's own share, kept off 0 and 1
            else:
                p = (sens if v else 1 - sens) * prevalence / (q if v else 1 - q)
            # n labels cannot tell a share below about half a label in n from 0: kept off 0 and 1 by that much,
            # or a rate fitted at 1 (no error among few labels) would make its strata exact. Conservative with
            # 5 labels a stratum (98–100 % coverage in `bench judge-shift --per-verdict 5`), exact from about 15.
            floor = 0.5 / (n + 1)
            p = min(1 - floor, max(floor, p))
            a = w[s][0] * (v - sens) / d1
            b = w[s][0] * ((1 - v) - spec) / d0
            cov += n * p * (1 - p) * np.array([[a * a, -a * b], [-a * b, b * b]])
    return ErrorRates(sens=sens, spec=spec, cov=cov, labels=len(y))


@dataclass(frozen=True)
class Corrected:
    mean: float
    ci: tuple[float, float]
    se: float
    youden: float
    """sens + spec − 1: how far the judge is from a coin; the correction divides by it."""
    label_variance: float
    """The part of the mean's variance due to the labels (it shrinks as 1/labels)."""
    run_variance: float
    """The part due to the run's N judged items (q's binomial error)."""


def rogan_gladen(judge_mean: float, judged: int, rates: ErrorRates, confidence: float = 0.95) -> Corrected | None:
    """p = (q + spec − 1)/(sens + spec − 1) with a delta-method interval, clipped to [0, 1]; None when the judge
    is not shown better than a coin (the 95 % interval of sens + spec − 1 reaches 0): dividing by it then
    explodes."""
    z = norm.ppf(0.5 + confidence / 2)
    youden = rates.sens + rates.spec - 1
    youden_se = math.sqrt(max(0.0, rates.cov[0, 0] + rates.cov[1, 1] + 2 * rates.cov[0, 1]))
    if youden - z * youden_se <= 0:
        return None
    q = judge_mean
    p = (q + rates.spec - 1) / youden
    # ∂p/∂q = 1/J, ∂p/∂sens = −p/J, ∂p/∂spec = (1 − p)/J (J = sens + spec − 1); q is independent of the labels.
    g = np.array([-p, 1 - p]) / youden
    label_var = float(g @ rates.cov @ g)
    run_var = q * (1 - q) / max(judged, 1) / youden**2
    se = math.sqrt(label_var + run_var)
    return Corrected(
        mean=min(1.0, max(0.0, p)),
        ci=(max(0.0, p - z * se), min(1.0, p + z * se)),
        se=se,
        youden=youden,
        label_variance=label_var,
        run_variance=run_var,
    )


def labels_for_half_width(half_width: float, corrected: Corrected, labels: int, confidence: float = 0.95) -> int | None:
    """Labels for an interval of ±half_width: the label part of the variance shrinks as 1/n, the run's part does
    not, so n = label_variance·labels / ((h/z)² − run_variance); None when the run's N alone leaves more."""
    z = norm.ppf(0.5 + confidence / 2)
    room = (half_width / z) ** 2 - corrected.run_variance
    if room <= 0:
        return None
    return max(1, math.ceil(corrected.label_variance * labels / room))


@dataclass(frozen=True)
class ShiftTest:
    earlier: int
    later: int
    """Labels in each half."""
    statistic: float | None
    p_value: float | None
    """None when a half cannot estimate both rates: then the assumption is untested."""

    @property
    def moved(self) -> bool:
        return self.p_value is not None and self.p_value < SHIFT_ALPHA


def error_rate_shift(
    human: Sequence[int],
    verdicts: Sequence[int],
    runs: Sequence[Hashable],
    order: Sequence,
    run_yes_share: dict,
    min_labels: int = 10,
) -> ShiftTest:
    """Wald χ² (2 df) of the earlier labelled runs' (sens, spec) against the later ones'. The halves are cut
    between runs, by `order` (a sortable key per label, its run's date), as near half the labels as a run
    boundary allows. Untested (p_value None) with one labelled run, or fewer than `min_labels` in a half."""
    y, f, key = np.asarray(human, dtype=int), np.asarray(verdicts, dtype=int), np.asarray([str(o) for o in order])
    groups = np.asarray([str(r) for r in runs])
    days = sorted(set(key.tolist()))
    if len(days) < 2:
        return ShiftTest(earlier=0, later=len(y), statistic=None, p_value=None)
    counts = np.array([(key <= d).sum() for d in days[:-1]])
    cut = days[int(np.argmin(np.abs(counts - len(y) / 2)))]
    early = key <= cut
    halves = [error_rates(y[m], f[m], groups[m], run_yes_share) for m in (early, ~early)]
    n_early, n_late = int(early.sum()), int((~early).sum())
    if min(n_early, n_late) < min_labels or any(h is None for h in halves):
        return ShiftTest(earlier=n_early, later=n_late, statistic=None, p_value=None)
    a, b = halves
    diff = np.array([a.sens - b.sens, a.spec - b.spec])
    statistic = float(diff @ np.linalg.pinv(a.cov + b.cov) @ diff)
    return ShiftTest(earlier=n_early, later=n_late, statistic=statistic, p_value=float(chi2.sf(statistic, 2)))
