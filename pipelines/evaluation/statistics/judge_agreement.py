"""How far the judge can be trusted on a 0/1 metric, from the items people labelled.

Agreement: Cohen's κ, accuracy and the confusion matrix of human label vs judge verdict. The audit
queue draws the same number of items per judge verdict (outputs/judge_audit.py), so the labelled
items over-represent the rarer verdict: each labelled item is weighted by (its run's share of its
verdict) / (the share of that verdict among its run's labels), which makes κ and accuracy describe
the labelled runs' judged items, not the queue. The confusion matrix shows the raw counts.

The run's mean of the metric's 0/1 form, beside the judge-only one (the verdicts taken as truth:
narrow and, when the judge errs one way more than the other, wrong): the judge-corrected mean of
statistics/misclassification.py, by where the labels come from: this run's own labels weighted to
its verdict mix (the labels alone, which no correction can beat), Rogan–Gladen with the judge's
error rates from earlier runs' labels, or both mixed by their inverse variances. Earlier runs'
labels carry over only through the judge's error rates, an assumption the error-rate shift test
checks between those runs: Rogan–Gladen is given only when that test ran and did not reject, and the
judge is shown better than a coin.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import norm

from pipelines.evaluation.statistics.misclassification import (
    COIN_ALPHA,
    Strata,
    after_a_shift,
    combine,
    covers_both_verdicts,
    describe,
    error_rate_shift,
    error_rates,
    judge_beats_coin,
    label_weights,
    labels_for_half_width,
    own_labels,
    rogan_gladen,
)

TRUSTED_FROM_KAPPA = 0.6
"""κ from which the judge is trustworthy for a metric ("substantial" agreement, Landis & Koch)."""
MIN_LABELS = 20
"""Fewest labelled items for the report to call the judge trustworthy and to put a corrected
interval on the mean."""
CONFIDENCE = 0.95


def trustworthy(labels: int, kappa: float | None) -> bool:
    """κ ≥ 0.6 on at least MIN_LABELS labelled items."""
    return labels >= MIN_LABELS and kappa is not None and kappa >= TRUSTED_FROM_KAPPA


@dataclass(frozen=True)
class Agreement:
    n: int
    kappa: float | None
    """None when chance alone explains every agreement (humans or judge all gave one answer)."""
    accuracy: float
    confusion: dict[str, int]
    """Raw counts: `judge_yes_human_yes`, `judge_yes_human_no`, `judge_no_human_yes`,
    `judge_no_human_no`."""


def agreement(
    human: Sequence[int], judge: Sequence[int], weights: Sequence[float] | None = None
) -> Agreement:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) and accuracy p_o, from the (weighted) 2×2 table of human
    vs judge."""
    y, f = np.asarray(human, dtype=int), np.asarray(judge, dtype=int)
    if y.shape != f.shape or not len(y):
        raise ValueError("agreement needs as many judge verdicts as human labels, at least one")
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    table = np.array([[w[(f == j) & (y == h)].sum() for h in (1, 0)] for j in (1, 0)]) / w.sum()
    observed = table[0, 0] + table[1, 1]
    judge_yes, human_yes = table[0].sum(), table[:, 0].sum()
    expected = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    kappa = None if math.isclose(expected, 1.0) else float((observed - expected) / (1 - expected))
    counts = {
        f"judge_{j}_human_{h}": int(((f == jv) & (y == hv)).sum())
        for j, jv in (("yes", 1), ("no", 0))
        for h, hv in (("yes", 1), ("no", 0))
    }
    return Agreement(n=len(y), kappa=kappa, accuracy=float(observed), confusion=counts)


