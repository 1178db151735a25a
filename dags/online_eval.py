"""Daily: score a budget of yesterday's sampled real (anonymized) traffic without ground truth, then
push.

Waits for trace_sampling to promote the same day's partition, so a backfill of past days runs in
order. The offline eval's shape: prepare (choose the budget, write the inputs) -> judge batches
mapped in the LLM pool (a failed batch is retried alone), and beside them the golden set's coverage
of the day's traffic -> finalize -> push. Every score row carries its trace id. Task bodies import
`pipelines` themselves, so parsing this file stays fast.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Asset, Param, task
from ragwatch_airflow.dag_parts import daily_dag, judge_batches, optional_param, push_summary
from ragwatch_airflow.intervals import current_interval
from ragwatch_airflow.settings import ragwatch_settings

ONLINE_SCORES = Asset(name="ragwatch_online_scores", uri="ragwatch://results/online")

with daily_dag(
    "online_eval",
    description="Faithfulness, answer relevancy, online noise ΔF and tool-call validity of a budget of the day's sampled traces.",
    tags=["eval"],
    params={
        "max_traces": optional_param(
            "integer",
            minimum=1,
            description="Traces judged at most, stratified by app and language; default: "
            "RAGWATCH_ONLINE_MAX_TRACES (2000).",
        ),
        "noise_share": optional_param(
            "number",
            minimum=0,
            maximum=1,
            description="Share of the judged traces that also get noise ΔF; default: "
            "RAGWATCH_ONLINE_NOISE_SHARE (0.25).",
        ),
        "target_half_width": optional_param(
            "number",
            exclusiveMinimum=0,
            exclusiveMaximum=1,
            description="Judge each stratum on as many traces as faithfulness' 95 % interval "
            "needs to be about ± this (from the last runs' spread), max_traces "
            "still capping; default: RAGWATCH_ONLINE_TARGET_HALF_WIDTH (none).",
        ),
        "noise_mode": Param(
            "hard", enum=["hard", "random"], description="Which irrelevant chunks to inject."
        ),
        "noise_k": Param(
            2, type="integer", minimum=1, maximum=20, description="Chunks injected per trace."
        ),
    },
) as dag:
    # The day's sample usually lands within a minute of this run's start (the two DAGs share a
    # schedule), and a large day takes longer: look again after 15-30 s, then ever less often, every
    # 5 minutes at most.
    @task.sensor(
        poke_interval=30,
        exponential_backoff=True,
        max_wait=timedelta(minutes=5),
        timeout=12 * 3600,
        mode="reschedule",
    )
    def sampled_partition() -> bool:
        from pipelines.core.workspace import Workspace

        # versioned: trace_sampling's `version` task, not its `promote`, publishes the day
        # (docs/explanation/sampling.md)
        return Workspace.from_settings(ragwatch_settings()).has_traces(
            current_interval().start.date(), versioned=True
        )

    @task
    def prepare(params=None) -> dict:
        from pipelines.evaluation.runs.online import prepare_online_eval
        from pipelines.evaluation.runs.params import online_params

        settings = ragwatch_settings()
        prepared = prepare_online_eval(
            settings, current_interval().start.date(), online_params(settings, **params)
        )
        return prepared.model_dump(mode="json")

    def judge_online_batch(
        settings, run_dir, start, end
    ):  # imported when a batch runs: parsing stays light
        from pipelines.evaluation.runs.online import judge_online_batch

        return judge_online_batch(settings, run_dir, start, end)

    @task
    def coverage(prepared: dict) -> dict:
        from pathlib import Path

        from pipelines.evaluation.runs.online import measure_online_coverage

        measured = measure_online_coverage(ragwatch_settings(), Path(prepared["run_dir"]))
        return {
            "status": measured.status,
            "reason": measured.reason,
            "topics": len(measured.clusters),
        }

    @task
    def finalize(prepared: dict, _judged: list, _covered: dict) -> dict:
        from pathlib import Path

        from pipelines.evaluation.runs.online import finalize_online_eval

        return finalize_online_eval(ragwatch_settings(), Path(prepared["run_dir"])).model_dump(
            mode="json"
        )

    prepared = prepare()
    sampled_partition() >> prepared
    push_summary(
        finalize(prepared, judge_batches(prepared, judge_online_batch), coverage(prepared)),
        ONLINE_SCORES,
    )
