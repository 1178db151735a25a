"""Intervals of a mean and of a mean difference that cover at small n, whatever the distribution of
the scores.

Why these intervals (tests/unit/pipelines/evaluation/statistics/test_intervals_coverage.py; study
numbers in the docstrings of `jeffreys_interval`, `bounded_mean_interval`,
`paired_difference_interval` and `adjusted_paired_interval`): the percentile bootstrap
collapses to [1, 1] when every score is 1.0 and covers 0.65 at n = 10, p = 0.9;
Student t does the same on faithfulness-like scores with a point mass at 1.0 (0.38 at n = 10). The
Jeffreys-type intervals covered ≥ 0.93 on every distribution of the study from n = 5 on. For
proportions coverage oscillates with p, as for every non-exact binomial interval: over p ∈ [0.01,
0.99] the lowest is 0.87–0.89 at n = 10–50, at isolated p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

from pipelines.evaluation.statistics.scores import score_change

CONFIDENCE = 0.95
"""Two-sided confidence of every printed interval."""
ALPHA = (1.0 - CONFIDENCE) / 2.0
"""One-sided level of the diagnosis' band claims (a lone band claim stands exactly when the printed
two-sided 95 % interval clears the band's edge). The gate has its own, family-wise: GATE_ALPHA."""

JEFFREYS = "jeffreys"
JEFFREYS_BOUNDED_MEAN = "jeffreys-bounded-mean"
STUDENT_T = "student-t"
MOVER_PAIRED = "mover-jeffreys-paired"
MOVER_INDEPENDENT = "mover-jeffreys-independent"
ADJUSTED_PAIRED = "agresti-min-paired"
STUDENT_T_PAIRED = "student-t-paired"
WELCH = "welch"
CI_METHODS: dict[str, str] = {
    JEFFREYS: "Jeffreys interval for a proportion: Beta(x + ½, n − x + ½) quantiles",
    JEFFREYS_BOUNDED_MEAN: "Jeffreys-type interval for a bounded mean (pseudo-scores ½ at each end of the "
    "range, Beta matched to the Dirichlet posterior of the mean)",
    STUDENT_T: "Student t interval (range of the metric unknown)",
    MOVER_PAIRED: "MOVER over the positive and negative parts of the paired differences, each with a "
    "Jeffreys-type bounded-mean interval",
    ADJUSTED_PAIRED: "Wald interval of the mean paired difference over the differences plus Agresti–Min's "
    "pseudo-pairs (+h and −h, weight ½ each, and 0, weight 1; h the largest difference seen)",
    MOVER_INDEPENDENT: "MOVER over the two runs' Jeffreys-type bounded-mean intervals",
    STUDENT_T_PAIRED: "paired Student t interval (range of the metric unknown)",
    WELCH: "Welch interval for a difference of means (range of the metric unknown)",
}
"""`ci_method` labels and what each means, for reports."""

# --- Interval building blocks (vectorised over rows) ------------------------------------------


