"""Aggregates with intervals that cover at small n, paired comparisons and the regression gate.

Every figure, one line each (figure | exact definition | interval or test | multiplicity correction):

| mean | mean of the ok scores of one metric in one stratum; failed/skipped are counted (n_failed, n_skipped), never averaged | its CI below | none |
| CI of 0/1 scores | every ok score at an end of the range (recall@k, precision@1, TSA, pass rates) | `jeffreys`: equal-tailed 95 %, Beta(x + ½, n − x + ½) quantiles 0.025/0.975; 0 when x = 0, 1 when x = n | none |
| CI of bounded scores | faithfulness, answer relevancy, context precision/recall, MRR, precision@k on [0, 1]; noise ΔF on [−1, 1] | `jeffreys-bounded-mean`: equal-tailed 95 %, Beta quantiles at an effective n (see `bounded_mean_interval`) | none |
| CI, range unknown | a metric outside METRIC_RANGES whose values leave [0, 1] | `student-t`: mean ± t(0.975, n − 1)·sd/√n, n ≥ 2 | none |
| paired difference | mean of candidate_i − baseline_i over the items ok in both runs | CI `mover-jeffreys-paired`, equal-tailed 95 % (`paired_difference_interval`); p: two-sided exact sign-flip test (`sign_flip_test`) | none alone |
| independent difference | mean(candidate) − mean(baseline) when the runs share no item (online) | CI `mover-jeffreys-independent`, MOVER of the two bounded-mean intervals; p: permutation test (`permutation_test`) | none alone |
| gate: missing items | baseline items (any status) with no score of the metric in the candidate; fails when > 0 | deterministic | none |
| gate: failure rise | not-ok (failed or skipped) share, candidate − baseline, over shared items; fails when > max_failure_rise (0.05) and significant | one-sided exact McNemar (sign-flip) test, Fisher's exact test when no item is shared; α = 0.025 | none (see `regression_gate`) |
| gate: too few pairs | items ok in both runs (independent: in each run); fails when < min_pairs (10) | deterministic | none |
| gate: score drop | worsening = baseline − candidate (candidate − baseline for LOWER_IS_BETTER); fails when > min_tolerance (0.02) and H0 "nothing changed" is rejected | one-sided randomization test: paired sign-flip (exact up to 16 non-zero differences), permutation when no item is shared; α = 0.025 | Holm over the gated metrics |
| eval compare row | paired difference B − A per metric and stratum | 95 % MOVER-Jeffreys CI; two-sided sign-flip p, H0 "A and B exchangeable" | Benjamini–Hochberg over all rows, q = 0.05 |
| diagnosis band | the mean lies in its band (problem/watch: or a worse one), with n ≥ min_n (10) | one-sided p from the aggregate's interval distribution (diagnose.py) | Benjamini–Hochberg over every band claim, q = 0.025 |

0/1 scores are recognised from the values, not from the metric's name: the bounded-mean interval *is*
the Jeffreys interval on such data, so the check only decides which label is printed, and a name list
would mislabel precision@k (k > 1, values in steps of 1/k) or a faithfulness stratum whose answers
each had one claim. The one-sided α = 0.025 and the BH level q = 0.025 of band claims make a lone
band claim stand exactly when the printed two-sided 95 % interval clears the band's edge.

Intervals and tests answer different questions. An interval of a mean or of a mean difference must
cover whatever the distribution of the scores, so with few items it allows for mass not seen yet at
the ends of the range. The gate and `eval compare` test "nothing changed" (the runs are exchangeable
item by item), for which randomization tests are exact at every n with no assumption on the scores:
8 of 12 items worse by 0.15 and none better is p = 2⁻⁸ although the 95 % interval of the difference
still reaches above 0. Under that null the gate's false alarms are at most α per metric (Holm: α per
gate); a real drop of 0.10 in recall over 200 items is caught ≥ 95 % of the time (tests/test_gate.py).

Why these intervals (tests/test_stats_coverage.py; study numbers in the docstrings of
`jeffreys_interval`, `bounded_mean_interval` and `paired_difference_interval`): the percentile
bootstrap ragwatch printed before collapses to [1, 1] when every score is 1.0 and covers 0.65 at
n = 10, p = 0.9; Student t does the same on faithfulness-like scores with a point mass at 1.0 (0.38
at n = 10). The Jeffreys-type intervals covered ≥ 0.93 on every distribution of the study from n = 5
on. For proportions coverage oscillates with p, as for every non-exact binomial interval: over
p ∈ [0.01, 0.99] the lowest is 0.87–0.89 at n = 10–50, at isolated p.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

import numpy as np
from scipy import stats as sps

OVERALL = "all"
"""The stratum that pools every item of a run."""

LOWER_IS_BETTER = frozenset({"noise_delta_f", "ragas_noise_sensitivity"})
"""Metrics where a rise is the regression; every other metric is better when higher."""

CONFIDENCE = 0.95
"""Two-sided confidence of every printed interval."""
ALPHA = (1.0 - CONFIDENCE) / 2.0
"""One-sided level of the gate's tests and the diagnosis' band claims (a lone band claim stands exactly
when the printed two-sided 95 % interval clears the band's edge)."""
COMPARE_FDR = 1.0 - CONFIDENCE
"""Benjamini–Hochberg level of `eval compare`'s two-sided tests."""

DEFAULT_MIN_PAIRS = 10
"""Fewest items scored ok in both runs for the gate to decide on a metric: the smallest n at which the
intervals here were validated (coverage ≥ 0.93 at n = 10). Below it a few survivors of many failures
would stand for the run, and "no significant drop" would say nothing."""
DEFAULT_MAX_FAILURE_RISE = 0.05
"""Largest rise of the not-ok (failed or skipped) share the gate tolerates: five points."""

HOLM = "holm"
BENJAMINI_HOCHBERG = "benjamini-hochberg"

JEFFREYS = "jeffreys"
JEFFREYS_BOUNDED_MEAN = "jeffreys-bounded-mean"
STUDENT_T = "student-t"
MOVER_PAIRED = "mover-jeffreys-paired"
MOVER_INDEPENDENT = "mover-jeffreys-independent"
STUDENT_T_PAIRED = "student-t-paired"
WELCH = "welch"
SIGN_FLIP_EXACT = "sign-flip-exact"
SIGN_FLIP_MONTE_CARLO = "sign-flip-monte-carlo"
PERMUTATION_MONTE_CARLO = "permutation-monte-carlo"
CI_METHODS: dict[str, str] = {
    JEFFREYS: "Jeffreys interval for a proportion: Beta(x + ½, n − x + ½) quantiles",
    JEFFREYS_BOUNDED_MEAN: "Jeffreys-type interval for a bounded mean (pseudo-scores ½ at each end of the "
                           "range, Beta matched to the Dirichlet posterior of the mean)",
    STUDENT_T: "Student t interval (range of the metric unknown)",
    MOVER_PAIRED: "MOVER over the positive and negative parts of the paired differences, each with a "
                  "Jeffreys-type bounded-mean interval",
    MOVER_INDEPENDENT: "MOVER over the two runs' Jeffreys-type bounded-mean intervals",
    STUDENT_T_PAIRED: "paired Student t interval (range of the metric unknown)",
    WELCH: "Welch interval for a difference of means (range of the metric unknown)",
}  # fmt: skip
"""`ci_method` labels and what each means, for reports."""
TEST_METHODS: dict[str, str] = {
    SIGN_FLIP_EXACT: "paired sign-flip randomization test, all 2^m sign patterns (McNemar's exact test on 0/1)",
    SIGN_FLIP_MONTE_CARLO: "paired sign-flip randomization test, seeded random sign patterns plus the observed one",
    PERMUTATION_MONTE_CARLO: "two-sample permutation test, seeded random splits plus the observed one",
}
"""`test_method` labels of the gate's score tests."""

METRIC_RANGES: dict[str, tuple[float, float]] = {
    "faithfulness": (0.0, 1.0),
    "answer_relevancy": (0.0, 1.0),
    "context_precision": (0.0, 1.0),
    "context_recall": (0.0, 1.0),
    "ragas_noise_sensitivity": (0.0, 1.0),
    "noise_delta_f": (-1.0, 1.0),
    "tool_selection_accuracy": (0.0, 1.0),
    "tool_call_accuracy": (0.0, 1.0),
    "tool_call_validity": (0.0, 1.0),
    "mrr": (0.0, 1.0),
}
"""The nominal range of each metric; `recall@k` and `precision@k` are on [0, 1] too. A score outside
its nominal range (a cosine below 0 in answer relevancy) widens the range to include it."""
_RETRIEVAL_AT_K = re.compile(r"^(recall|precision)@\d+$")

# Study constants kept for `bootstrap_ci`, the interval ragwatch printed before (see its docstring).
N_RESAMPLES = 2_000
SEED = 0
_MAX_CELLS = 4_000_000
"""Bootstrap indices drawn per chunk (32 MB of int64): big evals stay vectorised in bounded memory."""
EXACT_SIGN_FLIPS = 16
"""Up to this many non-zero paired differences the sign-flip test enumerates all 2^m patterns (65,536)."""
RANDOMIZATION_DRAWS = 10_000
"""Random re-labellings of a Monte Carlo randomization test (p-values resolved to about ±0.001 at 0.005)."""


class ScoreLike(Protocol):
    item_id: str
    stratum: str
    metric: str
    value: float | None
    status: str


def value_range(metric: str, values: Sequence[float] | np.ndarray = ()) -> tuple[float, float] | None:
    """The range the metric's mean lives on: its nominal range widened to the values seen, [0, 1] for an
    unknown metric whose values all lie in it, None (range unknown) otherwise."""
    data = np.asarray(values, dtype=float)
    nominal = METRIC_RANGES.get(metric) or ((0.0, 1.0) if _RETRIEVAL_AT_K.match(metric) else None)
    if nominal is None:
        if data.size and (data.min() < 0.0 or data.max() > 1.0):
            return None
        nominal = (0.0, 1.0)
    if not data.size:
        return nominal
    return min(nominal[0], float(data.min())), max(nominal[1], float(data.max()))


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
    size = np.maximum(m * (1.0 - m) / variance - 1.0, total)  # ≥ n + 1 in exact arithmetic; guard rounding
    return m * size, (1.0 - m) * size, unit.mean(axis=-1)


def _beta_bounds(a, b, sample_mean, alpha) -> tuple[np.ndarray, np.ndarray]:
    """One-sided `alpha` lower and upper Beta quantiles, moved out to the sample mean where they miss it
    (all scores at one end of the range: the Jeffreys rule of a bound at 0 for x = 0, at 1 for x = n)."""
    low = sps.beta.ppf(alpha, a, b)
    high = sps.beta.isf(alpha, a, b)
    return np.minimum(low, sample_mean), np.maximum(high, sample_mean)


def jeffreys_interval(successes, n, *, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed Jeffreys interval for a proportion x/n (arrays broadcast): the (1 − confidence)/2 and
    (1 + confidence)/2 quantiles of Beta(x + ½, n − x + ½), with the lower bound 0 when x = 0 and the
    upper bound 1 when x = n (Brown, Cai & DasGupta 2001). 7/10 → [0.394, 0.907]; 52/52 → [0.953, 1].

    Exact coverage (binomial sum, no simulation) at 95 %: n = 10: 0.979 (p = 0.5), 0.987 (p = 0.9);
    n = 20: 0.959, 0.957; n = 50: 0.935, 0.942. Like Wilson's, its coverage oscillates with p (the lowest
    over p ∈ [0.01, 0.99] is 0.87–0.89 at n = 10–50, at isolated p); it was chosen over Wilson because
    Wilson's bounds are poor next to 0 and 1 (0.930 at n = 10, p = 0.9; 0.904 at p = 0.99), where eval
    metrics live, and because it is the 0/1 case of the bounded-mean interval below.
    """
    x = np.asarray(successes, dtype=float)
    size = np.asarray(n, dtype=float)
    if np.any(size < 1) or np.any(x < 0) or np.any(x > size):
        raise ValueError("a proportion needs 0 ≤ successes ≤ n and n ≥ 1")
    return _beta_bounds(x + 0.5, size - x + 0.5, x / size, (1.0 - confidence) / 2.0)


def bounded_mean_interval(values, value_range: tuple[float, float] = (0.0, 1.0), *,
                          confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Jeffreys-type equal-tailed interval for the mean of scores bounded in `value_range` (each row of a
    2-D array is one sample; n ≥ 1).

    Scores are rescaled to [0, 1]; the interval is the (1 ∓ confidence)/2 quantiles of the Beta of
    `_beta_shape`, mapped back. The pseudo-scores at both ends stand for what a small sample cannot
    have seen yet (one zero among many 1.0s), so ten scores of 1.0 give [0.78, 1.0], not [1, 1]; their
    weight fades as 1/n. On 0/1 scores it equals `jeffreys_interval`.

    Simulated coverage of the 95 % interval, 4,000 samples per cell, at n = 5 / 10 / 20 / 50 (Student t
    at n = 10 in brackets): Bernoulli(0.5) 0.94 / 0.98 / 0.95 / 0.935 (0.98); Bernoulli(0.9) 0.99 / 0.99 /
    0.96 / 0.945 (0.64); Beta(5, 2) 0.99 / 0.98 / 0.97 / 0.97 (0.94); Beta(½, ½) 0.93 / 0.94 / 0.95 / 0.95
    (0.94); 85 % at 1.0 + Beta(2, 2) 0.95 / 0.97 / 0.97 / 0.96 (0.76); 95 % at 1.0 + U(0, 1) 0.98 / 0.96 /
    0.97 / 0.97 (0.38); k/4, k ~ Bin(4, 0.85) 0.97 / 0.96 / 0.96 / 0.96 (0.94); noise ΔF on [−1, 1]
    (70 % at 0) 1.00 / 1.00 / 1.00 / 0.98 (0.85). The price is width on scores bunched far from both ends:
    Beta(80, 20) (sd 0.04) gets 3.6× the t width at n = 10, 2.1× at 50, about 1.2× at 500, and ten
    scores between 0.68 and 0.72 give [0.59, 0.77] where t gives [0.69, 0.71]. That is the honest
    answer for a metric with a point mass at an end of its range that ten draws may miss (answer
    relevancy scores a noncommittal answer 0); no interval narrower than that covers such mixtures.
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
    return bool(np.all((unit == 0.0) | (unit == 1.0)))


def _correlation(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation per row; 0 where either row is constant (no evidence of correlation)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    scale = np.sqrt((xc**2).sum(axis=-1) * (yc**2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=-1) / scale
    return np.where(scale > 0, r, 0.0)


def _mover(est1, low1, high1, est2, low2, high2, r) -> tuple[np.ndarray, np.ndarray]:
    """MOVER bounds of θ1 − θ2 from one-sided bounds of each part and their correlation r ≤ 0 (Zou & Donner
    2008; Newcombe 1998 for independent proportions, r = 0)."""
    diff = est1 - est2
    a_low, b_high = est1 - low1, high2 - est2
    a_high, b_low = high1 - est1, est2 - low2
    lower = diff - np.sqrt(np.maximum(a_low**2 + b_high**2 - 2 * r * a_low * b_high, 0.0))
    upper = diff + np.sqrt(np.maximum(a_high**2 + b_low**2 - 2 * r * a_high * b_low, 0.0))
    return lower, upper


def paired_difference_interval(candidate, baseline, value_range: tuple[float, float] = (0.0, 1.0), *,
                               confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Equal-tailed interval of E[candidate − baseline] from paired scores in `value_range` (rows = samples).

    With d = c − b on [−w, w] (w = range width), d = d⁺ − d⁻ where d⁺ = max(d, 0) and d⁻ = max(−d, 0) lie
    on [0, w]. Each part gets `bounded_mean_interval` (a Jeffreys interval when the scores are 0/1, so
    rare discordant pairs are handled like rare events), and MOVER combines them with their sample
    correlation (≤ 0: the parts are never both non-zero). Identical runs (every d = 0) get an interval
    of the width of "nothing discordant seen yet in n pairs", not [0, 0].

    Simulated coverage of the 95 % interval, 4,000 samples per cell, n = 10 / 20 / 50 (paired Student t in
    brackets): 0/1 scores, no change 0.99 / 0.97 / 0.95 (0.83 / 0.94 / 0.96); 0/1 scores, a drop of 0.10
    0.99 / 0.97 / 0.96 (0.77 / 0.92 / 0.93); 5 % of the pairs flipped 1.00 / 1.00 / 0.97 (0.39 / 0.64 /
    0.88); faithfulness-like mixtures 1.00 / 1.00 / 0.99 (0.67 / 0.86 / 0.93). It is for showing the size
    of a change; the gate and `eval compare` decide with `sign_flip_test`, which has the power of a t-test.
    """
    lo, hi = value_range
    width = hi - lo
    c, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if c.shape != b.shape:
        raise ValueError("paired scores need the same shape")
    diff = (c - b) / width
    gain, loss = np.maximum(diff, 0.0), np.maximum(-diff, 0.0)
    alpha = (1.0 - confidence) / 2.0
    lower, upper = _split_mover(gain, loss, alpha)
    return width * lower, width * upper


def _split_mover(gain: np.ndarray, loss: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    ga, gb, gm = _beta_shape(np.clip(gain, 0.0, 1.0))
    la, lb, lm = _beta_shape(np.clip(loss, 0.0, 1.0))
    g_low, g_high = _beta_bounds(ga, gb, gm, alpha)
    l_low, l_high = _beta_bounds(la, lb, lm, alpha)
    return _mover(gm, g_low, g_high, lm, l_low, l_high, _correlation(gain, loss))


# --- One sample and one difference, with p-values consistent with their intervals --------------


@dataclass(frozen=True)
class _MeanDistribution:
    """What an interval of one mean is the quantiles of: a Beta on the rescaled range (Jeffreys methods)
    or a Student t (unknown range)."""

    method: str
    mean: float
    lo: float | None = None
    hi: float | None = None
    a: float | None = None
    b: float | None = None
    sd: float | None = None
    df: float | None = None

    @classmethod
    def of(cls, values: np.ndarray, span: tuple[float, float] | None) -> _MeanDistribution | None:
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
        return self.lo + (self.hi - self.lo) * float(low), self.lo + (self.hi - self.lo) * float(high)

    def p_below(self, x0: float) -> float:
        """One-sided p-value of H0: mean ≥ x0 (small when the data say the mean is below x0); the upper
        bound at level α lies below x0 exactly when this is < α."""
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
class _Difference:
    """θ1 − θ2 by MOVER, or by t / Welch on an unknown range: its bounds at any one-sided level."""

    method: str
    estimate: float
    parts: tuple[_MeanDistribution, _MeanDistribution] | None = None
    scale: float = 1.0
    r: float = 0.0
    sd: float | None = None
    df: float | None = None

    @property
    def has_interval(self) -> bool:
        """False for a t/Welch difference without a spread estimate (fewer than two scores on a side)."""
        return self.parts is not None or self.sd is not None

    def bounds(self, alpha: float) -> tuple[float, float]:
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


def _paired_difference(c: np.ndarray, b: np.ndarray, span: tuple[float, float] | None) -> _Difference:
    d = c - b
    if span is None:
        sd = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size >= 2 else None
        return _Difference(STUDENT_T_PAIRED, float(d.mean()), sd=sd, df=d.size - 1.0)
    width = span[1] - span[0]
    gain, loss = np.maximum(d, 0.0) / width, np.maximum(-d, 0.0) / width
    unit = (0.0, 1.0)
    return _Difference(MOVER_PAIRED, float(d.mean()),
                       parts=(_MeanDistribution.of(gain, unit), _MeanDistribution.of(loss, unit)),
                       scale=width, r=float(_correlation(gain, loss)))  # fmt: skip


def _independent_difference(c: np.ndarray, b: np.ndarray, span: tuple[float, float] | None) -> _Difference:
    estimate = float(c.mean() - b.mean())
    if span is None:
        if c.size < 2 or b.size < 2:
            return _Difference(WELCH, estimate)  # no spread to estimate: a point, decided by min_pairs
        vc, vb = c.var(ddof=1) / c.size, b.var(ddof=1) / b.size
        se = math.sqrt(vc + vb)
        df = (vc + vb) ** 2 / (vc**2 / (c.size - 1) + vb**2 / (b.size - 1)) if se > 0 else 1.0
        return _Difference(WELCH, estimate, sd=se, df=df)
    return _Difference(MOVER_INDEPENDENT, estimate, parts=(_MeanDistribution.of(c, span), _MeanDistribution.of(b, span)))


# --- Tests of "nothing changed": exact randomization ------------------------------------------------


@dataclass(frozen=True)
class RandomizationTest:
    """The null distribution of a statistic under "the two runs are exchangeable", and the observed value.

    `null` holds every value of the statistic over the re-labellings (all of them, or `RANDOMIZATION_DRAWS`
    seeded random ones plus the observed labelling, which keeps the Monte Carlo p-value exact: under the
    null P(p ≤ α) ≤ α). Values are rounded to 12 decimals so the observed labelling ties with itself.
    """

    observed: float
    null: np.ndarray
    exact: bool

    def p_greater(self) -> float:
        """One-sided p-value: P(T* ≥ observed)."""
        return float(np.mean(self.null >= self.observed))

    def p_less(self) -> float:
        """One-sided p-value: P(T* ≤ observed)."""
        return float(np.mean(self.null <= self.observed))

    def p_two_sided(self) -> float:
        """P(|T*| ≥ |observed|): the null distributions here are symmetric about 0 (paired) or centred on it."""
        return float(np.mean(np.abs(self.null) >= abs(self.observed)))

    def negated(self) -> RandomizationTest:
        """The same test of −T (a drop of a higher-is-better metric as a positive worsening)."""
        return RandomizationTest(-self.observed, -self.null, self.exact)

    def largest_not_significant(self, level: float, *, greater: bool = True) -> float:
        """The largest null value t (smallest for greater=False) whose one-sided p-value exceeds `level`:
        the observed value is significant at `level` exactly when it lies beyond t."""
        values = self.null if greater else -self.null
        ordered = np.sort(values)
        tail = 1.0 - np.arange(ordered.size) / ordered.size  # P(T* ≥ ordered[i]), ties resolved below
        # With ties, P(T* ≥ v) is the tail at the first occurrence of v.
        first = np.searchsorted(ordered, ordered, side="left")
        keep = ordered[tail[first] > level]
        band = float(keep.max()) if keep.size else float(ordered.min())
        return band if greater else -band


def _rounded(values: np.ndarray) -> np.ndarray:
    return np.round(values, 12)


def sign_flip_test(differences, *, draws: int | None = None, seed: int = SEED) -> RandomizationTest:
    """Paired randomization test of the mean difference (Fisher's): under "the two runs are exchangeable on
    every item" each difference d_i is as likely as −d_i, so the mean over all 2^m sign patterns of the m
    non-zero differences is the exact null distribution. Exact enumeration up to EXACT_SIGN_FLIPS non-zero
    differences, else `draws` (default RANDOMIZATION_DRAWS) seeded patterns plus the observed one. On 0/1
    scores it is McNemar's exact test: 10 losses and no gain give p = 2⁻¹⁰.

    Simulated on faithfulness-like pairs (300 runs per cell, one-sided α = 0.025), n = 12 / 50 / 200: false
    alarms when nothing changed 0.010 / 0.020 / 0.023 (paired t 0.003 / 0.020 / 0.023); a drop of 0.05
    caught 0.35 / 0.38 / 0.88 (t 0.26 / 0.38 / 0.88; "the 95 % MOVER interval is below 0": 0.00 / 0.22 / 0.85).
    """
    d = np.sort(np.asarray(differences, dtype=float))  # sorted: the same multiset gives the same draws
    n = d.size
    if n == 0:
        raise ValueError("a paired test needs at least one pair")
    magnitudes = np.abs(d[d != 0.0])
    observed = float(_rounded(np.array([np.sum(np.sign(d[d != 0.0]) * magnitudes) / n]))[0])
    m = magnitudes.size
    if m <= EXACT_SIGN_FLIPS:
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1) * 2.0 - 1.0
        return RandomizationTest(observed, _rounded(patterns @ magnitudes / n), exact=True)
    rng = np.random.default_rng(seed)
    total = draws or RANDOMIZATION_DRAWS
    sums = np.empty(total)
    step = max(1, _MAX_CELLS // m)
    for start in range(0, total, step):
        stop = min(total, start + step)
        signs = rng.integers(0, 2, size=(stop - start, m)) * 2.0 - 1.0
        sums[start:stop] = signs @ magnitudes
    null = np.append(_rounded(sums / n), observed)
    return RandomizationTest(observed, null, exact=False)


def permutation_test(candidate, baseline, *, draws: int | None = None, seed: int = SEED) -> RandomizationTest:
    """Two-sample permutation test of mean(candidate) − mean(baseline) for runs that share no item (online):
    under "both runs are draws from one distribution" every split of the pooled scores into groups of the
    two sizes is as likely; `draws` (default RANDOMIZATION_DRAWS) seeded splits plus the observed one."""
    c = np.sort(np.asarray(candidate, dtype=float))
    b = np.sort(np.asarray(baseline, dtype=float))
    if not c.size or not b.size:
        raise ValueError("a two-sample test needs a score on each side")
    pooled = np.concatenate([c, b])
    observed = float(_rounded(np.array([c.mean() - b.mean()]))[0])
    rng = np.random.default_rng(seed)
    total = draws or RANDOMIZATION_DRAWS
    stats_ = np.empty(total)
    step = max(1, _MAX_CELLS // pooled.size)
    for start in range(0, total, step):
        stop = min(total, start + step)
        shuffled = rng.permuted(np.broadcast_to(pooled, (stop - start, pooled.size)), axis=1)
        stats_[start:stop] = shuffled[:, : c.size].mean(axis=1) - shuffled[:, c.size :].mean(axis=1)
    return RandomizationTest(observed, np.append(_rounded(stats_), observed), exact=False)


def _failure_rise_p_value(cand_lost: np.ndarray, base_lost: np.ndarray) -> float:
    """One-sided Fisher exact test (the permutation test of two shares, computed exactly): P(at least this
    many of all the not-ok scores fell in the candidate | the totals)."""
    total_lost = int(cand_lost.sum() + base_lost.sum())
    size = cand_lost.size + base_lost.size
    return float(sps.hypergeom.sf(int(cand_lost.sum()) - 1, size, total_lost, cand_lost.size))


# --- Multiple testing ----------------------------------------------------------------------------


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control under any dependence): with p sorted
    ascending, p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)); reject where p̃ ≤ α."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg step-up adjusted p-values (false-discovery-rate control for independent or
    positively dependent tests): with p sorted ascending, p̃_(i) = min_{j ≥ i} min(1, m p_(j) / j);
    reject where p̃ ≤ q."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for position, i in enumerate(order):
        rank = m - position
        running = min(running, m * p_values[i] / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


# --- Aggregates -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Aggregate:
    """One metric over one stratum of one run. `n` counts the ok scores the mean is taken over.

    `ci_low`/`ci_high` form the equal-tailed `confidence` interval made by `ci_method` (a CI_METHODS key);
    `value_range` and `beta_shape` (Jeffreys methods: Beta(a, b) on the range rescaled to [0, 1]) let
    a caller test the mean against any threshold with `p_below`/`p_above`.
    """

    metric: str
    stratum: str
    n: int
    n_failed: int
    n_skipped: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    std: float | None
    ci_method: str | None = None
    confidence: float = CONFIDENCE
    value_range: tuple[float, float] | None = None
    beta_shape: tuple[float, float] | None = None

    @property
    def n_items(self) -> int:
        return self.n + self.n_failed + self.n_skipped

    def p_below(self, threshold: float) -> float | None:
        """One-sided p-value of H0: true mean ≥ threshold; None without a mean."""
        dist = self._distribution()
        return dist.p_below(threshold) if dist else None

    def p_above(self, threshold: float) -> float | None:
        """One-sided p-value of H0: true mean ≤ threshold; None without a mean."""
        dist = self._distribution()
        return dist.p_above(threshold) if dist else None

    def _distribution(self) -> _MeanDistribution | None:
        if self.mean is None:
            return None
        if self.beta_shape is not None and self.value_range is not None:
            lo, hi = self.value_range
            return _MeanDistribution(self.ci_method or JEFFREYS_BOUNDED_MEAN, self.mean, lo=lo, hi=hi,
                                     a=self.beta_shape[0], b=self.beta_shape[1])  # fmt: skip
        if self.ci_method == STUDENT_T and self.std is not None and self.n >= 2:
            return _MeanDistribution(STUDENT_T, self.mean, sd=self.std / math.sqrt(self.n), df=self.n - 1.0)
        if self.ci_low is not None and self.ci_high is not None:
            # Built by hand with only an interval: a normal distribution with that interval.
            z = float(sps.norm.isf((1.0 - self.confidence) / 2.0))
            return _MeanDistribution(STUDENT_T, self.mean, sd=(self.ci_high - self.ci_low) / (2 * z), df=math.inf)
        return None


def aggregate(
    scores: Iterable[ScoreLike], *, n_resamples: int | None = None, confidence: float = CONFIDENCE,
    seed: int | None = None,
) -> list[Aggregate]:
    """Per metric and stratum, plus the pooled stratum `all`.

    Intervals are closed-form (see the module docstring); `n_resamples=0` still skips them (cheap trend
    lines), any other `n_resamples` and `seed` are accepted for callers of the bootstrap era and unused.
    """
    del seed  # closed-form intervals draw nothing
    groups: dict[tuple[str, str], list[ScoreLike]] = defaultdict(list)
    for score in scores:
        groups[(score.metric, score.stratum)].append(score)
        groups[(score.metric, OVERALL)].append(score)
    with_ci = n_resamples != 0
    out = [
        _aggregate_group(metric, stratum, rows, confidence=confidence, with_ci=with_ci)
        for (metric, stratum), rows in groups.items()
    ]
    return sorted(out, key=lambda a: (a.metric, a.stratum != OVERALL, a.stratum))


def _aggregate_group(metric: str, stratum: str, rows: list[ScoreLike], *, confidence: float,
                     with_ci: bool) -> Aggregate:  # fmt: skip
    values = np.array(_ok_values(rows), dtype=float)
    n = int(values.size)
    span = value_range(metric, values)
    dist = _MeanDistribution.of(values, span) if with_ci else None
    low, high = dist.bounds((1.0 - confidence) / 2.0) if dist else (None, None)
    return Aggregate(
        metric=metric, stratum=stratum, n=n,
        n_failed=sum(1 for r in rows if r.status == "failed"),
        n_skipped=sum(1 for r in rows if r.status == "skipped"),
        mean=float(values.mean()) if n else None, ci_low=low, ci_high=high,
        std=float(values.std(ddof=1)) if n >= 2 else None,
        ci_method=dist.method if dist else None, confidence=confidence,
        value_range=span if dist and dist.a is not None else None,
        beta_shape=(dist.a, dist.b) if dist and dist.a is not None else None,
    )  # fmt: skip


def proportion_ci(successes: int, n: int, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Jeffreys interval of a count of successes (gate pass rates, share of items with a label)."""
    low, high = jeffreys_interval(successes, n, confidence=confidence)
    return float(low), float(high)


def _ok_values(rows: Iterable[ScoreLike]) -> list[float]:
    values = []
    for r in rows:
        if r.status != "ok":
            continue
        if r.value is None or not math.isfinite(r.value):
            raise ValueError(f"score {r.metric} of item {r.item_id} is ok but has no finite value")
        values.append(float(r.value))
    return values


def _by_item(scores: Iterable[ScoreLike], metric: str) -> dict[str, ScoreLike]:
    by_item: dict[str, ScoreLike] = {}
    for s in scores:
        if s.metric != metric:
            continue
        if s.item_id in by_item:
            raise ValueError(f"item {s.item_id} has two {metric} scores in one run")
        by_item[s.item_id] = s
    return by_item


def _ok_by_item(scores: Iterable[ScoreLike], metric: str) -> dict[str, float]:
    return {i: _ok_values([s])[0] for i, s in _by_item(scores, metric).items() if s.status == "ok"}


# --- Paired comparison and `eval compare` -----------------------------------------------------------


@dataclass(frozen=True)
class PairedComparison:
    """Candidate minus baseline on the items both runs scored ok for one metric.

    `ci_low`/`ci_high`: equal-tailed `confidence` interval of the mean difference (`ci_method`), valid
    for any distribution of the scores. `p_value`: two-sided exact sign-flip test of "the runs are
    exchangeable on every item" (`sign_flip_test`; McNemar's exact test on 0/1 scores). The two answer
    different questions: with few pairs that all moved one way the test can reject "nothing changed"
    while the interval, which must also allow for pairs not yet seen moving the other way, holds 0.
    """

    metric: str
    n_pairs: int
    candidate_mean: float | None
    baseline_mean: float | None
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    sd_diff: float | None
    ci_method: str | None = None
    p_value: float | None = None
    confidence: float = CONFIDENCE


def paired_comparison(
    candidate_scores: Iterable[ScoreLike], baseline_scores: Iterable[ScoreLike], metric: str, *,
    confidence: float = CONFIDENCE,
) -> PairedComparison:
    """Difference candidate − baseline over the items both runs scored ok: MOVER-Jeffreys interval, sign-flip p.

    Pairing removes the item-to-item variance both runs share (hard questions are hard for both), so a
    paired difference is far less noisy than the difference of two means. It says nothing about the
    items one run failed: `regression_gate` checks those.
    """
    result, _ = _paired(list(candidate_scores), list(baseline_scores), metric, confidence)
    return result


def _paired(candidate, baseline, metric: str, confidence: float) -> tuple[PairedComparison, _Difference | None]:
    cand, base = _ok_by_item(candidate, metric), _ok_by_item(baseline, metric)
    shared = sorted(cand.keys() & base.keys())
    if not shared:
        return PairedComparison(metric, 0, None, None, None, None, None, None, confidence=confidence), None
    c = np.array([cand[i] for i in shared])
    b = np.array([base[i] for i in shared])
    span = value_range(metric, np.concatenate([c, b]))
    diff = _paired_difference(c, b, span)
    low, high = diff.bounds((1.0 - confidence) / 2.0) if diff.has_interval else (None, None)
    return PairedComparison(
        metric=metric, n_pairs=len(shared), candidate_mean=float(c.mean()), baseline_mean=float(b.mean()),
        mean_diff=diff.estimate, ci_low=low, ci_high=high,
        sd_diff=float((c - b).std(ddof=1)) if len(shared) >= 2 else None,
        ci_method=diff.method, p_value=sign_flip_test(c - b).p_two_sided(), confidence=confidence,
    ), diff  # fmt: skip


def compare_runs(arm_b: Sequence[ScoreLike], arm_a: Sequence[ScoreLike], *, confidence: float = CONFIDENCE,
                 fdr: float = COMPARE_FDR) -> list[dict]:  # fmt: skip
    """`eval compare`'s rows: paired difference B − A per metric (both arms measured) and stratum (`all`
    first, then A's strata), for every cell with at least one pair.

    Each row: metric, stratum, n_pairs, a, b, diff, ci_low, ci_high (equal-tailed `confidence`
    interval), ci_method, p_value (two-sided exact sign-flip test, H0: A and B exchangeable item by item),
    p_adjusted (Benjamini–Hochberg over all rows), significant (p_adjusted ≤ fdr), correction. Many
    strata × metrics are tested at once; BH keeps the expected share of false "significant" rows at
    `fdr`. BH is proven for independent or positively dependent tests; a pooled row and its strata share
    items, a positive dependence, though two-sided tests of it are not covered by the proof.
    """
    metrics = sorted({s.metric for s in arm_a} & {s.metric for s in arm_b})
    strata = [OVERALL] + sorted({s.stratum for s in arm_a})
    rows = []
    for metric in metrics:
        for stratum in strata:
            def pick(scores, st=stratum):
                return scores if st == OVERALL else [s for s in scores if s.stratum == st]

            result = paired_comparison(pick(arm_b), pick(arm_a), metric, confidence=confidence)
            if result.n_pairs:
                rows.append({"metric": metric, "stratum": stratum, "n_pairs": result.n_pairs,
                             "a": result.baseline_mean, "b": result.candidate_mean, "diff": result.mean_diff,
                             "ci_low": result.ci_low, "ci_high": result.ci_high, "ci_method": result.ci_method,
                             "p_value": result.p_value})  # fmt: skip
    tested = [r for r in rows if r["p_value"] is not None]
    for row, adjusted in zip(tested, benjamini_hochberg([r["p_value"] for r in tested])):
        row["p_adjusted"] = adjusted
    for row in rows:
        row.setdefault("p_adjusted", None)
        row["significant"] = row["p_adjusted"] is not None and row["p_adjusted"] <= fdr
        row["correction"] = BENJAMINI_HOCHBERG
    return rows


# --- The regression gate ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricGate:
    """The gate's verdict on one metric; `reason` states every check that failed (or why it passed)."""

    metric: str
    design: Literal["paired", "independent", "none"]
    higher_is_better: bool
    n_pairs: int
    n_candidate: int
    """ok candidate scores."""
    n_baseline: int
    """ok baseline scores."""
    candidate_mean: float | None
    baseline_mean: float | None
    diff: float | None
    """candidate_mean − baseline_mean over the compared scores (raw sign, not direction-adjusted)."""
    standard_error: float | None
    """sd of the differences / √pairs (Welch SE for independent runs): shown, not used for the decision."""
    tolerance: float | None
    """max(min_tolerance, noise band): the worsening passes up to it. The noise band is the largest worsening
    the randomization test (`test_method`) does not call significant at the Holm-adjusted level, i.e. how
    far the mean moves when nothing changed; worsening > tolerance exactly when the drop is both larger
    than min_tolerance and significant after Holm."""
    ci_low: float | None
    ci_high: float | None
    """Equal-tailed 95 % interval of the difference (`ci_method`), unadjusted; shown, not used for the decision."""
    passed: bool
    reason: str
    ci_method: str | None = None
    test_method: str | None = None
    """A TEST_METHODS key: the randomization test behind p_value and the noise band."""
    p_value: float | None = None
    """One-sided p-value of H0 "the runs are exchangeable" (nothing changed) against a worsening."""
    p_adjusted: float | None = None
    """Holm-adjusted p_value over the gated metrics that had one."""
    correction: str = HOLM
    n_candidate_items: int = 0
    """Candidate items with a score of this metric (ok, failed or skipped)."""
    n_baseline_items: int = 0
    n_missing: int = 0
    """Baseline items with no score of this metric in the candidate (paired design)."""
    candidate_not_ok_share: float | None = None
    """(failed + skipped) / items in the candidate, over the items both runs have (paired design)."""
    baseline_not_ok_share: float | None = None
    failure_rise: float | None = None
    """candidate_not_ok_share − baseline_not_ok_share."""
    failure_rise_p_value: float | None = None
    """One-sided p-value of "failures are exchangeable between the runs" against a rise: the sign-flip
    (exact McNemar) test per shared item, or Fisher's exact test for independent runs."""
    checks_failed: tuple[str, ...] = ()
    """Names of the failed checks: missing_items, failure_rise, too_few_pairs, score_drop, not_comparable."""


@dataclass(frozen=True)
class GateResult:
    passed: bool
    metrics: list[MetricGate] = field(default_factory=list)
    min_tolerance: float = 0.02
    alpha: float = ALPHA
    correction: str = HOLM
    min_pairs: int = DEFAULT_MIN_PAIRS
    max_failure_rise: float = DEFAULT_MAX_FAILURE_RISE
    confidence: float = CONFIDENCE

    @property
    def failed_metrics(self) -> list[str]:
        return [m.metric for m in self.metrics if not m.passed]

    @property
    def rule(self) -> str:
        """The decision rule in one paragraph, for the report."""
        return (f"A metric fails when baseline items are missing from the candidate; when its failed-or-skipped "
                f"share rises by more than {self.max_failure_rise:.2f} and significantly (exact one-sided test, "
                f"α = {self.alpha:g}); when fewer than {self.min_pairs} items are scored ok in both runs; or when "
                f"it worsens by more than max({self.min_tolerance:g}, noise band), the noise band being the largest "
                f"change a randomization test of 'nothing changed' does not call significant at one-sided "
                f"α = {self.alpha:g} after Holm's correction over the {len(self.metrics)} gated metric(s).")  # fmt: skip

    def summary(self) -> str:
        if self.passed:
            return f"gate passed on {len(self.metrics)} metric(s)"
        return "gate failed: " + "; ".join(f"{m.metric}: {m.reason}" for m in self.metrics if not m.passed)

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.summary(), "rule": self.rule}


def regression_gate(
    candidate: Sequence[ScoreLike], baseline: Sequence[ScoreLike], metrics: Iterable[str], *,
    min_tolerance: float = 0.02, min_pairs: int = DEFAULT_MIN_PAIRS,
    max_failure_rise: float = DEFAULT_MAX_FAILURE_RISE, alpha: float = ALPHA,
) -> GateResult:
    """Pass when every gated metric passes four checks (see the module docstring for the exact tests):

    1. missing items: every item the baseline has a score of (ok, failed or skipped) the candidate has too;
    2. failure rise: the failed-or-skipped share does not rise by more than `max_failure_rise` with a
       one-sided exact test at `alpha` rejecting "failures are exchangeable between the runs" (McNemar's
       exact test over the shared items; Fisher's exact test when no item is shared). Not corrected for
       multiplicity: a target failure fails every metric of its item, so the per-metric tests are near
       copies of one test, and a missed failure rise is the costlier error;
    3. enough pairs: at least `min_pairs` items are ok in both runs (independent design: in each run);
    4. score drop: worsening ≤ max(`min_tolerance`, noise band), i.e. fail only when the worsening is larger
       than `min_tolerance` and the one-sided randomization test of "nothing changed" (`sign_flip_test`
       on the paired differences, `permutation_test` for independent runs) rejects at `alpha` after
       Holm's correction over the gated metrics (Holm, not BH: one false rejection fails the whole gate,
       so the family-wise error is the gate's false-alarm rate).

    Design per metric: "paired" when the runs share at least one item id (offline golden sets),
    "independent" when they share none (online runs sample different traces), "none" when a run has no
    score of the metric. The drop of check 4 is the mean paired difference (paired) or the difference of
    means (independent). A drop of 0.03 with paired sd 0.15 passes at 50 pairs (noise band 0.042) and
    fails at 500 (0.013, floored at 0.02): 50 queries are noisier than 500.
    """
    gated = list(dict.fromkeys(metrics))
    if not gated:
        raise ValueError("a regression gate needs at least one metric")
    if min_pairs < 2:
        raise ValueError("min_pairs below 2 leaves nothing to estimate a spread from")
    candidate, baseline = list(candidate), list(baseline)
    drafts = [_gate_draft(candidate, baseline, metric, min_pairs=min_pairs, max_failure_rise=max_failure_rise,
                          alpha=alpha) for metric in gated]  # fmt: skip
    tested = [d for d in drafts if d["p_value"] is not None]
    for draft, adjusted in zip(tested, holm([d["p_value"] for d in tested])):
        draft["p_adjusted"] = adjusted
    results = [_gate_verdict(d, min_tolerance=min_tolerance, alpha=alpha) for d in drafts]
    return GateResult(passed=all(r.passed for r in results), metrics=results, min_tolerance=min_tolerance,
                      alpha=alpha, min_pairs=min_pairs, max_failure_rise=max_failure_rise)  # fmt: skip


def _gate_draft(candidate, baseline, metric: str, *, min_pairs: int, max_failure_rise: float,
                alpha: float) -> dict:  # fmt: skip
    """Every figure of one metric's gate except the Holm adjustment, which needs all metrics."""
    higher = metric not in LOWER_IS_BETTER
    cand_rows, base_rows = _by_item(candidate, metric), _by_item(baseline, metric)
    cand, base = _ok_by_item(candidate, metric), _ok_by_item(baseline, metric)
    shared_items = cand_rows.keys() & base_rows.keys()
    design = "paired" if shared_items else ("independent" if cand_rows and base_rows else "none")
    draft: dict = dict(metric=metric, design=design, higher_is_better=higher, n_candidate=len(cand),
                       n_baseline=len(base), n_candidate_items=len(cand_rows), n_baseline_items=len(base_rows),
                       n_pairs=len(cand.keys() & base.keys()), candidate_mean=None, baseline_mean=None, diff=None,
                       standard_error=None, ci_low=None, ci_high=None, ci_method=None, test_method=None,
                       p_value=None, p_adjusted=None, problems=[], checks_failed=[])  # fmt: skip

    def fail(check: str, text: str) -> None:
        draft["checks_failed"].append(check)
        draft["problems"].append(text)

    if design == "none":
        fail("not_comparable", f"not comparable: {len(cand_rows)} candidate and {len(base_rows)} baseline "
                               f"scores of this metric")  # fmt: skip
        return draft

    if design == "paired":
        missing = base_rows.keys() - cand_rows.keys()
        draft["n_missing"] = len(missing)
        if missing:
            fail("missing_items", f"{len(missing)} of {len(base_rows)} baseline items missing from the candidate")
        items = sorted(shared_items)
        cand_lost = np.array([cand_rows[i].status != "ok" for i in items], dtype=float)
        base_lost = np.array([base_rows[i].status != "ok" for i in items], dtype=float)
        rise_p = sign_flip_test(cand_lost - base_lost).p_greater()
    else:
        cand_lost = np.array([s.status != "ok" for s in cand_rows.values()], dtype=float)
        base_lost = np.array([s.status != "ok" for s in base_rows.values()], dtype=float)
        rise_p = _failure_rise_p_value(cand_lost, base_lost)
    rise = float(cand_lost.mean() - base_lost.mean())
    draft.update(candidate_not_ok_share=float(cand_lost.mean()), baseline_not_ok_share=float(base_lost.mean()),
                 failure_rise=rise, failure_rise_p_value=rise_p)  # fmt: skip
    if rise > max_failure_rise + 1e-12 and rise_p <= alpha:
        fail("failure_rise", f"failed-or-skipped share rose from {base_lost.mean():.2f} to {cand_lost.mean():.2f} "
                             f"(+{rise:.2f} > {max_failure_rise:.2f}, one-sided p {_fmt_p(rise_p)})")  # fmt: skip

    if design == "paired":
        if draft["n_pairs"] < min_pairs:
            fail("too_few_pairs", f"only {draft['n_pairs']} items scored ok in both runs (need ≥ {min_pairs})")
        shared = sorted(cand.keys() & base.keys())
        if not shared:
            return draft
        c, b = np.array([cand[i] for i in shared]), np.array([base[i] for i in shared])
        difference = _paired_difference(c, b, value_range(metric, np.concatenate([c, b])))
        test = sign_flip_test(c - b)
        se = float((c - b).std(ddof=1) / math.sqrt(c.size)) if c.size >= 2 else None
    else:
        if len(cand) < min_pairs or len(base) < min_pairs:
            fail("too_few_pairs", f"only {len(cand)} candidate and {len(base)} baseline ok scores "
                                  f"(need ≥ {min_pairs} each)")  # fmt: skip
        if not cand or not base:
            return draft
        c, b = np.array(list(cand.values())), np.array(list(base.values()))
        difference = _independent_difference(c, b, value_range(metric, np.concatenate([c, b])))
        test = permutation_test(c, b)
        se = (math.sqrt(c.var(ddof=1) / c.size + b.var(ddof=1) / b.size)
              if c.size >= 2 and b.size >= 2 else None)  # fmt: skip
    worsening = test.negated() if higher else test
    draft.update(candidate_mean=float(c.mean()), baseline_mean=float(b.mean()), diff=difference.estimate,
                 standard_error=se, ci_method=difference.method, test_method=_test_name(test, draft["design"]),
                 test=worsening, p_value=worsening.p_greater())  # fmt: skip
    if difference.has_interval:
        draft["ci_low"], draft["ci_high"] = difference.bounds(ALPHA)
    return draft


def _test_name(test: RandomizationTest, design: str) -> str:
    if design == "paired":
        return SIGN_FLIP_EXACT if test.exact else SIGN_FLIP_MONTE_CARLO
    return PERMUTATION_MONTE_CARLO


def _gate_verdict(draft: dict, *, min_tolerance: float, alpha: float) -> MetricGate:
    problems, checks = list(draft.pop("problems")), list(draft.pop("checks_failed"))
    test: RandomizationTest | None = draft.pop("test", None)
    tolerance = None
    if test is not None:
        higher = draft["higher_is_better"]
        p, p_adj = draft["p_value"], draft["p_adjusted"]
        # Holm rejects this metric exactly when p ≤ α·p/p̃; the noise band is the largest worsening the
        # randomization distribution does not call significant at that level.
        tolerance = max(min_tolerance, test.largest_not_significant(alpha * p / p_adj))
        significant = p_adj <= alpha
        material = test.observed > min_tolerance + 1e-12  # a drop of exactly the tolerance passes despite rounding
        direction = "drop" if higher else "rise"
        change = f"{direction} of {test.observed:.4f}" if test.observed > 0 else f"no {direction}"
        sizes = f"{draft['n_pairs']} pairs" if draft["design"] == "paired" else \
            f"{draft['n_candidate']} vs {draft['n_baseline']} items"  # fmt: skip
        stats_text = f"{draft['design']}, {sizes}, one-sided p {_fmt_p(p)}, Holm-adjusted p {_fmt_p(p_adj)}"
        verdict = "exceeds" if material and significant else "within"
        score_text = f"{change} {verdict} tolerance {tolerance:.4f} ({stats_text})"
        if material and significant:
            checks.append("score_drop")
            problems.append(score_text)
        elif not problems:
            return MetricGate(**draft, tolerance=tolerance, passed=True, reason=score_text, correction=HOLM)
        else:
            problems.append(f"score: {score_text}")  # context for the failed checks above
    return MetricGate(**draft, tolerance=tolerance, passed=False, reason="; ".join(problems), correction=HOLM,
                      checks_failed=tuple(checks))  # fmt: skip


def _fmt_p(p: float | None) -> str:
    """"= 0.012" or "< 0.001", to follow a "p"."""
    if p is None:
        return "= —"
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


# --- The interval ragwatch printed before -------------------------------------------------------------


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean; None below two values. No printed figure uses it any more:
    it collapses to [1, 1] when every score is 1.0 and covers 0.65 at n = 10, p = 0.9 (see
    tests/test_stats_coverage.py). Kept so that comparison can be rerun.
    """
    data = np.sort(np.asarray(values, dtype=float))
    n = data.size
    if n < 2 or n_resamples <= 0:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    step = max(1, _MAX_CELLS // n)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        means[start:stop] = data[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)
