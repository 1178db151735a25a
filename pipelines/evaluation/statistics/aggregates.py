"""One metric over one stratum of a run: its mean over the ok scores, its counts of failures, and
its interval."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from pipelines.evaluation.statistics.intervals import (
    CONFIDENCE,
    JEFFREYS_BOUNDED_MEAN,
    STUDENT_T,
    MeanDistribution,
)
from pipelines.evaluation.statistics.scores import OVERALL, ScoreLike, ok_values, value_range

# --- Aggregates -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Aggregate:
    """One metric over one stratum of one run. `n` counts the ok scores the mean is taken over.

    `ci_low`/`ci_high` form the equal-tailed `confidence` interval made by `ci_method` (a CI_METHODS
    key); `value_range` and `beta_shape` (Jeffreys methods: Beta(a, b) on the range rescaled to [0,
    1]) let a caller test the mean against any threshold with `p_below`/`p_above`.
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

    def _distribution(self) -> MeanDistribution | None:
        if self.mean is None:
            return None
        if self.beta_shape is not None and self.value_range is not None:
            lo, hi = self.value_range
            return MeanDistribution(
                self.ci_method or JEFFREYS_BOUNDED_MEAN,
                self.mean,
                lo=lo,
                hi=hi,
                a=self.beta_shape[0],
                b=self.beta_shape[1],
            )
        if self.ci_method == STUDENT_T and self.std is not None and self.n >= 2:
            return MeanDistribution(
                STUDENT_T, self.mean, sd=self.std / math.sqrt(self.n), df=self.n - 1.0
            )
        if self.ci_low is not None and self.ci_high is not None:
            # Built by hand with only an interval: a normal distribution with that interval.
            z = float(sps.norm.isf((1.0 - self.confidence) / 2.0))
            return MeanDistribution(
                STUDENT_T, self.mean, sd=(self.ci_high - self.ci_low) / (2 * z), df=math.inf
            )
        return None


def aggregate(
    scores: Iterable[ScoreLike],
    *,
    n_resamples: int | None = None,
    confidence: float = CONFIDENCE,
    seed: int | None = None,
) -> list[Aggregate]:
    """Per metric and stratum, plus the pooled stratum `all`.

    Intervals are closed-form (intervals.py; every figure: the statistics package docstring);
    `n_resamples=0` still skips them (cheap trend lines), any other `n_resamples` and `seed` are
    accepted for callers of the bootstrap era and unused.
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


def _aggregate_group(
    metric: str, stratum: str, rows: list[ScoreLike], *, confidence: float, with_ci: bool
) -> Aggregate:
    values = np.array(ok_values(rows), dtype=float)
    n = int(values.size)
    span = value_range(metric, values)
    dist = MeanDistribution.of(values, span) if with_ci else None
    low, high = dist.bounds((1.0 - confidence) / 2.0) if dist else (None, None)
    return Aggregate(
        metric=metric,
        stratum=stratum,
        n=n,
        n_failed=sum(1 for r in rows if r.status == "failed"),
        n_skipped=sum(1 for r in rows if r.status == "skipped"),
        mean=float(values.mean()) if n else None,
        ci_low=low,
        ci_high=high,
        std=float(values.std(ddof=1)) if n >= 2 else None,
        ci_method=dist.method if dist else None,
        confidence=confidence,
        value_range=span if dist and dist.a is not None else None,
        beta_shape=(dist.a, dist.b) if dist and dist.a is not None else None,
    )
