"""One self-contained HTML report per eval run, and the flat metrics JSON `dvc metrics diff` reads.

The report is a single file with inline CSS and inline SVG charts and no URL of any kind, so it
opens from an Airflow log link, a DVC checkout or an e-mail attachment alike. Every text that
came from a user, a model or a document is HTML-escaped (Jinja autoescape). It holds no
wall-clock time: rerendering a run gives the same bytes, which keeps DVC diffs meaningful.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from pipelines.core.files import atomic_write_text
from pipelines.core.records import METRICS, Score
from pipelines.evaluation.outputs.charts import (
    Interval,
    histogram,
    interval_chart,
    line_chart,
    value_range,
)
from pipelines.evaluation.outputs.cost_trend import CostWeek
from pipelines.evaluation.outputs.formatting import interval, number
from pipelines.evaluation.outputs.report_template import REPORT_HTML
from pipelines.evaluation.outputs.summary import (
    golden_coverage,
    judge_noise_rows,
    judge_trust,
    judged_strata,
)
from pipelines.evaluation.results.coverage import GoldenCoverage
from pipelines.evaluation.results.run import RunCost
from pipelines.evaluation.statistics.aggregates import Aggregate, aggregate
from pipelines.evaluation.statistics.diagnose import (
    ATTRIBUTIONS,
    DEFAULT_MIN_N,
    NOT_ENOUGH_EVIDENCE,
    DiagnosisCorrection,
    diagnose,
    summarize_attribution,
)
from pipelines.evaluation.statistics.gate.rule import GateResult
from pipelines.evaluation.statistics.gate.run_gate import Comparison, RunGate
from pipelines.evaluation.statistics.intervals import CI_METHODS
from pipelines.evaluation.statistics.judge_noise import MIN_RETESTS
from pipelines.evaluation.statistics.multiplicity import BENJAMINI_HOCHBERG
from pipelines.evaluation.statistics.randomization import TEST_METHODS
from pipelines.evaluation.statistics.scores import LOWER_IS_BETTER, OVERALL
from pipelines.models.offline import OFFLINE_MODEL
from pipelines.models.usage import STAGES
from pipelines.stores.results import EvalRun, ResultsStore

WORST_ITEMS = 10
TREND_RUNS = 20
REPORT_TOPICS = 10
"""Uncovered topics listed in the report: a real day has a hundred or more; all are in the run's
coverage.json."""


@dataclass(frozen=True)
class ItemView:
    """What the report shows of one item besides its scores."""

    item_id: str
    question: str
    answer: str
    contexts: Sequence[str] = ()
    """Retrieved chunk texts in rank order (or `chunk_id: text`)."""
    reference_answer: str | None = None
    attribution: str | None = None
    """A label from `retrieval.attribute` (diagnose.ATTRIBUTIONS); None when the suite does not
    attribute."""
    correctness: str | None = None
    """The answer-correctness judge's reason, when it judged the item."""


@dataclass(frozen=True)
class TrendPoint:
    logical_date: date
    metric: str
    mean: float | None


def trend_from_store(
    store: ResultsStore, run: EvalRun, *, limit: int = TREND_RUNS
) -> list[TrendPoint]:
    """Pooled means of the successful runs of the same suite and target before this one."""
    points = []
    for past in store.runs(run.suite, limit, target=run.target, before=run.logical_date):
        for agg in aggregate(store.scores(past.run_id), n_resamples=0):
            if agg.stratum == OVERALL:
                points.append(TrendPoint(past.logical_date, agg.metric, agg.mean))
    return points


