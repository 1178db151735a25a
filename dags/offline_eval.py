"""Weekly: run the system under test over the frozen golden test split, judge, gate, report, push.

On a time schedule (not on the golden asset) so past weeks can be backfilled from the UI.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, task
from ragwatch_airflow.settings import DEFAULT_ARGS, LLM_POOL, ragwatch_settings

from pipelines.evaluation import offline

OFFLINE_SCORES = Asset(name="ragwatch_offline_scores", uri="ragwatch://results/offline")

with DAG(
    dag_id="offline_eval",
    description="Golden test split -> system under test -> retrieval, ragas judge, noise ΔF, tools -> CIs, gate, report, Pushgateway.",
    schedule=CronDataIntervalTimetable("0 4 * * 1", timezone="UTC"),
    start_date=datetime(2026, 1, 5, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params={
        "golden_version": Param(None, type=["null", "string"], description="e.g. v3; default: the latest published."),
        "k": Param([1, 3, 5, 10], type="array", description="Cut-offs for recall@k and precision@k."),
        "metrics": Param(offline.ALL_JUDGE_METRICS, type="array", description="Judge metrics to compute."),
        "target_url": Param(None, type=["null", "string"], description="Your RAG service (README contract); default: the reference RAG."),
        "fail_on_gate": Param(False, type="boolean", description="Fail the run when the regression gate fails."),
        "limit": Param(None, type=["null", "integer"], description="Evaluate a stable subset of this many items."),
    },
    tags=["ragwatch", "eval"],
) as dag:

    def eval_params(params) -> dict:
        return offline.eval_params(ragwatch_settings(), **params)

    @task
    def prepare(params=None, data_interval_end=None) -> dict:
        return offline.prepare_offline_eval(ragwatch_settings(), eval_params(params), logical_date=data_interval_end.date())

    @task
    def batches(prepared: dict) -> list[dict]:
        return [{"run_dir": prepared["run_dir"], "start": s, "end": e} for s, e in prepared["batches"]]

    @task(pool=LLM_POOL)
    def judge(batch: dict) -> dict:
        return offline.judge_offline_batch(ragwatch_settings(), Path(batch["run_dir"]), batch["start"], batch["end"])

    @task
    def finalize(prepared: dict, _judged: list) -> dict:
        return offline.finalize_offline_eval(ragwatch_settings(), Path(prepared["run_dir"]))

    @task(outlets=[OFFLINE_SCORES])
    def push(summary: dict) -> dict:
        return offline.push_eval(ragwatch_settings(), summary)

    @task(retries=0)
    def gate(summary: dict, _pushed: dict, params=None) -> dict:
        return offline.enforce_gate(summary, params["fail_on_gate"])

    prepared = prepare()
    summary = finalize(prepared, judge.expand(batch=batches(prepared)))
    gate(summary, push(summary))
