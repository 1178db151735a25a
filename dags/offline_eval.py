"""Weekly: run the system under test over the frozen golden test split, judge, gate, report, push.

On a time schedule (not on the golden asset) so past weeks can be backfilled from the UI. Task
bodies import `pipelines` themselves, so parsing this file stays fast (ragas is slow to import).
"""

from __future__ import annotations

from airflow.sdk import Asset, CronDataIntervalTimetable, Param, task
from ragwatch_airflow.dag_parts import (
    fail_now_on,
    judge_batches,
    optional_param,
    push_summary,
    ragwatch_dag,
)
from ragwatch_airflow.intervals import current_interval
from ragwatch_airflow.settings import ragwatch_settings

from pipelines.core.inputs import GOLDEN_VERSION_PATTERN, K_MAX, TARGET_NAME_PATTERN
from pipelines.evaluation.runs.params import (
    ALL_JUDGE_METRICS,
    DEFAULT_K,
    OFFLINE_RUN_ID_PATTERN,
    TARGET_URL_PATTERN,
)

OFFLINE_SCORES = Asset(name="ragwatch_offline_scores", uri="ragwatch://results/offline")

with ragwatch_dag(
    "offline_eval",
    description="Golden test split -> system under test -> retrieval, ragas judge, noise ΔF, tools -> CIs, gate, report, Pushgateway.",
    schedule=CronDataIntervalTimetable("0 4 * * 1", timezone="UTC"),
    start=(2026, 1, 5),
    tags=["eval"],
    params={
        "golden_version": optional_param(
            "string",
            pattern=GOLDEN_VERSION_PATTERN,
            description="e.g. v3; default: the latest published.",
        ),
        "k": Param(
            list(DEFAULT_K),
            type="array",
            items={"type": "integer", "minimum": 1, "maximum": K_MAX},
            minItems=1,
            description="Cut-offs for recall@k and precision@k.",
        ),
        "metrics": Param(
            ALL_JUDGE_METRICS,
            type="array",
            items={"type": "string", "enum": ALL_JUDGE_METRICS},
            description="Judge metrics to compute.",
        ),
        "target_url": optional_param(
            "string",
            pattern=TARGET_URL_PATTERN,
            description="Your RAG service (see docs/how-to/real-services.md), without credentials (they come from the "
            "ragwatch_target connection); default: the reference RAG.",
        ),
        "target_name": optional_param(
            "string",
            pattern=TARGET_NAME_PATTERN,
            description="The target's name in runs, reports and gauges; default: from the URL.",
        ),
        "fail_on_gate": Param(
            False, type="boolean", description="Fail the run when the regression gate fails."
        ),
        "limit": optional_param(
            "integer",
            minimum=1,
            description="Evaluate a stable subset of this many items, stratified by question type.",
        ),
        "baseline_run": optional_param(
            "string",
            pattern=OFFLINE_RUN_ID_PATTERN,
            description="Gate against this run id (e.g. offline/2026-11-30/reference-rag); default: "
            "the target's previous run.",
        ),
        "reference_run": optional_param(
            "string",
            pattern=OFFLINE_RUN_ID_PATTERN,
            description="Also gate against this run id, so slow drift fails; default, per metric: the "
            "first release (`ragwatch eval pin`) that measured it since the reference last moved "
            "(`eval pin --reference`), else the first accepted run that measured it, across golden refreshes.",
        ),
    },
) as dag:

    def eval_params(params):
        from pipelines.evaluation.runs.params import eval_params

        return eval_params(ragwatch_settings(), **params)

    @task
    def prepare(params=None) -> dict:
        from pipelines.evaluation.runs.prepare import prepare_offline_eval

        week_end = current_interval().end.date()
        prepared = prepare_offline_eval(
            ragwatch_settings(), eval_params(params), logical_date=week_end
        )
        return prepared.model_dump(mode="json")

    def judge_offline_batch(
        settings, run_dir, start, end
    ):  # imported when a batch runs: parsing stays light
        from pipelines.evaluation.runs.judge_batch import judge_offline_batch

        return judge_offline_batch(settings, run_dir, start, end)

    # The gate reads the previous week's result: a backfill's weeks run side by side (its own
    # max_active_runs, not the DAG's), so each week's finalize waits for the week before it and the
    # weeks are gated in order.
    @task(depends_on_past=True)
    def finalize(prepared: dict, _judged: list) -> dict:
        from pathlib import Path

        from pipelines.evaluation.runs.finalize import finalize_offline_eval

        return finalize_offline_eval(ragwatch_settings(), Path(prepared["run_dir"])).model_dump(
            mode="json"
        )

    @task
    def gate(summary: dict, _pushed: dict, params=None) -> dict:
        from pipelines.evaluation.outputs.summary import RunSummary
        from pipelines.evaluation.runs.offline import GateFailed, enforce_gate

        with fail_now_on(GateFailed):
            summary = enforce_gate(RunSummary.model_validate(summary), params["fail_on_gate"])
        return summary.model_dump(mode="json")

    prepared = prepare()
    summary = finalize(prepared, judge_batches(prepared, judge_offline_batch))
    gate(summary, push_summary(summary, OFFLINE_SCORES))
