"""From aggregates to a diagnosis: which band each metric is in, what users see, what to do first.

The operating thresholds are data (THRESHOLDS), the operating table users read in
docs/reference/metrics.md; rows marked `source="ragwatch"` are ragwatch's own where that table is
silent. Findings are ordered so retrieval problems come before generation problems: low context
precision degrades faithfulness downstream, so fixing the prompt first would treat a symptom.

Each band sits on a figure that can land on either side of it
(tests/unit/pipelines/evaluation/statistics/test_diagnose.py walks every band against its metric's
attainable values). The context-precision band (< 0.60; its worked example: 5 chunks given, 3
relevant → 0.60) sits on `context_precision_share`, the share of the chunks given to the generator
that the judge found useful for the reference answer. Not on the id-based precision@k: an item with
one gold chunk scores at most 1/k there (0.20 at k = 5), so the band would always be met; nor on
ragas' rank-weighted `context_precision_ranked`, where one useful chunk followed by four useless
ones scores 1.0, so it would hardly ever be met. Both are reported without a band.

A band is stated only with evidence, and a claim steps down to the strongest the evidence supports.
The bands of a metric form a ladder out from its healthy band (faithfulness: ≥ 0.85 healthy; < 0.85
not healthy, the watch band or worse; < 0.75 made-up answers). An aggregate whose estimate lies
outside the healthy band is tested rung by rung, from "< 0.85" out to its own band, and the finding
states the strongest rung established: a stratum at 0.72 whose interval reaches 0.83 is a "watch" (<
0.85), with a note that its estimate lies in "made-up answers" but the interval does not establish
that. An estimate in the healthy band is tested for that band. With nothing established (or fewer
than `min_n` ok scores) the finding's severity is "inconclusive" and its note starts with "not
enough evidence". The multiplicity correction is `diagnose`'s docstring; `ragwatch bench diagnose`
measures what it finds.

Wrong answers are attributed per item (`retrieval.attribute`), never blended into one
"accuracy"; `summarize_attribution` counts those labels so the report can say which stage to fix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pipelines.evaluation.metrics.retrieval import ATTRIBUTIONS
from pipelines.evaluation.statistics.aggregates import Aggregate
from pipelines.evaluation.statistics.intervals import CONFIDENCE
from pipelines.evaluation.statistics.multiplicity import BENJAMINI_HOCHBERG, benjamini_hochberg
from pipelines.evaluation.statistics.scores import OVERALL

UNCORRECTED = "none"
"""The diagnosis' other correction (`RAGWATCH_DIAGNOSIS_CORRECTION=none`): each claim stands when
its own printed 95 % interval clears the edge, whatever else the run claims (`diagnose`'s docstring
says what that costs)."""
DiagnosisCorrection = Literal["benjamini-hochberg", "none"]

Severity = Literal["problem", "watch", "inconclusive", "healthy"]
Stage = Literal["retrieval", "generation", "robustness", "tools"]
Side = Literal["below", "above"]

INCONCLUSIVE: Severity = "inconclusive"
"""The severity of a finding whose band the data cannot establish: too few scores, or an interval
that does not clear the band's edge. Its note starts with NOT_ENOUGH_EVIDENCE."""
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
    source: Literal["operating", "ragwatch"] = "operating"

    def contains(self, value: float) -> bool:
        above = self.low is None or (value >= self.low if self.low_inclusive else value > self.low)
        return above and (
            self.high is None or (value <= self.high if self.high_inclusive else value < self.high)
        )

    @property
    def band(self) -> str:
        if self.low is None:
            return f"{'≤' if self.high_inclusive else '<'} {self.high:.2f}"
        if self.high is None:
            return f"{'≥' if self.low_inclusive else '>'} {self.low:.2f}"
        return f"{self.low:.2f}–{self.high:.2f}"


