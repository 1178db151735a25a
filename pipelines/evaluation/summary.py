"""What a finished run tells a person: scores with CIs for every metric, the gate, the diagnosis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipelines.evaluation.diagnose import diagnose
from pipelines.evaluation.stats import OVERALL, Aggregate, aggregate
from pipelines.records import Score
from pipelines.settings import Settings


def run_summary(run, aggregates: Sequence[Aggregate], *, items: int) -> dict[str, Any]:
    gate = run.gate["summary"] if run.gate else (
        "online runs are monitored by alerts, not gated" if run.suite == "online"
        else "no baseline yet: the gate starts with the next run")  # fmt: skip
    return {
        "run_id": run.run_id, "suite": run.suite, "logical_date": run.logical_date.isoformat(), "target": run.target,
        "dataset_version": run.dataset_version, "items": items, "report": run.report_path,
        "gate_passed": run.gate_passed, "gate": gate,
        "overall": [{"metric": a.metric, "n": a.n, "n_failed": a.n_failed, "mean": a.mean, "ci_low": a.ci_low,
                     "ci_high": a.ci_high} for a in aggregates if a.stratum == OVERALL],
        "diagnosis": [f"{f.metric} [{f.stratum}] {f.mean:.2f} ({f.band}): {f.users_see} → {f.first_action}"
                      + (f" ({f.note})" if f.note else "") for f in diagnose(aggregates)],
    }  # fmt: skip


def latest_summary(settings: Settings, suite: str) -> dict[str, Any]:
    from pipelines.stores.results import ResultsStore

    store = ResultsStore.from_settings(settings)
    store.create()
    run = store.latest_run(suite)
    if run is None:
        store.dispose()
        raise LookupError(f"no {suite} run in {settings.resolved_results_url}: run `ragwatch eval {suite}` or the {suite}_eval DAG")
    scores: list[Score] = store.scores(run.run_id)
    store.dispose()
    return run_summary(run, aggregate(scores), items=len({s.item_id for s in scores}))
