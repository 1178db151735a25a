"""An eval run's working folder and the steps both suites share: prepare -> judge batches ->
finalize.

Steps of one run hand each other the folder; Airflow's XCom carries only its path and counts. The
prepare step writes the run's metadata (run.json) and its input rows (the offline target's
responses, the online eval's selected traces) and says which ranges of rows the judge batches take;
each judge batch writes its own score file, so a failed batch is retried alone and a rerun replaces
its file; finalize reads back one score file per batch recorded in run.json, and fails naming any
that is missing (a part lost, or written where this worker cannot see it) rather than gate fewer
pairs. `run_steps` runs them in order in one process.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pipelines.core.files import atomic_write_text, read_jsonl
from pipelines.core.handoff import batch_label, check_parts
from pipelines.core.native_heap import bound_native_heap, return_freed_memory
from pipelines.core.records import GoldenItem, Score
from pipelines.core.workspace import RunPaths
from pipelines.evaluation.results.run import RunBudget, RunHeader
from pipelines.evaluation.runs.params import EvalParams, OnlineParams


class RunMeta(RunHeader):
    """run.json: what a run evaluates, on what, with which parameters."""

    target_failures: int = 0
    generator_model: str | None = None
    judge_model: str | None = None
    params: EvalParams | OnlineParams | None = None
    """The run's parameters (offline or online)."""
    context_depth: int | None = None
    """Chunks the generator was given (offline): the k at which precision@k is "relevant chunks
    given / given" for an item with that many gold chunks; recorded in the run's params."""
    subset: dict | None = None
    """How a `limit` subset was drawn (prepare.Subset: per question type, drawn and available);
    None: all items."""
    selection: dict | None = None
    """Online: how the day's budget was spent (online_selection.BudgetCounts: the day's traces,
    judged and noise traces per stratum)."""
    batches: list[tuple[int, int]] | None = None
    """The row ranges prepare planned for the judge batches: finalize checks one score file per
    batch is there (None: a run prepared before they were recorded, read as it is)."""
    budget: RunBudget | None = None
    """How RAGWATCH_LLM_BUDGET_TOKENS was divided among the judge batches (runs/budget.py); None: no
    cap."""


class PreparedRun(BaseModel):
    """What the prepare step hands the judge batches."""

    run_id: str
    run_dir: Path
    items: int
    target_failures: int = 0
    batches: list[tuple[int, int]]
    """Row ranges the judge batches map over."""


class JudgedBatch(BaseModel):
    batch: tuple[int, int]
    scores: int
    failed: int
    judge: dict[str, Any]
    """The judge's counters for this batch (requests, tokens, failures, cache hits)."""
    generator: dict[str, Any] | None = None
    """The generator's, where the batch had it answer (the online noise arms)."""

    @classmethod
    def of(
        cls, batch: tuple[int, int], scores: list, judge: Any, generator: Any = None
    ) -> JudgedBatch:
        """The result of the batch of rows `batch`: its scores counted, its LLM clients'
        counters."""
        return cls(
            batch=batch,
            scores=len(scores),
            failed=sum(s.status == "failed" for s in scores),
            judge=judge.counters.summary(),
            generator=None if generator is None else generator.counters.summary(),
        )


RETRIEVAL_TOOLS_PART = "retrieval-tools"
"""The score file the offline prepare step writes itself (retrieval metrics and tool calls, no
judge)."""


def judge_part(start: int) -> str:
    """The name of the score (and verdict) file of the judge batch that starts at row `start`."""
    return f"judge-{start:06d}"


