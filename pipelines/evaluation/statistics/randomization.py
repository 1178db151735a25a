"""Exact randomization tests of "nothing changed": one statistic, or every check of a gate drawn
together.

Intervals and tests answer different questions. An interval of a mean or of a mean difference must
cover whatever the distribution of the scores, so with few items it allows for mass not seen yet at
the ends of the range. The gate and `eval compare` test "nothing changed" (the runs are exchangeable
item by item), for which randomization tests are exact at every n with no assumption on the scores:
8 of 12 items worse by 0.15 and none better is p = 2⁻⁸ although the 95 % interval of the difference
still reaches above 0. Under that null the gate fails at most α = 5 % of unchanged systems, every
check of every metric counted: Westfall–Young's maxT draws the checks together, so the failure rises
of a target failure (every metric of an item fails) count about once, and a check that cannot reach
significance (three discordant pairs) takes no share of α. `ragwatch bench gate` simulates the whole
gate on nine metrics (docs/explanation/statistics.md: false alarms, power per drop and n, coverage;
tests/unit/harness/ragwatch_harness/bench/test_gate_power.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

SIGN_FLIP_EXACT = "sign-flip-exact"
SIGN_FLIP_MONTE_CARLO = "sign-flip-monte-carlo"
PERMUTATION_MONTE_CARLO = "permutation-monte-carlo"
TEST_METHODS: dict[str, str] = {
    SIGN_FLIP_EXACT: "paired sign-flip randomization test, all 2^m sign patterns of the m items that moved, the same "
    "pattern for every check of the gate (McNemar's exact test on 0/1)",
    SIGN_FLIP_MONTE_CARLO: "paired sign-flip randomization test, seeded random sign patterns of whole items plus the "
    "observed one, the same for every check of the gate",
    PERMUTATION_MONTE_CARLO: "two-sample permutation test, seeded random deals of the items between the runs plus "
    "the observed one",
}
"""`test_method` labels of the gate's score tests."""

SEED = 0
MAX_CELLS = 4_000_000
"""Cells (draws × items) drawn per chunk (32 MB of int64): big evals stay vectorised in bounded
memory."""
EXACT_SIGN_FLIPS = 16
"""Up to this many non-zero paired differences the sign-flip test enumerates all 2^m patterns
(65,536)."""
RANDOMIZATION_DRAWS = 10_000
"""Random re-labellings of a Monte Carlo randomization test (p-values resolved to about ±0.001 at
0.005)."""

# --- Tests of "nothing changed": exact randomization ----------------------------------------------


