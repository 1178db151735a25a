"""Aggregates with intervals that cover at small n, paired comparisons and the regression gate.

Every figure, one line each (figure | exact definition | interval or test | multiplicity correction):

| mean | mean of the ok scores of one metric in one stratum; failed/skipped are counted (n_failed, n_skipped), never averaged | its CI below | none |
| CI of 0/1 scores | every ok score at an end of the range (recall@k, precision@1, TSA, pass rates) | `jeffreys`: equal-tailed 95 %, Beta(x + ½, n − x + ½) quantiles 0.025/0.975; 0 when x = 0, 1 when x = n | none |
| CI of bounded scores | faithfulness, answer relevancy, context precision/recall, MRR, precision@k on [0, 1]; noise ΔF on [−1, 1] | `jeffreys-bounded-mean`: equal-tailed 95 %, Beta quantiles at an effective n (see `bounded_mean_interval`) | none |
| CI, range unknown | a metric outside METRIC_RANGES whose values leave [0, 1] | `student-t`: mean ± t(0.975, n − 1)·sd/√n, n ≥ 2 | none |
| paired difference | mean of candidate_i − baseline_i over the n items ok in both runs | CI equal-tailed 95 % (`paired_difference_interval`): 0/1 scores `mover-jeffreys-paired`, other bounded scores `agresti-min-paired`, range unknown `student-t-paired`; p: two-sided exact sign-flip test (`sign_flip_test`) | none alone |
| independent difference | mean(candidate) − mean(baseline) when the runs share no item (online) | CI `mover-jeffreys-independent`, MOVER of the two bounded-mean intervals; p: permutation test (`permutation_test`) | none alone |
| gate: status | a metric is gated where the baseline has ok scores of it and ≥ min_pairs (10) items are ok in both runs (independent: in each run); else "not gated: n = k < 10" (its change still shown), "not gated: measured in neither run", "not gated: the baseline did not measure it" or "recovery: the baseline measured no item"; a metric not gated passes unless its failure rise or its worst case fails it; one the baseline measured and the candidate has no score of fails (`missing_metric`) | deterministic | none |
| gate: score drop | worsening = baseline − candidate (candidate − baseline for LOWER_IS_BETTER), mean over the n items ok in both runs; fails when > min_tolerance (0.02) and significant | one-sided randomization test of "nothing changed": sign flips of whole items (all patterns up to 16 moving items — a move is a change over SCORE_RESOLUTION, 1e-6 —, else 10,000 seeded draws + the observed), items dealt between the runs when they share none (`family_sign_flip_test`, `family_permutation_test`) | Westfall–Young step-down maxT over every check of every metric of the gate, family-wise α = 0.05 |
| gate: worst case | the same worsening over all the baseline's items of the metric, every failed, skipped or missing score (either run) at the worst end of the metric's range (0; +1 for noise ΔF); tested when some item is not ok and the baseline has ≥ min_pairs ok scores of the metric, also where too few pairs leave the score drop untested; fails when > 0.02 and significant | the same draws | the same family |
| gate: failure rise | (failed + skipped + missing) / the baseline's items, candidate − baseline (independent: each run's not-ok share); fails when > max_failure_rise (0.05) and significant | the same draws (alone: McNemar's exact test) | the same family |
| gate: catches | the smallest worsening of a gated metric's mean that its score-drop check fails ≥ 90 % of the time at the run's n and spread (`detectable_drop`, paired design): what a pass can hide | normal approximation at the family's first-step critical value, the drop on as few items as possible (gate_sensitivity.py) | the family's |
| gate interval | `paired difference`'s interval at the two-sided level 1 − α (95 % at the default α), unadjusted: shown, not used to decide | as the paired difference | none |
| eval compare row | paired difference B − A per metric and stratum | the paired difference's 95 % CI; two-sided sign-flip p, H0 "A and B exchangeable" | Benjamini–Hochberg over all rows, q = 0.05 |
| diagnosis band | the strongest band the interval establishes, stepping down from the estimate's band to "not healthy", with n ≥ min_n (10) | one-sided p from the aggregate's interval distribution (diagnose.py) | Benjamini–Hochberg over one claim per aggregate outside the healthy band, q = 0.025; stronger rungs at the level the family stopped at |

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
still reaches above 0. Under that null the gate fails at most α = 5 % of unchanged systems, every check
of every metric counted: Westfall–Young's maxT draws the checks together, so the failure rises of a
target failure (every metric of an item fails) count about once, and a check that cannot reach
significance (three discordant pairs) takes no share of α. `ragwatch bench gate` simulates the whole
gate on nine metrics (README: false alarms, power per drop and n, coverage; tests/test_gate_power.py).

Why these intervals (tests/test_stats_coverage.py; study numbers in the docstrings of
`jeffreys_interval`, `bounded_mean_interval`, `paired_difference_interval` and
`adjusted_paired_interval`): the percentile
bootstrap ragwatch printed before collapses to [1, 1] when every score is 1.0 and covers 0.65 at
n = 10, p = 0.9; Student t does the same on faithfulness-like scores with a point mass at 1.0 (0.38
at n = 10). The Jeffreys-type intervals covered ≥ 0.93 on every distribution of the study from n = 5
on. For proportions coverage oscillates with p, as for every non-exact binomial interval: over
p ∈ [0.01, 0.99] the lowest is 0.87–0.89 at n = 10–50, at isolated p.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

import numpy as np
from scipy import special
from scipy import stats as sps

from pipelines.evaluation.statistics.gate_sensitivity import detectable_drop

OVERALL = "all"
"""The stratum that pools every item of a run."""

LOWER_IS_BETTER = frozenset({"noise_delta_f", "ragas_noise_sensitivity"})
"""Metrics where a rise is the regression; every other metric is better when higher."""

CONFIDENCE = 0.95
"""Two-sided confidence of every printed interval."""
ALPHA = (1.0 - CONFIDENCE) / 2.0
"""One-sided level of the diagnosis' band claims (a lone band claim stands exactly when the printed
two-sided 95 % interval clears the band's edge). The gate has its own, family-wise: GATE_ALPHA."""
COMPARE_FDR = 1.0 - CONFIDENCE
"""Benjamini–Hochberg level of `eval compare`'s two-sided tests."""