def _healthy(
    metric: str, stage: Stage, low: float | None, high: float | None = None, **kw
) -> Threshold:
    return Threshold(
        metric,
        stage,
        low,
        high,
        "no symptom from this metric",
        "watch drift",
        "healthy",
        source="ragwatch",
        **kw,
    )


CONTEXT_PRECISION = "context_precision_share"
"""The figure of the context-precision band: chunks given to the generator that the judge found
useful for the reference answer / chunks given (judge.py)."""

THRESHOLDS: tuple[Threshold, ...] = (
    Threshold(
        CONTEXT_PRECISION,
        "retrieval",
        None,
        0.60,
        "contradictory answers",
        "tune reranker, lower k, similarity cut-off",
        "problem",
    ),
    _healthy(CONTEXT_PRECISION, "retrieval", 0.60),
    Threshold(
        "context_recall",
        "retrieval",
        None,
        0.70,
        "multi-hop failures",
        "revisit chunking, bigger chunks, metadata",
        "problem",
    ),
    _healthy("context_recall", "retrieval", 0.70),
    Threshold(
        "faithfulness",
        "generation",
        None,
        0.75,
        "made-up answers",
        "tighten prompt, ask for citations, lower temperature",
        "problem",
    ),
    Threshold(
        "faithfulness",
        "generation",
        0.75,
        0.85,
        "occasional hallucination",
        "raise context precision",
        "watch",
    ),
    Threshold("faithfulness", "generation", 0.85, None, "healthy", "watch drift", "healthy"),
    Threshold(
        "answer_relevancy",
        "generation",
        None,
        0.70,
        "correct but off-question",
        "revisit synthesis prompt",
        "problem",
    ),
    _healthy("answer_relevancy", "generation", 0.70),
    Threshold(
        "answer_correctness",
        "generation",
        None,
        0.70,
        "wrong answers",
        "read the attribution: retrieval failures vs generation failures",
        "problem",
        source="ragwatch",
    ),
    _healthy("answer_correctness", "generation", 0.70),
    Threshold(
        "noise_delta_f",
        "robustness",
        0.15,
        None,
        "answers degrade when irrelevant chunks are retrieved (fragile prompt/model)",
        "instruct the model to ignore irrelevant context; raise context precision",
        "problem",
        low_inclusive=False,
    ),
    _healthy("noise_delta_f", "robustness", None, 0.15, high_inclusive=True),
    Threshold(
        "noise_delta_f_reference",
        "robustness",
        0.15,
        None,
        "the reference generator's answers degrade when irrelevant chunks join production's contexts",
        "expect production's model to be fragile too: set RAGWATCH_ONLINE_TARGET_URL to measure it; "
        "raise context precision",
        "problem",
        low_inclusive=False,
        source="ragwatch",
    ),
    _healthy("noise_delta_f_reference", "robustness", None, 0.15, high_inclusive=True),
    Threshold(
        "tool_selection_accuracy",
        "tools",
        None,
        0.85,
        "the agent calls the wrong tool",
        "rewrite the tool descriptions",
        "problem",
    ),
    _healthy("tool_selection_accuracy", "tools", 0.85),
)
"""The operating thresholds, one healthy band per metric. `answer_correctness` (0/1 per item: the
judge's verdict against the reference) is ragwatch's: its first action is the
retrieval-vs-generation attribution, which says which stage the wrong answers come from. The
id-based precision@k and ragas' `context_precision_ranked` have no band (module docstring)."""

RANK_GAP = 0.20
"""recall@k − MRR above this means gold chunks are found but ranked low (ragwatch's choice; the
operating table asks only that the gap be shown)."""


