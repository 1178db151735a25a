"""Daily: sample, anonymize, validate, promote and version one day of production traces.

Each run processes its own data interval (the previous UTC day), so backfills of past days
from the UI or `POST /api/v2/backfills` write exactly those days' partitions. Task bodies import
`pipelines` themselves, so parsing this file stays fast.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, task
from ragwatch_airflow.settings import DEFAULT_ARGS, DVC_POOL, ragwatch_settings

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
        from pipelines.traces import steps

        return steps.stage_trace_sample(
            ragwatch_settings(), data_interval_start.date(), rate=params["sample_rate"],
            strata=list(params["strata"]), min_per_stratum=params["min_per_stratum"],
        ).model_dump(mode="json")  # fmt: skip

    @task(retries=0)  # a failed expectation fails again on retry: report it once
    def validate(staged: dict) -> dict:
        from pipelines.traces import steps

        return steps.validate_trace_sample(steps.StagedSample.model_validate(staged)).model_dump(mode="json")

    @task
    def promote(staged: dict) -> dict:
        from pipelines.traces import steps

        return steps.promote_trace_sample(ragwatch_settings(), steps.StagedSample.model_validate(staged)).model_dump(mode="json")

    @task(pool=DVC_POOL, outlets=[SAMPLED_TRACES])
    def version(promoted: dict) -> dict:
        from pipelines.traces import steps

        return steps.version_trace_sample(ragwatch_settings(), steps.PromotedSample.model_validate(promoted)).model_dump(mode="json")

    staged = sample()
    promoted = promote(staged)
    validate(staged) >> promoted
    version(promoted)
