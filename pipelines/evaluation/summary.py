"""What a finished run tells a person: scores with CIs for every metric, the gate, the diagnosis."""

from __future__ import annotations

from collections.abc import Sequence
from pydantic import BaseModel

from pipelines.evaluation.diagnose import diagnose
from pipelines.evaluation.runs import RunHeader
from pipelines.evaluation.stats import OVERALL, Aggregate, aggregate
from pipelines.settings import Settings
from pipelines.stores.results import EvalRun, ResultsStore


class MetricRow(BaseModel):
    metric: str
    n: int
    n_failed: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


class RunSummary(RunHeader):
    report: str | None
    gate_passed: bool | None
    gate: str
    """The gate's verdict in words, or why no gate ran."""
    overall: list[MetricRow]
    diagnosis: list[str]
    baseline: str | None = None
    """The run the gate compared against."""
    review_candidates: int | None = None
    """Online only: traces queued for golden review."""


def run_summary(run: EvalRun, aggregates: Sequence[Aggregate], *, items: int, baseline: str | None = None) -> RunSummary:
    gate = run.gate["summary"] if run.gate else (
        "online runs are monitored by alerts, not gated" if run.suite == "online"
        else "no baseline yet: the gate starts with the next run")  # fmt: skip
    return RunSummary(
        run_id=run.run_id, suite=run.suite, logical_date=run.logical_date, target=run.target,
        dataset_version=run.dataset_version, items=items, report=run.report_path, gate_passed=run.gate_passed, gate=gate,
        overall=[MetricRow(metric=a.metric, n=a.n, n_failed=a.n_failed, mean=a.mean, ci_low=a.ci_low, ci_high=a.ci_high)
                 for a in aggregates if a.stratum == OVERALL],
        diagnosis=[f"{f.metric} [{f.stratum}] {f.mean:.2f} ({f.band}): {f.users_see} → {f.first_action}"
                   + (f" ({f.note})" if f.note else "") for f in diagnose(aggregates)],
        baseline=baseline,
    )  # fmt: skip


def latest_summary(settings: Settings, suite: str) -> RunSummary:
    store = ResultsStore.from_settings(settings)
    try:
        run = store.latest_run(suite) if store.exists() else None
        if run is None:
            raise LookupError(f"no {suite} run in the results DB yet: run `ragwatch eval {suite}` or the {suite}_eval DAG")
        scores = store.scores(run.run_id)
    finally:
        store.dispose()
    return run_summary(run, aggregate(scores), items=len({s.item_id for s in scores}))
