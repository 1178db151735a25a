"""How much of a score's interval is the judge's own noise: test-retest statistics of the retested
items.

A share of the judged items is judged twice (metrics/judge_retest.py): x1 the first judgement (the
run's score), x2 the retest. Per metric, over the n retested items both judgements scored ok:

- n: retested items with both judgements ok (fewer than MIN_RETESTS: "not enough retests", no
  figure).
- mean abs. difference: mean over the n items of |x1 − x2|.
- ICC: intraclass correlation ICC(1,1), one-way random effects, k = 2: (MSB − MSW) / (MSB + MSW),
  with MSB = 2·Σ(m_i − m)²/(n − 1) over the item means m_i and MSW = Σ(x1 − x2)²/(2n); None when MSB
  + MSW = 0 (every judgement equal).
- κ, agreement: for a metric with a 0/1 form (metrics/verdicts.py), Cohen's κ of the two judgements'
  verdicts and their share of equal verdicts; κ None when chance explains every agreement.
- σ²_judge, the judge-noise variance: half the mean squared difference, Σ(x1 − x2)²/(2n) (= Var(x1 −
  x2)/2 when the two judgements have no systematic shift; = MSW).
- σ²_total: sample variance (ddof 1) of the metric's first judgements over every item of the run
  scored ok (N).
- noise share: σ²_judge / σ²_total, capped at 1: the judge's share of the per-item variance, and so
  of the variance of the mean (σ²/N); the rest is item sampling.
- half-width: the run's item-sampling interval of the mean, half the width of the metric's 95 %
  `Aggregate` CI over all items (its method named).
- projections: the half-width scaled by √(variance of the mean after / before): averaging two
  judgements per item √(1 − share/2), a noiseless judge √(1 − share), twice the items 1/√2.

The projections assume the interval scales with the standard error of the mean (true for the
normal-theory intervals, close for the Jeffreys-type ones away from the ends of the range). The
noise share is estimated on the retested items and applied to every item: the retested items are a
hash-chosen, so unbiased, sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from pipelines.evaluation.metrics.verdicts import AUDITED
from pipelines.evaluation.statistics.aggregates import Aggregate
from pipelines.evaluation.statistics.judge_agreement import agreement
from pipelines.evaluation.statistics.scores import OVERALL

MIN_RETESTS = 10
"""Fewest items judged twice (both ok) for the figures to be stated; below, "not enough retests"."""
NOT_ENOUGH = "not enough retests"
JUDGE_DOMINATES_FROM = 0.5
"""Noise share from which the judge's noise is most of the interval: a steadier judge tightens it
more than it would with item sampling dominating."""


@dataclass(frozen=True)
class JudgeNoise:
    """One metric's test-retest figures (module docstring: every definition)."""

    metric: str
    n_retested: int
    """Items judged twice with both judgements ok: the n of every retest figure."""
    n_items: int
    """Items of the run whose first judgement is ok: the N of σ²_total and of the interval."""
    mean_abs_difference: float | None = None
    icc: float | None = None
    kappa: float | None = None
    """0/1 forms only (metrics/verdicts.py)."""
    verdict_agreement: float | None = None
    """0/1 forms only: share of retested items whose two verdicts are equal."""
    binary_form: str | None = None
    """What 1 means in the 0/1 form, when the metric has one."""
    judge_variance: float | None = None
    total_variance: float | None = None
    noise_share: float | None = None
    half_width: float | None = None
    ci_method: str | None = None
    half_width_two_judgements: float | None = None
    half_width_noiseless_judge: float | None = None
    half_width_double_items: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def enough(self) -> bool:
        return self.n_retested >= MIN_RETESTS

    @property
    def verdict(self) -> str:
        """In words: whether more items or a steadier judge would tighten the interval."""
        if not self.enough:
            return f"{NOT_ENOUGH}: {self.n_retested} of the {MIN_RETESTS} needed"
        if self.noise_share is None or self.half_width is None:
            return (
                "no spread to compare the judge's noise with"
                if self.noise_share is None
                else "no interval"
            )
        if self.noise_share == 0:
            return (
                f"the judge gave the same score twice on all {self.n_retested} retested items: its noise adds "
                f"nothing to ±{self.half_width:.3f}; only more items tighten it (twice the items: "
                f"±{self.half_width_double_items:.3f})"
            )
        who = (
            "the judge's noise is most of it: a steadier judge"
            if self.noise_share >= JUDGE_DOMINATES_FROM
            else "item sampling dominates: more items"
        )
        if self.noise_share == 1:
            # σ²_judge ≥ σ²_total: the items' own spread is lost in the judge's at this n, not
            # measured as 0.
            who = "the judge's noise is at least the whole per-item variance (share capped at 1): a steadier judge"
        return (
            f"{who} tightens it most; averaging 2 judgements per item would shrink ±{self.half_width:.3f} to "
            f"±{self.half_width_two_judgements:.3f}, a noiseless judge to ±{self.half_width_noiseless_judge:.3f}, "
            f"twice the items to ±{self.half_width_double_items:.3f}"
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "enough": self.enough, "verdict": self.verdict}