DEFAULT_MIN_PAIRS = 10
"""Fewest items scored ok in both runs for the gate to decide on a metric: the smallest n at which the
intervals here were validated (coverage ≥ 0.93 at n = 10). Below it a few survivors of many failures
would stand for the run, and "no significant drop" would say nothing."""
DEFAULT_MAX_FAILURE_RISE = 0.05
"""Largest rise of the not-ok (failed or skipped) share the gate tolerates: five points."""
SCORE_RESOLUTION = 1e-6
"""A paired difference smaller than this is no change. Scores computed from float32 vectors (answer relevancy's
cosines) differ in their last bits between two runs of the same texts, since a vector's rounding depends on which
texts shared its forward pass (measured: about 1e-7). Counted as changes, such items would join the sign-flip
patterns and split the observed statistic's ties, and widen or narrow a paired interval's pseudo-pairs (whose
size is the largest difference seen), so the gate's p-values and intervals would depend on how requests were
batched. No metric here has a meaningful difference this small."""

HOLM = "holm"
BENJAMINI_HOCHBERG = "benjamini-hochberg"

JEFFREYS = "jeffreys"
JEFFREYS_BOUNDED_MEAN = "jeffreys-bounded-mean"
STUDENT_T = "student-t"
MOVER_PAIRED = "mover-jeffreys-paired"
MOVER_INDEPENDENT = "mover-jeffreys-independent"
ADJUSTED_PAIRED = "agresti-min-paired"
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
    ADJUSTED_PAIRED: "Wald interval of the mean paired difference over the differences plus Agresti–Min's "
                     "pseudo-pairs (+h and −h, weight ½ each, and 0, weight 1; h the largest difference seen)",
    MOVER_INDEPENDENT: "MOVER over the two runs' Jeffreys-type bounded-mean intervals",
    STUDENT_T_PAIRED: "paired Student t interval (range of the metric unknown)",
    WELCH: "Welch interval for a difference of means (range of the metric unknown)",
}  # fmt: skip
"""`ci_method` labels and what each means, for reports."""
TEST_METHODS: dict[str, str] = {
    SIGN_FLIP_EXACT: "paired sign-flip randomization test, all 2^m sign patterns of the m items that moved, the same "
                     "pattern for every check of the gate (McNemar's exact test on 0/1)",
    SIGN_FLIP_MONTE_CARLO: "paired sign-flip randomization test, seeded random sign patterns of whole items plus the "
                           "observed one, the same for every check of the gate",
    PERMUTATION_MONTE_CARLO: "two-sample permutation test, seeded random deals of the items between the runs plus "
                             "the observed one",
}
"""`test_method` labels of the gate's score tests."""