def _beta_shape(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, sample mean) per row of `unit` (values in [0, 1]; last axis = the sample).

    The Dirichlet (Bayesian-bootstrap) posterior of the mean, with one pseudo-score of weight ½ at 0
    and at 1, has mean m = (Σy + ½) / (n + 1) and variance
    V = (Σ(y − m)² + ½m² + ½(1 − m)²) / ((n + 1)(n + 2)); the Beta with that mean and variance has
    a + b = m(1 − m)/V − 1. For y ∈ [0, 1], (y − m)² ≤ y(1 − m)² + (1 − y)m² (the bounded-variance
    inequality), so a + b ≥ n + 1 with equality exactly when every y is 0 or 1, where
    (a, b) = (x + ½, n − x + ½): the Jeffreys posterior.
    """
    n = unit.shape[-1]
    total = n + 1.0
    m = (unit.sum(axis=-1) + 0.5) / total
    spread = ((unit - m[..., None]) ** 2).sum(axis=-1) + 0.5 * m**2 + 0.5 * (1.0 - m) ** 2
    variance = spread / (total * (total + 1.0))
    size = np.maximum(
        m * (1.0 - m) / variance - 1.0, total
    )  # ≥ n + 1 in exact arithmetic; guard rounding
    return m * size, (1.0 - m) * size, unit.mean(axis=-1)


def _beta_bounds(a, b, sample_mean, alpha) -> tuple[np.ndarray, np.ndarray]:
    """One-sided `alpha` lower and upper Beta quantiles, moved out to the sample mean where they
    miss it (all scores at one end of the range: the Jeffreys rule of a bound at 0 for x = 0, at 1
    for x = n)."""
    # scipy.special directly: the same quantiles as sps.beta.ppf / isf without their per-call
    # overhead (the gate computes a few per metric, `ragwatch bench gate` tens of thousands of
    # gates).
    low = special.betaincinv(a, b, alpha)
    high = special.betainccinv(a, b, alpha)
    return np.minimum(low, sample_mean), np.maximum(high, sample_mean)


def jeffreys_interval(
    successes, n, *, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed Jeffreys interval for a proportion x/n (arrays broadcast): the (1 −
    confidence)/2 and (1 + confidence)/2 quantiles of Beta(x + ½, n − x + ½), with the lower bound 0
    when x = 0 and the upper bound 1 when x = n (Brown, Cai & DasGupta 2001). 7/10 → [0.394, 0.907];
    52/52 → [0.953, 1].

    Exact coverage (binomial sum, no simulation) at 95 %: n = 10: 0.979 (p = 0.5), 0.987 (p = 0.9);
    n = 20: 0.959, 0.957; n = 50: 0.935, 0.942. Like Wilson's, its coverage oscillates with p (the
    lowest over p ∈ [0.01, 0.99] is 0.87–0.89 at n = 10–50, at isolated p); it was chosen over
    Wilson because Wilson's bounds are poor next to 0 and 1 (0.930 at n = 10, p = 0.9; 0.904 at p =
    0.99), where eval metrics live, and because it is the 0/1 case of the bounded-mean interval
    below.
    """
    x = np.asarray(successes, dtype=float)
    size = np.asarray(n, dtype=float)
    if np.any(size < 1) or np.any(x < 0) or np.any(x > size):
        raise ValueError("a proportion needs 0 ≤ successes ≤ n and n ≥ 1")
    return _beta_bounds(x + 0.5, size - x + 0.5, x / size, (1.0 - confidence) / 2.0)


