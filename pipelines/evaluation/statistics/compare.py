"""Two runs side by side on the items both scored: paired differences with intervals and p-values
(`eval compare`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pipelines.evaluation.statistics.intervals import CONFIDENCE, Difference, paired_difference
from pipelines.evaluation.statistics.multiplicity import BENJAMINI_HOCHBERG, benjamini_hochberg
from pipelines.evaluation.statistics.randomization import sign_flip_test
from pipelines.evaluation.statistics.scores import (
    OVERALL,
    ScoreLike,
    ok_by_item,
    score_change,
    value_range,
)

COMPARE_FDR = 1.0 - CONFIDENCE
"""Benjamini–Hochberg level of `eval compare`'s two-sided tests."""

# --- Paired comparison and `eval compare` ---------------------------------------------------------


@dataclass(frozen=True)
class PairedComparison:
    """Candidate minus baseline on the items both runs scored ok for one metric.

    `ci_low`/`ci_high`: equal-tailed `confidence` interval of the mean difference (`ci_method`),
    valid for any distribution of the scores. `p_value`: two-sided exact sign-flip test of "the runs
    are exchangeable on every item" (`sign_flip_test`; McNemar's exact test on 0/1 scores). The two
    answer different questions: with few pairs that all moved one way the test can reject "nothing
    changed" while the interval, which must also allow for pairs not yet seen moving the other way,
    holds 0.
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
    candidate_scores: Iterable[ScoreLike],
    baseline_scores: Iterable[ScoreLike],
    metric: str,
    *,
    confidence: float = CONFIDENCE,
) -> PairedComparison:
    """Difference candidate − baseline over the items both runs scored ok: MOVER-Jeffreys interval,
    sign-flip p.

    Pairing removes the item-to-item variance both runs share (hard questions are hard for both), so
    a paired difference is far less noisy than the difference of two means. It says nothing about
    the items one run failed: `regression_gate` checks those.
    """
    result, _ = _paired(list(candidate_scores), list(baseline_scores), metric, confidence)
    return result


def _paired(
    candidate, baseline, metric: str, confidence: float
) -> tuple[PairedComparison, Difference | None]:
    cand, base = ok_by_item(candidate, metric), ok_by_item(baseline, metric)
    shared = sorted(cand.keys() & base.keys())
    if not shared:
        return PairedComparison(
            metric, 0, None, None, None, None, None, None, confidence=confidence
        ), None
    c = np.array([cand[i] for i in shared])
    b = np.array([base[i] for i in shared])
    span = value_range(metric, np.concatenate([c, b]))
    diff, d = paired_difference(c, b, span), score_change(c, b)
    low, high = diff.bounds((1.0 - confidence) / 2.0) if diff.has_interval else (None, None)
    return PairedComparison(
        metric=metric,
        n_pairs=len(shared),
        candidate_mean=float(c.mean()),
        baseline_mean=float(b.mean()),
        mean_diff=diff.estimate,
        ci_low=low,
        ci_high=high,
        sd_diff=float(d.std(ddof=1)) if len(shared) >= 2 else None,
        ci_method=diff.method,
        p_value=sign_flip_test(d).p_two_sided(),
        confidence=confidence,
    ), diff


def compare_runs(
    arm_b: Sequence[ScoreLike],
    arm_a: Sequence[ScoreLike],
    *,
    confidence: float = CONFIDENCE,
    fdr: float = COMPARE_FDR,
) -> list[dict]:
    """`eval compare`'s rows: paired difference B − A per metric (both arms measured) and stratum
    (`all` first, then A's strata), for every cell with at least one pair.

    Each row: metric, stratum, n_pairs, a, b, diff, ci_low, ci_high (equal-tailed `confidence`
    interval), ci_method, p_value (two-sided exact sign-flip test, H0: A and B exchangeable item by
    item), p_adjusted (Benjamini–Hochberg over all rows), significant (p_adjusted ≤ fdr),
    correction. Many strata × metrics are tested at once; BH keeps the expected share of false
    "significant" rows at `fdr`. BH is proven for independent or positively dependent tests; a
    pooled row and its strata share items, a positive dependence, though two-sided tests of it are
    not covered by the proof.
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
                rows.append(
                    {
                        "metric": metric,
                        "stratum": stratum,
                        "n_pairs": result.n_pairs,
                        "a": result.baseline_mean,
                        "b": result.candidate_mean,
                        "diff": result.mean_diff,
                        "ci_low": result.ci_low,
                        "ci_high": result.ci_high,
                        "ci_method": result.ci_method,
                        "p_value": result.p_value,
                    }
                )
    tested = [r for r in rows if r["p_value"] is not None]
    for row, adjusted in zip(tested, benjamini_hochberg([r["p_value"] for r in tested])):
        row["p_adjusted"] = adjusted
    for row in rows:
        row.setdefault("p_adjusted", None)
        row["significant"] = row["p_adjusted"] is not None and row["p_adjusted"] <= fdr
        row["correction"] = BENJAMINI_HOCHBERG
    return rows