@dataclass(frozen=True)
class Claim:
    """The claim "the mean lies beyond each of `edges`" (edge, the side of it the mean is on): the
    mean is then in `rule`'s band or one further from health."""

    rule: Threshold
    edges: tuple[tuple[float, Side], ...]

    @property
    def text(self) -> str:
        """The band as claimed: a healthy band as it is, a worse one open outwards ("< 0.85")."""
        if self.rule.severity == "healthy":
            return self.rule.band
        return " and ".join(
            f"{'<' if side == 'below' else '>'} {edge:.2f}" for edge, side in self.edges
        )

    def p_value(self, agg: Aggregate) -> float:
        """One-sided p-value of "the claim is false" from the aggregate's interval method; with
        several edges an intersection–union test: the largest."""
        return max(
            agg.p_below(edge) if side == "below" else agg.p_above(edge) for edge, side in self.edges
        )


def ladder(rule: Threshold) -> list[Claim]:
    """The claims tested for an estimate in `rule`'s band: for the healthy band, that band; for a
    worse one, every band from the healthy band's neighbour out to `rule`, each claimed open
    outwards (faithfulness at 0.72: "< 0.85", then "< 0.75"). Each claim implies the ones before it,
    and its p-value is larger."""
    bands = sorted(
        (t for t in THRESHOLDS if t.metric == rule.metric),
        key=lambda t: float("-inf") if t.low is None else t.low,
    )
    healthy = next(i for i, t in enumerate(bands) if t.severity == "healthy")
    here = bands.index(rule)
    if here == healthy:
        edges = ((rule.low, "above"), (rule.high, "below"))
        return [Claim(rule, tuple((edge, side) for edge, side in edges if edge is not None))]
    if here < healthy:
        return [
            Claim(bands[i], ((bands[i].high, "below"),)) for i in range(healthy - 1, here - 1, -1)
        ]
    return [Claim(bands[i], ((bands[i].low, "above"),)) for i in range(healthy + 1, here + 1)]


_FROM_AGGREGATE = ("metric", "stratum", "mean", "n", "n_failed", "ci_low", "ci_high", "ci_method")
"""A finding's fields that repeat the aggregate it is about."""


@dataclass(frozen=True)
class Finding:
    metric: str
    stratum: str
    stage: Stage
    band: str
    """The band stated: the strongest claim established ("< 0.85"); when none is, the band the mean
    lies in."""
    severity: Severity
    """The stated band's severity when the evidence establishes it, else "inconclusive"."""
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
    """Empty when a band is established, else "not enough evidence: …" with the reason."""
    p_value: float | None = None
    """One-sided p-value of the stated claim being false (when none is established: of the first
    claim tested); None below min_n."""
    p_adjusted: float | None = None
    """Benjamini–Hochberg-adjusted p-value of the aggregate's first claim, the one in the run's
    family (the p-value itself when `correction` is UNCORRECTED)."""
    correction: str = BENJAMINI_HOCHBERG
    ci_method: str | None = None

    @property
    def established(self) -> bool:
        return not self.evidence

    @classmethod
    def about(cls, agg: Aggregate, **judgement: Any) -> Finding:
        """The finding on `agg`: its metric, stratum and estimate, with `judgement` (the band, the
        severity, what users see, the note...)."""
        return cls(**{name: getattr(agg, name) for name in _FROM_AGGREGATE}, **judgement)


@dataclass(frozen=True)
class _Verdict:
    rule: Threshold
    """The band the estimate lies in."""
    stated: Threshold
    """The band of the strongest established claim; `rule` when none is."""
    band: str
    severity: Severity
    evidence: str = ""
    stepped: str = ""
    """Why the stated band is not the estimate's own, when it is not."""
    p_value: float | None = None
    p_adjusted: float | None = None


