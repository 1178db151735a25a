"""What the ragwatch DAG files share, so each file keeps only its own wiring: the DAG header (and
the daily DAGs' schedule), the eval's judge batches mapped in the LLM pool, and the push of an
eval's summary.

Task bodies import `pipelines` themselves (inside the task, not here), so a DAG file that uses these
parts still parses without the heavy imports (tests/unit/test_architecture.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, task
from airflow.sdk.exceptions import AirflowFailException

from ragwatch_airflow.settings import DEFAULT_ARGS, LLM_POOL, ragwatch_settings

JudgeBatch = Callable[[Any, Path, int, int], Any]
"""A judge batch step: (settings, run folder, first row, end row) -> its JudgedBatch
(runs/judge_batch.py, runs/online.py)."""


def ragwatch_dag(
    dag_id: str,
    *,
    description: str,
    schedule: Any,
    start: tuple[int, int, int],
    tags: list[str],
    params: dict | None = None,
    max_active_runs: int = 1,
) -> DAG:
    """A ragwatch DAG: no catch-up (past intervals are backfilled on purpose, from the UI or the
    API), the retries every ragwatch task has (settings.DEFAULT_ARGS), tagged "ragwatch" and `tags`;
    `start` is a UTC date."""
    return DAG(
        dag_id=dag_id,
        description=description,
        schedule=schedule,
        start_date=datetime(*start, tzinfo=UTC),
        catchup=False,
        max_active_runs=max_active_runs,
        default_args=DEFAULT_ARGS,
        params=params or {},
        tags=["ragwatch", *tags],
    )


def daily_dag(dag_id: str, *, description: str, tags: list[str], params: dict) -> DAG:
    """A ragwatch DAG run at midnight UTC over the day before (its data interval), up to four days
    at once. trace_sampling and online_eval share it: the online eval of a day waits for that day's
    sample, so the two schedules must stay one."""
    return ragwatch_dag(
        dag_id,
        description=description,
        schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
        start=(2026, 1, 1),
        tags=tags,
        params=params,
        max_active_runs=4,
    )


def optional_param(kind: str, *, description: str, **schema: Any) -> Param:
    """A run parameter that may be left null: the task then uses the default its description names
    (a setting, the latest release), worked out where the task runs, so every default has one
    source."""
    return Param(None, type=["null", kind], description=description, **schema)


@contextmanager
def fail_now_on(*verdicts: type[Exception]) -> Iterator[None]:
    """A failure that is a verdict (a broken expectation, a failed gate) fails the task at once: a
    retry would reach the same verdict. Anything else, a lost worker included, is retried like every
    ragwatch task."""
    try:
        yield
    except verdicts as exc:
        raise AirflowFailException(str(exc)) from exc


def judge_batches(prepared: Any, judge_batch: JudgeBatch) -> Any:
    """Map `judge_batch` over the row ranges the prepare step planned (its `batches`), one task each
    in the LLM pool: a failed batch is retried alone, and a model server sees at most the pool's
    slots at once."""

    @task
    def batches(prepared: dict) -> list[dict]:
        return [
            {"run_dir": prepared["run_dir"], "start": start, "end": end}
            for start, end in prepared["batches"]
        ]

    @task(pool=LLM_POOL)
    def judge(batch: dict) -> dict:
        judged = judge_batch(
            ragwatch_settings(), Path(batch["run_dir"]), batch["start"], batch["end"]
        )
        return judged.model_dump(mode="json")

    return judge.expand(batch=batches(prepared))


def push_summary(summary: Any, outlet: Asset) -> Any:
    """Push the finished run's summary to the Pushgateway (and its textfile), then mark `outlet`
    updated."""

    @task(outlets=[outlet])
    def push(summary: dict) -> dict:
        from pipelines.evaluation.outputs.push import push_run
        from pipelines.evaluation.outputs.summary import RunSummary

        return push_run(ragwatch_settings(), RunSummary.model_validate(summary)).model_dump(
            mode="json"
        )

    return push(summary)