@dataclass(frozen=True)
class Calibration:
    """One metric of one suite: agreement over every label so far, and the run's mean judge-only and
    corrected."""

    suite: str
    metric: str
    meaning: str
    labels: int
    judged: int
    """Judged items of the run (ok scores) the estimates are about."""
    agreement: Agreement | None
    judge_mean: float | None
    judge_ci: tuple[float, float] | None
    """The judge-only interval: the verdicts taken as truth (normal approximation)."""
    corrected_mean: float | None = None
    corrected_ci: tuple[float, float] | None = None
    """The judge-corrected mean; None when withheld (the notes say why)."""
    corrected_method: str | None = None
    """How the corrected interval was computed (misclassification.METHODS), as every surface prints
    it."""
    sensitivity: float | None = None
    specificity: float | None = None
    """The judge's error rates over the labelled runs: P(yes | truly yes), P(no | truly no)."""
    sensitivity_ci: tuple[float, float] | None = None
    specificity_ci: tuple[float, float] | None = None
    """Their Jeffreys 95 % intervals."""
    shift_p_value: float | None = None
    """The error-rate shift test between earlier and later labelled runs; None when untested."""
    half_width: float = 0.05
    labels_needed: int | None = None
    """Labelled items for a corrected interval of ±`half_width`
    (misclassification.labels_for_half_width); None when unreachable or unknown."""
    notes: list[str] = field(default_factory=list)

    @property
    def more_labels(self) -> int | None:
        return None if self.labels_needed is None else max(0, self.labels_needed - self.labels)

    @property
    def trusted(self) -> bool | None:
        """None without a label; False below κ 0.6 or with fewer than MIN_LABELS labels."""
        if not self.labels:
            return None
        return trustworthy(self.labels, self.agreement.kappa if self.agreement else None)

    @property
    def verdict(self) -> str:
        if self.trusted is None:
            return "no human labels yet"
        if self.trusted:
            return "trustworthy"
        kappa = self.agreement.kappa if self.agreement else None
        if self.labels < MIN_LABELS:
            return f"not trustworthy yet: {self.labels} labels, {MIN_LABELS} needed"
        if kappa is None:
            return "not trustworthy: κ undefined (one answer only)"
        return f"not trustworthy: κ {kappa:.2f} < {TRUSTED_FROM_KAPPA}"

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "more_labels": self.more_labels,
            "trusted": self.trusted,
            "verdict": self.verdict,
        }


def calibrate(
    suite: str,
    metric: str,
    meaning: str,
    *,
    human: Sequence[int],
    labelled_verdicts: Sequence[int],
    labelled_runs: Sequence[str],
    labelled_days: Sequence[str],
    run_yes_share: Mapping[str, float],
    judged_verdicts: Sequence[int],
    run: str = "",
    half_width: float = 0.05,
    confidence: float = CONFIDENCE,
) -> Calibration:
    """Agreement on the n labelled items (human label Y, judge verdict Ŷ, the run each was judged in
    and that run's date and judge-yes share) and the mean of the metric's 0/1 form over this run's N
    judged items (Ŷ): judge-only, and corrected by the judge's error rates
    (statistics/misclassification.py)."""
    y, f, pop = (np.asarray(v, dtype=int) for v in (human, labelled_verdicts, judged_verdicts))
    runs, days = (
        np.asarray([str(r) for r in labelled_runs]),
        np.asarray([str(d) for d in labelled_days]),
    )
    z = norm.ppf(0.5 + confidence / 2)
    judge_mean = float(pop.mean()) if len(pop) else None
    judge_se = float(pop.std()) / math.sqrt(len(pop)) if len(pop) > 1 else None
    judge_ci = (
        _clip(judge_mean - z * judge_se, judge_mean + z * judge_se)
        if judge_se is not None
        else None
    )
    base = dict(
        suite=suite,
        metric=metric,
        meaning=meaning,
        labels=len(y),
        judged=len(pop),
        judge_mean=judge_mean,
        judge_ci=judge_ci,
        half_width=half_width,
    )
    if not len(y):
        return Calibration(**base, agreement=None)
    shares = {str(k): float(v) for k, v in run_yes_share.items()}
    known = np.asarray([r in shares for r in runs], dtype=bool)
    # A run whose verdict mix was not recorded (queued before ragwatch kept it) weighs its labels
    # equally.
    weights = np.ones(len(y))
    if known.any():
        weights[known] = label_weights(f[known], runs[known], shares)
    agreed = agreement(y, f, weights)
    usable = known.copy()
    if known.any():
        usable[known] = covers_both_verdicts(f[known], runs[known], shares)
    notes = []
    if left := len(y) - int(usable.sum()):
        notes.append(
            f"{left} labels left out of the correction: their run's verdict mix is unknown, or only one "
            "of its verdicts was labelled"
        )
    y, f, runs, days = y[usable], f[usable], runs[usable], days[usable]
    if len(pop) < 2:
        notes.append("the corrected interval needs 2 judged items")
        return Calibration(**base, agreement=agreed, notes=notes)
    rated = dict(base, agreement=agreed)
    if (rates := error_rates(y, f, runs, shares)) is not None:
        rated.update(
            sensitivity=rates.sens,
            specificity=rates.spec,
            sensitivity_ci=rates.sens_ci,
            specificity_ci=rates.spec_ci,
        )
    own = runs == run
    judged = np.array([(pop == 0).sum(), (pop == 1).sum()])
    labelled = np.array([(f[own] == 0).sum(), (f[own] == 1).sum()])
    mine = None
    if own.any() and ((labelled > 0) | (judged == 0)).all():
        mine = own_labels(
            np.array([y[own & (f == 0)].sum(), y[own & (f == 1)].sum()]),
            labelled,
            judged,
            confidence,
        )
    earlier, why = _from_earlier_runs(
        y[~own], f[~own], runs[~own], days[~own], shares, judge_mean, len(pop), confidence
    )
    rated["shift_p_value"] = why.pop("shift_p_value", None)
    if mine is None and earlier is None:
        return Calibration(**rated, notes=notes + why["notes"])
    if earlier is not None and mine is not None:
        corrected = combine(mine, earlier, confidence)
    else:
        corrected = mine or earlier
    own_count, other_count = int(own.sum()), int((~own).sum())
    if earlier is not None:
        notes += why["notes"]
        other_count = why["used"]
    method = describe(
        corrected.method,
        own=own_count,
        other=other_count,
        weight=None if corrected.own_weight is None else float(corrected.own_weight),
    )
    if mine is not None and earlier is None and other_count:
        notes += (
            [f"{other_count} labels of earlier runs not used: {why['notes'][-1]}"]
            if why["notes"]
            else []
        )
    needed = labels_for_half_width(
        half_width, corrected, own_count if mine is not None else other_count, confidence
    )
    if needed is None:
        notes.append(f"±{half_width} is out of reach with {len(pop)} judged items: judge more")
    return Calibration(
        **rated,
        corrected_mean=float(corrected.mean),
        corrected_ci=(float(corrected.ci[0]), float(corrected.ci[1])),
        corrected_method=method,
        labels_needed=needed,
        notes=notes,
    )