def diagnose(
    aggregates: Iterable[Aggregate],
    *,
    min_n: int = DEFAULT_MIN_N,
    confidence: float = CONFIDENCE,
    correction: DiagnosisCorrection = BENJAMINI_HOCHBERG,
) -> list[Finding]:
    """Findings for the pooled stratum (every diagnosed metric) and for each stratum whose mean lies
    in a worse band than the pooled mean's.

    Claims (module docstring: `ladder`) need n ≥ `min_n`. Each p-value is P(a mean this far past the
    edge | the mean at the edge) from the aggregate's own interval method
    (`Aggregate.p_below`/`p_above`). The family: the first claim of every pooled aggregate and of
    every stratum whose estimate lies outside the healthy band (a stratum in the healthy band is
    never reported, so nothing is claimed for it). Benjamini–Hochberg runs over that family at q =
    (1 − confidence)/2 = 0.025, so a lone claim stands exactly when the printed 95 % interval clears
    its edge. A claim is tested only for the aggregates whose estimate lies on its side of the edge,
    which an aggregate at the edge does about half the time; given that selection (made per
    aggregate, on its own items) the one-sided p-value doubled is a valid p-value, so q = 0.025 on
    one-sided p-values is q = 0.05 on those: at most 5 % of the claims stated are expected false,
    and with every aggregate at its edge at most 5 % of runs state any. Beside a real finding the
    chance of some false one is higher than the share (`ragwatch bench diagnose`: 6–7 % of runs with
    eleven strata at the edge and one worse). Further rungs of an established aggregate are tested
    at the level the family stopped at, q·R/m (R of m established): a rung implies the ones before
    it and has the larger p-value, so the false claims of one aggregate stand only when its first
    false rung does, and nested rungs need no correction of their own.

    What this costs, and why it stays (the aim: ≥ 50 % for a stratum 15 points worse at n = 30;
    `ragwatch bench diagnose`, 4,000 runs: 46 % and 50 % on its two score models). A claim
    consistent with the printed interval needs one-sided p ≤ 0.025; one such test alone flags that
    stratum in 62–63 % of runs, and the correction over the run's three or four claims (the pooled
    one and the strata whose estimate fell below the edge, healthy ones among them) costs the rest.
    Measured and not adopted (2,000 runs, the same p-values): a narrower interval (the printed one
    is not conservative where flags are made: its upper bound misses the true mean 2.6–3.1 % of the
    time at n = 30, not 2.5 %); pooled and stratum claims as two families (47 % / 51 %, and up to 10
    % false claims over both); Storey's adaptive BH with λ = q (49 % / 52 %, valid for independent
    p-values only, and 7–8 % false flags with eleven strata at the edge). None reaches 50 % on both
    models without weakening what is stated.

    `correction="none"` (UNCORRECTED) is that lone test for every claim: a claim stands exactly when
    its aggregate's printed interval clears the edge, so what the table shows and what it claims
    always agree, and each claim is false at most 2.5 % of the time; but nothing bounds the run's
    share of false claims. The bench's price (4,000 runs): the worse stratum flagged 62–63 % of
    runs, a healthy one 2.0–2.4 %, and with every stratum at the edge some false claim in 23–27 % of
    runs. A team that triages strata by hand may prefer it; the default bounds the false claims a
    report makes.

    Ordered by the band the mean lies in (problem first), then by stage (retrieval before
    generation), metric and stratum.
    """
    q = (1.0 - confidence) / 2.0
    aggregates = list(aggregates)
    placed = {
        (a.metric, a.stratum): (a, rule)
        for a in aggregates
        if a.mean is not None and (rule := _band(a.metric, a.mean)) is not None
    }
    ladders = {
        key: ladder(rule)
        for key, (agg, rule) in placed.items()
        if agg.n >= min_n and (key[1] == OVERALL or rule.severity != "healthy")
    }
    p_values = {
        key: [claim.p_value(placed[key][0]) for claim in claims] for key, claims in ladders.items()
    }
    keys = list(ladders)
    firsts = [p_values[k][0] for k in keys]
    corrected = correction == BENJAMINI_HOCHBERG
    adjusted = dict(zip(keys, benjamini_hochberg(firsts) if corrected else firsts))
    established = sum(adjusted[k] <= q for k in keys)
    level = q * established / len(keys) if corrected and keys else q
    after = (
        f" after Benjamini–Hochberg over {len(keys)} band claims"
        if corrected and len(keys) > 1
        else ""
    )

    def judged(agg: Aggregate, rule: Threshold) -> _Verdict:
        key = (agg.metric, agg.stratum)
        if key not in ladders:  # below min_n: a stratum in the healthy band is never judged
            return _Verdict(
                rule, rule, rule.band, INCONCLUSIVE, f"{NOT_ENOUGH_EVIDENCE}: n = {agg.n} < {min_n}"
            )
        claims, ps = ladders[key], p_values[key]
        held = 0
        if adjusted[key] <= q:
            held = 1
            while held < len(claims) and ps[held] <= level:
                held += 1
        if not held:
            ci = f"[{agg.ci_low:.2f}, {agg.ci_high:.2f}]" if agg.ci_low is not None else "(none)"
            evidence = (
                f"{NOT_ENOUGH_EVIDENCE}: the {confidence:.0%} CI {ci} does not clear band {claims[0].text}"
                f"{after} (p = {ps[0]:.3f}, adjusted {adjusted[key]:.3f})"
            )
            return _Verdict(
                rule,
                rule,
                rule.band,
                INCONCLUSIVE,
                evidence,
                p_value=ps[0],
                p_adjusted=adjusted[key],
            )
        claim = claims[held - 1]
        stepped = ""
        if held < len(claims):
            ci = f"{agg.ci_low:.2f}, {agg.ci_high:.2f}" if agg.ci_low is not None else "none"
            stated = f"{'not healthy: ' if held == 1 else ''}{agg.metric} {claim.text}"
            stepped = (
                f"{stated} is established ({confidence:.0%} CI [{ci}]); the estimate {agg.mean:.2f} lies in "
                f'"{rule.users_see}" ({claims[-1].text}), which the interval does not establish '
                f"(p = {ps[held]:.3f}; needs ≤ {level:.3f}{after})"
            )
        return _Verdict(
            rule,
            claim.rule,
            claim.text,
            claim.rule.severity,
            stepped=stepped,
            p_value=ps[held - 1],
            p_adjusted=adjusted[key],
        )

    pooled = {
        agg.metric: judged(agg, rule)
        for (_, stratum), (agg, rule) in placed.items()
        if stratum == OVERALL
    }
    findings = []
    for agg, rule in placed.values():
        if agg.stratum == OVERALL:
            verdict = pooled[agg.metric]
        else:
            pooled_rule = pooled[agg.metric].rule if agg.metric in pooled else None
            pooled_rank = (
                SEVERITY_ORDER[pooled_rule.severity] if pooled_rule else len(SEVERITY_ORDER)
            )
            if rule.severity == "healthy" or SEVERITY_ORDER[rule.severity] >= pooled_rank:
                continue  # the pooled finding already says it
            verdict = judged(agg, rule)
        note = "; ".join(
            filter(None, [verdict.evidence, verdict.stepped, _note(agg, verdict, pooled)])
        )
        findings.append(
            Finding.about(
                agg,
                stage=rule.stage,
                band=verdict.band,
                severity=verdict.severity,
                users_see=verdict.stated.users_see,
                first_action=verdict.stated.first_action,
                note=note,
                band_severity=rule.severity,
                evidence=verdict.evidence,
                p_value=verdict.p_value,
                p_adjusted=verdict.p_adjusted,
                correction=correction,
            )
        )
    findings.extend(_rank_gap_findings(aggregates, min_n=min_n))
    # The reading order: worst band first, retrieval before generation. A finding sorts by the band
    # its mean lies in, established or not, so "retrieval first" holds and an inconclusive row never
    # hides below a healthy one; its severity and note say what the evidence establishes.
    return sorted(
        findings,
        key=lambda f: (
            SEVERITY_ORDER[f.band_severity or f.severity],
            STAGE_ORDER[f.stage],
            _metric_order(f.metric),
            f.stratum != OVERALL,
            f.stratum,
        ),
    )


