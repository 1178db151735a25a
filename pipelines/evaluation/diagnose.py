"""From aggregates to a diagnosis: which band each metric is in, what users see, what to do first.

The operating thresholds are data (THRESHOLDS), copied from the product brief; rows marked
`source="ragwatch"` fill in what the brief implies but does not spell out. Findings are
ordered so retrieval problems come before generation problems: low context precision
degrades faithfulness downstream, so fixing the prompt first would treat a symptom.

A band is stated only with evidence: the aggregate needs at least `min_n` ok scores, and its
interval must clear the band's edge(s) (see `diagnose`), with Benjamini–Hochberg over every band
claim of the run so that many strata × metrics do not produce findings by chance. Otherwise the
finding's severity is "inconclusive" and its note starts with "not enough evidence".

Wrong answers are attributed per item (`retrieval.attribute`), never blended into one
"accuracy"; `summarize_attribution` counts those labels so the report can say which stage to fix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pipelines.evaluation.stats import BENJAMINI_HOCHBERG, CONFIDENCE, OVERALL, Aggregate, benjamini_hochberg

Severity = Literal["problem", "watch", "inconclusive", "healthy"]
Stage = Literal["retrieval", "generation", "robustness", "tools"]

INCONCLUSIVE: Severity = "inconclusive"
"""The severity of a finding whose band the data cannot establish: too few scores, or an interval that
does not clear the band's edge. Its note starts with NOT_ENOUGH_EVIDENCE."""
NOT_ENOUGH_EVIDENCE = "not enough evidence"
DEFAULT_MIN_N = 10
"""Fewest ok scores for a band to be stated: the smallest n at which the intervals of `stats` were
validated (coverage ≥ 0.93 at n = 10); below it a stratum's mean rests on a handful of items."""

STAGE_ORDER: dict[str, int] = {"retrieval": 0, "generation": 1, "robustness": 2, "tools": 3}
SEVERITY_ORDER: dict[str, int] = {"problem": 0, "watch": 1, "inconclusive": 2, "healthy": 3}


@dataclass(frozen=True)
class Threshold:
    """One band of one metric: low ≤ mean < high, with either end's inclusion switchable."""

    metric: str
    stage: Stage
    low: float | None
    high: float | None
    users_see: str
    first_action: str
    severity: Severity
    low_inclusive: bool = True
    high_inclusive: bool = False
    source: Literal["brief", "ragwatch"] = "brief"

    def contains(self, value: float) -> bool:
        above = self.low is None or (value >= self.low if self.low_inclusive else value > self.low)
        return above and (self.high is None or (value <= self.high if self.high_inclusive else value < self.high))

    @property
    def band(self) -> str:
        if self.low is None:
            return f"{'≤' if self.high_inclusive else '<'} {self.high:.2f}"
        if self.high is None:
            return f"{'≥' if self.low_inclusive else '>'} {self.low:.2f}"
        return f"{self.low:.2f}–{self.high:.2f}"


def _healthy(metric: str, stage: Stage, low: float, **kw) -> Threshold:
    return Threshold(metric, stage, low, None, "no symptom from this metric", "watch drift", "healthy",
                     source="ragwatch", **kw)  # fmt: skip


THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("context_precision", "retrieval", None, 0.60, "contradictory answers",
              "tune reranker, lower k, similarity cut-off", "problem"),
    _healthy("context_precision", "retrieval", 0.60),
    Threshold("context_recall", "retrieval", None, 0.70, "multi-hop failures",
              "revisit chunking, bigger chunks, metadata", "problem"),
    _healthy("context_recall", "retrieval", 0.70),
    Threshold("faithfulness", "generation", None, 0.75, "made-up answers",
              "tighten prompt, ask for citations, lower temperature", "problem"),
    Threshold("faithfulness", "generation", 0.75, 0.85, "occasional hallucination", "raise context precision",
              "watch"),
    Threshold("faithfulness", "generation", 0.85, None, "healthy", "watch drift", "healthy"),
    Threshold("answer_relevancy", "generation", None, 0.70, "correct but off-question", "revisit synthesis prompt",
              "problem"),
    _healthy("answer_relevancy", "generation", 0.70),
    Threshold("noise_delta_f", "robustness", 0.15, None,
              "answers degrade when irrelevant chunks are retrieved (fragile prompt/model)",
              "instruct the model to ignore irrelevant context; raise context precision", "problem",
              low_inclusive=False),
    Threshold("noise_delta_f", "robustness", None, 0.15, "no symptom from this metric", "watch drift", "healthy",
              source="ragwatch", high_inclusive=True),
    Threshold("tool_selection_accuracy", "tools", None, 0.85, "the agent calls the wrong tool",
              "rewrite the tool descriptions", "problem"),
    _healthy("tool_selection_accuracy", "tools", 0.85),
)  # fmt: skip
"""The brief's operating thresholds. `context_precision` here is the judge metric: id-based
precision@k is bounded by (gold chunks / k) and has no absolute threshold."""

RANK_GAP = 0.20
"""recall@k − MRR above this means gold chunks are found but ranked low (ragwatch's choice; the brief
asks only that the gap be shown)."""


@dataclass(frozen=True)
class Finding:
    metric: str
    stratum: str
    stage: Stage
    band: str
    severity: Severity
    """The band's severity when the evidence establishes it, else "inconclusive"."""
    users_see: str
    first_action: str
    mean: float
    n: int
    n_failed: int
    ci_low: float | None
    ci_high: float | None
    note: str = ""
    band_severity: Severity | None = None
    """The severity of the band the mean lies in, established or not."""
    evidence: str = ""
    """Empty when the band is established, else "not enough evidence: …" with the reason."""
    p_value: float | None = None
    """One-sided p-value of "the mean is not in this band (or a worse one)"; None below min_n."""
    p_adjusted: float | None = None
    correction: str = BENJAMINI_HOCHBERG
    ci_method: str | None = None

    @property
    def established(self) -> bool:
        return not self.evidence