def read_rows(path: Path, start: int, end: int) -> list[dict]:
    """Rows [start, end) of a JSON Lines file, read line by line: a batch holds its own rows
    only."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in itertools.islice(fh, start, end)]


JudgeBatch = Callable[[Any, Path, int, int], JudgedBatch]


BATCHES_IN_FLIGHT = 2
"""Judge batches run at once in one process (the CLI, the benchmarks): one batch at a time leaves
the model servers idle on each batch's tail, two keep them busy (`bench online`: ≥ 90 % of the
ideal) at about half the memory of four, where every batch thread holds its inputs and an embedding
pass. The DAGs run one batch per task process, as many at once as the `ragwatch_llm` pool has
slots."""


def run_steps(
    settings,
    prepared: PreparedRun,
    judge_batch: JudgeBatch,
    finalize: Callable[[Any, Path], Any],
    progress: Callable[[int, int], None] | None = None,
    *,
    in_flight: int = BATCHES_IN_FLIGHT,
):
    """Every judge batch of a prepared run, `in_flight` at a time (threads, each with its own event
    loop), then finalize: the DAG's mapped tasks in one process. The first batch that fails fails
    the run."""
    # Threads that each allocate large buffers would otherwise keep a heap of their own
    # (native_heap.py).
    bound_native_heap()
    return_freed_memory()  # what prepare read (the day's selection) is not held through the batches
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, in_flight)) as pool:
        futures = [
            pool.submit(judge_batch, settings, prepared.run_dir, start, end)
            for start, end in prepared.batches
        ]
        for future in as_completed(futures):
            future.result()
            return_freed_memory()  # a finished batch's buffers, before the next one starts
            done += 1
            if progress:
                progress(done, len(prepared.batches))
    return finalize(settings, prepared.run_dir)


def write_meta(run: RunPaths, meta: RunMeta) -> None:
    atomic_write_text(run.meta, meta.model_dump_json(indent=1))


def read_meta(run: RunPaths) -> RunMeta:
    return RunMeta.model_validate_json(run.meta.read_text())


def load_scores(run: RunPaths) -> list[Score]:
    return [Score.model_validate(row) for path in run.score_files for row in read_jsonl(path)]


def load_planned_scores(
    run: RunPaths, meta: RunMeta, *, prepared: tuple[str, ...] = ()
) -> list[Score]:
    """The scores of every planned judge batch and of the parts prepare wrote (`prepared`, e.g. the
    offline retrieval and tool scores), after checking they are all there and nothing else is: a
    lost score file fails finalize naming its batch, never shrinks the gate's pairs."""
    if meta.batches is None:
        return load_scores(run)
    planned = checked_parts(
        "scores",
        run.scores,
        run.score_files,
        meta.batches,
        prepared,
        suite=meta.suite,
        run_id=meta.run_id,
    )
    return [Score.model_validate(row) for path in planned for row in read_jsonl(path)]


def checked_parts(
    kind: str,
    path: Callable[[str], Path],
    found: list[Path],
    batches: list[tuple[int, int]],
    prepared: tuple[str, ...],
    *,
    suite: str,
    run_id: str,
) -> dict[Path, str]:
    """The `kind` files (scores, usage) of every planned judge batch and `prepared` part, each with
    what writes it, after checking that `found` holds them all and nothing else."""
    planned = {path(judge_part(batch[0])): batch_label(i, batch) for i, batch in enumerate(batches)}
    planned |= {path(part): f"the prepare step's {part} {kind}" for part in prepared}
    check_parts(
        f"{suite} eval {run_id}: {'score' if kind == 'scores' else kind} files",
        planned,
        found,
        rerun=f"rerun the {suite}_eval `judge` task (clear that map index in the Airflow UI; a missing "
        f"prepare part: clear `prepare` and its downstream tasks)",
    )
    return planned


def load_planned_retests(run: RunPaths, meta: RunMeta) -> tuple[list[Score], str | None]:
    """The retest rows of every planned judge batch (metrics/judge_retest.py), and a note naming the
    batches whose retest file is not there (a batch judged before retests were written: its items
    were retested by none); the judge-noise statistics then rest on fewer pairs and say so, while
    the scores are checked strictly."""
    if meta.batches is None:
        return [
            Score.model_validate(row) for path in run.retest_files for row in read_jsonl(path)
        ], None
    planned = {
        run.retests(judge_part(batch[0])): batch_label(i, batch)
        for i, batch in enumerate(meta.batches)
    }
    missing = [label for path, label in planned.items() if not path.exists()]
    note = (
        f"no retest file from {len(missing)} of the {len(planned)} batches ({'; '.join(missing)})"
        if missing
        else None
    )
    return [
        Score.model_validate(row) for path in planned if path.exists() for row in read_jsonl(path)
    ], note


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