def _band(metric: str, mean: float) -> Threshold | None:
    return next((t for t in THRESHOLDS if t.metric == metric and t.contains(mean)), None)


def _metric_order(metric: str) -> int:
    names = list(dict.fromkeys(t.metric for t in THRESHOLDS))
    return names.index(metric) if metric in names else len(names)


RETRIEVAL_BANDED = (CONTEXT_PRECISION, "context_recall")


def _note(agg: Aggregate, verdict: _Verdict, pooled: dict[str, _Verdict]) -> str:
    notes = []
    if verdict.rule.stage == "generation" and verdict.rule.severity != "healthy":
        low = [m for m in RETRIEVAL_BANDED if m in pooled and pooled[m].rule.severity == "problem"]
        established = [m for m in low if pooled[m].severity == "problem"]
        if established:
            notes.append(
                f"{' and '.join(established)} also low: fix retrieval first, then re-measure"
            )
        elif low:
            notes.append(
                f"{' and '.join(low)} may also be low ({NOT_ENOUGH_EVIDENCE}): check retrieval first"
            )
    if agg.n_failed:
        notes.append(f"{agg.n_failed} item(s) failed to score and are not in the mean")
    return "; ".join(notes)


def _rank_gap_findings(aggregates: Iterable[Aggregate], *, min_n: int) -> list[Finding]:
    """recall@k − MRR > RANK_GAP on the pooled stratum. A gap of two means without their pairing has
    no interval here, so it is a "watch" on the point estimates, stated only from min_n scores
    on."""
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
        findings.append(
            Finding.about(
                agg,
                stage="retrieval",
                band=f"{metric} − MRR > {RANK_GAP:.2f}",
                severity=INCONCLUSIVE if evidence else "watch",
                users_see="right documents found but ranked low, so cited late or not at all",
                first_action="tune the reranker or the hybrid-search weights",
                note="; ".join(filter(None, [evidence, gap_note])),
                band_severity="watch",
                evidence=evidence,
            )
        )
    return findings