def diagnose(aggregates: Iterable[Aggregate], *, min_n: int = DEFAULT_MIN_N,
             confidence: float = CONFIDENCE) -> list[Finding]:  # fmt: skip
    """Findings for the pooled stratum (every diagnosed metric) and for each stratum whose mean lies in a
    worse band than the pooled mean's.

    A band is established when (1) n ≥ `min_n` and (2) the band claim is rejected as false by a
    one-sided test whose Benjamini–Hochberg-adjusted p-value is ≤ q = (1 − confidence)/2 (0.025). The
    claim for a problem or watch band is "the mean is on this side of the edge(s) shared with a healthier
    band" (a stratum that may be even worse is not called inconclusive); for a healthy band it is "the
    mean is inside it". The p-value is P(a mean this far past the edge | the mean at the edge) from the
    aggregate's own interval method (`Aggregate.p_below`/`p_above`), so a lone claim is established
    exactly when the printed 95 % interval clears the edge. The BH family is every band claim the call
    tests: all metrics and all strata, pooled included. A finding whose band is not established has
    severity "inconclusive" and a note that starts with "not enough evidence".

    Ordered by the band the mean lies in (problem first), then by stage (retrieval before generation),
    metric and stratum.
    """
    q = (1.0 - confidence) / 2.0
    aggs = [a for a in aggregates if a.mean is not None and _band(a.metric, a.mean) is not None]
    claims = {(a.metric, a.stratum): _claim_p_value(a, _band(a.metric, a.mean)) for a in aggs if a.n >= min_n}
    keys = list(claims)
    adjusted = dict(zip(keys, benjamini_hochberg([claims[k] for k in keys])))
    n_claims = len(keys)

    def judged(agg: Aggregate) -> tuple[Threshold, Severity, str]:
        rule = _band(agg.metric, agg.mean)
        key = (agg.metric, agg.stratum)
        if agg.n < min_n:
            return rule, INCONCLUSIVE, f"{NOT_ENOUGH_EVIDENCE}: n = {agg.n} < {min_n}"
        if adjusted[key] > q:
            ci = f"[{agg.ci_low:.2f}, {agg.ci_high:.2f}]" if agg.ci_low is not None else "(none)"
            after = f" after Benjamini–Hochberg over {n_claims} band claims" if n_claims > 1 else ""
            return rule, INCONCLUSIVE, (f"{NOT_ENOUGH_EVIDENCE}: the {confidence:.0%} CI {ci} does not clear "
                                        f"band {rule.band}{after} (p = {claims[key]:.3f}, adjusted {adjusted[key]:.3f})")  # fmt: skip
        return rule, rule.severity, ""

    pooled = {a.metric: judged(a) for a in aggs if a.stratum == OVERALL}
    findings = []
    for agg in aggs:
        rule, severity, evidence = pooled[agg.metric] if agg.stratum == OVERALL else judged(agg)
        if agg.stratum != OVERALL:
            pooled_rule = pooled.get(agg.metric, (None,))[0]
            pooled_rank = SEVERITY_ORDER[pooled_rule.severity] if pooled_rule else len(SEVERITY_ORDER)
            if rule.severity == "healthy" or SEVERITY_ORDER[rule.severity] >= pooled_rank:
                continue  # the pooled finding already says it
        key = (agg.metric, agg.stratum)
        note = "; ".join(filter(None, [evidence, _note(agg, rule, pooled)]))
        findings.append(Finding(
            metric=agg.metric, stratum=agg.stratum, stage=rule.stage, band=rule.band, severity=severity,
            users_see=rule.users_see, first_action=rule.first_action, mean=agg.mean, n=agg.n,
            n_failed=agg.n_failed, ci_low=agg.ci_low, ci_high=agg.ci_high, note=note, band_severity=rule.severity,
            evidence=evidence, p_value=claims.get(key), p_adjusted=adjusted.get(key), ci_method=agg.ci_method,
        ))  # fmt: skip
    findings.extend(_rank_gap_findings(aggregates, min_n=min_n))
    # The brief's reading order: worst band first, retrieval before generation. A finding sorts by the band
    # its mean lies in, established or not, so "retrieval first" holds and an inconclusive row never hides
    # below a healthy one; its severity and note say whether the evidence establishes the band.
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.band_severity or f.severity], STAGE_ORDER[f.stage],
                                           _metric_order(f.metric), f.stratum != OVERALL, f.stratum))  # fmt: skip


def _band(metric: str, mean: float) -> Threshold | None:
    return next((t for t in THRESHOLDS if t.metric == metric and t.contains(mean)), None)


def _claim_p_value(agg: Aggregate, rule: Threshold) -> float:
    """One-sided p-value against "the mean lies in `rule`'s band (or beyond it, away from health)".

    Tested edges: for a healthy band every finite edge; for a problem or watch band the edges it shares
    with a healthier neighbour. Several edges make an intersection–union test: the largest p-value.
    """
    rank = SEVERITY_ORDER[rule.severity]
    p_values = []
    for edge, side in ((rule.low, "below"), (rule.high, "above")):
        if edge is None:
            continue
        neighbour = _neighbour(rule, edge, side)
        if rule.severity == "healthy" or (neighbour and SEVERITY_ORDER[neighbour.severity] > rank):
            # The band lies above its low edge (claim: mean > low) and below its high edge (claim: mean < high).
            p_values.append(agg.p_above(edge) if side == "below" else agg.p_below(edge))
    return max(p_values, default=0.0)


def _neighbour(rule: Threshold, edge: float, side: str) -> Threshold | None:
    """The band of the same metric just below (side="below") or above the edge."""
    others = [t for t in THRESHOLDS if t.metric == rule.metric and t is not rule]
    if side == "below":
        return next((t for t in others if t.high == edge), None)
    return next((t for t in others if t.low == edge), None)


def _metric_order(metric: str) -> int:
    names = list(dict.fromkeys(t.metric for t in THRESHOLDS))
    return names.index(metric) if metric in names else len(names)


