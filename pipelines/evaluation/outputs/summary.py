"""What a finished run tells a person: scores with CIs for every metric, the gate, the diagnosis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from pipelines.core.settings import Settings
from pipelines.evaluation.results.coverage import GoldenCoverage
from pipelines.evaluation.results.rows import row_from, row_model
from pipelines.evaluation.results.run import RunCost, RunHeader
from pipelines.evaluation.statistics.aggregates import Aggregate, aggregate
from pipelines.evaluation.statistics.diagnose import DEFAULT_MIN_N, DiagnosisCorrection, diagnose
from pipelines.evaluation.statistics.gate.rule import MetricGate
from pipelines.evaluation.statistics.judge_noise import JudgeNoise
from pipelines.evaluation.statistics.multiplicity import BENJAMINI_HOCHBERG, WESTFALL_YOUNG
from pipelines.evaluation.statistics.scores import OVERALL
from pipelines.stores.results import EvalRun, ResultsStore

MetricRow = row_model(
    "MetricRow",
    Aggregate,
    ("metric", "n", "n_failed", "mean", "ci_low", "ci_high", "ci_method"),
    module=__name__,
    doc="One metric over the whole run (the overall stratum's Aggregate); `ci_method` is a CI_METHODS key.",
)
GateRow = row_model(
    "GateRow",
    MetricGate,
    (
        "metric",
        "design",
        "n_pairs",
        "baseline_mean",
        "candidate_mean",
        "diff",
        "ci_low",
        "ci_high",
        "ci_method",
        "p_adjusted",
        "passed",
        "reason",
        "gated",
        "status",
        "detectable_drop",
    ),
    module=__name__,
    doc="One metric of a stored gate (MetricGate: the paired difference candidate − baseline and the verdict). "
    "`p_adjusted` is Holm's in gates stored before the Westfall–Young family test; `detectable_drop` is None in "
    "gates stored before it was computed.",
)


class StratumJudged(BaseModel):
    """Online: one app/language stratum of the day's budget, and how tight its faithfulness came
    out."""

    stratum: str
    day_traces: int
    """Traces of the day's sample in the stratum."""
    judged: int
    noise: int
    """Judged traces that also got noise sensitivity."""
    wanted: int | None = None
    """With a target half-width: the traces the stratum asked for."""
    faithfulness_n: int = 0
    """Traces whose faithfulness was scored (ok)."""
    faithfulness_half_width: float | None = None
    """Half the width of the 95 % interval of the stratum's faithfulness mean; None without one."""


class JudgeTrustRow(BaseModel):
    """One audited metric (0/1 form) of a run: the judge's agreement with people, and the mean three
    ways."""

    metric: str
    meaning: str
    labels: int
    kappa: float | None = None
    accuracy: float | None = None
    judge_mean: float | None = None
    judge_ci: tuple[float, float] | None = None
    sensitivity: float | None = None
    specificity: float | None = None
    """The judge's P(yes | truly yes) and P(no | truly no) over the labels, which the correction
    divides out."""
    corrected_mean: float | None = None
    corrected_ci: tuple[float, float] | None = None
    """Corrected by the judge's error rates on the labels (statistics/misclassification.py); None
    when withheld."""
    corrected_method: str | None = None
    """How that interval was computed, worded (misclassification.METHODS)."""
    more_labels: int | None = None
    """More labelled items for a corrected interval of ±half_width; None when unknown or out of
    reach."""
    notes: list[str] = []
    """Why the corrected mean is withheld, or what it leaves out."""
    half_width: float
    trusted: bool | None = None
    verdict: str


JudgeNoiseRow = row_model(
    "JudgeNoiseRow",
    JudgeNoise,
    (
        "metric",
        "n_retested",
        "n_items",
        "enough",
        "icc",
        "mean_abs_difference",
        "kappa",
        "verdict_agreement",
        "judge_variance",
        "total_variance",
        "noise_share",
        "half_width",
        "ci_method",
        "half_width_two_judgements",
        "half_width_noiseless_judge",
        "half_width_double_items",
        "verdict",
    ),
    module=__name__,
    doc="One retested metric of a run: how much of its interval is the judge's own noise (statistics/judge_noise.py).",
)


