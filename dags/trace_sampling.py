"""Daily: select, anonymize (in mapped shards), merge, validate, promote and version one day of
production traces.

Each run processes its own data interval (the previous UTC day), so backfills of past days from the
UI or `POST /api/v2/backfills` write exactly those days' partitions. `select` runs the selection
once and writes the ids to the workspace; `shard` is mapped over contiguous ranges of the
partition's parts (RAGWATCH_SAMPLE_SHARDS), on any worker; `merge` checks every shard wrote its
parts. Task bodies import `pipelines` themselves, so parsing this file stays fast.
"""

from __future__ import annotations

from airflow.sdk import Asset, task
from ragwatch_airflow.dag_parts import daily_dag, fail_now_on, optional_param
from ragwatch_airflow.intervals import current_interval
from ragwatch_airflow.settings import DVC_POOL, ragwatch_settings

from pipelines.core.inputs import STRATA

SAMPLED_TRACES = Asset(name="ragwatch_sampled_traces", uri="ragwatch://golden/traces")

with daily_dag(
    "trace_sampling",
    description="Sample, anonymize, validate (GX) and version (DVC) yesterday's production traces.",
    tags=["traces"],
    params={
        "sample_rate": optional_param(
            "number",
            exclusiveMinimum=0,
            maximum=1,
            description="Share of each stratum to sample; default: RAGWATCH_SAMPLE_RATE.",
        ),
        "strata": optional_param(
            "array",
            items={"type": "string", "enum": list(STRATA)},
            minItems=1,
            uniqueItems=True,
            description="Trace fields that define strata; default: RAGWATCH_STRATA.",
        ),
        "min_per_stratum": optional_param(
            "integer",
            minimum=0,
            description="Floor so small strata are represented; default: RAGWATCH_MIN_PER_STRATUM.",
        ),
    },
) as dag:

    @task
    def select(params=None) -> list[dict]:
        """The day's selection, written to the workspace; the shards to map over."""
        from pipelines.traces import steps

        planned = steps.select_trace_sample(
            ragwatch_settings(),
            current_interval().start.date(),
            rate=params["sample_rate"],
            strata=params["strata"],
            min_per_stratum=params["min_per_stratum"],
        )
        return [shard.model_dump(mode="json") for shard in planned]

    @task
    def shard(planned: dict) -> dict:
        from pipelines.traces import steps

        return steps.write_trace_shard(
            ragwatch_settings(), steps.PlannedShard.model_validate(planned)
        ).model_dump(mode="json")

    @task
    def merge(planned: list, _written: list) -> dict:
        from pipelines.traces import steps

        shards = [steps.PlannedShard.model_validate(s) for s in planned]
        return steps.merge_trace_sample(ragwatch_settings(), shards).model_dump(mode="json")

    @task
    def validate(staged: dict) -> dict:
        from pipelines.core.validation import ValidationFailed
        from pipelines.traces import steps

        with fail_now_on(ValidationFailed):
            return steps.validate_trace_sample(
                steps.StagedSample.model_validate(staged)
            ).model_dump(mode="json")

    @task
    def promote(staged: dict) -> dict:
        from pipelines.traces import steps

        return steps.promote_trace_sample(
            ragwatch_settings(), steps.StagedSample.model_validate(staged)
        ).model_dump(mode="json")

    @task(pool=DVC_POOL, outlets=[SAMPLED_TRACES])
    def version(promoted: dict) -> dict:
        from pipelines.traces import steps

        return steps.version_trace_sample(
            ragwatch_settings(), steps.PromotedSample.model_validate(promoted)
        ).model_dump(mode="json")

    selected = select()
    staged = merge(selected, shard.expand(planned=selected))
    promoted = promote(staged)
    validate(staged) >> promoted
    version(promoted)
