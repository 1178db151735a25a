"""Daily: score a sample of yesterday's real (anonymized) traffic without ground truth, then push.

Waits for trace_sampling to publish the same day's partition, so a backfill of past days runs
in order; every score row carries its trace id.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, task
from ragwatch_airflow.settings import DEFAULT_ARGS, LLM_POOL, ragwatch_settings

from pipelines.evaluation import offline, online

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
        return online.partition_ready(ragwatch_settings(), data_interval_start.date())

    @task(pool=LLM_POOL)
    def score(params=None, data_interval_start=None) -> dict:
        return online.score_online(ragwatch_settings(), data_interval_start.date(), noise_mode=params["noise_mode"],
                                   noise_k=params["noise_k"])  # fmt: skip

    @task(outlets=[ONLINE_SCORES])
    def push(summary: dict) -> dict:
        return offline.push_eval(ragwatch_settings(), summary)

    scored = score()
    sampled_partition() >> scored
    push(scored)
