"""A run's true mean of a 0/1 metric from its judge's verdicts and people's labels, by where the
labels come from.

Labels of this run's own items (the audit queue draws them per verdict): weighted to the run's
verdict mix they estimate the run's mean directly (statistics/stratified.py). That is the labels
alone and the judge-corrected mean at once — Rogan–Gladen with error rates from these labels gives
the same number, and so does PPI with any λ — and its variance has no term for the judge's mean over
the N items: given the run, that mean is fixed. Adding one (as q(1 − q)/N/J²) treated the labelled
subset as independent of the N items and made the interval wider than the labels' own.

Labels of earlier runs only (a run's queue is labelled days later): they describe other items, whose
true mean may differ. What carries over are the judge's error rates, sens = P(verdict yes | truth
yes) and spec = P(verdict no | truth no):

1. `error_rates`: sens and spec from every labelled run, each label weighted to its own run's
   verdict mix (the queue draws as many items per verdict); a mixture of runs whose judge erred at
   the same rates has those rates. Each comes with a Jeffreys interval over its effective number of
   labels.
2. `judge_beats_coin`: dividing by J = sens + spec − 1 needs J > 0, i.e. truly-yes items more often
   among the judge's yes verdicts than among its no verdicts: a one-sided Fisher exact test (mid-p)
   on the pooled labels.
3. `rogan_gladen`: p = (q + spec − 1)/J (Rogan & Gladen 1978), q the run's judge-yes share. Its
   interval has a label part and a run part. The label part: the 2.5 % and 97.5 % points of p over
   the posterior of (sens, spec) given the labels (statistics/error_rate_posterior.py). The run
   part: the spread of q/J − (the mean of the N items' truth), Var(f/J − y)/N per item. That is
   smaller than q(1 − q)/N/J², because an item's verdict and truth move together. The two add in
   quadrature on each side. Rates known only as estimates and a covariance (the coverage matcher's)
   get the delta method instead.
4. `error_rate_shift`: the assumption of step 1 tested: the earlier half of the labelled runs
   against the later half, a Wald χ² (2 df) on the differences of (sens, spec). When it rejects, the
   later half's labels alone give the rates: the judge that erred at them is the one nearest this
   run. The interval is stretched to hold every run's too (`after_a_shift`): the test errs too.

Both kinds of labels: the two estimates are independent given the run, so `combine` weights them by
their inverse variances, λ = V_B/(V_A + V_B) on the run's own labels, as PPI++ tunes its λ. Each V
is the one its interval's width implies. A rule fixed in advance, computed from the data: the mix is
never less precise than either, so never wider than the labels alone.

Assumption of steps 1–3, stated: the judge errs at the same rates on this run's items as on the
labelled runs' (same judge model and prompt, items alike in difficulty given their truth). The shift
test checks it between labelled runs; a judge that changed on this very run, with none of its items
labelled yet, goes unseen until its labels arrive.

Every estimator is vectorised over leading axes, one row per run (the bench simulates 1,000 runs at
once); the last axis holds the strata, one per (labelled run, verdict).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import beta, chi2, hypergeom, norm

from pipelines.evaluation.statistics.error_rate_posterior import posterior_interval, run_variance
from pipelines.evaluation.statistics.stratified import mover_interval, stratified_variance

SHIFT_ALPHA = 0.05
"""The error-rate shift test's level: below this p-value the judge's error rates moved between
labelled runs."""
COIN_ALPHA = 0.025
"""One-sided level of the better-than-a-coin test (the other side of a 95 % interval)."""

STRATIFIED = "stratified"
ROGAN_GLADEN = "rogan-gladen"
COMBINED = "combined"
METHODS = {
    STRATIFIED: "{own} labels of this run, weighted to its verdict mix (MOVER-Jeffreys interval)",
    ROGAN_GLADEN: "Rogan–Gladen, the judge's error rates from {other} labels of earlier runs (posterior interval)",
    COMBINED: "{own} labels of this run (weight {weight:.2f}) and Rogan–Gladen from {other} of earlier runs",
}
"""How each corrected interval was computed, as the report, the CLI and the HTML print it."""


@dataclass(frozen=True)
class Strata:
    """Labels per (labelled run, verdict) stratum; arrays of shape (..., strata)."""

    yes: np.ndarray
    labelled: np.ndarray
    share: np.ndarray
    """The stratum's run's judged share of the stratum's verdict."""
    verdict: np.ndarray
    run_labels: np.ndarray
    """Labels of the stratum's run, all verdicts."""

    @classmethod
    def from_labels(cls, human, verdicts, runs, run_yes_share: dict) -> Strata:
        y, f = np.asarray(human, dtype=int), np.asarray(verdicts, dtype=int)
        groups, shares = (
            np.asarray([str(r) for r in runs]),
            {str(k): float(v) for k, v in run_yes_share.items()},
        )
        rows = []
        for run in np.unique(groups):
            mine = groups == run
            for v in (0, 1):
                s = mine & (f == v)
                rows.append(
                    (y[s].sum(), s.sum(), shares[run] if v else 1 - shares[run], v, mine.sum())
                )
        return cls(*(np.asarray(c, dtype=float) for c in zip(*rows)))

    @property
    def weight(self) -> np.ndarray:
        """Per label of the stratum: its run's share of the verdict / that verdict's share of the
        run's labels."""
        return np.divide(
            self.share * self.run_labels,
            self.labelled,
            out=np.zeros_like(self.share),
            where=self.labelled > 0,
        )