def _from_earlier_runs(y, f, runs, days, shares, judge_mean, judged, confidence):
    """Rogan–Gladen from labels of other runs, or None and why not. When the judge's error rates
    moved between the earlier and later labelled runs, the later runs' labels alone give them, and
    the interval also holds every run's (misclassification.after_a_shift)."""
    if not len(y):
        return None, {"notes": []}
    if len(y) < MIN_LABELS:
        return None, {
            "notes": [
                f"Rogan–Gladen needs at least {MIN_LABELS} labels of earlier runs, {len(y)} so far"
            ]
        }
    if (refused := _not_rated(y, f, runs, shares)) is not None:
        return None, {"notes": [refused]}
    # Halves cut between runs in date order; two runs of one day (two targets) are ordered by their
    # ids.
    shift = error_rate_shift(y, f, runs, np.char.add(np.char.add(days, "\x00"), runs), shares)
    if shift.p_value is None:
        return None, {
            "notes": [
                (
                    f"the judge's error rates are untested across runs ({shift.earlier} earlier, {shift.later} "
                    f"later labels; 10 each needed, from 2 runs at least): label this run's items"
                )
            ]
        }
    notes, every = [], None
    if shift.moved:
        every = rogan_gladen(judge_mean, judged, error_rates(y, f, runs, shares), confidence)
        moved = f"the judge's error rates moved between the earlier and later labelled runs (p = {shift.p_value:.3f})"
        later = shift.later_mask
        if (refused := _not_rated(y[later], f[later], runs[later], shares)) is not None:
            return None, {
                "shift_p_value": shift.p_value,
                "notes": [f"{moved}; the later ones alone: {refused}"],
            }
        y, f, runs = y[later], f[later], runs[later]
        notes.append(
            f"{moved}: corrected with the {len(y)} labels of the later runs only; the interval also "
            "holds every run's, in case the test erred"
        )
    rates = error_rates(y, f, runs, shares)
    corrected = rogan_gladen(judge_mean, judged, rates, confidence)
    if every is not None:
        corrected = after_a_shift(corrected, every)
    return corrected, {"shift_p_value": shift.p_value, "notes": notes, "used": len(y)}


def _not_rated(y, f, runs, shares) -> str | None:
    """Why these labels cannot give the judge's error rates, or None when they can."""
    if error_rates(y, f, runs, shares) is None:
        return "the labels hold only one truth (all yes or all no): the judge's error rates are unknown"
    if float(judge_beats_coin(Strata.from_labels(y, f, runs, shares))) >= COIN_ALPHA:
        return (
            "the judge is not shown better than a coin (its yes verdicts are not shown truly yes more often than "
            "its no verdicts; Fisher's exact test): no correction"
        )
    return None


def _clip(low: float, high: float) -> tuple[float, float]:
    return max(0.0, low), min(1.0, high)