METRIC_RANGES: dict[str, tuple[float, float]] = {
    "faithfulness": (0.0, 1.0),
    "answer_relevancy": (0.0, 1.0),
    "context_precision": (0.0, 1.0),
    "context_precision_ranked": (0.0, 1.0),
    "context_recall": (0.0, 1.0),
    "ragas_noise_sensitivity": (0.0, 1.0),
    "noise_delta_f": (-1.0, 1.0),
    "noise_delta_f_reference": (-1.0, 1.0),
    "noise_delta_f_control": (-1.0, 1.0),
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
    # scipy.special directly: the same quantiles as sps.beta.ppf / isf without their per-call overhead (the
    # gate computes a few per metric, `ragwatch bench gate` tens of thousands of gates).
    low = special.betaincinv(a, b, alpha)
    high = special.betainccinv(a, b, alpha)
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

    Two constructions, chosen per row from the scores:

    - 0/1 scores (every score at an end of the range): MOVER-Jeffreys. With d = c − b, d = d⁺ − d⁻ where
      d⁺ = max(d, 0) and d⁻ = max(−d, 0) are 0/1; each part gets a Jeffreys interval (rare discordant
      pairs are rare events) and MOVER combines them with their sample correlation (≤ 0: the parts are
      never both non-zero). Rare one-sided discordance is skewed, and symmetric intervals miss it: with 5 %
      of the pairs flipped (base 0.9) Agresti–Min's covers 0.90 at n = 50, MOVER-Jeffreys 0.97.
    - any other bounded scores: `adjusted_paired_interval`, a Wald interval on the differences augmented
      with Agresti–Min's pseudo-pairs.

    Identical runs (every d = 0) get an interval of the width of "nothing discordant seen yet in n
    pairs", not [0, 0]. Simulated coverage of the 95 % interval (tests/test_stats_coverage.py; `ragwatch
    bench gate` for the nine gated metrics): see `adjusted_paired_interval`; on 0/1 scores with a drop of
    0.10, n = 10 / 20 / 50: 0.99 / 0.97 / 0.96 (paired t 0.77 / 0.92 / 0.93); 5 % of the pairs flipped
    1.00 / 1.00 / 0.97 (t 0.39 / 0.64 / 0.88). It is for showing the size of a change; the gate and `eval
    compare` decide with randomization tests.
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
        lower, upper = np.where(binary, lower, center - z * se), np.where(binary, upper, center + z * se)
    return width * lower, width * upper


def adjusted_paired_interval(differences, width: float = 1.0, *,
                             confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Wald interval of the mean of paired differences of scores on a range of `width`, the differences
    augmented with Agresti–Min's pseudo-pairs (rows = samples): +h and −h with weight ½ each and 0 with
    weight 1, so the centre is Σd / (n + 2) and SE² = (Σ(d − centre)² over the augmented sample) / (n + 2)².
    On 0/1 scores with h = 1 this is Agresti & Min (2005) for paired proportions.

    h is the largest |d| seen (the range's width when every d is 0: nothing discordant seen yet), moved
    toward the width by (PSEUDO_PAIR_FADE / n)²: the width itself at 10 pairs, + 1/9 of the gap at 30,
    1/100 at 100. At the width the pseudo-pairs stand for a large change not seen yet, which a small
    sample can miss (a drop on 14 % of the items is absent from 22 % of samples of 10); past 30 pairs
    such a change is seen, and pseudo-pairs at the width would double the interval of scores that move by
    a few points (faithfulness-like scores: 0.99–1.00 coverage for MOVER-Jeffreys at n ≤ 60).

    Simulated coverage of the 95 % interval, 4,000 samples per cell. Faithfulness-like mixtures, 30 % of
    the answers from a worse system, n = 10 / 20 / 30 / 50 / 100: 1.00 / 1.00 / 0.98 / 0.97 / 0.97 (paired t
    0.67 / 0.87 / 0.90 / 0.93 / 0.95). The bounded judge scores and MRR of `ragwatch bench gate`, 5- and
    10-point drops, n = 30 / 60 / 100: local drops 0.93–0.96 / 0.95–0.97 / 0.95–0.96, shifts 0.96–0.98 /
    0.955–0.97 / 0.955–0.97, except answer relevancy's shift, 0.99 / 0.99 / 0.98: its 2 % noncommittal
    replies (scored 0) put a heavy tail on the differences, over which t itself covers 0.97 / 0.97 / 0.95.
    With nothing changed and most differences 0, every interval covers 0 more often (0.96–0.98 at 100).
    """
    d = np.asarray(differences, dtype=float) / width
    if d.shape[-1] < 1:
        raise ValueError("an interval needs at least one pair")
    center, se = _pseudo_pair_moments(d)
    z = _z((1.0 - confidence) / 2.0)
    return width * (center - z * se), width * (center + z * se)


PSEUDO_PAIR_FADE = 10
"""Pairs at which the pseudo-pairs of `adjusted_paired_interval` sit at the range's width; DEFAULT_MIN_PAIRS."""


def _pseudo_pair_moments(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centre, SE) of `adjusted_paired_interval` for differences on [−1, 1] (last axis = the pairs)."""
    n = d.shape[-1]
    largest = np.abs(d).max(axis=-1)
    h = np.where(largest > 0, largest, 1.0)
    h = h + (1.0 - h) * min(1.0, (PSEUDO_PAIR_FADE / n) ** 2)
    size = n + 2.0
    center = d.sum(axis=-1) / size
    spread = ((d - center[..., None]) ** 2).sum(axis=-1) + 0.5 * (h - center) ** 2 + 0.5 * (h + center) ** 2 + center**2
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
    """θ1 − θ2 by MOVER, by the pseudo-pair-adjusted Wald interval (`center` ± z·`sd`, times `scale`), or by
    t / Welch on an unknown range: its bounds at any one-sided level."""

    method: str
    estimate: float
    parts: tuple[_MeanDistribution, _MeanDistribution] | None = None
    scale: float = 1.0
    r: float = 0.0
    sd: float | None = None
    df: float | None = None
    center: float | None = None

    @property
    def has_interval(self) -> bool:
        """False for a t/Welch difference without a spread estimate (fewer than two scores on a side)."""
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


def _change(candidate, baseline) -> np.ndarray:
    """candidate − baseline, item by item, 0 where it is within SCORE_RESOLUTION."""
    d = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    return np.where(np.abs(d) > SCORE_RESOLUTION, d, 0.0)


def _paired_difference(c: np.ndarray, b: np.ndarray, span: tuple[float, float] | None) -> _Difference:
    d = _change(c, b)
    if span is None:
        sd = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size >= 2 else None
        return _Difference(STUDENT_T_PAIRED, float(d.mean()), sd=sd, df=d.size - 1.0)
    width = span[1] - span[0]
    if not (_is_binary((c - span[0]) / width) and _is_binary((b - span[0]) / width)):
        center, se = _pseudo_pair_moments(d / width)
        return _Difference(ADJUSTED_PAIRED, float(d.mean()), scale=width, sd=float(se), center=float(center))
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


# --- One test for a whole gate: every check of every metric, randomized together --------------------------


@dataclass(frozen=True)
class FamilyTest:
    """Several worsening statistics (positive = worse) tested together against "the two runs are
    exchangeable item by item": each null draw re-labels whole items, the same draw for every statistic,
    so the statistics keep their joint distribution (a target failure fails every metric of its item; a
    hard item is hard for every metric).

    `p_adjusted`: Westfall & Young's (1993) step-down maxT adjustment on the statistics standardized by
    their null sd: the family-wise error is at most α under any dependence between the statistics (exact
    up to the Monte Carlo error of the draws), and a statistic that cannot reach significance (three
    discordant pairs) takes no share of α, where Holm charges every test the same. A statistic whose null
    distribution is a point (nothing moved) has p = 1 and stays out of the family.
    """

    observed: np.ndarray
    """The statistics (mean worsening over their items)."""
    scale: np.ndarray
    """sd of each statistic over the null draws (0: a point, never significant)."""
    p_values: np.ndarray
    """One-sided, each statistic alone: P(T* ≥ observed)."""
    p_adjusted: np.ndarray
    bands: np.ndarray
    """The largest value of each statistic that its step of the step-down procedure does not call
    significant at `alpha`: the noise band (how far the statistic moves when nothing changed)."""
    exact: bool
    draws: int
    """Null draws the p-values are over (all 2^m sign patterns when exact, else the seeded draws + 1)."""
    alpha: float
    critical: float = 0.0
    """The first step's bound on the standardized scale: the (1 − α) quantile of the null maximum over every
    statistic, which a statistic leading the family must exceed (gate_sensitivity.py)."""

    @property
    def size(self) -> int:
        """Statistics in the family (those not a point under the null)."""
        return int(np.sum(self.scale > 0))


def family_sign_flip_test(contributions, sizes, *, alpha: float, draws: int | None = None,
                          seed: int = SEED) -> FamilyTest:  # fmt: skip
    """Paired design: statistic k = Σᵢ D[i, k] / sizes[k], D[i, k] item i's worsening on statistic k (0 when
    the item is not in it). A null draw flips the sign of whole rows of D (item i's two runs swapped on
    every statistic at once). All 2^m patterns of the m rows that are not all zero when m ≤
    EXACT_SIGN_FLIPS, else `draws` (default RANDOMIZATION_DRAWS) seeded patterns plus the observed one.
    One statistic alone is `sign_flip_test` of its differences."""
    d = np.asarray(contributions, dtype=float).reshape(-1, len(sizes))
    n = np.asarray(sizes, dtype=float)
    observed = d.sum(axis=0) / np.maximum(n, 1.0)
    scale = np.sqrt((d**2).sum(axis=0)) / np.maximum(n, 1.0)
    active = scale > 0
    x = d[np.any(d[:, active] != 0, axis=1)][:, active] / (n[active] * scale[active])
    m = x.shape[0]
    observed_z = _rounded(np.ones(m) @ x)
    if m <= EXACT_SIGN_FLIPS:
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1) * 2.0 - 1.0
        null_z, exact = _rounded(patterns @ x), True
    else:
        total = draws or RANDOMIZATION_DRAWS
        null_z = np.empty((total + 1, x.shape[1]))
        start = 0
        for chunk in _sign_patterns(m, total, seed):
            null_z[start : start + chunk.shape[0]] = chunk @ x
            start += chunk.shape[0]
        null_z[total] = observed_z
        null_z, exact = _rounded(null_z), False
    return _family(observed, scale, active, observed_z, null_z, alpha=alpha, exact=exact)


def _sign_patterns(m: int, draws: int, seed: int) -> Iterator[np.ndarray]:
    """The seeded ±1 patterns of a Monte Carlo sign-flip family test, in chunks of ≤ _MAX_CELLS. Up to
    _MAX_CELLS they are the first m columns of `_cached_sign_patterns` for the next power of two ≥ m, kept
    for the next gate: a bench runs thousands of gates of about the same size."""
    width = 1 << max(6, (m - 1).bit_length())
    if width * draws <= _MAX_CELLS:
        yield _cached_sign_patterns(width, draws, seed)[:, :m]
        return
    rng = np.random.default_rng(seed)
    step = max(1, _MAX_CELLS // m)
    for start in range(0, draws, step):
        yield rng.integers(0, 2, size=(min(step, draws - start), m)) * 2.0 - 1.0


@functools.lru_cache(maxsize=4)
def _cached_sign_patterns(width: int, draws: int, seed: int) -> np.ndarray:
    patterns = np.random.default_rng(seed).integers(0, 2, size=(draws, width)) * 2.0 - 1.0
    patterns.flags.writeable = False
    return patterns


def family_permutation_test(values, masks, in_candidate, directions, *, alpha: float, draws: int | None = None,
                            seed: int = SEED) -> FamilyTest:  # fmt: skip
    """Independent design (the runs share no item): statistic k = directions[k] · (mean of values[:, k] over
    the candidate's items in masks[:, k] − the same over the baseline's). A null draw deals the pooled
    items out to the two runs at random, keeping each run's number of items; `draws` (default
    RANDOMIZATION_DRAWS) seeded deals plus the observed one. Statistics are standardized by their sd over
    the draws."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(masks, dtype=float)
    labels = np.asarray(in_candidate, dtype=float)
    sign = np.asarray(directions, dtype=float)
    vw = v * w
    total_sum, total_count = vw.sum(axis=0), w.sum(axis=0)

    def statistic(deal: np.ndarray) -> np.ndarray:
        c_sum, c_count = deal @ vw, deal @ w
        b_sum, b_count = total_sum - c_sum, total_count - c_count
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.where((c_count > 0) & (b_count > 0), c_sum / c_count - b_sum / b_count, 0.0)
        return sign * diff

    observed = statistic(labels)
    rng = np.random.default_rng(seed)
    total = draws or RANDOMIZATION_DRAWS
    null = np.empty((total + 1, v.shape[1]))
    step = max(1, _MAX_CELLS // max(labels.size, 1))
    for start in range(0, total, step):
        stop = min(total, start + step)
        null[start:stop] = statistic(rng.permuted(np.broadcast_to(labels, (stop - start, labels.size)), axis=1))
    null[total] = observed
    scale = _rounded(null.std(axis=0))
    active = scale > 0
    observed_z = _rounded(observed[active] / scale[active])
    null_z = _rounded(null[:, active] / scale[active])
    return _family(observed, scale, active, observed_z, null_z, alpha=alpha, exact=False)


def _family(observed, scale, active, observed_z, null_z, *, alpha: float, exact: bool) -> FamilyTest:
    k = observed.size
    p_values, p_adjusted, bands = np.ones(k), np.ones(k), np.zeros(k)
    if observed_z.size:
        p_values[active] = np.mean(null_z >= observed_z, axis=0)
        # Step j tests the j-th largest observed statistic against the null maximum of it and every smaller one.
        order = np.argsort(-observed_z, kind="stable")
        successive = np.maximum.accumulate(null_z[:, order][:, ::-1], axis=1)[:, ::-1]
        adjusted = np.maximum.accumulate(np.mean(successive >= observed_z[order], axis=0))
        # The noise band of step j: the largest null value v with P(max ≥ v) > α, i.e. the r-th largest value
        # for r the smallest count above α·draws (RandomizationTest.largest_not_significant, all columns at once).
        draws = successive.shape[0]
        rank = min(draws, math.floor(alpha * draws + 1e-9) + 1)
        band_z = np.partition(successive, draws - rank, axis=0)[draws - rank]
        unsorted_adjusted, unsorted_band = np.empty_like(adjusted), np.empty_like(band_z)
        unsorted_adjusted[order], unsorted_band[order] = adjusted, band_z
        p_adjusted[active] = unsorted_adjusted
        bands[active] = unsorted_band * scale[active]
    critical = float(band_z[0]) if observed_z.size else 0.0
    return FamilyTest(observed=observed, scale=np.where(active, scale, 0.0), p_values=p_values, p_adjusted=p_adjusted,
                      bands=bands, exact=exact, draws=int(null_z.shape[0]) if observed_z.size else 0,
                      alpha=alpha, critical=critical)  # fmt: skip


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
    return [_ok_value(r) for r in rows if r.status == "ok"]


def _ok_value(row: ScoreLike) -> float:
    if row.value is None or not math.isfinite(row.value):
        raise ValueError(f"score {row.metric} of item {row.item_id} is ok but has no finite value")
    return float(row.value)


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
    return {i: _ok_value(s) for i, s in _by_item(scores, metric).items() if s.status == "ok"}


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
    diff, d = _paired_difference(c, b, span), _change(c, b)
    low, high = diff.bounds((1.0 - confidence) / 2.0) if diff.has_interval else (None, None)
    return PairedComparison(
        metric=metric, n_pairs=len(shared), candidate_mean=float(c.mean()), baseline_mean=float(b.mean()),
        mean_diff=diff.estimate, ci_low=low, ci_high=high,
        sd_diff=float(d.std(ddof=1)) if len(shared) >= 2 else None,
        ci_method=diff.method, p_value=sign_flip_test(d).p_two_sided(), confidence=confidence,
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

GATE_ALPHA = 0.05
"""Family-wise one-sided level of the gate: the chance that an unchanged system fails it, over every check
of every metric together."""
DEFAULT_MIN_TOLERANCE = 0.02
"""Smallest worsening of a mean that fails the gate however significant (the brief's "e.g. 0.02 recall"):
past a few hundred items the noise band falls below it, and a drop of 0.01 is not worth a page."""
WESTFALL_YOUNG = "westfall-young-maxT"
SCORE_DROP, WORST_CASE_DROP, FAILURE_RISE = "score_drop", "worst_case_drop", "failure_rise"
MISSING_METRIC = "missing_metric"
GATE_CHECKS = {
    SCORE_DROP: "the mean over the items ok in both runs worsens",
    WORST_CASE_DROP: "the mean worsens with every failed, skipped or missing item at the worst end of the range",
    FAILURE_RISE: "the share of failed, skipped or missing items rises",
    MISSING_METRIC: "the candidate has no score of a metric the baseline measured (deterministic)",
}
"""What each check of a gated metric tests (`MetricGate.checks_failed` names)."""
GATED = "gated"
RECOVERY = "recovery: the baseline measured no item"
NOT_MEASURED = "not gated: measured in neither run"
NOT_IN_BASELINE = "not gated: the baseline did not measure it"


@dataclass(frozen=True)
class MetricGate:
    """The gate's verdict on one metric; `reason` states every check that failed (or why it passed)."""

    metric: str
    design: Literal["paired", "independent", "none"]
    """paired: the runs share items (offline); independent: they share none (online); none: not gated."""
    higher_is_better: bool
    n_pairs: int
    """Items scored ok in both runs (paired design)."""
    n_candidate: int
    """ok candidate scores."""
    n_baseline: int
    """ok baseline scores."""
    candidate_mean: float | None
    baseline_mean: float | None
    """Means over the compared scores: the items ok in both runs (paired), every ok score (independent)."""
    diff: float | None
    """candidate_mean − baseline_mean (raw sign, not direction-adjusted)."""
    standard_error: float | None
    """sd of the differences / √pairs (Welch SE for independent runs): shown, not used for the decision."""
    tolerance: float | None
    """max(min_tolerance, noise band) of the score drop: the worsening passes up to it. The noise band is
    the largest worsening the family test does not call significant at this check's step; None when the
    score is not gated."""
    ci_low: float | None
    ci_high: float | None
    """Equal-tailed two-sided (1 − α) interval of `diff` (`ci_method`), unadjusted: shown, not used for the
    decision."""
    passed: bool
    reason: str
    ci_method: str | None = None
    test_method: str | None = None
    """A TEST_METHODS key: how the family test draws "nothing changed"."""
    p_value: float | None = None
    """One-sided p-value of the score drop alone, H0 "the runs are exchangeable" (nothing changed)."""
    p_adjusted: float | None = None
    """Westfall–Young-adjusted p_value over every check of every metric of the gate."""
    correction: str = WESTFALL_YOUNG
    gated: bool = True
    """Whether the score was tested: the baseline measured the metric and ≥ min_pairs items are ok in both
    runs (independent: in each run). A metric not gated passes, unless its failure rise fails it or, where the
    baseline has ≥ min_pairs ok scores of it, its worst case."""
    status: str = GATED
    """"gated", or why not: "not gated: n = 7 < 10", NOT_MEASURED, NOT_IN_BASELINE, RECOVERY."""
    n_candidate_items: int = 0
    """Candidate items with a score of this metric (ok, failed or skipped)."""
    n_baseline_items: int = 0
    n_missing: int = 0
    """Baseline items with no score of this metric in the candidate (paired design): counted as not ok."""
    candidate_not_ok_share: float | None = None
    """(failed + skipped + missing) / baseline items (paired), (failed + skipped) / items (independent)."""
    baseline_not_ok_share: float | None = None
    failure_rise: float | None = None
    """candidate_not_ok_share − baseline_not_ok_share."""
    failure_rise_p_value: float | None = None
    """One-sided p-value of "failures are exchangeable between the runs" against a rise (McNemar's exact test
    when it is alone in an exact family)."""
    failure_rise_p_adjusted: float | None = None
    worst_case_diff: float | None = None
    """candidate − baseline mean over the baseline's items with every failed, skipped or missing score at the
    worst end of the range (the sensitivity bound: what the failures could be hiding); paired design, means
    over every item of each run when independent. None when the score is not gated or its range unknown."""
    worst_case_p_value: float | None = None
    worst_case_p_adjusted: float | None = None
    worst_case_tolerance: float | None = None
    checks_failed: tuple[str, ...] = ()
    """Names of the failed checks (GATE_CHECKS keys)."""
    detectable_drop: float | None = None
    """The smallest worsening of the mean the score-drop check catches 90 % of the time at this n and spread
    (gate_sensitivity.py): what a pass can still hide. Paired design only; None when not gated or when no drop
    within the range is caught that often."""


@dataclass(frozen=True)
class GateResult:
    passed: bool
    metrics: list[MetricGate] = field(default_factory=list)
    min_tolerance: float = DEFAULT_MIN_TOLERANCE
    alpha: float = GATE_ALPHA
    correction: str = WESTFALL_YOUNG
    min_pairs: int = DEFAULT_MIN_PAIRS
    max_failure_rise: float = DEFAULT_MAX_FAILURE_RISE
    confidence: float = 1.0 - GATE_ALPHA
    """Two-sided confidence of the printed intervals: 1 − alpha."""
    family_size: int = 0
    """Checks in the family test (those that could move at all)."""
    draws: int = 0
    """Null draws of the family test (all sign patterns when exact)."""

    @property
    def failed_metrics(self) -> list[str]:
        return [m.metric for m in self.metrics if not m.passed]

    @property
    def gated_metrics(self) -> list[str]:
        """Metrics whose score was tested; a gate with none measured nothing and decided nothing."""
        return [m.metric for m in self.metrics if m.gated]

    @property
    def measured(self) -> bool:
        return bool(self.gated_metrics)

    @property
    def rule(self) -> str:
        """The decision rule in one paragraph, for the report."""
        return (f"A metric is gated where the baseline measured it and at least {self.min_pairs} items are scored ok "
                f"in both runs; otherwise it is listed 'not gated' with the reason and its observed change. A gated "
                f"metric fails when its mean over the items ok in both runs worsens by more than "
                f"max({self.min_tolerance:g}, noise band), or when the same worsening with every failed, skipped or "
                f"missing item counted at the worst end of the range (the worst case) does; the worst case is also "
                f"tested where failures leave fewer pairs, when the baseline scored at least {self.min_pairs} items "
                f"ok. Any metric fails when its share of failed, skipped or missing items rises by more than "
                f"{self.max_failure_rise:g}, and "
                f"when the baseline measured it and the candidate has no score of it at all. Each "
                f"worsening must also be significant: the one-sided randomization tests of 'nothing changed' "
                f"(whole items re-labelled between the runs, the same draws for every check) are corrected "
                f"together by Westfall–Young's step-down maxT over the {self.family_size} check(s) that could move, "
                f"at family-wise α = {self.alpha:g}: an unchanged system fails this comparison at most "
                f"{100 * self.alpha:g} % of the time (a run compared with its baseline and its reference spends half "
                f"of the gate's {100 * GATE_ALPHA:g} % on each). The noise band is the largest worsening its step does not call "
                f"significant. Intervals are two-sided {100 * self.confidence:g} %, unadjusted. 'Catches' is the "
                f"smallest drop of a metric's mean that this gate fails at least 90 % of the time at its n and "
                f"spread: what a pass can still hide.")  # fmt: skip

    def summary(self) -> str:
        if not self.passed:
            return "gate failed: " + "; ".join(f"{m.metric}: {m.reason}" for m in self.metrics if not m.passed)
        not_gated = [f"{m.metric} ({m.status})" for m in self.metrics if not m.gated]
        rest = f"; {', '.join(not_gated)}" if not_gated else ""
        if not self.measured:
            return f"nothing gated{rest}"
        caught = sorted(m.detectable_drop for m in self.metrics if m.gated and m.detectable_drop is not None)
        vouches = ""
        if caught:
            low, high = f"{caught[0]:.2f}", f"{caught[-1]:.2f}"
            vouches = f" (it catches drops of {low if low == high else f'{low}–{high}'} or more 90 % of the time)"
        return f"gate passed on {len(self.gated_metrics)} metric(s){vouches}{rest}"

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.summary(), "rule": self.rule, "gated_metrics": self.gated_metrics}


@dataclass
class _Check:
    """One statistic of the family: a mean worsening and the material threshold it must exceed to fail."""

    name: str
    threshold: float
    contributions: dict[str, float] = field(default_factory=dict)
    """Paired: item → its worsening (a missing key is 0)."""
    size: int = 0
    """Paired: the items the mean is over."""
    values: dict[str, float] = field(default_factory=dict)
    """Independent: item (of either run) → its value; the statistic is direction · (candidate − baseline mean)."""
    direction: float = 1.0
    observed: float = 0.0
    p_value: float = 1.0
    p_adjusted: float = 1.0
    band: float = 0.0

    @property
    def tolerance(self) -> float:
        return max(self.threshold, self.band)

    def failed(self, alpha: float) -> bool:
        # A worsening of exactly the threshold passes despite rounding.
        return self.p_adjusted <= alpha and self.observed > self.threshold + 1e-12


def regression_gate(
    candidate: Sequence[ScoreLike], baseline: Sequence[ScoreLike], metrics: Iterable[str], *,
    min_tolerance: float = DEFAULT_MIN_TOLERANCE, min_pairs: int = DEFAULT_MIN_PAIRS,
    max_failure_rise: float = DEFAULT_MAX_FAILURE_RISE, alpha: float = GATE_ALPHA, draws: int | None = None,
    seed: int = SEED,
) -> GateResult:
    """Pass when no metric fails (see the module docstring and `GateResult.rule` for the exact tests).

    Per metric, where the baseline measured it (ok scores) and ≥ `min_pairs` items are ok in both runs
    (independent design: in each run), up to three checks; else the metric is "not gated" (it passes)
    and only its failure rise is checked, and its worst case where the baseline has ≥ `min_pairs` ok scores
    (failures that leave too few pairs must not hide a drop):

    1. score drop: the mean over the items ok in both runs worsens by more than `min_tolerance`;
    2. worst case: the same with every failed, skipped or missing score counted at the worst end of the
       metric's range, in both runs (so "nothing changed" stays exchangeable): newly failed items cannot
       hide a drop, and a few missing items do not fail the gate alone when this bound still passes;
    3. failure rise: the share of failed, skipped or missing items rises by more than `max_failure_rise`.

    A check fails when it is that large and significant: every check of every metric is one family,
    tested by `family_sign_flip_test` (runs sharing items) or `family_permutation_test` (runs sharing
    none) with Westfall–Young's step-down maxT at family-wise one-sided `alpha`. So a target failure,
    which fails every metric of an item, counts about once, and an unchanged system fails the gate at most
    `alpha` of the time. `draws` and `seed`: the family test's Monte Carlo draws (RANDOMIZATION_DRAWS).

    A metric the baseline scored on items that all failed passes as a recovery (RECOVERY) when the candidate
    measured it; one measured in neither run, or only by the candidate, is listed as not gated. One the
    baseline measured and the candidate has no score of at all fails (`MISSING_METRIC`): a metric switched
    off or lost is a change the gate cannot vouch for. The printed interval of each difference is the two-sided 1 − `alpha` interval (95 % at the default 0.05).
    """
    gated = list(dict.fromkeys(metrics))
    if not gated:
        raise ValueError("a regression gate needs at least one metric")
    if min_pairs < 2:
        raise ValueError("min_pairs below 2 leaves nothing to estimate a spread from")
    if not 0.0 < alpha < 1.0:
        # alpha = 0 would print (-inf, inf) and pass every drop; alpha >= 1 fails on noise and prints a point.
        raise ValueError(f"alpha is a family-wise level strictly between 0 and 1, not {alpha!r}")
    cand_rows, base_rows = _rows_by_metric(candidate, gated), _rows_by_metric(baseline, gated)
    shared = any(cand_rows[m].keys() & base_rows[m].keys() for m in gated)
    design = "paired" if shared else "independent"
    drafts = [_gate_draft(metric, cand_rows[metric], base_rows[metric], design=design, min_pairs=min_pairs,
                          min_tolerance=min_tolerance, max_failure_rise=max_failure_rise, alpha=alpha)
              for metric in gated]  # fmt: skip
    checks = [check for draft in drafts for check in draft["checks"].values()]
    family = _test_family(checks, design, cand_rows, alpha=alpha, draws=draws, seed=seed)
    method = PERMUTATION_MONTE_CARLO if design == "independent" else (
        SIGN_FLIP_EXACT if family.exact else SIGN_FLIP_MONTE_CARLO)  # fmt: skip
    results = [_gate_verdict(draft, method=method, alpha=alpha, critical=family.critical) for draft in drafts]
    return GateResult(passed=all(r.passed for r in results), metrics=results, min_tolerance=min_tolerance,
                      alpha=alpha, min_pairs=min_pairs, max_failure_rise=max_failure_rise, confidence=1.0 - alpha,
                      family_size=family.size, draws=family.draws)  # fmt: skip


def _rows_by_metric(scores: Iterable[ScoreLike], metrics: list[str]) -> dict[str, dict[str, ScoreLike]]:
    rows: dict[str, dict[str, ScoreLike]] = {m: {} for m in metrics}
    for s in scores:
        by_item = rows.get(s.metric)
        if by_item is None:
            continue
        if s.item_id in by_item:
            raise ValueError(f"item {s.item_id} has two {s.metric} scores in one run")
        by_item[s.item_id] = s
    return rows


def _gate_draft(metric: str, cand_rows: dict[str, ScoreLike], base_rows: dict[str, ScoreLike], *, design: str,
                min_pairs: int, min_tolerance: float, max_failure_rise: float, alpha: float) -> dict:  # fmt: skip
    """Every figure of one metric's gate, and its checks for the family test."""
    higher = metric not in LOWER_IS_BETTER
    cand = {i: _ok_value(s) for i, s in cand_rows.items() if s.status == "ok"}
    base = {i: _ok_value(s) for i, s in base_rows.items() if s.status == "ok"}
    draft: dict = dict(metric=metric, design=design, higher_is_better=higher, n_pairs=0, n_candidate=len(cand),
                       n_baseline=len(base), n_candidate_items=len(cand_rows), n_baseline_items=len(base_rows),
                       candidate_mean=None, baseline_mean=None, diff=None, standard_error=None, ci_low=None,
                       ci_high=None, ci_method=None, checks={})  # fmt: skip
    if not base:
        draft.update(design="none", status=RECOVERY if base_rows and cand else
                     NOT_IN_BASELINE if cand else NOT_MEASURED)  # fmt: skip
        if cand:
            draft["candidate_mean"] = float(np.mean(list(cand.values())))
        return draft
    if not cand_rows:
        draft.update(status=f"not gated: the candidate has no score of it (the baseline measured {len(base)} items)",
                     missing_metric=True)  # fmt: skip
        return draft
    sign = 1.0 if higher else -1.0  # worsening = sign · (baseline − candidate)
    if design == "paired":
        items = sorted(base_rows)
        base_lost = {i: base_rows[i].status != "ok" for i in items}
        cand_lost = {i: i not in cand_rows or cand_rows[i].status != "ok" for i in items}
        rise = {i: float(cand_lost[i]) - float(base_lost[i]) for i in items if cand_lost[i] != base_lost[i]}
        draft["checks"][FAILURE_RISE] = _Check(FAILURE_RISE, max_failure_rise, contributions=rise, size=len(items))
        shared = [i for i in items if i in base and i in cand]
        draft.update(n_pairs=len(shared), n_missing=sum(i not in cand_rows for i in items),
                     candidate_not_ok_share=sum(cand_lost.values()) / len(items),
                     baseline_not_ok_share=sum(base_lost.values()) / len(items))  # fmt: skip
        enough = len(shared) >= min_pairs
        c, b = np.array([cand[i] for i in shared]), np.array([base[i] for i in shared])
        span = value_range(metric, np.concatenate([c, b, [base[i] for i in items if i in base],
                                                   [cand[i] for i in items if i in cand]]))  # fmt: skip
        if shared:
            difference = _paired_difference(c, b, span)
            se = float((c - b).std(ddof=1) / math.sqrt(c.size)) if c.size >= 2 else None
        if enough:
            drops = dict(zip(shared, (-sign * _change(c, b)).tolist()))
            draft["checks"][SCORE_DROP] = _Check(SCORE_DROP, min_tolerance, contributions=drops, size=len(shared))
            draft["width"] = span[1] - span[0] if span is not None else None
        n_lost = sum(base_lost[i] or cand_lost[i] for i in items)
        # The worst case stands on the baseline's items, not on the pairs: it is tested wherever the baseline
        # measured the metric, so failures that leave fewer than min_pairs pairs cannot hide a drop by making the
        # score drop untestable. With nothing lost the worst case is the score drop itself.
        if len(base) >= min_pairs and span is not None and n_lost:
            worst = span[0] if higher else span[1]
            imputed = dict(zip(items, (-sign * _change([cand.get(i, worst) for i in items],
                                                       [base.get(i, worst) for i in items])).tolist()))
            draft["checks"][WORST_CASE_DROP] = _Check(WORST_CASE_DROP, min_tolerance, contributions=imputed,
                                                      size=len(items))  # fmt: skip
            draft.update(worst_case_diff=-sign * float(np.mean(list(imputed.values()))), worst=worst,
                         n_lost=n_lost)  # fmt: skip
        not_gated_text = f"only {len(shared)} items scored ok in both runs (need ≥ {min_pairs})"
        n_compared = len(shared)
    else:
        cand_lost = {i: s.status != "ok" for i, s in cand_rows.items()}
        base_lost = {i: s.status != "ok" for i, s in base_rows.items()}
        lost = {i: float(v) for i, v in (cand_lost | base_lost).items()}
        draft["checks"][FAILURE_RISE] = _Check(FAILURE_RISE, max_failure_rise, values=lost, direction=1.0)
        draft.update(candidate_not_ok_share=float(np.mean(list(cand_lost.values()))) if cand_lost else 1.0,
                     baseline_not_ok_share=float(np.mean(list(base_lost.values()))))  # fmt: skip
        enough = len(cand) >= min_pairs and len(base) >= min_pairs
        c, b = np.array(list(cand.values())), np.array(list(base.values()))
        span = value_range(metric, np.concatenate([c, b]))
        if cand:
            difference = _independent_difference(c, b, span)
            se = (math.sqrt(c.var(ddof=1) / c.size + b.var(ddof=1) / b.size)
                  if c.size >= 2 and b.size >= 2 else None)  # fmt: skip
        if enough:
            draft["checks"][SCORE_DROP] = _Check(SCORE_DROP, min_tolerance, values=cand | base, direction=-sign)
        n_lost = sum(cand_lost.values()) + sum(base_lost.values())
        if len(base) >= min_pairs and span is not None and n_lost:  # as paired: the baseline measured it
            worst = span[0] if higher else span[1]
            imputed = {i: cand.get(i, worst) for i in cand_rows} | {i: base.get(i, worst) for i in base_rows}
            draft["checks"][WORST_CASE_DROP] = _Check(WORST_CASE_DROP, min_tolerance, values=imputed,
                                                      direction=-sign)  # fmt: skip
            draft.update(worst_case_diff=float(np.mean([imputed[i] for i in cand_rows])
                                               - np.mean([imputed[i] for i in base_rows])), worst=worst,
                         n_lost=n_lost)  # fmt: skip
        not_gated_text = f"only {len(cand)} candidate and {len(base)} baseline ok scores (need ≥ {min_pairs} each)"
        n_compared = min(len(cand), len(base))
    draft["failure_rise"] = draft["candidate_not_ok_share"] - draft["baseline_not_ok_share"]
    draft["status"] = GATED if enough else f"not gated: n = {n_compared} < {min_pairs}"
    draft["not_gated_text"] = not_gated_text
    if c.size and b.size:
        draft.update(candidate_mean=float(c.mean()), baseline_mean=float(b.mean()), diff=difference.estimate,
                     standard_error=se, ci_method=difference.method)  # fmt: skip
        if difference.has_interval:
            draft["ci_low"], draft["ci_high"] = difference.bounds(alpha / 2.0)
    return draft


def _test_family(checks: list[_Check], design: str, cand_rows: dict[str, dict[str, ScoreLike]], *, alpha: float,
                 draws: int | None, seed: int) -> FamilyTest:  # fmt: skip
    """Run the family test over every check and write each one's result back into it."""
    if not checks:
        empty = np.zeros(0)
        return FamilyTest(empty, empty, empty, empty, empty, exact=True, draws=0, alpha=alpha)
    if design == "paired":
        items = sorted({i for check in checks for i in check.contributions})
        index = {item: row for row, item in enumerate(items)}
        matrix = np.zeros((len(items), len(checks)))
        for column, check in enumerate(checks):
            for item, value in check.contributions.items():
                matrix[index[item], column] = value
        family = family_sign_flip_test(matrix, [c.size for c in checks], alpha=alpha, draws=draws, seed=seed)
    else:
        candidate_items = {i for rows in cand_rows.values() for i in rows}
        items = sorted({i for check in checks for i in check.values})
        index = {item: row for row, item in enumerate(items)}
        values, masks = np.zeros((len(items), len(checks))), np.zeros((len(items), len(checks)))
        for column, check in enumerate(checks):
            for item, value in check.values.items():
                values[index[item], column], masks[index[item], column] = value, 1.0
        in_candidate, directions = [i in candidate_items for i in items], [c.direction for c in checks]
        family = family_permutation_test(values, masks, in_candidate, directions, alpha=alpha, draws=draws, seed=seed)
    for column, check in enumerate(checks):
        check.observed = float(family.observed[column])
        check.p_value, check.p_adjusted = float(family.p_values[column]), float(family.p_adjusted[column])
        check.band = float(family.bands[column])
    return family


def _gate_verdict(draft: dict, *, method: str, alpha: float, critical: float) -> MetricGate:
    checks: dict[str, _Check] = draft.pop("checks")
    not_gated_text, worst, n_lost = draft.pop("not_gated_text", ""), draft.pop("worst", None), draft.pop("n_lost", 0)
    width = draft.pop("width", None)
    texts: list[tuple[str, str | None]] = []  # (text, the check it fails or None)
    if draft.pop("missing_metric", False):
        texts.append((draft["status"].removeprefix("not gated: "), MISSING_METRIC))
    direction = "drop" if draft["higher_is_better"] else "rise"

    def change(worsening: float) -> str:
        return f"{direction} of {worsening:.4f}" if worsening > 0 else f"no {direction}"

    def p_text(check: _Check) -> str:
        return f"one-sided p {_fmt_p(check.p_value)}, adjusted p {_fmt_p(check.p_adjusted)}"

    score, worst_case, rise = checks.get(SCORE_DROP), checks.get(WORST_CASE_DROP), checks.get(FAILURE_RISE)
    if score is not None:
        sizes = f"{draft['n_pairs']} pairs" if draft["design"] == "paired" else \
            f"{draft['n_candidate']} vs {draft['n_baseline']} items"  # fmt: skip
        texts.append((f"{change(score.observed)} {'exceeds' if score.failed(alpha) else 'within'} tolerance "
                      f"{score.tolerance:.4f} ({draft['design']}, {sizes}, {p_text(score)})",
                      SCORE_DROP if score.failed(alpha) else None))  # fmt: skip
    elif draft["diff"] is not None and not_gated_text:
        texts.append((f"not gated: {not_gated_text}; observed change {draft['diff']:+.4f}", None))
    elif not texts:
        texts.append((draft["status"] if not not_gated_text else f"not gated: {not_gated_text}", None))
    if worst_case is not None:
        texts.append((f"worst case ({n_lost} failed, skipped or missing at {worst:g}): {change(worst_case.observed)} "
                      f"{'exceeds' if worst_case.failed(alpha) else 'within'} tolerance {worst_case.tolerance:.4f} "
                      f"({p_text(worst_case)})", WORST_CASE_DROP if worst_case.failed(alpha) else None))  # fmt: skip
    if rise is not None and rise.failed(alpha):
        missing = f", {draft['n_missing']} missing" if draft.get("n_missing") else ""
        texts.append((f"failed, skipped or missing share rose from {draft['baseline_not_ok_share']:.2f} to "
                      f"{draft['candidate_not_ok_share']:.2f} (+{rise.observed:.2f} > {rise.threshold:.2f}{missing}, "
                      f"{p_text(rise)})", FAILURE_RISE))  # fmt: skip
    failed = tuple(check for _, check in texts if check)
    reason = "; ".join([text for text, check in texts if check] + [text for text, check in texts if not check])
    detectable = None
    if score is not None and width is not None and score.size:
        mean_square = sum(v * v for v in score.contributions.values()) / score.size
        detectable = detectable_drop(mean_square, score.size, width, critical, score.threshold)
    return MetricGate(
        **draft, tolerance=score.tolerance if score else None, passed=not failed, reason=reason,
        test_method=method if checks else None, p_value=score.p_value if score else None,
        p_adjusted=score.p_adjusted if score else None, gated=draft["status"] == GATED,
        failure_rise_p_value=rise.p_value if rise else None, failure_rise_p_adjusted=rise.p_adjusted if rise else None,
        worst_case_p_value=worst_case.p_value if worst_case else None,
        worst_case_p_adjusted=worst_case.p_adjusted if worst_case else None,
        worst_case_tolerance=worst_case.tolerance if worst_case else None, checks_failed=failed,
        detectable_drop=detectable,
    )  # fmt: skip


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
