"""Daily: score a budget of yesterday's sampled real (anonymized) traffic without ground truth, then push.

Waits for trace_sampling to promote the same day's partition, so a backfill of past days runs in
order. The offline eval's shape: prepare (choose the budget, write the inputs) -> judge batches mapped
in the LLM pool (a failed batch is retried alone), and beside them the golden set's coverage of the day's
traffic -> finalize -> push. Every score row carries its
trace id. Task bodies import `pipelines` themselves, so parsing this file stays fast.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, task
from ragwatch_airflow.settings import DEFAULT_ARGS, LLM_POOL, ragwatch_settings

ONLINE_SCORES = Asset(name="ragwatch_online_scores", uri="ragwatch://results/online")

with DAG(
    dag_id="online_eval",
    description="Faithfulness, answer relevancy, online noise ΔF and tool-call validity of a budget of the day's sampled traces.",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=4,
    default_args=DEFAULT_ARGS,
    params={
        "max_traces": Param(None, type=["null", "integer"], minimum=1,
                            description="Traces judged at most, stratified by app and language; default: "
                                        "RAGWATCH_ONLINE_MAX_TRACES (2000)."),
        "noise_share": Param(None, type=["null", "number"], minimum=0, maximum=1,
                             description="Share of the judged traces that also get noise ΔF; default: "
                                         "RAGWATCH_ONLINE_NOISE_SHARE (0.25)."),
        "target_half_width": Param(None, type=["null", "number"], exclusiveMinimum=0, exclusiveMaximum=1,
                                   description="Judge each stratum on as many traces as faithfulness' 95 % interval "
                                               "needs to be about ± this (from the last runs' spread), max_traces "
                                               "still capping; default: RAGWATCH_ONLINE_TARGET_HALF_WIDTH (none)."),
        "noise_mode": Param("hard", enum=["hard", "random"], description="Which irrelevant chunks to inject."),
        "noise_k": Param(2, type="integer", minimum=1, maximum=20, description="Chunks injected per trace."),
    },
    tags=["ragwatch", "eval"],
) as dag:

    @task.sensor(poke_interval=300, timeout=12 * 3600, mode="reschedule")
    def sampled_partition(data_interval_start=None) -> bool:
        from pipelines.workspace import Workspace

        return Workspace.from_settings(ragwatch_settings()).has_traces(data_interval_start.date())

    @task
    def prepare(params=None, data_interval_start=None) -> dict:
        from pipelines.evaluation.runs.online import prepare_online_eval
        from pipelines.evaluation.runs.params import online_params

        settings = ragwatch_settings()
        prepared = prepare_online_eval(settings, data_interval_start.date(), online_params(settings, **params))
        return prepared.model_dump(mode="json")

    @task
    def batches(prepared: dict) -> list[dict]:
        return [{"run_dir": prepared["run_dir"], "start": start, "end": end} for start, end in prepared["batches"]]

    @task(pool=LLM_POOL)
    def judge(batch: dict) -> dict:
        from pathlib import Path

        from pipelines.evaluation.runs.online import judge_online_batch

        return judge_online_batch(ragwatch_settings(), Path(batch["run_dir"]), batch["start"], batch["end"]).model_dump(mode="json")

    @task
    def coverage(prepared: dict) -> dict:
        from pathlib import Path

        from pipelines.evaluation.runs.online import measure_online_coverage

        measured = measure_online_coverage(ragwatch_settings(), Path(prepared["run_dir"]))
        return {"status": measured.status, "reason": measured.reason, "topics": len(measured.clusters)}

    @task
    def finalize(prepared: dict, _judged: list, _covered: dict) -> dict:
        from pathlib import Path

        from pipelines.evaluation.runs.online import finalize_online_eval

        return finalize_online_eval(ragwatch_settings(), Path(prepared["run_dir"])).model_dump(mode="json")

    @task(outlets=[ONLINE_SCORES])
    def push(summary: dict) -> dict:
        from pipelines.evaluation.outputs.push import push_run
        from pipelines.evaluation.outputs.summary import RunSummary

        return push_run(ragwatch_settings(), RunSummary.model_validate(summary)).model_dump(mode="json")

    prepared = prepare()
    sampled_partition() >> prepared
    push(finalize(prepared, judge.expand(batch=batches(prepared)), coverage(prepared)))