class RunSummary(RunHeader):
    report: str | None
    gate_passed: bool | None
    gate: str
    """The gate's verdict in words, or why no gate ran."""
    overall: list[MetricRow]
    diagnosis: list[str]
    baseline: str | None = None
    """The run the gate compared against."""
    gate_rows: list[GateRow] = []
    """The comparison with the baseline."""
    reference: str | None = None
    """The pinned reference run(s) the gate also compared against, when not the baseline,
    comma-separated."""
    reference_rows: list[GateRow] = []
    gate_correction: str = WESTFALL_YOUNG
    diagnosis_correction: str = BENJAMINI_HOCHBERG
    generator_model: str | None = None
    review_candidates: int | None = None
    """Online only: traces queued for golden review."""
    day_traces: int | None = None
    """Online only: traces in the day's sample; `items` of them were judged (the budget)."""
    judged_strata: list[StratumJudged] = []
    """Online only: the day's traces, judged and noise traces per stratum, with faithfulness'
    half-width."""
    judge_audit_queued: int | None = None
    """Items this run queued for people to label (outputs/judge_audit.py)."""
    judge_trust: list[JudgeTrustRow] = []
    """Per audited metric: can the judge be trusted (κ over every label so far), and the PPI
    estimate."""
    judge_noise: list[JudgeNoiseRow] = []
    """Per retested metric: test-retest agreement and the judge-noise share of its interval."""
    cost: RunCost | None = None
    """What the run's model requests cost per stage and metric (requests, cache hits, tokens,
    LLM-seconds); None for a run saved before it was recorded."""
    coverage: GoldenCoverage | None = None
    """Online only: how much of the day's traffic the golden set covers, and the topics it
    misses."""


def run_summary(
    run: EvalRun,
    aggregates: Sequence[Aggregate],
    *,
    items: int,
    baseline: str | None = None,
    min_n: int = DEFAULT_MIN_N,
    correction: DiagnosisCorrection = BENJAMINI_HOCHBERG,
) -> RunSummary:
    """`min_n` (settings: `RAGWATCH_DIAGNOSIS_MIN_N`): fewest ok scores for the diagnosis to state a
    band; `correction` (`RAGWATCH_DIAGNOSIS_CORRECTION`): how its band claims are corrected for
    their number."""
    gate = (
        run.gate["summary"]
        if run.gate
        else (
            "online runs are monitored by alerts, not gated"
            if run.suite == "online"
            else "no baseline yet: the gate starts with the next run"
        )
    )
    findings = diagnose(aggregates, min_n=min_n, correction=correction)
    return RunSummary(
        run_id=run.run_id,
        suite=run.suite,
        logical_date=run.logical_date,
        target=run.target,
        dataset_version=run.dataset_version,
        items=items,
        report=run.report_path,
        gate_passed=run.gate_passed,
        gate=gate,
        overall=[row_from(MetricRow, a) for a in aggregates if a.stratum == OVERALL],
        diagnosis=[
            f"[{f.severity}] {f.metric} [{f.stratum}] {f.mean:.2f} ({f.band}): {f.users_see} → {f.first_action}"
            + (f" ({f.note})" if f.note else "")
            for f in findings
        ],
        baseline=baseline or (run.gate or {}).get("baseline"),
        gate_rows=gate_rows(run.gate),
        reference=_references(run.gate),
        reference_rows=gate_rows(_reference_gate(run.gate)),
        generator_model=run.generator_model,
        gate_correction=(run.gate or {}).get("correction", WESTFALL_YOUNG),
        diagnosis_correction=correction,
        day_traces=(run.params.get("selection") or {}).get("day_traces"),
        judged_strata=judged_strata(run.params.get("selection"), aggregates),
        judge_audit_queued=(run.params.get("judge_audit") or {}).get("queued"),
        judge_trust=judge_trust(run.params.get("judge_audit")),
        judge_noise=judge_noise_rows(run.params.get("judge_noise")),
        cost=RunCost.model_validate(run.cost) if run.cost else None,
        coverage=golden_coverage(run.params),
    )


def golden_coverage(params: dict[str, Any] | None) -> GoldenCoverage | None:
    """The coverage an online run stored in its params (coverage/daily.py); None for other runs."""
    stored = (params or {}).get("coverage")
    return GoldenCoverage.model_validate(stored) if stored else None


