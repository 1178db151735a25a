"""The regression gate's rule: is a candidate run worse than an earlier one, metric by metric
(`regression_gate`).

Which runs a run is compared with, and how its level is shared between them: run_gate.py and
level.py. What a pass can hide: sensitivity.py."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np

from pipelines.evaluation.statistics.gate.sensitivity import detectable_drop
from pipelines.evaluation.statistics.intervals import independent_difference, paired_difference
from pipelines.evaluation.statistics.multiplicity import WESTFALL_YOUNG
from pipelines.evaluation.statistics.randomization import (
    PERMUTATION_MONTE_CARLO,
    SEED,
    SIGN_FLIP_EXACT,
    SIGN_FLIP_MONTE_CARLO,
    FamilyTest,
    family_permutation_test,
    family_sign_flip_test,
)
from pipelines.evaluation.statistics.scores import (
    LOWER_IS_BETTER,
    ScoreLike,
    ok_value,
    score_change,
    value_range,
)

DEFAULT_MIN_PAIRS = 10
"""Fewest items scored ok in both runs for the gate to decide on a metric: the smallest n at which
the intervals here were validated (coverage ≥ 0.93 at n = 10). Below it a few survivors of many
failures would stand for the run, and "no significant drop" would say nothing."""
DEFAULT_MAX_FAILURE_RISE = 0.05
"""Largest rise of the not-ok (failed or skipped) share the gate tolerates: five points."""

# --- The regression gate --------------------------------------------------------------------------

GATE_ALPHA = 0.05
"""Family-wise one-sided level of the gate: the chance that an unchanged system fails it, over every
check of every metric together."""
DEFAULT_MIN_TOLERANCE = 0.02
"""Smallest worsening of a mean that fails the gate however significant ("e.g. 0.02 recall"):
past a few hundred items the noise band falls below it, and a drop of 0.01 is not worth a page."""
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
    """The gate's verdict on one metric; `reason` states every check that failed (or why it
    passed)."""

    metric: str
    design: Literal["paired", "independent", "none"]
    """paired: the runs share items (offline); independent: they share none (online); none: not
    gated."""
    higher_is_better: bool
    n_pairs: int
    """Items scored ok in both runs (paired design)."""
    n_candidate: int
    """ok candidate scores."""
    n_baseline: int
    """ok baseline scores."""
    candidate_mean: float | None
    baseline_mean: float | None
    """Means over the compared scores: the items ok in both runs (paired), every ok score
    (independent)."""
    diff: float | None
    """candidate_mean − baseline_mean (raw sign, not direction-adjusted)."""
    standard_error: float | None
    """sd of the differences / √pairs (Welch SE for independent runs): shown, not used for the
    decision."""
    tolerance: float | None
    """max(min_tolerance, noise band) of the score drop: the worsening passes up to it. The noise
    band is the largest worsening the family test does not call significant at this check's step;
    None when the score is not gated."""
    ci_low: float | None
    ci_high: float | None
    """Equal-tailed two-sided (1 − α) interval of `diff` (`ci_method`), unadjusted: shown, not used
    for the decision."""
    passed: bool
    reason: str
    ci_method: str | None = None
    test_method: str | None = None
    """A TEST_METHODS key: how the family test draws "nothing changed"."""
    p_value: float | None = None
    """One-sided p-value of the score drop alone, H0 "the runs are exchangeable" (nothing
    changed)."""
    p_adjusted: float | None = None
    """Westfall–Young-adjusted p_value over every check of every metric of the gate."""
    correction: str = WESTFALL_YOUNG
    gated: bool = True
    """Whether the score was tested: the baseline measured the metric and ≥ min_pairs items are ok
    in both runs (independent: in each run). A metric not gated passes, unless its failure rise
    fails it or, where the baseline has ≥ min_pairs ok scores of it, its worst case."""
    status: str = GATED
    """"gated", or why not: "not gated: n = 7 < 10", NOT_MEASURED, NOT_IN_BASELINE, RECOVERY."""
    n_candidate_items: int = 0
    """Candidate items with a score of this metric (ok, failed or skipped)."""
    n_baseline_items: int = 0
    n_missing: int = 0
    """Baseline items with no score of this metric in the candidate (paired design): counted as not
    ok."""
    candidate_not_ok_share: float | None = None
    """(failed + skipped + missing) / baseline items (paired), (failed + skipped) / items
    (independent)."""
    baseline_not_ok_share: float | None = None
    failure_rise: float | None = None
    """candidate_not_ok_share − baseline_not_ok_share."""
    failure_rise_p_value: float | None = None
    """One-sided p-value of "failures are exchangeable between the runs" against a rise (McNemar's
    exact test when it is alone in an exact family)."""
    failure_rise_p_adjusted: float | None = None
    worst_case_diff: float | None = None
    """candidate − baseline mean over the baseline's items with every failed, skipped or missing
    score at the worst end of the range (the sensitivity bound: what the failures could be hiding);
    paired design, means over every item of each run when independent. None when the score is not
    gated or its range unknown."""
    worst_case_p_value: float | None = None
    worst_case_p_adjusted: float | None = None
    worst_case_tolerance: float | None = None
    checks_failed: tuple[str, ...] = ()
    """Names of the failed checks (GATE_CHECKS keys)."""
    detectable_drop: float | None = None
    """The smallest worsening of the mean the score-drop check catches 90 % of the time at this n
    and spread (gate/sensitivity.py): what a pass can still hide. Paired design only; None when not
    gated or when no drop within the range is caught that often."""


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
        return (
            f"A metric is gated where the baseline measured it and at least {self.min_pairs} items are scored ok "
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
            f"spread: what a pass can still hide."
        )

    def summary(self) -> str:
        if not self.passed:
            return "gate failed: " + "; ".join(
                f"{m.metric}: {m.reason}" for m in self.metrics if not m.passed
            )
        not_gated = [f"{m.metric} ({m.status})" for m in self.metrics if not m.gated]
        rest = f"; {', '.join(not_gated)}" if not_gated else ""
        if not self.measured:
            return f"nothing gated{rest}"
        caught = sorted(
            m.detectable_drop for m in self.metrics if m.gated and m.detectable_drop is not None
        )
        vouches = ""
        if caught:
            low, high = f"{caught[0]:.2f}", f"{caught[-1]:.2f}"
            vouches = f" (it catches drops of {low if low == high else f'{low}–{high}'} or more 90 % of the time)"
        return f"gate passed on {len(self.gated_metrics)} metric(s){vouches}{rest}"

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "summary": self.summary(),
            "rule": self.rule,
            "gated_metrics": self.gated_metrics,
        }


@dataclass
class _Check:
    """One statistic of the family: a mean worsening and the material threshold it must exceed to
    fail."""

    name: str
    threshold: float
    contributions: dict[str, float] = field(default_factory=dict)
    """Paired: item → its worsening (a missing key is 0)."""
    size: int = 0
    """Paired: the items the mean is over."""
    values: dict[str, float] = field(default_factory=dict)
    """Independent: item (of either run) → its value; the statistic is direction · (candidate −
    baseline mean)."""
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
    candidate: Sequence[ScoreLike],
    baseline: Sequence[ScoreLike],
    metrics: Iterable[str],
    *,
    min_tolerance: float = DEFAULT_MIN_TOLERANCE,
    min_pairs: int = DEFAULT_MIN_PAIRS,
    max_failure_rise: float = DEFAULT_MAX_FAILURE_RISE,
    alpha: float = GATE_ALPHA,
    draws: int | None = None,
    seed: int = SEED,
) -> GateResult:
    """Pass when no metric fails (the statistics package docstring and `GateResult.rule` state the
    exact tests).

    Per metric, where the baseline measured it (ok scores) and ≥ `min_pairs` items are ok in both
    runs (independent design: in each run), up to three checks; else the metric is "not gated" (it
    passes) and only its failure rise is checked, and its worst case where the baseline has ≥
    `min_pairs` ok scores (failures that leave too few pairs must not hide a drop):

    1. score drop: the mean over the items ok in both runs worsens by more than `min_tolerance`;
    2. worst case: the same with every failed, skipped or missing score counted at the worst end of
       the metric's range, in both runs (so "nothing changed" stays exchangeable): newly failed
       items cannot hide a drop, and a few missing items do not fail the gate alone when this bound
       still passes;
    3. failure rise: the share of failed, skipped or missing items rises by more than
       `max_failure_rise`.

    A check fails when it is that large and significant: every check of every metric is one family,
    tested by `family_sign_flip_test` (runs sharing items) or `family_permutation_test` (runs
    sharing none) with Westfall–Young's step-down maxT at family-wise one-sided `alpha`. So a target
    failure, which fails every metric of an item, counts about once, and an unchanged system fails
    the gate at most `alpha` of the time. `draws` and `seed`: the family test's Monte Carlo draws
    (RANDOMIZATION_DRAWS).

    A metric the baseline scored on items that all failed passes as a recovery (RECOVERY) when the
    candidate measured it; one measured in neither run, or only by the candidate, is listed as not
    gated. One the baseline measured and the candidate has no score of at all fails
    (`MISSING_METRIC`): a metric switched off or lost is a change the gate cannot vouch for. The
    printed interval of each difference is the two-sided 1 − `alpha` interval (95 % at the default
    0.05).
    """
    gated = list(dict.fromkeys(metrics))
    if not gated:
        raise ValueError("a regression gate needs at least one metric")
    if min_pairs < 2:
        raise ValueError("min_pairs below 2 leaves nothing to estimate a spread from")
    if not 0.0 < alpha < 1.0:
        # alpha = 0 would print (-inf, inf) and pass every drop; alpha >= 1 fails on noise and
        # prints a point.
        raise ValueError(f"alpha is a family-wise level strictly between 0 and 1, not {alpha!r}")
    cand_rows, base_rows = _rows_by_metric(candidate, gated), _rows_by_metric(baseline, gated)
    shared = any(cand_rows[m].keys() & base_rows[m].keys() for m in gated)
    design = "paired" if shared else "independent"
    drafts = [
        _gate_draft(
            metric,
            cand_rows[metric],
            base_rows[metric],
            design=design,
            min_pairs=min_pairs,
            min_tolerance=min_tolerance,
            max_failure_rise=max_failure_rise,
            alpha=alpha,
        )
        for metric in gated
    ]
    checks = [check for draft in drafts for check in draft["checks"].values()]
    family = _test_family(checks, design, cand_rows, alpha=alpha, draws=draws, seed=seed)
    method = (
        PERMUTATION_MONTE_CARLO
        if design == "independent"
        else (SIGN_FLIP_EXACT if family.exact else SIGN_FLIP_MONTE_CARLO)
    )
    results = [
        _gate_verdict(draft, method=method, alpha=alpha, critical=family.critical)
        for draft in drafts
    ]
    return GateResult(
        passed=all(r.passed for r in results),
        metrics=results,
        min_tolerance=min_tolerance,
        alpha=alpha,
        min_pairs=min_pairs,
        max_failure_rise=max_failure_rise,
        confidence=1.0 - alpha,
        family_size=family.size,
        draws=family.draws,
    )


def _rows_by_metric(
    scores: Iterable[ScoreLike], metrics: list[str]
) -> dict[str, dict[str, ScoreLike]]:
    rows: dict[str, dict[str, ScoreLike]] = {m: {} for m in metrics}
    for s in scores:
        by_item = rows.get(s.metric)
        if by_item is None:
            continue
        if s.item_id in by_item:
            raise ValueError(f"item {s.item_id} has two {s.metric} scores in one run")
        by_item[s.item_id] = s
    return rows


def _gate_draft(
    metric: str,
    cand_rows: dict[str, ScoreLike],
    base_rows: dict[str, ScoreLike],
    *,
    design: str,
    min_pairs: int,
    min_tolerance: float,
    max_failure_rise: float,
    alpha: float,
) -> dict:
    """Every figure of one metric's gate, and its checks for the family test."""
    higher = metric not in LOWER_IS_BETTER
    cand = {i: ok_value(s) for i, s in cand_rows.items() if s.status == "ok"}
    base = {i: ok_value(s) for i, s in base_rows.items() if s.status == "ok"}
    draft: dict = dict(
        metric=metric,
        design=design,
        higher_is_better=higher,
        n_pairs=0,
        n_candidate=len(cand),
        n_baseline=len(base),
        n_candidate_items=len(cand_rows),
        n_baseline_items=len(base_rows),
        candidate_mean=None,
        baseline_mean=None,
        diff=None,
        standard_error=None,
        ci_low=None,
        ci_high=None,
        ci_method=None,
        checks={},
    )
    if not base:
        draft.update(
            design="none",
            status=RECOVERY if base_rows and cand else NOT_IN_BASELINE if cand else NOT_MEASURED,
        )
        if cand:
            draft["candidate_mean"] = float(np.mean(list(cand.values())))
        return draft
    if not cand_rows:
        draft.update(
            status=f"not gated: the candidate has no score of it (the baseline measured {len(base)} items)",
            missing_metric=True,
        )
        return draft
    sign = 1.0 if higher else -1.0  # worsening = sign · (baseline − candidate)
    if design == "paired":
        items = sorted(base_rows)
        base_lost = {i: base_rows[i].status != "ok" for i in items}
        cand_lost = {i: i not in cand_rows or cand_rows[i].status != "ok" for i in items}
        rise = {
            i: float(cand_lost[i]) - float(base_lost[i])
            for i in items
            if cand_lost[i] != base_lost[i]
        }
        draft["checks"][FAILURE_RISE] = _Check(
            FAILURE_RISE, max_failure_rise, contributions=rise, size=len(items)
        )
        shared = [i for i in items if i in base and i in cand]
        draft.update(
            n_pairs=len(shared),
            n_missing=sum(i not in cand_rows for i in items),
            candidate_not_ok_share=sum(cand_lost.values()) / len(items),
            baseline_not_ok_share=sum(base_lost.values()) / len(items),
        )
        enough = len(shared) >= min_pairs
        c, b = np.array([cand[i] for i in shared]), np.array([base[i] for i in shared])
        span = value_range(
            metric,
            np.concatenate(
                [c, b, [base[i] for i in items if i in base], [cand[i] for i in items if i in cand]]
            ),
        )
        if shared:
            difference = paired_difference(c, b, span)
            se = float((c - b).std(ddof=1) / math.sqrt(c.size)) if c.size >= 2 else None
        if enough:
            drops = dict(zip(shared, (-sign * score_change(c, b)).tolist()))
            draft["checks"][SCORE_DROP] = _Check(
                SCORE_DROP, min_tolerance, contributions=drops, size=len(shared)
            )
            draft["width"] = span[1] - span[0] if span is not None else None
        n_lost = sum(base_lost[i] or cand_lost[i] for i in items)
        # The worst case stands on the baseline's items, not on the pairs: it is tested wherever the
        # baseline measured the metric, so failures that leave fewer than min_pairs pairs cannot
        # hide a drop by making the score drop untestable. With nothing lost the worst case is the
        # score drop itself.
        if len(base) >= min_pairs and span is not None and n_lost:
            worst = span[0] if higher else span[1]
            imputed = dict(
                zip(
                    items,
                    (
                        -sign
                        * score_change(
                            [cand.get(i, worst) for i in items], [base.get(i, worst) for i in items]
                        )
                    ).tolist(),
                )
            )
            draft["checks"][WORST_CASE_DROP] = _Check(
                WORST_CASE_DROP, min_tolerance, contributions=imputed, size=len(items)
            )
            draft.update(
                worst_case_diff=-sign * float(np.mean(list(imputed.values()))),
                worst=worst,
                n_lost=n_lost,
            )
        not_gated_text = f"only {len(shared)} items scored ok in both runs (need ≥ {min_pairs})"
        n_compared = len(shared)
    else:
        cand_lost = {i: s.status != "ok" for i, s in cand_rows.items()}
        base_lost = {i: s.status != "ok" for i, s in base_rows.items()}
        lost = {i: float(v) for i, v in (cand_lost | base_lost).items()}
        draft["checks"][FAILURE_RISE] = _Check(
            FAILURE_RISE, max_failure_rise, values=lost, direction=1.0
        )
        draft.update(
            candidate_not_ok_share=float(np.mean(list(cand_lost.values()))) if cand_lost else 1.0,
            baseline_not_ok_share=float(np.mean(list(base_lost.values()))),
        )
        enough = len(cand) >= min_pairs and len(base) >= min_pairs
        c, b = np.array(list(cand.values())), np.array(list(base.values()))
        span = value_range(metric, np.concatenate([c, b]))
        if cand:
            difference = independent_difference(c, b, span)
            se = (
                math.sqrt(c.var(ddof=1) / c.size + b.var(ddof=1) / b.size)
                if c.size >= 2 and b.size >= 2
                else None
            )
        if enough:
            draft["checks"][SCORE_DROP] = _Check(
                SCORE_DROP, min_tolerance, values=cand | base, direction=-sign
            )
        n_lost = sum(cand_lost.values()) + sum(base_lost.values())
        if (
            len(base) >= min_pairs and span is not None and n_lost
        ):  # as paired: the baseline measured it
            worst = span[0] if higher else span[1]
            imputed = {i: cand.get(i, worst) for i in cand_rows} | {
                i: base.get(i, worst) for i in base_rows
            }
            draft["checks"][WORST_CASE_DROP] = _Check(
                WORST_CASE_DROP, min_tolerance, values=imputed, direction=-sign
            )
            draft.update(
                worst_case_diff=float(
                    np.mean([imputed[i] for i in cand_rows])
                    - np.mean([imputed[i] for i in base_rows])
                ),
                worst=worst,
                n_lost=n_lost,
            )
        not_gated_text = f"only {len(cand)} candidate and {len(base)} baseline ok scores (need ≥ {min_pairs} each)"
        n_compared = min(len(cand), len(base))
    draft["failure_rise"] = draft["candidate_not_ok_share"] - draft["baseline_not_ok_share"]
    draft["status"] = GATED if enough else f"not gated: n = {n_compared} < {min_pairs}"
    draft["not_gated_text"] = not_gated_text
    if c.size and b.size:
        draft.update(
            candidate_mean=float(c.mean()),
            baseline_mean=float(b.mean()),
            diff=difference.estimate,
            standard_error=se,
            ci_method=difference.method,
        )
        if difference.has_interval:
            draft["ci_low"], draft["ci_high"] = difference.bounds(alpha / 2.0)
    return draft


