"""The daily online eval: reference-free scores of a budget of one day's sampled (anonymized)
traces.

prepare (choose at most `max_traces` of the day's sample, stratified by app/language, and write them
to the run folder: online_selection.py) -> judge batches (mapped tasks in the LLM pool; each writes
its own score file) -> finalize (aggregates with CIs, results DB, report, review inbox) -> push: the
offline eval's shape, through the same run folder and steps (folder.py, finalize.py).
`run_online_eval` runs them in one process.

Faithfulness and answer relevancy of the production answers through the ragas judge, online noise
sensitivity (on the budget's smaller noise share), and tool-call validity against each tool's JSON
schema. Every score row carries its trace id; strata are app/language. The lowest-scoring traces go
to the review inbox as golden candidates.

Noise sensitivity needs a system to answer again, and ΔF compares like with like only when both arms
come from one system with one prompt and settings. With `RAGWATCH_ONLINE_TARGET_URL` set, the
production service answers both arms from the trace's contexts (the HTTP contract's contexts
request): metric `noise_delta_f`, production's own. Without it, the reference generator answers both
arms with the reference RAG prompt: metric `noise_delta_f_reference`, the reference generator's
fragility on production's contexts — not production's. Either way the trace's logged answer is not
an arm (another system wrote it), and `noise_delta_f_control` (the clean arm answered twice) is
reported beside ΔF.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
from collections.abc import Callable
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.core.batching import batch_ranges
from pipelines.core.files import atomic_write_text, read_jsonl, reset_dir, write_jsonl
from pipelines.core.handoff import IncompleteHandoff
from pipelines.core.records import Score, ToolCall
from pipelines.core.settings import Settings
from pipelines.core.workspace import RunPaths, Workspace
from pipelines.evaluation.coverage.daily import measure_day_coverage, read_coverage
from pipelines.evaluation.metrics.judge import JudgeInput, Outcome, judge_items
from pipelines.evaluation.metrics.judge_retest import build_retest_judge, retest_items
from pipelines.evaluation.metrics.noise import (
    CONTROL_METRIC,
    METRIC,
    REFERENCE_METRIC,
    NoisePool,
    noise_delta_f,
)
from pipelines.evaluation.metrics.tools import tool_call_validity
from pipelines.evaluation.online_selection import (
    HalfWidthTarget,
    read_judged,
    select_budget,
    stratum_of,
)
from pipelines.evaluation.outputs.inbox import queue_candidates, queue_uncovered_topics
from pipelines.evaluation.outputs.push import push_run
from pipelines.evaluation.outputs.report import ItemView
from pipelines.evaluation.outputs.summary import RunSummary
from pipelines.evaluation.results.coverage import GoldenCoverage
from pipelines.evaluation.runs.budget import (
    batch_budget,
    budget_skips,
    divide_budget,
    skipped_for_budget,
)
from pipelines.evaluation.runs.cost import run_cost, write_usage
from pipelines.evaluation.runs.finalize import publish_run
from pipelines.evaluation.runs.folder import (
    JudgedBatch,
    PreparedRun,
    RunMeta,
    judge_part,
    load_planned_scores,
    read_meta,
    read_rows,
    run_and_close,
    run_steps,
    write_meta,
)
from pipelines.evaluation.runs.params import OnlineParams
from pipelines.evaluation.runs.target import HTTPTarget, ReferenceRAG, generator_label
from pipelines.models.backends import build_llm, check_models_differ
from pipelines.models.budget import REFUSAL, BudgetSpent
from pipelines.models.embeddings import build_embedder
from pipelines.models.usage import scope, scoped
from pipelines.stores.corpus import open_corpus_index
from pipelines.stores.results import EvalRun, ResultsStore, run_id

log = logging.getLogger(__name__)
SUITE = "online"
TARGET = "production"
METRICS = ["faithfulness", "answer_relevancy"]
SPREAD_RUNS = 3
"""Past online runs whose faithfulness spread sizes a target half-width."""


def _dataset_version(workspace: Workspace, day: date) -> str:
    md5 = workspace.traces_version(
        day
    )  # StaleVersion when the .dvc file names another sample of the day
    return f"traces/dt={day}" + (f"@{md5[:12]}" if md5 else "")


def _noise_arms(settings: Settings, generator) -> tuple[str, str]:
    """(who answers the noise arms, the ΔF metric): production when its URL is set, else the
    reference generator."""
    if settings.online_target_url:
        return f"{TARGET} ({settings.online_target_url})", METRIC
    return generator_label(generator), REFERENCE_METRIC


def prepare_online_eval(settings: Settings, day: date, params: OnlineParams) -> PreparedRun:
    """Choose the day's budget of traces, write them and run.json (with the selection's counts) to
    the run folder."""
    workspace = Workspace.from_settings(settings)
    dataset_version = _dataset_version(workspace, day)
    if not workspace.has_traces(day):
        raise FileNotFoundError(
            f"no published sample for {day}: run trace_sampling for that day first"
        )
    parts = workspace.traces_partition(day).parts
    target = (
        past_spread(settings, day, params.target_half_width) if params.target_half_width else None
    )
    selection = select_budget(
        parts,
        max_traces=params.max_traces,
        min_per_stratum=params.min_per_stratum,
        noise_share=params.noise_share,
        target=target,
    )
    run = workspace.run_folder(SUITE, day, TARGET)
    reset_dir(run.root)
    judged = write_jsonl(
        run.traces,
        (
            {**row, "noise": row["trace_id"] in selection.noise}
            for row in read_judged(parts, selection.judged)
        ),
    )
    rid, (arms_by, _) = (
        run_id(SUITE, day, TARGET),
        _noise_arms(settings, build_llm(settings, "generator")),
    )
    counts = selection.counts
    # A day with nothing to judge still has one (empty) batch, so the mapped judge task and finalize
    # run.
    batches = batch_ranges(judged, params.batch_size) or [(0, 0)]
    write_meta(
        run,
        RunMeta(
            run_id=rid,
            suite=SUITE,
            logical_date=day,
            target=TARGET,
            dataset_version=dataset_version,
            items=judged,
            generator_model=arms_by,
            judge_model=build_llm(settings, "judge").model,
            params=params,
            selection=counts.model_dump(mode="json"),
            batches=batches,
            budget=divide_budget(
                settings.llm_budget_tokens, prepare_tokens=0, batches=len(batches)
            ),
        ),
    )
    log.info(
        "online eval %s: judging %d of the day's %d traces (%d with noise) in %d strata",
        rid,
        judged,
        counts.day_traces,
        counts.noise,
        len(counts.strata),
    )
    return PreparedRun(run_id=rid, run_dir=run.root, items=judged, batches=batches)


def past_spread(
    settings: Settings, day: date, half_width: float, runs: int = SPREAD_RUNS
) -> HalfWidthTarget | None:
    """Faithfulness' spread per stratum over the last `runs` online runs before `day`, for a target
    half-width; None (the budget alone, logged) when they scored too little to say."""
    values: dict[str, list[float]] = {}
    store = ResultsStore.from_settings(settings)
    try:
        for past in store.runs(SUITE, runs, target=TARGET, before=day) if store.exists() else []:
            for score in store.scores(past.run_id):  # one run's scores at a time
                if score.metric == "faithfulness" and score.status == "ok":
                    values.setdefault(score.stratum, []).append(score.value)
    finally:
        store.dispose()
    pooled = [v for vs in values.values() for v in vs]
    if len(pooled) < 2:
        log.info(
            "online eval %s: no faithfulness spread in the last %d runs to size ±%g by: the budget alone",
            day,
            runs,
            half_width,
        )
        return None
    spread = {s: statistics.stdev(vs) for s, vs in values.items() if len(vs) >= 2}
    return HalfWidthTarget(half_width=half_width, spread=spread, pooled=statistics.stdev(pooled))


def judge_input(row: dict[str, Any]) -> JudgeInput:
    """What the judge sees of one judged trace (traces.jsonl)."""
    return JudgeInput(
        item_id=row["trace_id"],
        stratum=stratum_of(row["app"], row["language"]),
        question=row["question"],
        answer=row["answer"],
        contexts=[c["text"] for c in row["contexts"]],
        context_ids=[c["chunk_id"] for c in row["contexts"]],
    )


def judge_online_batch(settings: Settings, run_dir: Path, start: int, end: int) -> JudgedBatch:
    """Faithfulness, answer relevancy and tool-call validity of traces[start:end], noise ΔF of its
    noise share; one score file. With the LLM cache on, a rerun of the batch sends no request."""
    run = RunPaths(run_dir)
    meta = read_meta(run)
    params: OnlineParams = meta.params
    rows = read_rows(run.traces, start, end)
    labels = dict(run_id=meta.run_id, suite=SUITE, dataset_version=meta.dataset_version)
    inputs = [judge_input(row) for row in rows]
    scores: list[Score] = []
    for row, item in zip(rows, inputs):
        calls = [
            ToolCall(name=c["name"], arguments=json.loads(c["arguments"] or "{}"))
            for c in row["tool_calls"]
        ]
        scores.append(
            tool_call_validity(calls).score(
                **labels, item_id=item.item_id, stratum=item.stratum, metric="tool_call_validity"
            )
        )
    noisy = [item for row, item in zip(rows, inputs) if row["noise"]]
    check_models_differ(settings, log)
    judge, generator, embedder = (
        build_llm(settings, "judge"),
        build_llm(settings, "generator"),
        build_embedder(settings),
    )
    judge.budget = generator.budget = batch_budget(
        meta.budget
    )  # one share for the batch, whoever spends it
    retest_judge = build_retest_judge(settings, judge.budget)
    with open_corpus_index(settings) as index:
        pool = NoisePool.from_index(index, noisy) if noisy else None
    arms_by, noise_metric = _noise_arms(settings, generator)
    if settings.online_target_url:
        system = HTTPTarget(settings.online_target_url, name=TARGET)
    else:
        system = ReferenceRAG(index=None, llm=generator, name="generator")
    language = {i.question: i.stratum.rsplit("/", 1)[-1] for i in noisy}

    async def answer(question: str, contexts: list[str], sample: int) -> str | None:
        return await system.answer_with(
            question, language.get(question, "en"), contexts, sample=sample
        )

    async def clean_answer(question: str, contexts: list[str]) -> str | BudgetSpent | None:
        try:
            return await answer(question, contexts, 0)
        except (
            BudgetSpent
        ) as spent:  # this trace's arms are skipped for the budget; the others go on
            return spent

    async def noise() -> list[Score]:
        if not noisy:
            return []
        # The clean arm is answered again by the system that answers the noisy one (see the module
        # docstring).
        with scope(stage="noise_clean"):
            answers = await asyncio.gather(*(clean_answer(i.question, i.contexts) for i in noisy))
        arms = [
            i.model_copy(update={"answer": a})
            for i, a in zip(noisy, answers)
            if isinstance(a, str) and a
        ]
        lost = [(i, a) for i, a in zip(noisy, answers) if not (isinstance(a, str) and a)]
        no_answer = f"{arms_by} gave no answer from the trace's clean contexts"
        failed = [
            Outcome.failed(REFUSAL if isinstance(a, BudgetSpent) else no_answer).score(
                **labels, item_id=i.item_id, stratum=i.stratum, metric=m, judge_model=judge.model
            )
            for i, a in lost
            for m in (noise_metric, CONTROL_METRIC)
        ]
        results = await noise_delta_f(
            arms,
            pool,
            lambda q, ctx: answer(q, ctx, 1),
            judge,
            **labels,
            mode=params.noise_mode,
            k=params.noise_k,
            metric=noise_metric,
            control=True,
        )
        return failed + [s for n in results for s in n.scores]

    async def judged() -> tuple[list[Score], list[Score]]:
        # The noise arms do not wait for the clean scores (they judge their own answers), nor does
        # the retest (its own client): all keep the servers busy.
        clean, noisy_scores, retests = await asyncio.gather(
            scoped(judge_items(inputs, METRICS, judge, embedder, **labels), stage="judge"),
            noise(),
            retest_items(
                inputs, METRICS, retest_judge, embedder, share=params.judge_retest_share, **labels
            ),
        )
        return clean + noisy_scores, retests

    judged_scores, retests = run_and_close(judged(), judge, generator, retest_judge)
    scores = skipped_for_budget(scores + judged_scores)
    # Before the scores: a batch with scores has its usage and its retests.
    write_usage(run, judge_part(start), (judge, retest_judge, generator))
    write_jsonl(run.retests(judge_part(start)), (s.model_dump() for s in retests))
    write_jsonl(run.scores(judge_part(start)), (s.model_dump() for s in scores))
    judge.counters.log(log, f"online judge batch {start}-{end}")
    generator.counters.log(log, f"online generator (noise) batch {start}-{end}")
    return JudgedBatch.of((start, end), scores, judge, generator)


def measure_online_coverage(settings: Settings, run_dir: Path) -> GoldenCoverage:
    """Coverage of the run's day by the released golden set, written to the run folder's
    coverage.json."""
    run = RunPaths(run_dir)
    meta = read_meta(run)
    parts = Workspace.from_settings(settings).traces_partition(meta.logical_date).parts
    coverage = measure_day_coverage(settings, parts)
    atomic_write_text(run.coverage, coverage.model_dump_json(indent=1))
    day = coverage.day
    if coverage.status == "ok" and day is not None and day.ratio is not None:
        log.info(
            "golden coverage of %s: %.3f [%.3f, %.3f] of %d distinct questions (%d traces), %d uncovered topics",
            meta.logical_date,
            day.ratio,
            day.ci_low,
            day.ci_high,
            day.questions,
            day.traces,
            len(coverage.clusters),
        )
    else:
        log.info("golden coverage of %s: not measured: %s", meta.logical_date, coverage.reason)
    return coverage


def finalize_online_eval(settings: Settings, run_dir: Path) -> RunSummary:
    """Aggregates with CIs, the results DB, the report (with the budget per stratum and the golden
    coverage), the review inbox (the lowest-scoring traces, the largest uncovered topics)."""
    run_paths = RunPaths(run_dir)
    meta = read_meta(run_paths)
    scores = load_planned_scores(run_paths, meta)
    traces = read_jsonl(run_paths.traces)  # the budget's rows: bounded by max_traces, not the day
    views = {
        t["trace_id"]: ItemView(
            item_id=t["trace_id"],
            question=t["question"],
            answer=t["answer"],
            contexts=[f"{c['chunk_id']}: {c['text']}" for c in t["contexts"]],
        )
        for t in traces
    }
    run = EvalRun(
        run_id=meta.run_id,
        suite=SUITE,
        logical_date=meta.logical_date,
        target=TARGET,
        dataset_version=meta.dataset_version,
        judge_model=meta.judge_model,
        generator_model=meta.generator_model,
        params={**meta.params.model_dump(mode="json"), "selection": meta.selection},
        finished_at=datetime.now(timezone.utc),
    )
    coverage = read_coverage(run_paths)
    if coverage is None:
        raise IncompleteHandoff(
            f"the golden coverage of {meta.logical_date} is missing ({run_paths.coverage}): run the "
            "online eval's coverage task (`measure_online_coverage`) for this run, then finalize"
        )
    run.params["coverage"] = coverage.model_dump(mode="json")
    store = ResultsStore.from_settings(settings)
    store.create()
    try:
        cost = run_cost(run_paths, meta.batches, items=meta.items, suite=SUITE, run_id=meta.run_id)
        spent = {"budget": meta.budget, "skipped_for_budget": budget_skips(scores)}
        run.cost = cost.model_copy(update=spent).model_dump()
        summary = publish_run(settings, store, run, scores, views, run_paths, meta)
    finally:
        store.dispose()
    workspace = Workspace.from_settings(settings)
    if (
        settings.otlp_endpoint
    ):  # each score back on the span it judged, where the team looks at its traces
        from pipelines.evaluation.outputs.evaluation_events import (
            emit_evaluation_events,
            evaluated_operations,
        )

        day = workspace.traces_partition(meta.logical_date)
        operations = evaluated_operations(day.parts, {t["trace_id"] for t in traces})
        emit_evaluation_events(settings.otlp_endpoint, scores, operations)
    queued, _ = queue_candidates(workspace, run.logical_date, traces, scores)
    if coverage.status == "ok":
        queue_uncovered_topics(
            workspace, run.logical_date, coverage.clusters, settings.coverage_inbox_topics
        )
    return summary.model_copy(update={"review_candidates": queued})


def run_online_eval(
    settings: Settings,
    day: date,
    params: OnlineParams,
    *,
    push: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> RunSummary:
    """Every step of the online eval in one process (the CLI, `ragwatch bench online`): prepare, the
    golden coverage, each judge batch, finalize, and the push unless `push` is False."""
    prepared = prepare_online_eval(settings, day, params)
    measure_online_coverage(settings, prepared.run_dir)
    summary = run_steps(settings, prepared, judge_online_batch, finalize_online_eval, progress)
    if push:
        push_run(settings, summary)
    return summary
