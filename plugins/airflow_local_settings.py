"""Airflow's local settings hook (every Airflow process imports `airflow_local_settings` from the
plugins folder at start): the processes that fork task processes import ragwatch's task modules
once, before they fork.

Airflow runs each task in a process forked from the LocalExecutor's workers (themselves forked from
the scheduler) or from a Celery worker, and the task then imports what its callable needs: ragas,
Great Expectations, DVC, Qdrant's client, pyarrow. That is 2-10 s of CPU for every task instance (an
eval task, ~8 s), paid again by every mapped batch. Imported here, in the process that forks, every
task inherits the modules already loaded: the scheduler grows by ~350 MB, shared copy-on-write with
its forks (Airflow freezes the garbage collector before forking them).

Only the scheduler (when it runs tasks itself: LocalExecutor) and Celery workers preload; the
api-server, dag-processor, triggerer and the CLI (`airflow dags test` included) never do.
RAGWATCH_AIRFLOW_PRELOAD=false turns it off. A module that fails to import here is logged and left
to the task, which then fails with the real error.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time

__all__: list[str] = []  # no cluster policy: Airflow treats public names here as policies

TASK_MODULES = (
    "pipelines.traces.steps",
    "pipelines.golden.steps",
    "pipelines.evaluation.runs.prepare",
    "pipelines.evaluation.runs.judge_batch",
    "pipelines.evaluation.runs.finalize",
    "pipelines.evaluation.runs.online",
    "pipelines.evaluation.outputs.push",
    "pipelines.evaluation.runs.offline",
)
"""What the DAGs' task callables import (dags/*.py): tests/unit/test_architecture.py fails on one
missing here."""


def _task_forking_role(argv: list[str]) -> str | None:
    """Which process this Airflow command is when it forks task processes (worker, scheduler), else
    None."""
    command = [a for a in argv[1:] if not a.startswith("-")][:2]
    if command == ["celery", "worker"]:
        return "worker"
    executor = os.environ.get("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    return "scheduler" if command[:1] == ["scheduler"] and "LocalExecutor" in executor else None


def _preload() -> None:
    if os.environ.get("RAGWATCH_AIRFLOW_PRELOAD", "true").strip().lower() in (
        "false",
        "0",
        "no",
        "off",
    ):
        return
    role = _task_forking_role(sys.argv)
    if role is None:
        return
    log = logging.getLogger("ragwatch.preload")
    began = time.monotonic()
    for name in TASK_MODULES:
        try:
            importlib.import_module(name)
        except Exception as error:  # the task imports it again and fails with the whole traceback
            log.warning(
                "ragwatch could not preload %s (%s: %s); its tasks will import it themselves",
                name,
                type(error).__name__,
                error,
            )
    log.warning(
        "ragwatch preloaded its task modules in %.1f s for the task processes this %s forks",
        time.monotonic() - began,
        role,
    )


_preload()