def bounded_mean_interval(
    values, value_range: tuple[float, float] = (0.0, 1.0), *, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Jeffreys-type equal-tailed interval for the mean of scores bounded in `value_range` (each row
    of a 2-D array is one sample; n ≥ 1).

    Scores are rescaled to [0, 1]; the interval is the (1 ∓ confidence)/2 quantiles of the Beta of
    `_beta_shape`, mapped back. The pseudo-scores at both ends stand for what a small sample cannot
    have seen yet (one zero among many 1.0s), so ten scores of 1.0 give [0.78, 1.0], not [1, 1];
    their weight fades as 1/n. On 0/1 scores it equals `jeffreys_interval`.

    Simulated coverage of the 95 % interval, 4,000 samples per cell, at n = 5 / 10 / 20 / 50
    (Student t at n = 10 in brackets): Bernoulli(0.5) 0.94 / 0.98 / 0.95 / 0.935 (0.98);
    Bernoulli(0.9) 0.99 / 0.99 / 0.96 / 0.945 (0.64); Beta(5, 2) 0.99 / 0.98 / 0.97 / 0.97 (0.94);
    Beta(½, ½) 0.93 / 0.94 / 0.95 / 0.95 (0.94); 85 % at 1.0 + Beta(2, 2) 0.95 / 0.97 / 0.97 / 0.96
    (0.76); 95 % at 1.0 + U(0, 1) 0.98 / 0.96 / 0.97 / 0.97 (0.38); k/4, k ~ Bin(4, 0.85) 0.97 /
    0.96 / 0.96 / 0.96 (0.94); noise ΔF on [−1, 1] (70 % at 0) 1.00 / 1.00 / 1.00 / 0.98 (0.85). The
    price is width on scores bunched far from both ends: Beta(80, 20) (sd 0.04) gets 3.6× the t
    width at n = 10, 2.1× at 50, about 1.2× at 500, and ten scores between 0.68 and 0.72 give [0.59,
    0.77] where t gives [0.69, 0.71]. That is the honest answer for a metric with a point mass at an
    end of its range that ten draws may miss (answer relevancy scores a noncommittal answer 0); no
    interval narrower than that covers such mixtures.
    """
    lo, hi = value_range
    if not hi > lo:
        raise ValueError(f"empty value range {value_range}")
    data = np.asarray(values, dtype=float)
    if data.shape[-1] < 1:
        raise ValueError("an interval needs at least one score")
    unit = (data - lo) / (hi - lo)
    if np.any(unit < -1e-12) or np.any(unit > 1 + 1e-12):
        raise ValueError(f"scores outside the range {value_range}")
    a, b, mean = _beta_shape(np.clip(unit, 0.0, 1.0))
    low, high = _beta_bounds(a, b, mean, (1.0 - confidence) / 2.0)
    return lo + (hi - lo) * low, lo + (hi - lo) * high


def _is_binary(unit: np.ndarray) -> bool:
    return bool(np.all(_at_ends(unit)))


def _correlation(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation per row; 0 where either row is constant (no evidence of correlation)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    scale = np.sqrt((xc**2).sum(axis=-1) * (yc**2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=-1) / scale
    return np.where(scale > 0, r, 0.0)


def _mover(est1, low1, high1, est2, low2, high2, r) -> tuple[np.ndarray, np.ndarray]:
    """MOVER bounds of θ1 − θ2 from one-sided bounds of each part and their correlation r ≤ 0 (Zou &
    Donner 2008; Newcombe 1998 for independent proportions, r = 0)."""
    diff = est1 - est2
    a_low, b_high = est1 - low1, high2 - est2
    a_high, b_low = high1 - est1, est2 - low2
    lower = diff - np.sqrt(np.maximum(a_low**2 + b_high**2 - 2 * r * a_low * b_high, 0.0))
    upper = diff + np.sqrt(np.maximum(a_high**2 + b_low**2 - 2 * r * a_high * b_low, 0.0))
    return lower, upper


def paired_difference_interval(
    candidate,
    baseline,
    value_range: tuple[float, float] = (0.0, 1.0),
    *,
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed interval of E[candidate − baseline] from paired scores in `value_range` (rows =
    samples).

    Two constructions, chosen per row from the scores:

    - 0/1 scores (every score at an end of the range): MOVER-Jeffreys. With d = c − b, d = d⁺ − d⁻
      where d⁺ = max(d, 0) and d⁻ = max(−d, 0) are 0/1; each part gets a Jeffreys interval (rare
      discordant pairs are rare events) and MOVER combines them with their sample correlation (≤ 0:
      the parts are never both non-zero). Rare one-sided discordance is skewed, and symmetric
      intervals miss it: with 5 % of the pairs flipped (base 0.9) Agresti–Min's covers 0.90 at n =
      50, MOVER-Jeffreys 0.97.
    - any other bounded scores: `adjusted_paired_interval`, a Wald interval on the differences
      augmented with Agresti–Min's pseudo-pairs.

    Identical runs (every d = 0) get an interval of the width of "nothing discordant seen yet in n
    pairs", not [0, 0]. Simulated coverage of the 95 % interval
    (tests/unit/pipelines/evaluation/statistics/test_intervals_coverage.py; `ragwatch bench gate`
    for the nine gated metrics): see `adjusted_paired_interval`; on 0/1 scores with a drop of 0.10,
    n = 10 / 20 / 50: 0.99 / 0.97 / 0.96 (paired t 0.77 / 0.92 / 0.93); 5 % of the pairs flipped
    1.00 / 1.00 / 0.97 (t 0.39 / 0.64 / 0.88). It is for showing the size of a change; the gate and
    `eval compare` decide with randomization tests.
    """
    lo, hi = value_range
    width = hi - lo
    c, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if c.shape != b.shape:
        raise ValueError("paired scores need the same shape")
    diff = (c - b) / width
    alpha = (1.0 - confidence) / 2.0
    lower, upper = _split_mover(np.maximum(diff, 0.0), np.maximum(-diff, 0.0), alpha)
    binary = np.all(_at_ends((c - lo) / width) & _at_ends((b - lo) / width), axis=-1)
    if not np.all(binary):
        center, se = _pseudo_pair_moments(diff)
        z = _z(alpha)
        lower, upper = (
            np.where(binary, lower, center - z * se),
            np.where(binary, upper, center + z * se),
        )
    return width * lower, width * upper


def adjusted_paired_interval(
    differences, width: float = 1.0, *, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Wald interval of the mean of paired differences of scores on a range of `width`, the
    differences augmented with Agresti–Min's pseudo-pairs (rows = samples): +h and −h with weight ½
    each and 0 with weight 1, so the centre is Σd / (n + 2) and SE² = (Σ(d − centre)² over the
    augmented sample) / (n + 2)². On 0/1 scores with h = 1 this is Agresti & Min (2005) for paired
    proportions.

    h is the largest |d| seen (the range's width when every d is 0: nothing discordant seen yet),
    moved toward the width by (PSEUDO_PAIR_FADE / n)²: the width itself at 10 pairs, + 1/9 of the
    gap at 30, 1/100 at 100. At the width the pseudo-pairs stand for a large change not seen yet,
    which a small sample can miss (a drop on 14 % of the items is absent from 22 % of samples of
    10); past 30 pairs such a change is seen, and pseudo-pairs at the width would double the
    interval of scores that move by a few points (faithfulness-like scores: 0.99–1.00 coverage for
    MOVER-Jeffreys at n ≤ 60).

    Simulated coverage of the 95 % interval, 4,000 samples per cell. Faithfulness-like mixtures, 30
    % of the answers from a worse system, n = 10 / 20 / 30 / 50 / 100: 1.00 / 1.00 / 0.98 / 0.97 /
    0.97 (paired t 0.67 / 0.87 / 0.90 / 0.93 / 0.95). The bounded judge scores and MRR of `ragwatch
    bench gate`, 5- and 10-point drops, n = 30 / 60 / 100: local drops 0.93–0.96 / 0.95–0.97 /
    0.95–0.96, shifts 0.96–0.98 / 0.955–0.97 / 0.955–0.97, except answer relevancy's shift, 0.99 /
    0.99 / 0.98: its 2 % noncommittal replies (scored 0) put a heavy tail on the differences, over
    which t itself covers 0.97 / 0.97 / 0.95. With nothing changed and most differences 0, every
    interval covers 0 more often (0.96–0.98 at 100).
    """
    d = np.asarray(differences, dtype=float) / width
    if d.shape[-1] < 1:
        raise ValueError("an interval needs at least one pair")
    center, se = _pseudo_pair_moments(d)
    z = _z((1.0 - confidence) / 2.0)
    return width * (center - z * se), width * (center + z * se)


PSEUDO_PAIR_FADE = 10
"""Pairs at which the pseudo-pairs of `adjusted_paired_interval` sit at the range's width;
DEFAULT_MIN_PAIRS."""


def _pseudo_pair_moments(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centre, SE) of `adjusted_paired_interval` for differences on [−1, 1] (last axis = the
    pairs)."""
    n = d.shape[-1]
    largest = np.abs(d).max(axis=-1)
    h = np.where(largest > 0, largest, 1.0)
    h = h + (1.0 - h) * min(1.0, (PSEUDO_PAIR_FADE / n) ** 2)
    size = n + 2.0
    center = d.sum(axis=-1) / size
    spread = (
        ((d - center[..., None]) ** 2).sum(axis=-1)
        + 0.5 * (h - center) ** 2
        + 0.5 * (h + center) ** 2
        + center**2
    )
    return center, np.sqrt(spread) / size


def _z(alpha: float) -> float:
    """The standard normal's upper `alpha` quantile."""
    return -float(special.ndtri(alpha))


def _at_ends(unit: np.ndarray) -> np.ndarray:
    return (unit == 0.0) | (unit == 1.0)


def _split_mover(gain: np.ndarray, loss: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    ga, gb, gm = _beta_shape(np.clip(gain, 0.0, 1.0))
    la, lb, lm = _beta_shape(np.clip(loss, 0.0, 1.0))
    g_low, g_high = _beta_bounds(ga, gb, gm, alpha)
    l_low, l_high = _beta_bounds(la, lb, lm, alpha)
    return _mover(gm, g_low, g_high, lm, l_low, l_high, _correlation(gain, loss))


# --- One sample and one difference, with p-values consistent with their intervals --------------


@dataclass(frozen=True)
class MeanDistribution:
    """What an interval of one mean is the quantiles of: a Beta on the rescaled range (Jeffreys
    methods) or a Student t (unknown range)."""

    method: str
    mean: float
    lo: float | None = None
    hi: float | None = None
    a: float | None = None
    b: float | None = None
    sd: float | None = None
    df: float | None = None

    @classmethod
    def of(cls, values: np.ndarray, span: tuple[float, float] | None) -> MeanDistribution | None:
        n = values.size
        if n == 0:
            return None
        mean = float(values.mean())
        if span is None:
            if n < 2:
                return None
            return cls(STUDENT_T, mean, sd=float(values.std(ddof=1) / math.sqrt(n)), df=n - 1.0)
        lo, hi = span
        unit = np.clip((values - lo) / (hi - lo), 0.0, 1.0)
        a, b, _ = _beta_shape(unit)
        method = JEFFREYS if _is_binary(unit) else JEFFREYS_BOUNDED_MEAN
        return cls(method, mean, lo=lo, hi=hi, a=float(a), b=float(b))

    def bounds(self, alpha: float) -> tuple[float, float]:
        """One-sided-`alpha` lower and upper bounds (together: the 1 − 2α equal-tailed interval)."""
        if self.method == STUDENT_T:
            if self.sd == 0:
                return self.mean, self.mean
            half = float(sps.t.isf(alpha, self.df)) * self.sd
            return self.mean - half, self.mean + half
        unit_mean = (self.mean - self.lo) / (self.hi - self.lo)
        low, high = _beta_bounds(self.a, self.b, unit_mean, alpha)
        return self.lo + (self.hi - self.lo) * float(low), self.lo + (self.hi - self.lo) * float(
            high
        )

    def p_below(self, x0: float) -> float:
        """One-sided p-value of H0: mean ≥ x0 (small when the data say the mean is below x0); the
        upper bound at level α lies below x0 exactly when this is < α."""
        if self.method == STUDENT_T:
            if self.sd == 0:
                return 0.0 if self.mean < x0 else 1.0
            return float(sps.t.sf((x0 - self.mean) / self.sd, self.df))
        if self.mean >= x0:
            return max(0.5, self._posterior_above(x0))
        return self._posterior_above(x0)

    def p_above(self, x0: float) -> float:
        """One-sided p-value of H0: mean ≤ x0."""
        if self.method == STUDENT_T:
            if self.sd == 0:
                return 0.0 if self.mean > x0 else 1.0
            return float(sps.t.sf((self.mean - x0) / self.sd, self.df))
        if self.mean <= x0:
            return max(0.5, 1.0 - self._posterior_above(x0))
        return 1.0 - self._posterior_above(x0)

    def _posterior_above(self, x0: float) -> float:
        unit = (x0 - self.lo) / (self.hi - self.lo)
        if unit <= 0.0:
            return 1.0
        if unit >= 1.0:
            return 0.0
        return float(sps.beta.sf(unit, self.a, self.b))


@dataclass(frozen=True)
class Difference:
    """θ1 − θ2 by MOVER, by the pseudo-pair-adjusted Wald interval (`center` ± z·`sd`, times
    `scale`), or by t / Welch on an unknown range: its bounds at any one-sided level."""

    method: str
    estimate: float
    parts: tuple[MeanDistribution, MeanDistribution] | None = None
    scale: float = 1.0
    r: float = 0.0
    sd: float | None = None
    df: float | None = None
    center: float | None = None

    @property
    def has_interval(self) -> bool:
        """False for a t/Welch difference without a spread estimate (fewer than two scores on a
        side)."""
        return self.parts is not None or self.sd is not None

    def bounds(self, alpha: float) -> tuple[float, float]:
        if self.method == ADJUSTED_PAIRED:
            half = _z(alpha) * self.sd
            return self.scale * (self.center - half), self.scale * (self.center + half)
        if self.parts is None:
            if not self.sd:
                return self.estimate, self.estimate
            half = float(sps.t.isf(alpha, self.df)) * self.sd
            return self.estimate - half, self.estimate + half
        first, second = self.parts
        l1, h1 = first.bounds(alpha)
        l2, h2 = second.bounds(alpha)
        low, high = _mover(first.mean, l1, h1, second.mean, l2, h2, self.r)
        return self.scale * float(low), self.scale * float(high)


def paired_difference(c: np.ndarray, b: np.ndarray, span: tuple[float, float] | None) -> Difference:
    d = score_change(c, b)
    if span is None:
        sd = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size >= 2 else None
        return Difference(STUDENT_T_PAIRED, float(d.mean()), sd=sd, df=d.size - 1.0)
    width = span[1] - span[0]
    if not (_is_binary((c - span[0]) / width) and _is_binary((b - span[0]) / width)):
        center, se = _pseudo_pair_moments(d / width)
        return Difference(
            ADJUSTED_PAIRED, float(d.mean()), scale=width, sd=float(se), center=float(center)
        )
    gain, loss = np.maximum(d, 0.0) / width, np.maximum(-d, 0.0) / width
    unit = (0.0, 1.0)
    return Difference(
        MOVER_PAIRED,
        float(d.mean()),
        parts=(MeanDistribution.of(gain, unit), MeanDistribution.of(loss, unit)),
        scale=width,
        r=float(_correlation(gain, loss)),
    )


def independent_difference(
    c: np.ndarray, b: np.ndarray, span: tuple[float, float] | None
) -> Difference:
    estimate = float(c.mean() - b.mean())
    if span is None:
        if c.size < 2 or b.size < 2:
            return Difference(
                WELCH, estimate
            )  # no spread to estimate: a point, decided by min_pairs
        vc, vb = c.var(ddof=1) / c.size, b.var(ddof=1) / b.size
        se = math.sqrt(vc + vb)
        df = (vc + vb) ** 2 / (vc**2 / (c.size - 1) + vb**2 / (b.size - 1)) if se > 0 else 1.0
        return Difference(WELCH, estimate, sd=se, df=df)
    return Difference(
        MOVER_INDEPENDENT,
        estimate,
        parts=(MeanDistribution.of(c, span), MeanDistribution.of(b, span)),
    )


def proportion_ci(successes: int, n: int, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Jeffreys interval of a count of successes (gate pass rates, share of items with a label)."""
    low, high = jeffreys_interval(successes, n, confidence=confidence)
    return float(low), float(high)
