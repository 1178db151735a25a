"""The weekly offline eval, every step in order without Airflow (`ragwatch eval offline`).

prepare (golden split -> system under test -> retrieval and tool scores) -> judge batches (ragas
judge metrics + noise ΔF) -> finalize (aggregates with CIs, gate, results DB, report) -> push
(Pushgateway) -> gate (fail when asked to). The offline_eval DAG runs the same steps as tasks.
"""

from __future__ import annotations

from datetime import date

from pipelines.core.settings import Settings
from pipelines.evaluation.outputs.push import PushedRun, push_run
from pipelines.evaluation.outputs.summary import RunSummary
from pipelines.evaluation.runs.finalize import finalize_offline_eval
from pipelines.evaluation.runs.folder import run_steps
from pipelines.evaluation.runs.judge_batch import judge_offline_batch
from pipelines.evaluation.runs.params import EvalParams
from pipelines.evaluation.runs.prepare import prepare_offline_eval


def run_offline_eval(
    settings: Settings, params: EvalParams, *, logical_date: date, progress=None
) -> tuple[RunSummary, PushedRun]:
    prepared = prepare_offline_eval(settings, params, logical_date=logical_date)
    # One batch at a time: an offline batch holds the corpus index (its target), which local mode
    # opens once.
    summary = run_steps(
        settings, prepared, judge_offline_batch, finalize_offline_eval, progress, in_flight=1
    )
    pushed = push_run(settings, summary)
    return enforce_gate(summary, params.fail_on_gate), pushed


class GateFailed(RuntimeError):
    """The run regressed beyond the tolerance its eval-set size allows (raised only when asked
    to)."""


def enforce_gate(summary: RunSummary, fail_on_gate: bool) -> RunSummary:
    """The run's summary, or GateFailed when its gate failed and the run was asked to fail with it
    (`fail_on_gate`: the CLI's exit status, the DAG's last task)."""
    if fail_on_gate and summary.gate_passed is False:
        raise GateFailed(f"{summary.gate} (report: {summary.report})")
    return summary