def render_report(
    run: EvalRun,
    scores: Sequence[Score],
    *,
    aggregates: Sequence[Aggregate] | None = None,
    items: Mapping[str, ItemView] | None = None,
    trend: Sequence[TrendPoint] = (),
    gate: GateResult | None = None,
    baseline: EvalRun | None = None,
    run_gate: RunGate | None = None,
    worst: int = WORST_ITEMS,
    min_n: int = DEFAULT_MIN_N,
    correction: DiagnosisCorrection = BENJAMINI_HOCHBERG,
    cost_trend: Sequence[CostWeek] = (),
) -> str:
    """The report of one run as an HTML string. `trend` holds past runs; this run is added to it.
    `cost_trend`: the suite's cost week by week (outputs/cost_trend.py), this run included. `min_n`
    (settings: `RAGWATCH_DIAGNOSIS_MIN_N`): fewest ok scores for the diagnosis to state a band;
    `correction` (`RAGWATCH_DIAGNOSIS_CORRECTION`): how its band claims are corrected for their
    number. `run_gate`: the gate's comparisons (baseline, reference), each shown as a gate table;
    `gate` and `baseline` alone give one comparison."""
    if run_gate is None and gate is not None and baseline is not None:
        run_gate = RunGate(
            (Comparison(role="baseline", against=baseline, chosen="given", gate=gate),), ""
        )
    comparisons = run_gate.comparisons if run_gate else ()
    gates = [c.gate for c in comparisons if c.gate is not None]
    aggs = list(aggregates) if aggregates is not None else aggregate(scores)
    items = items or {}
    metrics = list(dict.fromkeys(a.metric for a in aggs))
    strata = [OVERALL, *sorted({a.stratum for a in aggs} - {OVERALL})]
    by_key = {(a.metric, a.stratum): a for a in aggs}
    findings = diagnose(aggs, min_n=min_n, correction=correction)
    context = {
        "run": run,
        "offline": any(
            OFFLINE_MODEL in (name or "") for name in (run.judge_model, run.generator_model)
        ),
        "params": json.dumps(
            {
                k: v
                for k, v in (run.params or {}).items()
                if k not in ("judge_audit", "judge_noise", "coverage")
            },
            ensure_ascii=False,
            sort_keys=True,
            default=str,
        ),
        "findings": findings,
        "min_n": min_n,
        "not_enough_evidence": NOT_ENOUGH_EVIDENCE,
        "corrected": correction == BENJAMINI_HOCHBERG,
        "bh": BENJAMINI_HOCHBERG,
        "ci_methods": {
            m: CI_METHODS[m] for m in dict.fromkeys(a.ci_method for a in aggs) if m in CI_METHODS
        },
        "gate_ci_methods": {
            m.ci_method: CI_METHODS[m.ci_method]
            for g in gates
            for m in g.metrics
            if m.ci_method in CI_METHODS
        },
        "test_methods": {
            m.test_method: TEST_METHODS[m.test_method]
            for g in gates
            for m in g.metrics
            if m.test_method in TEST_METHODS
        },
        "run_gate": run_gate,
        "comparisons": [
            (c, _relative_link(c.against.report_path, run.report_path)) for c in comparisons
        ],
        "metrics": [(m, METRICS.get(m, _retrieval_help(m)), m in LOWER_IS_BETTER) for m in metrics],
        "table": [[by_key[(m, s)] for s in strata if (m, s) in by_key] for m in metrics],
        # The verdict's chart: the gate's differences when a gate ran, else the run's means (then
        # not repeated among the per-stratum charts).
        "verdict_chart": Markup(
            _difference_chart(comparisons) if gates else _stratum_chart(OVERALL, metrics, by_key)
        ),
        "interval_charts": [
            Markup(_stratum_chart(s, metrics, by_key)) for s in strata if gates or s != OVERALL
        ],
        "failed_rows": [
            (c.role, m)
            for c in comparisons
            if c.gate is not None
            for m in c.gate.metrics
            if not m.passed
        ],
        "problems": [f for f in findings if f.severity == "problem"],
        "histograms": [Markup(_histogram(m, scores)) for m in metrics],
        "trend_charts": [Markup(c) for c in _trend_charts(run, metrics, by_key, trend)],
        "attribution": _attribution(scores, items),
        "worst": _worst_items(scores, items, worst),
        "failures": _failures(scores),
        "selection": (run.params or {}).get("selection"),
        "judged_strata": judged_strata((run.params or {}).get("selection"), aggs),
        "judge_audit": (run.params or {}).get("judge_audit"),
        "judge_trust": list(
            zip(
                judge_trust((run.params or {}).get("judge_audit")),
                ((run.params or {}).get("judge_audit") or {}).get("calibration", []),
            )
        ),
        "judge_noise": (run.params or {}).get("judge_noise"),
        "judge_noise_rows": judge_noise_rows((run.params or {}).get("judge_noise")),
        "min_retests": MIN_RETESTS,
        "retest_share": (run.params or {}).get("judge_retest_share"),
        "cost": RunCost.model_validate(run.cost) if run.cost else None,
        "stages": STAGES,
        "coverage": (coverage := golden_coverage(run.params)),
        "report_topics": REPORT_TOPICS,
        "coverage_chart": Markup(_coverage_chart(coverage))
        if coverage and coverage.status == "ok"
        else None,
        "cost_trend": cost_trend,
        "cost_trend_chart": Markup(_cost_trend_chart(cost_trend)) if cost_trend else None,
    }
    return _TEMPLATE.render(**context)


