"""An eval run's working folder: its metadata, the target's responses and the scores, as files.

Steps of one run (prepare, judge batches, finalize) hand each other the folder; Airflow's XCom
carries only its path and counts.
"""

from __future__ import annotations

import asyncio
from datetime import date

from pydantic import BaseModel

from pipelines.evaluation.params import EvalParams
from pipelines.files import atomic_write_text, read_jsonl
from pipelines.records import GoldenItem, Score
from pipelines.workspace import RunPaths


class RunHeader(BaseModel):
    """What names a run and what it evaluated: shared by its metadata and its summary."""

    run_id: str
    suite: str
    logical_date: date
    target: str
    dataset_version: str
    items: int


class RunMeta(RunHeader):
    """run.json: what a run evaluates, on what, with which parameters."""

    target_failures: int = 0
    generator_model: str | None = None
    judge_model: str | None = None
    params: EvalParams | None = None
    """The offline eval's parameters; None online."""
    context_depth: int | None = None
    """Chunks the generator was given (offline): the k at which precision@k is "relevant chunks given / given"
    for an item with that many gold chunks; recorded in the run's params."""
    subset: dict | None = None
    """How a `limit` subset was drawn (prepare.Subset: per question type, drawn and available); None: all items."""


def write_meta(run: RunPaths, meta: RunMeta) -> None:
    atomic_write_text(run.meta, meta.model_dump_json(indent=1))


def read_meta(run: RunPaths) -> RunMeta:
    return RunMeta.model_validate_json(run.meta.read_text())


def load_scores(run: RunPaths) -> list[Score]:
    return [Score.model_validate(row) for path in run.score_files for row in read_jsonl(path)]


def stratum_of(item: GoldenItem) -> str:
    """An offline item's finest stratum: question type and language."""
    return f"{item.qtype}/{item.language}"


def run_and_close(coroutine, *llms):
    """Run a coroutine, then close the LLMs' HTTP clients on the same event loop."""

    async def main():
        try:
            return await coroutine
        finally:
            for llm in llms:
                if llm is not None:
                    await llm.aclose()

    return asyncio.run(main())