@dataclass(frozen=True)
class RandomizationTest:
    """The null distribution of a statistic under "the two runs are exchangeable", and the observed
    value.

    `null` holds every value of the statistic over the re-labellings (all of them, or
    `RANDOMIZATION_DRAWS` seeded random ones plus the observed labelling, which keeps the Monte
    Carlo p-value exact: under the null P(p ≤ α) ≤ α). Values are rounded to 12 decimals so the
    observed labelling ties with itself.
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
        """P(|T*| ≥ |observed|): the null distributions here are symmetric about 0 (paired) or
        centred on it."""
        return float(np.mean(np.abs(self.null) >= abs(self.observed)))

    def negated(self) -> RandomizationTest:
        """The same test of −T (a drop of a higher-is-better metric as a positive worsening)."""
        return RandomizationTest(-self.observed, -self.null, self.exact)

    def largest_not_significant(self, level: float, *, greater: bool = True) -> float:
        """The largest null value t (smallest for greater=False) whose one-sided p-value exceeds
        `level`: the observed value is significant at `level` exactly when it lies beyond t."""
        values = self.null if greater else -self.null
        ordered = np.sort(values)
        tail = (
            1.0 - np.arange(ordered.size) / ordered.size
        )  # P(T* ≥ ordered[i]), ties resolved below
        # With ties, P(T* ≥ v) is the tail at the first occurrence of v.
        first = np.searchsorted(ordered, ordered, side="left")
        keep = ordered[tail[first] > level]
        band = float(keep.max()) if keep.size else float(ordered.min())
        return band if greater else -band


def _rounded(values: np.ndarray) -> np.ndarray:
    return np.round(values, 12)


def sign_flip_test(differences, *, draws: int | None = None, seed: int = SEED) -> RandomizationTest:
    """Paired randomization test of the mean difference (Fisher's): under "the two runs are
    exchangeable on every item" each difference d_i is as likely as −d_i, so the mean over all 2^m
    sign patterns of the m non-zero differences is the exact null distribution. Exact enumeration up
    to EXACT_SIGN_FLIPS non-zero differences, else `draws` (default RANDOMIZATION_DRAWS) seeded
    patterns plus the observed one. On 0/1 scores it is McNemar's exact test: 10 losses and no gain
    give p = 2⁻¹⁰.

    Simulated on faithfulness-like pairs (300 runs per cell, one-sided α = 0.025), n = 12 / 50 /
    200: false alarms when nothing changed 0.010 / 0.020 / 0.023 (paired t 0.003 / 0.020 / 0.023); a
    drop of 0.05 caught 0.35 / 0.38 / 0.88 (t 0.26 / 0.38 / 0.88; "the 95 % MOVER interval is below
    0": 0.00 / 0.22 / 0.85).
    """
    d = np.sort(
        np.asarray(differences, dtype=float)
    )  # sorted: the same multiset gives the same draws
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
    step = max(1, MAX_CELLS // m)
    for start in range(0, total, step):
        stop = min(total, start + step)
        signs = rng.integers(0, 2, size=(stop - start, m)) * 2.0 - 1.0
        sums[start:stop] = signs @ magnitudes
    null = np.append(_rounded(sums / n), observed)
    return RandomizationTest(observed, null, exact=False)


def permutation_test(
    candidate, baseline, *, draws: int | None = None, seed: int = SEED
) -> RandomizationTest:
    """Two-sample permutation test of mean(candidate) − mean(baseline) for runs that share no item
    (online): under "both runs are draws from one distribution" every split of the pooled scores
    into groups of the two sizes is as likely; `draws` (default RANDOMIZATION_DRAWS) seeded splits
    plus the observed one."""
    c = np.sort(np.asarray(candidate, dtype=float))
    b = np.sort(np.asarray(baseline, dtype=float))
    if not c.size or not b.size:
        raise ValueError("a two-sample test needs a score on each side")
    pooled = np.concatenate([c, b])
    observed = float(_rounded(np.array([c.mean() - b.mean()]))[0])
    rng = np.random.default_rng(seed)
    total = draws or RANDOMIZATION_DRAWS
    stats_ = np.empty(total)
    step = max(1, MAX_CELLS // pooled.size)
    for start in range(0, total, step):
        stop = min(total, start + step)
        shuffled = rng.permuted(np.broadcast_to(pooled, (stop - start, pooled.size)), axis=1)
        stats_[start:stop] = shuffled[:, : c.size].mean(axis=1) - shuffled[:, c.size :].mean(axis=1)
    return RandomizationTest(observed, np.append(_rounded(stats_), observed), exact=False)


# --- One test for a whole gate: every check of every metric, randomized together ------------------


@dataclass(frozen=True)
class FamilyTest:
    """Several worsening statistics (positive = worse) tested together against "the two runs are
    exchangeable item by item": each null draw re-labels whole items, the same draw for every
    statistic, so the statistics keep their joint distribution (a target failure fails every metric
    of its item; a hard item is hard for every metric).

    `p_adjusted`: Westfall & Young's (1993) step-down maxT adjustment on the statistics standardized
    by their null sd: the family-wise error is at most α under any dependence between the statistics
    (exact up to the Monte Carlo error of the draws), and a statistic that cannot reach significance
    (three discordant pairs) takes no share of α, where Holm charges every test the same. A
    statistic whose null distribution is a point (nothing moved) has p = 1 and stays out of the
    family.
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
    """Null draws the p-values are over (all 2^m sign patterns when exact, else the seeded draws +
    1)."""
    alpha: float
    critical: float = 0.0
    """The first step's bound on the standardized scale: the (1 − α) quantile of the null maximum
    over every statistic, which a statistic leading the family must exceed (gate/sensitivity.py)."""

    @property
    def size(self) -> int:
        """Statistics in the family (those not a point under the null)."""
        return int(np.sum(self.scale > 0))


def family_sign_flip_test(
    contributions, sizes, *, alpha: float, draws: int | None = None, seed: int = SEED
) -> FamilyTest:
    """Paired design: statistic k = Σᵢ D[i, k] / sizes[k], D[i, k] item i's worsening on statistic k
    (0 when the item is not in it). A null draw flips the sign of whole rows of D (item i's two runs
    swapped on every statistic at once). All 2^m patterns of the m rows that are not all zero when m
    ≤ EXACT_SIGN_FLIPS, else `draws` (default RANDOMIZATION_DRAWS) seeded patterns plus the observed
    one. One statistic alone is `sign_flip_test` of its differences."""
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
    """The seeded ±1 patterns of a Monte Carlo sign-flip family test, in chunks of ≤ MAX_CELLS. Up
    to MAX_CELLS they are the first m columns of `_cached_sign_patterns` for the next power of two ≥
    m, kept for the next gate: a bench runs thousands of gates of about the same size."""
    width = 1 << max(6, (m - 1).bit_length())
    if width * draws <= MAX_CELLS:
        yield _cached_sign_patterns(width, draws, seed)[:, :m]
        return
    rng = np.random.default_rng(seed)
    step = max(1, MAX_CELLS // m)
    for start in range(0, draws, step):
        yield rng.integers(0, 2, size=(min(step, draws - start), m)) * 2.0 - 1.0


@functools.lru_cache(maxsize=4)
def _cached_sign_patterns(width: int, draws: int, seed: int) -> np.ndarray:
    patterns = np.random.default_rng(seed).integers(0, 2, size=(draws, width)) * 2.0 - 1.0
    patterns.flags.writeable = False
    return patterns


def family_permutation_test(
    values,
    masks,
    in_candidate,
    directions,
    *,
    alpha: float,
    draws: int | None = None,
    seed: int = SEED,
) -> FamilyTest:
    """Independent design (the runs share no item): statistic k = directions[k] · (mean of values[:,
    k] over the candidate's items in masks[:, k] − the same over the baseline's). A null draw deals
    the pooled items out to the two runs at random, keeping each run's number of items; `draws`
    (default RANDOMIZATION_DRAWS) seeded deals plus the observed one. Statistics are standardized by
    their sd over the draws."""
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
    step = max(1, MAX_CELLS // max(labels.size, 1))
    for start in range(0, total, step):
        stop = min(total, start + step)
        null[start:stop] = statistic(
            rng.permuted(np.broadcast_to(labels, (stop - start, labels.size)), axis=1)
        )
    null[total] = observed
    scale = _rounded(null.std(axis=0))
    active = scale > 0
    observed_z = _rounded(observed[active] / scale[active])
    null_z = _rounded(null[:, active] / scale[active])
    return _family(observed, scale, active, observed_z, null_z, alpha=alpha, exact=False)


def _family(
    observed, scale, active, observed_z, null_z, *, alpha: float, exact: bool
) -> FamilyTest:
    k = observed.size
    p_values, p_adjusted, bands = np.ones(k), np.ones(k), np.zeros(k)
    if observed_z.size:
        p_values[active] = np.mean(null_z >= observed_z, axis=0)
        # Step j tests the j-th largest observed statistic against the null maximum of it and every
        # smaller one.
        order = np.argsort(-observed_z, kind="stable")
        successive = np.maximum.accumulate(null_z[:, order][:, ::-1], axis=1)[:, ::-1]
        adjusted = np.maximum.accumulate(np.mean(successive >= observed_z[order], axis=0))
        # The noise band of step j: the largest null value v with P(max ≥ v) > α, i.e. the r-th
        # largest value for r the smallest count above α·draws
        # (RandomizationTest.largest_not_significant, all columns at once).
        draws = successive.shape[0]
        rank = min(draws, math.floor(alpha * draws + 1e-9) + 1)
        band_z = np.partition(successive, draws - rank, axis=0)[draws - rank]
        unsorted_adjusted, unsorted_band = np.empty_like(adjusted), np.empty_like(band_z)
        unsorted_adjusted[order], unsorted_band[order] = adjusted, band_z
        p_adjusted[active] = unsorted_adjusted
        bands[active] = unsorted_band * scale[active]
    critical = float(band_z[0]) if observed_z.size else 0.0
    return FamilyTest(
        observed=observed,
        scale=np.where(active, scale, 0.0),
        p_values=p_values,
        p_adjusted=p_adjusted,
        bands=bands,
        exact=exact,
        draws=int(null_z.shape[0]) if observed_z.size else 0,
        alpha=alpha,
        critical=critical,
    )