def _relative_link(target: str | None, source: str | None) -> str | None:
    """`target`'s path relative to the folder of `source` (reports link each other without any
    URL)."""
    if not target:
        return None
    if not source:
        return Path(target).name
    return os.path.relpath(target, start=Path(source).parent)


def write_report(path: Path, html: str) -> Path:
    atomic_write_text(path, html)
    return path


def write_metrics_json(path: Path, aggregates: Iterable[Aggregate]) -> Path:
    """`{"faithfulness": {"all": 0.8, "single_hop/es": 0.75}, ...}`: means only, so `dvc metrics
    diff` compares like with like; a metric or stratum with no ok score is left out rather than
    written as 0."""
    flat: dict[str, dict[str, float]] = defaultdict(dict)
    for agg in aggregates:
        if agg.mean is not None:
            flat[agg.metric][agg.stratum] = round(agg.mean, 6)
    payload = {
        m: dict(sorted(v.items(), key=lambda kv: (kv[0] != OVERALL, kv[0])))
        for m, v in sorted(flat.items())
    }
    atomic_write_text(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    return path


# --- sections -------------------------------------------------------------------------------


def _retrieval_help(metric: str) -> str:
    kind, _, k = metric.partition("@")
    if kind == "recall" and k:
        return f"1 if any gold chunk is in the top {k} retrieved, else 0 (id-based)"
    if kind == "precision" and k:
        return f"relevant ids in the top {k} / {k} (id-based)"
    return ""


def _stratum_chart(
    stratum: str, metrics: list[str], by_key: dict[tuple[str, str], Aggregate]
) -> str:
    rows = [
        Interval(
            m, a.mean, a.ci_low, a.ci_high, f"n={a.n}" + (f" ✗{a.n_failed}" if a.n_failed else "")
        )
        for m in metrics
        if (a := by_key.get((m, stratum)))
    ]
    return interval_chart(rows, title=f"{stratum}: mean and 95 % CI")


def _difference_chart(comparisons: Sequence[Comparison]) -> str:
    """Each gated metric's difference (this run − the run it was gated against) with its interval:
    the verdict's why at a glance; a whisker left of 0 is a drop."""
    rows = [
        Interval(
            f"{m.metric} vs {c.role}",
            m.diff,
            m.ci_low,
            m.ci_high,
            "FAIL" if not m.passed else "pass",
        )
        for c in comparisons
        if c.gate is not None
        for m in c.gate.metrics
        if m.diff is not None
    ]
    x_range = value_range([v for r in rows for v in (r.mean, r.low, r.high)], default=(-0.1, 0.1))
    return interval_chart(
        rows, x_range=x_range, title="difference from the run gated against, 95 % CI"
    )


def _coverage_chart(coverage: GoldenCoverage) -> str:
    rows = [
        Interval(
            label=row.stratum,
            mean=row.ratio,
            low=row.level_ci_low,
            high=row.level_ci_high,
            note=f"n={row.questions} distinct",
        )
        for row in coverage.strata
        if row.ratio is not None
    ]
    title = (
        "golden coverage of the day's traffic, 95 % CI with the matcher's error rates' uncertainty"
    )
    return interval_chart(rows, x_range=(0.0, 1.0), title=title) if rows else ""


def _histogram(metric: str, scores: Sequence[Score]) -> str:
    values = [
        s.value for s in scores if s.metric == metric and s.status == "ok" and s.value is not None
    ]
    return histogram(values, title=metric)


def _trend_charts(
    run: EvalRun, metrics: list[str], by_key, trend: Sequence[TrendPoint]
) -> list[str]:
    charts = []
    for metric in metrics:
        past = sorted(
            (p.logical_date, p.mean)
            for p in trend
            if p.metric == metric and p.logical_date < run.logical_date
        )
        current = by_key.get((metric, OVERALL))
        points = [(d.isoformat(), v) for d, v in past]
        points.append((run.logical_date.isoformat(), current.mean if current else None))
        charts.append(line_chart(points, title=metric))
    return charts


def _cost_trend_chart(weeks: Sequence[CostWeek]) -> str:
    points = [(w.week.isoformat(), w.per_run("tokens") / 1000 if w.runs else None) for w in weeks]
    return line_chart(points, title="thousand tokens per run, by week", width=420)


def _attribution(scores: Sequence[Score], items: Mapping[str, ItemView]) -> dict[str, Any] | None:
    labelled = {i: v.attribution for i, v in items.items() if v.attribution is not None}
    if not labelled:
        return None
    stratum_of = {s.item_id: s.stratum for s in scores}
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for item_id, label in labelled.items():
        by_stratum[stratum_of.get(item_id, "unscored")].append(label)
    rows = [(OVERALL, summarize_attribution(labelled.values()))]
    rows += [(s, summarize_attribution(labels)) for s, labels in sorted(by_stratum.items())]
    return {"labels": ATTRIBUTIONS, "rows": rows}


def _worst_items(
    scores: Sequence[Score], items: Mapping[str, ItemView], limit: int
) -> list[dict[str, Any]]:
    """Items ranked by the mean of their ok higher-is-better scores, lowest first; each row lists
    every score of the item so the reader sees which metric sank it."""
    per_item: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        per_item[s.item_id].append(s)
    ranked = []
    for item_id, rows in per_item.items():
        values = [s.value for s in rows if s.status == "ok" and s.metric not in LOWER_IS_BETTER]
        if values:
            ranked.append((sum(values) / len(values), item_id))
    worst = []
    for rank_value, item_id in sorted(ranked)[:limit]:
        rows = sorted(per_item[item_id], key=lambda s: s.metric)
        worst.append(
            {
                "item_id": item_id,
                "stratum": rows[0].stratum,
                "rank_value": rank_value,
                "scores": rows,
                "view": items.get(item_id),
            }
        )
    return worst


def _failures(scores: Sequence[Score]) -> list[dict[str, Any]]:
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s in scores:
        if s.status == "failed":
            grouped[(s.metric, s.error or "no error recorded")].append(s.item_id)
    return [
        {"metric": metric, "error": error, "count": len(ids), "examples": sorted(ids)[:3]}
        for (metric, error), ids in sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]


_ENV = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
_ENV.filters["num"] = number
_ENV.filters["amount"] = lambda value: (
    "–" if value is None else f"{value:,.1f}"
)  # counts and tokens per run
_ENV.globals["ci"] = interval

_TEMPLATE = _ENV.from_string(REPORT_HTML)