@dataclass(frozen=True)
class ErrorRates:
    sens: np.ndarray | float
    spec: np.ndarray | float
    cov: np.ndarray
    """Sampling covariance of (sens, spec), shape (..., 2, 2) (delta method over the labelled
    strata)."""
    labels: np.ndarray | int
    sens_ci: tuple
    spec_ci: tuple
    """Jeffreys 95 % intervals over each rate's effective number of labels (Kish)."""
    strata: Strata | None = None
    """The labels the rates come from: `rogan_gladen` takes its interval from their posterior."""


def _rates(strata: Strata) -> ErrorRates:
    w, y, n, v = strata.weight, strata.yes, strata.labelled, strata.verdict
    truly_yes, truly_no = (w * y).sum(-1), (w * (n - y)).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sens = (w * y * v).sum(-1) / truly_yes
        spec = (w * (n - y) * (1 - v)).sum(-1) / truly_no
    # Ratio estimators linearized: a truly-yes label of stratum s moves sens by a_s = w_s(v_s −
    # sens)/d1, a truly-no one moves spec by b_s = w_s((1 − v_s) − spec)/d0. Within a stratum only
    # the truth varies, and the queue fixes the stratum's size: Var = Σ_s n_s·P_s(1 − P_s)·(a_s,
    # −b_s)ᵀ(a_s, −b_s). P_s = P(truth yes | stratum) as the rates imply it on the stratum's run — a
    # stratum holds a handful of labels, often all alike, and its own share would call it exact. The
    # rates behind P_s carry Jeffreys' half pseudo-label each way, so that no error among few labels
    # does not make every stratum exact.
    sens_j, spec_j = (
        ((w * y * v).sum(-1) + 0.5) / (truly_yes + 1),
        ((w * (n - y) * (1 - v)).sum(-1) + 0.5) / (truly_no + 1),
    )
    q_run = np.where(v == 1, strata.share, 1 - strata.share)
    youden_j = (sens_j + spec_j - 1)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        prevalence = np.clip((q_run + spec_j[..., None] - 1) / youden_j, 0.0, 1.0)
        p = np.where(v == 1, sens_j[..., None], 1 - sens_j[..., None]) * prevalence / strata.share
    p = np.clip(np.nan_to_num(p), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = w * (v - sens[..., None]) / truly_yes[..., None]
        b = w * ((1 - v) - spec[..., None]) / truly_no[..., None]
    spread = n * p * (1 - p)
    cov = np.stack(
        [
            np.stack([(spread * a * a).sum(-1), -(spread * a * b).sum(-1)], -1),
            np.stack([-(spread * a * b).sum(-1), (spread * b * b).sum(-1)], -1),
        ],
        -2,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = truly_yes**2 / (w * w * y).sum(-1), truly_no**2 / (w * w * (n - y)).sum(-1)
    return ErrorRates(
        sens=sens,
        spec=spec,
        cov=cov,
        labels=n.sum(-1),
        sens_ci=_jeffreys(sens, effective[0]),
        spec_ci=_jeffreys(spec, effective[1]),
        strata=strata,
    )


def _jeffreys(rate, effective):
    with np.errstate(invalid="ignore"):
        k = rate * effective
        return beta.ppf(0.025, k + 0.5, effective - k + 0.5), beta.ppf(
            0.975, k + 0.5, effective - k + 0.5
        )


def error_rates(
    human: Sequence[int], verdicts: Sequence[int], runs: Sequence[Hashable], run_yes_share: dict
) -> ErrorRates | None:
    """Weighted sens and spec over the labels (see label_weights), with their covariance and
    Jeffreys intervals; None when the labels hold no truth-yes or no truth-no item."""
    strata = Strata.from_labels(human, verdicts, runs, run_yes_share)
    if not (strata.yes > 0).any() or not (strata.labelled > strata.yes).any():
        return None
    r = _rates(strata)
    return ErrorRates(
        sens=float(r.sens),
        spec=float(r.spec),
        cov=np.asarray(r.cov),
        labels=int(r.labels),
        sens_ci=tuple(float(x) for x in r.sens_ci),
        spec_ci=tuple(float(x) for x in r.spec_ci),
        strata=strata,
    )


def judge_beats_coin(strata: Strata) -> np.ndarray:
    """One-sided mid-p of Fisher's exact test of 'truly-yes items are no more frequent among the
    judge's yes verdicts than among its no verdicts' (J ≤ 0), on the labels pooled over runs. The
    mid-p counts half the observed table: Fisher's own p-value, conditional on discrete margins,
    withheld 11 % of the corrections at 30 labels of a sens = spec = 0.9 judge at p = 0.9; the mid-p
    keeps close to the level without that excess."""
    yes_verdict = strata.verdict == 1
    k1, m1 = (strata.yes * yes_verdict).sum(-1), (strata.labelled * yes_verdict).sum(-1)
    k0, m0 = (strata.yes * ~yes_verdict).sum(-1), (strata.labelled * ~yes_verdict).sum(-1)
    return hypergeom.sf(k1, m1 + m0, k1 + k0, m1) + 0.5 * hypergeom.pmf(k1, m1 + m0, k1 + k0, m1)


@dataclass(frozen=True)
class Corrected:
    mean: np.ndarray | float
    ci: tuple
    method: str
    """STRATIFIED, ROGAN_GLADEN or COMBINED; `describe` words it."""
    label_variance: np.ndarray | float
    """The part of the variance that shrinks as 1/labels."""
    fixed_variance: np.ndarray | float
    """The part that does not: the run's N items for Rogan–Gladen (+), the finite-population
    correction of the run's own labels (−)."""
    youden: np.ndarray | float | None = None
    own_weight: np.ndarray | float | None = None
    """λ on the run's own labels when COMBINED."""
    parts: tuple = ()
    """COMBINED: the two (label_variance, fixed_variance) pairs it mixes."""

    def variance(self, scale: float = 1.0):
        """The variance with `scale` times the labels (each component's label part shrinking as
        1/labels)."""
        pieces = self.parts or ((self.label_variance, self.fixed_variance),)
        each = [np.maximum(label / scale + fixed, 1e-300) for label, fixed in pieces]
        return each[0] if len(each) == 1 else 1 / (1 / each[0] + 1 / each[1])


def describe(method: str, own: int = 0, other: int = 0, weight: float | None = None) -> str:
    return METHODS[method].format(own=own, other=other, weight=weight or 0.0)


def rogan_gladen(judge_mean, judged, rates: ErrorRates, confidence: float = 0.95) -> Corrected:
    """p = (q + spec − 1)/J, clipped to [0, 1], with its interval (see the module's step 3): from
    the posterior when the rates come with their labels, else by the delta method.

    `label_variance` is the delta method's gᵀ·cov·g (g = (−p, 1 − p)/J) either way, and
    `fixed_variance` the run's part at the estimated rates: the variances `labels_for_half_width`
    scales. The posterior of 30 labels is wider than 1/labels predicts from a larger count, and its
    1/J² averaged over a wide posterior exceeds the one at the rates. Planning from them named
    26–43 % more labels than a ±0.05 interval needs (`bench judge-shift`)."""
    z = norm.ppf(0.5 + confidence / 2)
    sens, spec, q = (
        np.asarray(rates.sens),
        np.asarray(rates.spec),
        np.asarray(judge_mean, dtype=float),
    )
    youden = sens + spec - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (q + spec - 1) / youden
        g = np.stack([-p, 1 - p], -1) / youden[..., None]
    label_var = np.einsum("...i,...ij,...j->...", g, rates.cov, g)
    run_var = run_variance(p, sens, spec, judged)
    mean = np.clip(p, 0.0, 1.0)
    if rates.strata is None:
        se = np.sqrt(label_var + run_var)
        low, high = p - z * se, p + z * se
    else:
        strata = rates.strata
        low, middle, high, spread = posterior_interval(
            q, judged, strata.yes, strata.labelled, strata.share, strata.verdict, confidence
        )
        low = middle - np.sqrt((middle - low) ** 2 + z * z * spread)
        high = middle + np.sqrt((high - middle) ** 2 + z * z * spread)
        # The interval holds the estimate it is printed beside; undefined rates give none.
        with np.errstate(invalid="ignore"):
            low = np.where(np.isfinite(p), np.minimum(low, mean), np.nan)
            high = np.where(np.isfinite(p), np.maximum(high, mean), np.nan)
    return Corrected(
        mean=mean,
        ci=(np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)),
        method=ROGAN_GLADEN,
        label_variance=label_var,
        fixed_variance=run_var,
        youden=youden,
    )


def after_a_shift(recent: Corrected, every: Corrected) -> Corrected:
    """When the shift test rejected: the correction from the later runs' labels, its interval
    stretched to hold the one from every labelled run's. The test rejects 5 % of the time when
    nothing moved. Such a false alarm picks a later half that looks unlike the earlier one, and
    that half's interval alone then covered 78–86 % (150 labels, `bench judge-shift`). The stretched
    interval covers under either account of the judge."""
    with np.errstate(invalid="ignore"):
        ci = (np.fmin(recent.ci[0], every.ci[0]), np.fmax(recent.ci[1], every.ci[1]))
    return replace(recent, ci=ci)


def own_labels(yes, labelled, judged, confidence: float = 0.95) -> Corrected:
    """The run's mean from labels of its own items: `yes`, `labelled` and `judged` per verdict (...,
    2), verdict no then yes. The MOVER-Jeffreys interval of statistics/stratified.py. The variance
    `labels_for_half_width` scales is the plug-in one at the labels' Jeffreys shares, split into its
    1/labels part and the finite-population correction: it names the count whose interval is ±0.05
    within 5 % (`bench judge-shift`)."""
    yes, labelled, judged = (np.asarray(a, dtype=float) for a in (yes, labelled, judged))
    share = judged / judged.sum(-1, keepdims=True)
    mean, low, high = mover_interval(yes, labelled, share, judged, confidence)
    jeffreys = (yes + 0.5) / (labelled + 1)
    unbounded = stratified_variance(jeffreys, labelled, share, np.full_like(judged, np.inf))
    bounded = stratified_variance(jeffreys, labelled, share, judged)
    return Corrected(
        mean=mean,
        ci=(low, high),
        method=STRATIFIED,
        label_variance=unbounded,
        fixed_variance=bounded - unbounded,
    )


def combine(own: Corrected, earlier: Corrected, confidence: float = 0.95) -> Corrected:
    """The inverse-variance mix of an estimate from the run's own labels and one from earlier runs'
    labels (independent given the run): λ = V_earlier/(V_own + V_earlier) on the own one, each V the
    one its interval's width implies, ((high − low)/2z)². The mix's variance V_own·V_earlier/(V_own
    + V_earlier) is below both: never wider than the labels alone."""
    z = norm.ppf(0.5 + confidence / 2)
    v_own, v_earlier = (((c.ci[1] - c.ci[0]) / (2 * z)) ** 2 for c in (own, earlier))
    weight = v_earlier / (v_own + v_earlier)
    mean = weight * own.mean + (1 - weight) * earlier.mean
    se = np.sqrt(weight**2 * v_own + (1 - weight) ** 2 * v_earlier)
    return Corrected(
        mean=mean,
        ci=(np.clip(mean - z * se, 0.0, 1.0), np.clip(mean + z * se, 0.0, 1.0)),
        method=COMBINED,
        label_variance=own.label_variance,
        fixed_variance=own.fixed_variance,
        own_weight=weight,
        parts=(
            (own.label_variance, own.fixed_variance),
            (earlier.label_variance, earlier.fixed_variance),
        ),
    )


def labels_for_half_width(
    half_width: float, corrected: Corrected, labels: int, confidence: float = 0.95
) -> int | None:
    """Labels for an interval of ±half_width, every label part of the variance shrinking as 1/labels
    (in the proportions of the labels so far); None when the fixed part alone (the run's N items)
    leaves more."""
    target = (half_width / norm.ppf(0.5 + confidence / 2)) ** 2
    if float(corrected.variance(1e12)) >= target:
        return None
    low, high = 1e-6, 1e12
    for _ in range(200):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if float(corrected.variance(middle)) > target else (low, middle)
    return max(1, math.ceil(high * labels))


def label_weights(
    verdicts: Sequence[int], runs: Sequence[Hashable], run_yes_share: dict
) -> np.ndarray:
    """Per label: (its run's judged share of its verdict) / (the share of that verdict among its
    run's labels).

    Within each run the weights sum to the run's labels, so every run counts by its labels."""
    f = np.asarray(verdicts, dtype=int)
    groups, shares = (
        np.asarray([str(r) for r in runs]),
        {str(k): v for k, v in run_yes_share.items()},
    )
    weights = np.ones(len(f))
    for run in np.unique(groups):
        mine = groups == run
        share_yes = float(shares[run])
        for v, share in ((1, share_yes), (0, 1.0 - share_yes)):
            labelled = (f[mine] == v).mean()
            if labelled > 0:
                weights[mine & (f == v)] = share / labelled
    return weights


def covers_both_verdicts(
    verdicts: Sequence[int], runs: Sequence[Hashable], run_yes_share: dict
) -> np.ndarray:
    """Per label: False when its run judged both verdicts but only one of them was labelled — its
    labels then stand for part of the run only, and weighting cannot restore the missing verdict's
    errors."""
    f = np.asarray(verdicts, dtype=int)
    groups, shares = (
        np.asarray([str(r) for r in runs]),
        {str(k): v for k, v in run_yes_share.items()},
    )
    keep = np.ones(len(f), dtype=bool)
    for run in np.unique(groups):
        mine = groups == run
        share_yes = float(shares[run])
        missing = [
            v
            for v in (0, 1)
            if not (f[mine] == v).any() and (share_yes if v else 1 - share_yes) > 0
        ]
        keep[mine] = not missing
    return keep


@dataclass(frozen=True)
class ShiftTest:
    earlier: int
    later: int
    """Labels in each half."""
    statistic: float | None
    p_value: float | None
    """None when a half cannot estimate both rates: then the assumption is untested."""
    later_mask: np.ndarray | None = None
    """Per label, True in the later half: the labels whose rates stand for the judge now when the
    test rejects."""

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
    """Wald χ² (2 df) of the earlier labelled runs' (sens, spec) against the later ones'. The halves
    are cut between runs, by `order` (a sortable key per label, its run's date), as near half the
    labels as a run boundary allows. Untested (p_value None) with one labelled run, or fewer than
    `min_labels` in a half."""
    y, f, key = (
        np.asarray(human, dtype=int),
        np.asarray(verdicts, dtype=int),
        np.asarray([str(o) for o in order]),
    )
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
    p_value = float(chi2.sf(statistic, 2))
    return ShiftTest(
        earlier=n_early, later=n_late, statistic=statistic, p_value=p_value, later_mask=~early
    )
