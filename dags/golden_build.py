"""Weekly, and whenever the corpus is refreshed: build, validate, release and version the golden
set.

Generation runs as mapped batches in the `ragwatch_llm` pool, so a vLLM server sees at most
as many concurrent batches as the pool has slots. Task bodies import `pipelines` themselves,
so parsing this file stays fast.
"""

from __future__ import annotations

from airflow.sdk import Asset, AssetOrTimeSchedule, CronTriggerTimetable, Param, task
from ragwatch_airflow.dag_parts import fail_now_on, ragwatch_dag
from ragwatch_airflow.settings import DVC_POOL, LLM_POOL, ragwatch_settings

from pipelines.core.inputs import GOLDEN_NAME_PATTERN

CORPUS = Asset(name="ragwatch_corpus", uri="ragwatch://corpus")
GOLDEN_SET = Asset(name="ragwatch_golden_set", uri="ragwatch://golden/datasets")

_COUNT = {"type": "integer", "minimum": 0}
_SHARE = {"type": "number", "minimum": 0, "maximum": 1}
OVERRIDES = {
    "name": {"type": "string", "pattern": GOLDEN_NAME_PATTERN},
    **{
        key: _COUNT
        for key in (
            "seeds",
            "multi_hop",
            "adversarial",
            "tool_triples",
            "from_traces",
            "trace_days",
        )
    },
    "questions_per_seed": {"type": "integer", "minimum": 1, "maximum": 5},
    "batch_size": {"type": "integer", "minimum": 1},
    **{key: _SHARE for key in ("dev_fraction", "review_fraction", "near_duplicate_cosine")},
}
"""The keys of params.yaml's `golden` section a run may override; pipelines.golden.params checks
them again."""

with ragwatch_dag(
    "golden_build",
    description="Generate, filter, review-merge, split, validate (GX) and release (DVC + tag) the golden set.",
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("0 3 * * 1", timezone="UTC"), assets=CORPUS
    ),
    start=(2026, 1, 1),
    tags=["golden"],
    params={
        "overrides": Param(
            {},
            type="object",
            description='Values that replace params.yaml\'s `golden` keys, e.g. {"seeds": 200}.',
            properties=OVERRIDES,
            additionalProperties=False,
        )
    },
) as dag:

    def golden_params(params):
        from pipelines.golden.params import load_golden_params

        return load_golden_params(ragwatch_settings(), **params["overrides"])

    @task
    def plan(params=None, dag_run=None) -> list[list[int]]:
        """The generation batches (job ranges): what the next task maps over."""
        from pipelines.golden import steps

        planned = steps.plan_golden(
            ragwatch_settings(), golden_params(params), logical_date=dag_run.run_after.date()
        )
        return [list(batch) for batch in planned.batches]

    @task(pool=LLM_POOL)
    def generate(batch: list, params=None) -> dict:
        from pipelines.golden import steps

        return steps.generate_golden_batch(
            ragwatch_settings(), golden_params(params).name, *batch
        ).model_dump(mode="json")

    @task(pool=LLM_POOL)
    def filter_candidates(_generated: list, params=None) -> dict:
        from pipelines.golden import steps

        return steps.filter_golden(ragwatch_settings(), golden_params(params)).model_dump(
            mode="json"
        )

    @task
    def split(_filtered: dict, params=None) -> dict:
        from pipelines.golden import steps

        return steps.split_golden(ragwatch_settings(), golden_params(params)).model_dump(
            mode="json"
        )

    @task
    def validate(staged: dict) -> dict:
        from pipelines.core.validation import ValidationFailed
        from pipelines.golden import steps

        with fail_now_on(ValidationFailed):
            return steps.validate_golden(ragwatch_settings(), staged["name"]).model_dump(
                mode="json"
            )

    @task(pool=DVC_POOL, outlets=[GOLDEN_SET])
    def release(staged: dict) -> dict:
        from pipelines.golden import steps

        return steps.release_golden(ragwatch_settings(), staged["name"]).model_dump(mode="json")

    staged = split(filter_candidates(generate.expand(batch=plan())))
    validate(staged) >> release(staged)