def intraclass_correlation(first: np.ndarray, second: np.ndarray) -> float | None:
    """ICC(1,1), one-way random effects, two judgements per item; None when every judgement is
    equal."""
    n = len(first)
    item_means = (first + second) / 2
    between = 2 * float(((item_means - item_means.mean()) ** 2).sum()) / (n - 1)
    within = float(((first - second) ** 2).sum()) / (2 * n)
    if math.isclose(between + within, 0.0, abs_tol=1e-15):
        return None
    return (between - within) / (between + within)


def judge_noise(
    metric: str,
    first: Sequence[float],
    second: Sequence[float],
    all_first: Sequence[float],
    aggregate: Aggregate | None,
) -> JudgeNoise:
    """The figures of one metric from its retested pairs (first[i], second[i]), the first judgements
    of every item scored ok (`all_first`) and the metric's overall Aggregate (its interval)."""
    x1, x2 = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if x1.shape != x2.shape:
        raise ValueError("judge noise needs as many retests as first judgements")
    everyone = np.asarray(all_first, dtype=float)
    form = AUDITED.get(metric)
    base = dict(
        metric=metric,
        n_retested=len(x1),
        n_items=len(everyone),
        binary_form=form.meaning if form else None,
    )
    if len(x1) < MIN_RETESTS:
        return JudgeNoise(**base)
    difference = x1 - x2
    judge_variance = float((difference**2).mean()) / 2
    total_variance = float(everyone.var(ddof=1)) if len(everyone) > 1 else None
    share = None
    if total_variance is not None and total_variance > 0:
        share = min(1.0, judge_variance / total_variance)
    elif total_variance == 0 and judge_variance == 0:
        share = 0.0  # every item the same score, and the judge gave it twice: no noise to speak of
    kappa = verdict_agreement = None
    if form is not None:
        agreed = agreement([form.verdict(v) for v in x1], [form.verdict(v) for v in x2])
        kappa, verdict_agreement = agreed.kappa, agreed.accuracy
    half_width = ci_method = None
    if aggregate is not None and aggregate.ci_low is not None and aggregate.ci_high is not None:
        half_width, ci_method = (aggregate.ci_high - aggregate.ci_low) / 2, aggregate.ci_method
    projections = {}
    if half_width is not None and share is not None:
        projections = dict(
            half_width_two_judgements=half_width * math.sqrt(1 - share / 2),
            half_width_noiseless_judge=half_width * math.sqrt(1 - share),
            half_width_double_items=half_width / math.sqrt(2),
        )
    return JudgeNoise(
        **base,
        mean_abs_difference=float(np.abs(difference).mean()),
        icc=intraclass_correlation(x1, x2),
        kappa=kappa,
        verdict_agreement=verdict_agreement,
        judge_variance=judge_variance,
        total_variance=total_variance,
        noise_share=share,
        half_width=half_width,
        ci_method=ci_method,
        **projections,
    )


def run_judge_noise(
    scores: Sequence, retests: Sequence, aggregates: Sequence[Aggregate]
) -> list[JudgeNoise]:
    """Per metric the run retested: its JudgeNoise, pairing each retest with the item's first
    judgement (both ok)."""
    first = {(s.metric, s.item_id): s.value for s in scores if s.status == "ok"}
    overall = {a.metric: a for a in aggregates if a.stratum == OVERALL}
    out = []
    for metric in dict.fromkeys(r.metric for r in retests):
        pairs = [
            (first[(metric, r.item_id)], r.value)
            for r in retests
            if r.metric == metric and r.status == "ok" and (metric, r.item_id) in first
        ]
        everyone = [value for (m, _), value in first.items() if m == metric]
        out.append(
            judge_noise(
                metric, [a for a, _ in pairs], [b for _, b in pairs], everyone, overall.get(metric)
            )
        )
    return out