def _note(agg: Aggregate, rule: Threshold, pooled: dict[str, tuple[Threshold, Severity, str]]) -> str:
    notes = []
    if rule.stage == "generation" and rule.severity != "healthy":
        low = [m for m in ("context_precision", "context_recall") if m in pooled and pooled[m][0].severity == "problem"]
        established = [m for m in low if pooled[m][1] == "problem"]
        if established:
            notes.append(f"{' and '.join(established)} also low: fix retrieval first, then re-measure")
        elif low:
            notes.append(f"{' and '.join(low)} may also be low ({NOT_ENOUGH_EVIDENCE}): check retrieval first")
    if agg.n_failed:
        notes.append(f"{agg.n_failed} item(s) failed to score and are not in the mean")
    return "; ".join(notes)


def _rank_gap_findings(aggregates: Iterable[Aggregate], *, min_n: int) -> list[Finding]:
    """recall@k − MRR > RANK_GAP on the pooled stratum. A gap of two means without their pairing has no
    interval here, so it is a "watch" on the point estimates, stated only from min_n scores on."""
    pooled = {a.metric: a for a in aggregates if a.stratum == OVERALL and a.mean is not None}
    mrr = pooled.get("mrr")
    if mrr is None:
        return []
    findings = []
    for metric, agg in sorted(pooled.items()):
        if not metric.startswith("recall@") or agg.mean - mrr.mean <= RANK_GAP:
            continue
        n = min(agg.n, mrr.n)
        evidence = f"{NOT_ENOUGH_EVIDENCE}: n = {n} < {min_n}" if n < min_n else ""
        gap_note = f"{metric} {agg.mean:.2f} vs MRR {mrr.mean:.2f}: gold chunks rank low"
        findings.append(Finding(
            metric=metric, stratum=OVERALL, stage="retrieval", band=f"{metric} − MRR > {RANK_GAP:.2f}",
            severity=INCONCLUSIVE if evidence else "watch",
            users_see="right documents found but ranked low, so cited late or not at all",
            first_action="tune the reranker or the hybrid-search weights", mean=agg.mean, n=agg.n,
            n_failed=agg.n_failed, ci_low=agg.ci_low, ci_high=agg.ci_high,
            note="; ".join(filter(None, [evidence, gap_note])), band_severity="watch", evidence=evidence,
            ci_method=agg.ci_method,
        ))  # fmt: skip
    return findings


# --- Retrieval vs generation attribution ---------------------------------------------------

ATTRIBUTIONS = ("ok", "retrieval_failure", "generation_failure", "unknown", "not_applicable")
"""The per-item labels of `pipelines.evaluation.retrieval.attribute`: not_applicable when the item
has no gold chunks (online traces, questions the corpus cannot answer), unknown when the gold chunk
was retrieved but the answer was not judged."""


@dataclass(frozen=True)
class AttributionSummary:
    counts: dict[str, int]
    wrong: int
    """Attributed failures: retrieval_failure + generation_failure."""
    verdict: str

    def share(self, label: str) -> float | None:
        return self.counts.get(label, 0) / self.wrong if self.wrong else None


def summarize_attribution(labels: Iterable[str]) -> AttributionSummary:
    counts = Counter(labels)
    unknown = set(counts) - set(ATTRIBUTIONS)
    if unknown:
        raise ValueError(f"unknown attribution labels {sorted(unknown)}; expected {list(ATTRIBUTIONS)}")
    full = {label: counts.get(label, 0) for label in ATTRIBUTIONS}
    retrieval, generation = full["retrieval_failure"], full["generation_failure"]
    wrong = retrieval + generation
    if not wrong:
        verdict = "no attributed failures"
    elif retrieval > generation:
        verdict = f"retrieval: {retrieval} of {wrong} failures lacked the gold chunk; fix retrieval first"
    elif generation > retrieval:
        verdict = f"generation: {generation} of {wrong} failures had the gold chunk in context; fix the prompt/model"
    else:
        verdict = f"even: {retrieval} retrieval and {generation} generation failures; fix retrieval first"
    return AttributionSummary(counts=full, wrong=wrong, verdict=verdict)
