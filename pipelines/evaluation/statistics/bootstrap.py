"""The percentile bootstrap interval, the alternative the closed-form intervals are compared with
(tests/unit/pipelines/evaluation/statistics/test_intervals_coverage.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipelines.evaluation.statistics.intervals import CONFIDENCE
from pipelines.evaluation.statistics.randomization import MAX_CELLS, SEED

N_RESAMPLES = 2_000
"""Bootstrap resamples of `bootstrap_ci` (the count of the study it was compared in)."""


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean; None below two values. No printed figure uses it:
    it collapses to [1, 1] when every score is 1.0 and covers 0.65 at n = 10, p = 0.9 (see
    tests/unit/pipelines/evaluation/statistics/test_intervals_coverage.py). Kept so that comparison
    can be rerun.
    """
    data = np.sort(np.asarray(values, dtype=float))
    n = data.size
    if n < 2 or n_resamples <= 0:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    step = max(1, MAX_CELLS // n)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        means[start:stop] = data[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)
