"""From aggregates to a diagnosis: which band each metric is in, what users see, what to do first.

The operating thresholds are data (THRESHOLDS), copied from the product brief; rows marked
`source="ragwatch"` fill in what the brief implies but does not spell out. Findings are
ordered so retrieval problems come before generation problems: low context precision
degrades faithfulness downstream, so fixing the prompt first would treat a symptom.

Wrong answers are attributed per item (`retrieval.attribute`), never blended into one
"accuracy"; `summarize_attribution` counts those labels so the report can say which stage to fix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pipelines.evaluation.stats import OVERALL, Aggregate

Severity = Literal["problem", "watch", "healthy"]
Stage = Literal["retrieval", "generation", "robustness", "tools"]

STAGE_ORDER: dict[str, int] = {"retrieval": 0, "generation": 1, "robustness": 2, "tools": 3}
SEVERITY_ORDER: dict[str, int] = {"problem": 0, "watch": 1, "healthy": 2}


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
    users_see: str
    first_action: str
    mean: float
    n: int
    n_failed: int
    ci_low: float | None
    ci_high: float | None
    note: str = ""


def diagnose(aggregates: Iterable[Aggregate]) -> list[Finding]:
    """Findings for the pooled stratum (every diagnosed metric) and for each stratum in a worse band.

    Ordered problems first, then by stage (retrieval before generation), metric and stratum.
    """
    aggs = [a for a in aggregates if a.mean is not None]
    overall = {a.metric: a for a in aggs if a.stratum == OVERALL}
    findings = []
    for agg in aggs:
        rule = _band(agg.metric, agg.mean)
        if rule is None:
            continue
        if agg.stratum != OVERALL:
            pooled = overall.get(agg.metric)
            pooled_rank = SEVERITY_ORDER[_band(agg.metric, pooled.mean).severity] if pooled else len(SEVERITY_ORDER)
            if rule.severity == "healthy" or SEVERITY_ORDER[rule.severity] >= pooled_rank:
                continue  # the pooled finding already says it
        findings.append(_finding(agg, rule, note=_note(agg, rule, overall)))
    findings.extend(_rank_gap_findings(aggs))
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], STAGE_ORDER[f.stage], _metric_order(f.metric),
                                           f.stratum != OVERALL, f.stratum))  # fmt: skip


def _band(metric: str, mean: float) -> Threshold | None:
    return next((t for t in THRESHOLDS if t.metric == metric and t.contains(mean)), None)


def _metric_order(metric: str) -> int:
    names = list(dict.fromkeys(t.metric for t in THRESHOLDS))
    return names.index(metric) if metric in names else len(names)


def _finding(agg: Aggregate, rule: Threshold, note: str = "") -> Finding:
    return Finding(metric=agg.metric, stratum=agg.stratum, stage=rule.stage, band=rule.band, severity=rule.severity,
                   users_see=rule.users_see, first_action=rule.first_action, mean=agg.mean, n=agg.n,
                   n_failed=agg.n_failed, ci_low=agg.ci_low, ci_high=agg.ci_high, note=note)  # fmt: skip


def _note(agg: Aggregate, rule: Threshold, overall: dict[str, Aggregate]) -> str:
    notes = []
    if rule.stage == "generation" and rule.severity != "healthy":
        retrieval = [
            m for m in ("context_precision", "context_recall")
            if m in overall and (r := _band(m, overall[m].mean)) and r.severity == "problem"
        ]  # fmt: skip
        if retrieval:
            notes.append(f"{' and '.join(retrieval)} also low: fix retrieval first, then re-measure")
    has_ci = agg.ci_low is not None and agg.ci_high is not None
    if has_ci and _band(agg.metric, agg.ci_low) != _band(agg.metric, agg.ci_high):
        notes.append(f"the 95 % CI [{agg.ci_low:.2f}, {agg.ci_high:.2f}] spans more than one band")
    if agg.n_failed:
        notes.append(f"{agg.n_failed} item(s) failed to score and are not in the mean")
    return "; ".join(notes)


def _rank_gap_findings(aggs: Sequence[Aggregate]) -> list[Finding]:
    pooled = {a.metric: a for a in aggs if a.stratum == OVERALL}
    mrr = pooled.get("mrr")
    if mrr is None:
        return []
    findings = []
    for metric, agg in sorted(pooled.items()):
        if not metric.startswith("recall@") or agg.mean - mrr.mean <= RANK_GAP:
            continue
        findings.append(Finding(
            metric=metric, stratum=OVERALL, stage="retrieval", band=f"{metric} − MRR > {RANK_GAP:.2f}",
            severity="watch", users_see="right documents found but ranked low, so cited late or not at all",
            first_action="tune the reranker or the hybrid-search weights", mean=agg.mean, n=agg.n,
            n_failed=agg.n_failed, ci_low=agg.ci_low, ci_high=agg.ci_high,
            note=f"{metric} {agg.mean:.2f} vs MRR {mrr.mean:.2f}: gold chunks rank low",
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
