"""The regression gate of an offline run: against which baseline, on which metrics, and what failing does."""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.evaluation.params import GATED_METRICS
from pipelines.evaluation.stats import GateResult, regression_gate
from pipelines.evaluation.summary import RunSummary
from pipelines.records import Score
from pipelines.stores.results import EvalRun, ResultsStore


class GateFailed(RuntimeError):
    """The run regressed beyond the tolerance its eval-set size allows (raised only when asked to)."""


def gate_against_baseline(store: ResultsStore, run: EvalRun, scores: Sequence[Score]) -> tuple[GateResult | None, EvalRun | None]:
    """Compare `run` with the previous successful, gate-passing run of the same target; (None, None) when there is none."""
    baseline = store.baseline_for(run)
    if baseline is None:
        return None, None
    baseline_scores = store.scores(baseline.run_id)
    # Gate what both runs measured: a metric switched off in this run's params is not a regression.
    measured = {s.metric for s in scores} & {s.metric for s in baseline_scores}
    gated = [m for m in GATED_METRICS if m in measured]
    return (regression_gate(scores, baseline_scores, gated) if gated else None), baseline


def enforce_gate(summary: RunSummary, fail_on_gate: bool) -> RunSummary:
    if fail_on_gate and summary.gate_passed is False:
        raise GateFailed(f"{summary.gate} (report: {summary.report})")
    return summary
