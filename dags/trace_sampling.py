"""Daily: sample, anonymize, validate, publish and version one day of production traces.

Each run processes its own data interval (the previous UTC day), so backfills of past days
from the UI or `POST /api/v2/backfills` write exactly those days' partitions.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG, Asset, Param, task
from airflow.sdk import CronDataIntervalTimetable
from ragwatch_airflow.settings import DEFAULT_ARGS, DVC_POOL, ragwatch_settings

from pipelines.traces import steps

SAMPLED_TRACES = Asset(name="ragwatch_sampled_traces", uri="ragwatch://golden/traces")

with DAG(
    dag_id="trace_sampling",
    description="Sample, anonymize, validate (GX) and version (DVC) yesterday's production traces.",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=4,
    default_args=DEFAULT_ARGS,
    params={
        "sample_rate": Param(0.05, type="number", exclusiveMinimum=0, maximum=1, description="Share of each stratum to sample."),
        "strata": Param(["app", "language", "user_feedback"], type="array", description="Trace fields that define strata."),
        "min_per_stratum": Param(2, type="integer", minimum=0, description="Floor so small strata are represented."),
    },
    tags=["ragwatch", "traces"],
) as dag:

    @task
    def sample(params=None, data_interval_start=None) -> dict:
        return steps.stage_trace_sample(
            ragwatch_settings(), data_interval_start.date(), rate=params["sample_rate"],
            strata=list(params["strata"]), min_per_stratum=params["min_per_stratum"],
        )  # fmt: skip

    @task(retries=0)  # a failed expectation fails again on retry: report it once
    def validate(staged: dict) -> dict:
        return steps.validate_trace_sample(staged)

    @task
    def publish(validated: dict) -> dict:
        return steps.publish_trace_sample(ragwatch_settings(), validated)

    @task(pool=DVC_POOL, outlets=[SAMPLED_TRACES])
    def version(published: dict) -> dict:
        return steps.version_trace_sample(ragwatch_settings(), published)

    version(publish(validate(sample())))
