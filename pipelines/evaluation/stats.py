"""Aggregates with honest uncertainty, paired comparisons and the regression gate.

Pure functions over Score rows. A failed or skipped score is counted, never averaged: the
mean is over `ok` scores only, and every aggregate carries n, n_failed and n_skipped next to
a percentile-bootstrap confidence interval, so a 50-item eval never looks as sure as a
500-item one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

import numpy as np

OVERALL = "all"
"""The stratum that pools every item of a run."""

LOWER_IS_BETTER = frozenset({"noise_delta_f", "ragas_noise_sensitivity"})
"""Metrics where a rise is the regression; every other metric is better when higher."""

N_RESAMPLES = 2_000
CONFIDENCE = 0.95
SEED = 0
_MAX_CELLS = 4_000_000
"""Bootstrap indices drawn per chunk (32 MB of int64): big evals stay vectorised in bounded memory."""


class ScoreLike(Protocol):
    item_id: str
    stratum: str
    metric: str
    value: float | None
    status: str


@dataclass(frozen=True)
class Aggregate:
    """One metric over one stratum of one run. `n` counts the ok scores the mean is taken over."""

    metric: str
    stratum: str
    n: int
    n_failed: int
    n_skipped: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    std: float | None

    @property
    def n_items(self) -> int:
        return self.n + self.n_failed + self.n_skipped


@dataclass(frozen=True)
class PairedComparison:
    """Candidate minus baseline on the items both runs scored ok for one metric."""

    metric: str
    n_pairs: int
    candidate_mean: float | None
    baseline_mean: float | None
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    sd_diff: float | None


@dataclass(frozen=True)
class MetricGate:
    metric: str
    design: Literal["paired", "independent", "none"]
    higher_is_better: bool
    n_pairs: int
    n_candidate: int
    n_baseline: int
    candidate_mean: float | None
    baseline_mean: float | None
    diff: float | None
    """candidate_mean − baseline_mean over the compared scores (raw sign, not direction-adjusted)."""
    standard_error: float | None
    tolerance: float | None
    ci_low: float | None
    ci_high: float | None
    """Bootstrap CI of the paired difference (paired design only); shown, not used for the decision."""
    passed: bool
    reason: str


@dataclass(frozen=True)
class GateResult:
    passed: bool
    metrics: list[MetricGate] = field(default_factory=list)
    min_tolerance: float = 0.02
    z: float = 1.96

    @property
    def failed_metrics(self) -> list[str]:
        return [m.metric for m in self.metrics if not m.passed]

    def summary(self) -> str:
        if self.passed:
            return f"gate passed on {len(self.metrics)} metric(s)"
        return "gate failed: " + "; ".join(f"{m.metric}: {m.reason}" for m in self.metrics if not m.passed)

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.summary()}


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean; None below two values (one value has no spread).

    Values are sorted first so the interval depends on the multiset only: the same scores read
    back from the results DB in another order give the same interval.
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


def aggregate(
    scores: Iterable[ScoreLike], *, n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED
) -> list[Aggregate]:
    """Per metric and stratum, plus the pooled stratum `all`; `n_resamples=0` skips the intervals."""
    groups: dict[tuple[str, str], list[ScoreLike]] = defaultdict(list)
    for score in scores:
        groups[(score.metric, score.stratum)].append(score)
        groups[(score.metric, OVERALL)].append(score)
    out = [
        _aggregate_group(metric, stratum, rows, n_resamples=n_resamples, confidence=confidence, seed=seed)
        for (metric, stratum), rows in groups.items()
    ]
    return sorted(out, key=lambda a: (a.metric, a.stratum != OVERALL, a.stratum))


def _aggregate_group(metric: str, stratum: str, rows: list[ScoreLike], **ci) -> Aggregate:
    values = np.array(_ok_values(rows), dtype=float)
    n = int(values.size)
    interval = bootstrap_ci(values, **ci)
    return Aggregate(
        metric=metric, stratum=stratum, n=n,
        n_failed=sum(1 for r in rows if r.status == "failed"),
        n_skipped=sum(1 for r in rows if r.status == "skipped"),
        mean=float(values.mean()) if n else None,
        ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None,
        std=float(values.std(ddof=1)) if n >= 2 else None,
    )  # fmt: skip


def _ok_values(rows: Iterable[ScoreLike]) -> list[float]:
    values = []
    for r in rows:
        if r.status != "ok":
            continue
        if r.value is None or not math.isfinite(r.value):
            raise ValueError(f"score {r.metric} of item {r.item_id} is ok but has no finite value")
        values.append(float(r.value))
    return values


def _ok_by_item(scores: Iterable[ScoreLike], metric: str) -> dict[str, float]:
    by_item: dict[str, float] = {}
    for s in scores:
        if s.metric != metric or s.status != "ok":
            continue
        if s.item_id in by_item:
            raise ValueError(f"item {s.item_id} has two ok {metric} scores in one run")
        by_item[s.item_id] = _ok_values([s])[0]
    return by_item


def paired_comparison(
    candidate_scores: Iterable[ScoreLike], baseline_scores: Iterable[ScoreLike], metric: str, *,
    n_resamples: int = N_RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED,
) -> PairedComparison:
    """Difference candidate − baseline over the items both runs scored ok, with a bootstrap CI.

    Pairing removes the item-to-item variance both runs share (hard questions are hard for
    both), so a paired difference is far less noisy than the difference of two means.
    """
    cand, base = _ok_by_item(candidate_scores, metric), _ok_by_item(baseline_scores, metric)
    shared = sorted(cand.keys() & base.keys())
    if not shared:
        return PairedComparison(metric, 0, None, None, None, None, None, None)
    c = np.array([cand[i] for i in shared])
    b = np.array([base[i] for i in shared])
    diffs = c - b
    interval = bootstrap_ci(diffs, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return PairedComparison(
        metric=metric, n_pairs=len(shared), candidate_mean=float(c.mean()), baseline_mean=float(b.mean()),
        mean_diff=float(diffs.mean()), ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None, sd_diff=float(diffs.std(ddof=1)) if len(shared) >= 2 else None,
    )  # fmt: skip


def regression_gate(
    candidate: Sequence[ScoreLike], baseline: Sequence[ScoreLike], metrics: Iterable[str], *,
    min_tolerance: float = 0.02, z: float = 1.96, n_resamples: int = N_RESAMPLES, seed: int = SEED,
) -> GateResult:
    """Pass when, on every gated metric, candidate ≥ baseline − tolerance (≤ baseline + tolerance
    for metrics in LOWER_IS_BETTER).

    The tolerance is sized to the eval set: tolerance = max(min_tolerance, z · SE), i.e. the
    half-width of the normal-approximation confidence interval of the difference, floored so
    a huge eval set does not flag drops too small to matter.

    - Paired design (the two runs share ≥ 2 items scored ok; the offline golden set):
      SE = sd(candidate_i − baseline_i) / √n_pairs, and the difference is the mean paired difference.
    - Independent design (fewer than 2 shared items; online runs sample different traces each day):
      SE = √(var_candidate / n_candidate + var_baseline / n_baseline) (Welch), difference of means.

    So a drop of 0.03 with sd_diff 0.15 passes at 50 pairs (tolerance 0.042) and fails at 500
    (tolerance floored to 0.02): 50 queries are noisier than 500. A metric that cannot be
    compared (fewer than two scores on a side) fails the gate rather than passing unchecked.
    """
    gated = list(dict.fromkeys(metrics))
    if not gated:
        raise ValueError("a regression gate needs at least one metric")
    results = [
        _gate_metric(candidate, baseline, metric, min_tolerance=min_tolerance, z=z, n_resamples=n_resamples, seed=seed)
        for metric in gated
    ]
    return GateResult(passed=all(r.passed for r in results), metrics=results, min_tolerance=min_tolerance, z=z)


def _gate_metric(candidate, baseline, metric: str, *, min_tolerance: float, z: float, n_resamples: int,
                 seed: int) -> MetricGate:  # fmt: skip
    higher = metric not in LOWER_IS_BETTER
    cand, base = _ok_by_item(candidate, metric), _ok_by_item(baseline, metric)
    common = dict(metric=metric, higher_is_better=higher, n_candidate=len(cand), n_baseline=len(base))
    paired = paired_comparison(candidate, baseline, metric, n_resamples=n_resamples, seed=seed)
    if paired.n_pairs >= 2:
        se = paired.sd_diff / math.sqrt(paired.n_pairs)
        diff, c_mean, b_mean, design = paired.mean_diff, paired.candidate_mean, paired.baseline_mean, "paired"
        ci = (paired.ci_low, paired.ci_high)
    elif len(cand) >= 2 and len(base) >= 2:
        c, b = np.array(list(cand.values())), np.array(list(base.values()))
        se = math.sqrt(c.var(ddof=1) / c.size + b.var(ddof=1) / b.size)
        c_mean, b_mean, design, ci = float(c.mean()), float(b.mean()), "independent", (None, None)
        diff = c_mean - b_mean
    else:
        return MetricGate(**common, design="none", n_pairs=paired.n_pairs, candidate_mean=None, baseline_mean=None,
                          diff=None, standard_error=None, tolerance=None, ci_low=None, ci_high=None, passed=False,
                          reason=f"not comparable: {len(cand)} candidate, {len(base)} baseline, "
                                 f"{paired.n_pairs} paired ok scores (need 2 per side)")  # fmt: skip
    tolerance = max(min_tolerance, z * se)
    worsening = -diff if higher else diff
    passed = worsening <= tolerance + 1e-12  # a drop of exactly the tolerance passes despite float rounding
    direction = "drop" if higher else "rise"
    change = f"{direction} of {worsening:.4f}" if worsening > 0 else f"no {direction}"
    sizes = f"{paired.n_pairs} pairs" if design == "paired" else f"{len(cand)} vs {len(base)} items"
    reason = f"{change} {'within' if passed else 'exceeds'} tolerance {tolerance:.4f} ({design}, {sizes})"
    return MetricGate(**common, design=design, n_pairs=paired.n_pairs, candidate_mean=c_mean, baseline_mean=b_mean,
                      diff=diff, standard_error=se, tolerance=tolerance, ci_low=ci[0], ci_high=ci[1], passed=passed,
                      reason=reason)  # fmt: skip
