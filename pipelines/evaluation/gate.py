"""The regression gate of an offline run: against which baseline, on which metrics, and what failing does."""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.evaluation.params import GATED_METRICS
from pipelines.evaluation.stats import DEFAULT_MIN_PAIRS, GateResult, regression_gate
from pipelines.evaluation.summary import RunSummary
from pipelines.records import Score
from pipelines.stores.results import EvalRun, ResultsStore


class GateFailed(RuntimeError):
    """The run regressed beyond the tolerance its eval-set size allows (raised only when asked to)."""


def gate_against_baseline(store: ResultsStore, run: EvalRun, scores: Sequence[Score], *,
                          min_pairs: int = DEFAULT_MIN_PAIRS,
                          baseline_run: str | None = None) -> tuple[GateResult | None, EvalRun | None]:  # fmt: skip
    """Compare `run` with `baseline_run` when given (a candidate against the accepted run of another target),
    else with the previous successful, gate-passing run of the same target; (None, None) when there is none.
    `min_pairs` (settings: `RAGWATCH_GATE_MIN_PAIRS`): fewest items ok in both runs for a metric to be decided."""
    if baseline_run:
        baseline = store.get_run(baseline_run)
        if baseline is None:
            raise ValueError(f"baseline run {baseline_run!r} is not in the results DB")
        if baseline.run_id == run.run_id:
            raise ValueError(f"run {run.run_id!r} cannot be its own baseline")
    else:
        baseline = store.baseline_for(run)
    if baseline is None:
        return None, None
    baseline_scores = store.scores(baseline.run_id)
    # Gate what both runs measured: a metric switched off in this run's params is not a regression.
    measured = {s.metric for s in scores} & {s.metric for s in baseline_scores}
    gated = [m for m in GATED_METRICS if m in measured]
    return (regression_gate(scores, baseline_scores, gated, min_pairs=min_pairs) if gated else None), baseline


def enforce_gate(summary: RunSummary, fail_on_gate: bool) -> RunSummary:
    if fail_on_gate and summary.gate_passed is False:
        raise GateFailed(f"{summary.gate} (report: {summary.report})")
    return summary
