"""What a run cost the model servers, per stage and metric: each step records its own, finalize adds
them up.

Every step that calls a model (the offline prepare's target, each judge batch) writes the usage rows
of its LLM clients (`pipelines.models.usage`: requests sent, cache hits, prompt and completion
tokens, LLM-seconds) to `usage-<part>.json` in the run folder before its score file, so a batch
whose scores are there has its usage there too. Finalize reads the planned parts (a missing one
fails it naming the batch, as for the scores), sums them into a `RunCost`, which the run record, the
summary, the report ("Cost of this run") and the Prometheus gauges (`rag_eval_llm_*`) show. Requests
are what the servers saw: a rerun served from the cache records 0 requests and as many cache hits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pipelines.core.files import atomic_write_text
from pipelines.core.workspace import RunPaths
from pipelines.evaluation.results.run import RunCost
from pipelines.evaluation.runs.folder import checked_parts
from pipelines.models.llm import LLM
from pipelines.models.usage import UsageRow, summed

PREPARE_PART = "prepare"
"""The usage part of the offline prepare step (the system under test's generator)."""


def write_usage(run: RunPaths, part: str, llms: Iterable[LLM | None]) -> list[UsageRow]:
    """The usage rows of `llms` (None skipped), written as the part's usage file."""
    rows = summed(row for llm in llms if llm is not None for row in llm.usage_rows())
    atomic_write_text(run.usage(part), json.dumps([row.model_dump() for row in rows], indent=1))
    return rows


def read_usage(path) -> list[UsageRow]:
    return [UsageRow.model_validate(row) for row in json.loads(path.read_text())]


def run_cost(
    run: RunPaths,
    batches: list[tuple[int, int]] | None,
    *,
    items: int,
    suite: str,
    run_id: str,
    prepared: tuple[str, ...] = (),
) -> RunCost:
    """The run's usage: one file per planned judge batch and per `prepared` part, checked like the
    score files."""
    if batches is None:  # a run prepared before batches were recorded: what is there
        return RunCost(
            items=items, rows=summed(row for path in run.usage_files for row in read_usage(path))
        )
    planned = checked_parts(
        "usage", run.usage, run.usage_files, batches, prepared, suite=suite, run_id=run_id
    )
    return RunCost(items=items, rows=summed(row for path in planned for row in read_usage(path)))
