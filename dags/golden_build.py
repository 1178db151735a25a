"""Weekly, and whenever the corpus is refreshed: build, validate and version the golden set.

Generation runs as mapped batches in the `ragwatch_llm` pool, so a vLLM server sees at most
as many concurrent batches as the pool has slots.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG, Asset, AssetOrTimeSchedule, CronTriggerTimetable, Param, task
from ragwatch_airflow.settings import DEFAULT_ARGS, DVC_POOL, LLM_POOL, ragwatch_settings

from pipelines.golden import steps
from pipelines.golden.params import load_golden_params

CORPUS = Asset(name="ragwatch_corpus", uri="ragwatch://corpus")
GOLDEN_SET = Asset(name="ragwatch_golden_set", uri="ragwatch://golden/datasets")

with DAG(
    dag_id="golden_build",
    description="Generate, filter, review-merge, split, validate (GX) and version (DVC + tag) the golden set.",
    schedule=AssetOrTimeSchedule(timetable=CronTriggerTimetable("0 3 * * 1", timezone="UTC"), assets=CORPUS),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params={"overrides": Param({}, type="object", description="Values that replace params.yaml's `golden` keys, e.g. {\"seeds\": 200}.")},
    tags=["ragwatch", "golden"],
) as dag:

    def golden_params(params) -> dict:
        return load_golden_params(ragwatch_settings(), **params["overrides"])

    @task
    def plan(params=None, dag_run=None) -> list[list[int]]:
        """The generation batches (job ranges): what the next task maps over."""
        return steps.plan_golden(ragwatch_settings(), golden_params(params), logical_date=dag_run.run_after.date())["batches"]

    @task(pool=LLM_POOL)
    def generate(batch: list, params=None) -> dict:
        return steps.generate_golden_batch(ragwatch_settings(), golden_params(params)["name"], *batch)

    @task(pool=LLM_POOL)
    def filter_candidates(_generated: list, params=None) -> dict:
        return steps.filter_golden(ragwatch_settings(), golden_params(params))

    @task
    def split(_filtered: dict, params=None) -> dict:
        return steps.split_golden(ragwatch_settings(), golden_params(params))

    @task(retries=0)  # a failed expectation fails again on retry
    def validate(split_result: dict) -> dict:
        return steps.validate_golden(ragwatch_settings(), split_result["name"])

    @task(pool=DVC_POOL, outlets=[GOLDEN_SET])
    def publish(validated: dict) -> dict:
        return steps.publish_golden(ragwatch_settings(), validated["name"])

    publish(validate(split(filter_candidates(generate.expand(batch=plan())))))