# --- Retrieval vs generation attribution ---------------------------------------------------


@dataclass(frozen=True)
class AttributionSummary:
    counts: dict[str, int]
    """Items per label of `retrieval.attribute` (ATTRIBUTIONS)."""
    wrong: int
    """Attributed failures: retrieval_failure + partial_retrieval_failure + generation_failure."""
    verdict: str

    def share(self, label: str) -> float | None:
        return self.counts.get(label, 0) / self.wrong if self.wrong else None


def summarize_attribution(labels: Iterable[str]) -> AttributionSummary:
    counts = Counter(labels)
    unknown = set(counts) - set(ATTRIBUTIONS)
    if unknown:
        raise ValueError(
            f"unknown attribution labels {sorted(unknown)}; expected {list(ATTRIBUTIONS)}"
        )
    full = {label: counts.get(label, 0) for label in ATTRIBUTIONS}
    partial = full["partial_retrieval_failure"]
    retrieval, generation = full["retrieval_failure"] + partial, full["generation_failure"]
    wrong = retrieval + generation
    missing = f" ({partial} missed only some of their gold chunks)" if partial else ""
    if not wrong:
        verdict = "no attributed failures"
    elif retrieval > generation:
        verdict = f"retrieval: {retrieval} of {wrong} failures lacked gold chunks{missing}; fix retrieval first"
    elif generation > retrieval:
        verdict = (
            f"generation: {generation} of {wrong} failures had every gold chunk in context or were "
            f"unsupported; fix the prompt/model"
        )
    else:
        verdict = f"even: {retrieval} retrieval{missing} and {generation} generation failures; fix retrieval first"
    return AttributionSummary(counts=full, wrong=wrong, verdict=verdict)