def judge_trust(audit: dict[str, Any] | None) -> list[JudgeTrustRow]:
    """The calibration an eval run stored in its params (outputs/judge_audit.audit_run), as summary
    rows."""
    rows = []
    for c in (audit or {}).get("calibration", []):
        agreed = c.get("agreement") or {}
        rows.append(
            JudgeTrustRow(
                metric=c["metric"],
                meaning=c["meaning"],
                labels=c["labels"],
                kappa=agreed.get("kappa"),
                accuracy=agreed.get("accuracy"),
                judge_mean=c["judge_mean"],
                judge_ci=c["judge_ci"],
                sensitivity=c.get("sensitivity"),
                specificity=c.get("specificity"),
                corrected_mean=c.get("corrected_mean"),
                corrected_ci=c.get("corrected_ci"),
                corrected_method=c.get("corrected_method"),
                more_labels=c["more_labels"],
                half_width=c["half_width"],
                trusted=c["trusted"],
                verdict=c["verdict"],
                notes=c.get("notes") or [],
            )
        )
    return rows


def judge_noise_rows(noise: dict[str, Any] | None) -> list[JudgeNoiseRow]:
    """The judge-noise statistics an eval run stored in its params (runs/finalize.publish_run), as
    summary rows."""
    fields = set(JudgeNoiseRow.model_fields)
    return [
        JudgeNoiseRow.model_validate({k: v for k, v in m.items() if k in fields})
        for m in (noise or {}).get("metrics", [])
    ]


def judged_strata(
    selection: dict[str, Any] | None, aggregates: Sequence[Aggregate]
) -> list[StratumJudged]:
    """Per stratum of an online run's budget (`online_selection.BudgetCounts`, kept in the run's
    params): the day's traces, the judged and noise traces, and the half-width of faithfulness'
    interval there."""
    faithfulness = {a.stratum: a for a in aggregates if a.metric == "faithfulness"}
    rows = []
    for stratum in (selection or {}).get("strata", []):
        agg = faithfulness.get(stratum["stratum"])
        half = (
            (agg.ci_high - agg.ci_low) / 2
            if agg and agg.ci_low is not None and agg.ci_high is not None
            else None
        )
        rows.append(
            StratumJudged(
                **stratum, faithfulness_n=agg.n if agg else 0, faithfulness_half_width=half
            )
        )
    return rows


def gate_rows(gate: dict[str, Any] | None) -> list[GateRow]:
    """The metrics of a gate the results DB stored (GateResult.to_dict), as summary rows."""
    fields = set(GateRow.model_fields)
    return [
        GateRow.model_validate({k: v for k, v in m.items() if k in fields})
        for m in (gate or {}).get("metrics", [])
    ]


def _reference_gate(gate: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored gate of the comparisons with the references, their metrics together: a partial
    release is the reference of some metrics, a later release of the others (runs saved before
    references have none)."""
    gates = [
        c["gate"]
        for c in (gate or {}).get("comparisons", [])
        if c["role"] == "reference" and c["gate"]
    ]
    return {"metrics": [m for g in gates for m in g.get("metrics", [])]} if gates else None


def _references(gate: dict[str, Any] | None) -> str | None:
    """The reference run ids, comma-separated (one unless a partial release left some metrics to
    another)."""
    ids = (gate or {}).get("references") or (
        [gate["reference"]] if (gate or {}).get("reference") else []
    )
    return ", ".join(ids) or None


def latest_summary(settings: Settings, suite: str) -> RunSummary:
    store = ResultsStore.from_settings(settings)
    try:
        run = store.latest_run(suite) if store.exists() else None
        if run is None:
            raise LookupError(
                f"no {suite} run in the results DB yet: run `ragwatch eval {suite}` or the {suite}_eval DAG"
            )
        return stored_summary(settings, store, run)
    finally:
        store.dispose()


def stored_summary(settings: Settings, store: ResultsStore, run: EvalRun) -> RunSummary:
    """A stored run's summary, its intervals recomputed from its scores (the diagnosis and the gate
    rows read them)."""
    scores = store.scores(run.run_id)
    return run_summary(
        run,
        aggregate(scores),
        items=len({s.item_id for s in scores}),
        baseline=(run.gate or {}).get("baseline"),
        min_n=settings.diagnosis_min_n,
        correction=settings.diagnosis_correction,
    )