def _test_family(
    checks: list[_Check],
    design: str,
    cand_rows: dict[str, dict[str, ScoreLike]],
    *,
    alpha: float,
    draws: int | None,
    seed: int,
) -> FamilyTest:
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
        family = family_sign_flip_test(
            matrix, [c.size for c in checks], alpha=alpha, draws=draws, seed=seed
        )
    else:
        candidate_items = {i for rows in cand_rows.values() for i in rows}
        items = sorted({i for check in checks for i in check.values})
        index = {item: row for row, item in enumerate(items)}
        values, masks = np.zeros((len(items), len(checks))), np.zeros((len(items), len(checks)))
        for column, check in enumerate(checks):
            for item, value in check.values.items():
                values[index[item], column], masks[index[item], column] = value, 1.0
        in_candidate, directions = (
            [i in candidate_items for i in items],
            [c.direction for c in checks],
        )
        family = family_permutation_test(
            values, masks, in_candidate, directions, alpha=alpha, draws=draws, seed=seed
        )
    for column, check in enumerate(checks):
        check.observed = float(family.observed[column])
        check.p_value, check.p_adjusted = (
            float(family.p_values[column]),
            float(family.p_adjusted[column]),
        )
        check.band = float(family.bands[column])
    return family


def _gate_verdict(draft: dict, *, method: str, alpha: float, critical: float) -> MetricGate:
    checks: dict[str, _Check] = draft.pop("checks")
    not_gated_text, worst, n_lost = (
        draft.pop("not_gated_text", ""),
        draft.pop("worst", None),
        draft.pop("n_lost", 0),
    )
    width = draft.pop("width", None)
    texts: list[tuple[str, str | None]] = []  # (text, the check it fails or None)
    if draft.pop("missing_metric", False):
        texts.append((draft["status"].removeprefix("not gated: "), MISSING_METRIC))
    direction = "drop" if draft["higher_is_better"] else "rise"

    def change(worsening: float) -> str:
        return f"{direction} of {worsening:.4f}" if worsening > 0 else f"no {direction}"

    def p_text(check: _Check) -> str:
        return f"one-sided p {_fmt_p(check.p_value)}, adjusted p {_fmt_p(check.p_adjusted)}"

    score, worst_case, rise = (
        checks.get(SCORE_DROP),
        checks.get(WORST_CASE_DROP),
        checks.get(FAILURE_RISE),
    )
    if score is not None:
        sizes = (
            f"{draft['n_pairs']} pairs"
            if draft["design"] == "paired"
            else f"{draft['n_candidate']} vs {draft['n_baseline']} items"
        )
        texts.append(
            (
                f"{change(score.observed)} {'exceeds' if score.failed(alpha) else 'within'} tolerance "
                f"{score.tolerance:.4f} ({draft['design']}, {sizes}, {p_text(score)})",
                SCORE_DROP if score.failed(alpha) else None,
            )
        )
    elif draft["diff"] is not None and not_gated_text:
        texts.append((f"not gated: {not_gated_text}; observed change {draft['diff']:+.4f}", None))
    elif not texts:
        texts.append(
            (draft["status"] if not not_gated_text else f"not gated: {not_gated_text}", None)
        )
    if worst_case is not None:
        texts.append(
            (
                f"worst case ({n_lost} failed, skipped or missing at {worst:g}): {change(worst_case.observed)} "
                f"{'exceeds' if worst_case.failed(alpha) else 'within'} tolerance {worst_case.tolerance:.4f} "
                f"({p_text(worst_case)})",
                WORST_CASE_DROP if worst_case.failed(alpha) else None,
            )
        )
    if rise is not None and rise.failed(alpha):
        missing = f", {draft['n_missing']} missing" if draft.get("n_missing") else ""
        texts.append(
            (
                f"failed, skipped or missing share rose from {draft['baseline_not_ok_share']:.2f} to "
                f"{draft['candidate_not_ok_share']:.2f} (+{rise.observed:.2f} > {rise.threshold:.2f}{missing}, "
                f"{p_text(rise)})",
                FAILURE_RISE,
            )
        )
    failed = tuple(check for _, check in texts if check)
    reason = "; ".join(
        [text for text, check in texts if check] + [text for text, check in texts if not check]
    )
    detectable = None
    if score is not None and width is not None and score.size:
        mean_square = sum(v * v for v in score.contributions.values()) / score.size
        detectable = detectable_drop(mean_square, score.size, width, critical, score.threshold)
    return MetricGate(
        **draft,
        tolerance=score.tolerance if score else None,
        passed=not failed,
        reason=reason,
        test_method=method if checks else None,
        p_value=score.p_value if score else None,
        p_adjusted=score.p_adjusted if score else None,
        gated=draft["status"] == GATED,
        failure_rise_p_value=rise.p_value if rise else None,
        failure_rise_p_adjusted=rise.p_adjusted if rise else None,
        worst_case_p_value=worst_case.p_value if worst_case else None,
        worst_case_p_adjusted=worst_case.p_adjusted if worst_case else None,
        worst_case_tolerance=worst_case.tolerance if worst_case else None,
        checks_failed=failed,
        detectable_drop=detectable,
    )


def _fmt_p(p: float | None) -> str:
    """ "= 0.012" or "< 0.001", to follow a "p"."""
    if p is None:
        return "= —"
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"
