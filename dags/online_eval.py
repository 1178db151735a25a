"""Daily: score a sample of yesterday's real (anonymized) traffic without ground truth, then push.

Waits for trace_sampling to promote the same day's partition, so a backfill of past days runs
in order; every score row carries its trace id. Task bodies import `pipelines` themselves, so
parsing this file stays fast.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, task
from ragwatch_airflow.settings import DEFAULT_ARGS, LLM_POOL, ragwatch_settings

ONLINE_SCORES = Asset(name="ragwatch_online_scores", uri="ragwatch://results/online")

with DAG(
    dag_id="online_eval",
    description="Faithfulness, answer relevancy, online noise ΔF and tool-call validity of the day's sampled traces.",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=4,
    default_args=DEFAULT_ARGS,
    params={
        "noise_mode": Param("hard", enum=["hard", "random"], description="Which irrelevant chunks to inject."),
        "noise_k": Param(2, type="integer", minimum=1, description="Chunks injected per trace."),
    },
    tags=["ragwatch", "eval"],
) as dag:

    @task.sensor(poke_interval=300, timeout=12 * 3600, mode="reschedule")
    def sampled_partition(data_interval_start=None) -> bool:
        from pipelines.workspace import Workspace

        return Workspace.from_settings(ragwatch_settings()).has_traces(data_interval_start.date())

    @task(pool=LLM_POOL)
    def score(params=None, data_interval_start=None) -> dict:
        from pipelines.evaluation.online import score_online

        return score_online(ragwatch_settings(), data_interval_start.date(), noise_mode=params["noise_mode"],
                            noise_k=params["noise_k"]).model_dump(mode="json")  # fmt: skip

    @task(outlets=[ONLINE_SCORES])
    def push(summary: dict) -> dict:
        from pipelines.evaluation.push import push_run
        from pipelines.evaluation.summary import RunSummary

        return push_run(ragwatch_settings(), RunSummary.model_validate(summary)).model_dump(mode="json")

    scored = score()
    sampled_partition() >> scored
    push(scored)
