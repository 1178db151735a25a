"""The daily online eval: reference-free scores of one day's sampled (anonymized) traces.

Faithfulness and answer relevancy through the ragas judge, online noise sensitivity (the
generator answers again with irrelevant chunks injected; ΔF as offline), and tool-call validity
against each tool's JSON schema. Every score row carries its trace id; strata are app/language.
The lowest-scoring traces go to the review inbox as golden candidates.
"""

from __future__ import annotations

import json
import logging
from datetime import date, datetime, timezone
from typing import Any

import pyarrow.parquet as pq

from pipelines.evaluation.inbox import queue_candidates
from pipelines.evaluation.judge import JudgeInput, judge_items
from pipelines.evaluation.noise import NoisePool, noise_delta_f
from pipelines.evaluation.report import ItemView, render_report, trend_from_store, write_metrics_json, write_report
from pipelines.evaluation.runs import RunMeta, run_and_close, write_meta
from pipelines.evaluation.stats import aggregate
from pipelines.evaluation.summary import RunSummary, run_summary
from pipelines.evaluation.target import ReferenceRAG
from pipelines.evaluation.tools import tool_call_validity
from pipelines.files import write_jsonl
from pipelines.models.embeddings import build_embedder
from pipelines.models.llm import build_llm, check_models_differ
from pipelines.records import Score, ToolCall
from pipelines.settings import Settings
from pipelines.stores.corpus import open_corpus_index
from pipelines.stores.results import EvalRun, ResultsStore, run_id
from pipelines.workspace import Workspace

log = logging.getLogger(__name__)
SUITE = "online"
TARGET = "production"
METRICS = ["faithfulness", "answer_relevancy"]


def read_sampled(workspace: Workspace, day: date) -> list[dict[str, Any]]:
    if not workspace.has_traces(day):
        raise FileNotFoundError(f"no published sample for {day}: run trace_sampling for that day first")
    return pq.read_table(workspace.traces_partition(day).data).to_pylist()


def _dataset_version(workspace: Workspace, day: date) -> str:
    md5 = workspace.dvc_md5(workspace.traces_partition(day).root)
    return f"traces/dt={day}" + (f"@{md5[:12]}" if md5 else "")


def score_online(settings: Settings, day: date, *, noise_mode: str = "hard", noise_k: int = 2) -> RunSummary:
    workspace = Workspace.from_settings(settings)
    traces = read_sampled(workspace, day)
    rid, version = run_id(SUITE, day, TARGET), _dataset_version(workspace, day)
    labels = dict(run_id=rid, suite=SUITE, dataset_version=version)
    inputs = [JudgeInput(item_id=t["trace_id"], stratum=f"{t['app']}/{t['language']}", question=t["question"],
                         answer=t["answer"], contexts=[c["text"] for c in t["contexts"]],
                         context_ids=[c["chunk_id"] for c in t["contexts"]]) for t in traces]  # fmt: skip
    check_models_differ(settings, log)
    judge, generator, embedder = build_llm(settings, "judge"), build_llm(settings, "generator"), build_embedder(settings)
    scores: list[Score] = []
    for trace, item in zip(traces, inputs):
        calls = [ToolCall(name=c["name"], arguments=json.loads(c["arguments"] or "{}")) for c in trace["tool_calls"]]
        scores.append(tool_call_validity(calls).score(**labels, item_id=item.item_id, stratum=item.stratum,
                                                      metric="tool_call_validity"))  # fmt: skip
    with open_corpus_index(settings) as index:
        pool = NoisePool.from_index(index, inputs) if inputs else None
    regenerate = ReferenceRAG(index=None, llm=generator, name="generator")
    language = {i.question: i.stratum.rsplit("/", 1)[-1] for i in inputs}

    async def judged():
        clean = await judge_items(inputs, METRICS, judge, embedder, **labels)
        faithfulness = {s.item_id: s for s in clean if s.metric == "faithfulness"}
        noise = await noise_delta_f(
            inputs, pool, lambda q, ctx: regenerate.answer_with(q, language.get(q, "en"), ctx), judge, **labels,
            mode=noise_mode, k=noise_k, clean_scores=faithfulness,
        ) if inputs else []  # fmt: skip
        return clean + [n.score for n in noise]

    scores += run_and_close(judged(), judge, generator)
    judge.counters.log(log, "online judge")
    generator.counters.log(log, "online generator (noise)")
    run_paths = workspace.run_folder(SUITE, day, TARGET)
    run_paths.root.mkdir(parents=True, exist_ok=True)
    write_jsonl(run_paths.scores("online"), (s.model_dump() for s in scores))
    meta = RunMeta(run_id=rid, suite=SUITE, logical_date=day, target=TARGET, dataset_version=version, items=len(traces),
                   generator_model=generator.model, judge_model=judge.model)  # fmt: skip
    write_meta(run_paths, meta)
    return finalize_online(settings, meta, traces, scores)


def finalize_online(settings: Settings, meta: RunMeta, traces: list[dict[str, Any]], scores: list[Score]) -> RunSummary:
    workspace = Workspace.from_settings(settings)
    store = ResultsStore.from_settings(settings)
    store.create()
    run = EvalRun(run_id=meta.run_id, suite=SUITE, logical_date=meta.logical_date, target=TARGET,
                  dataset_version=meta.dataset_version, judge_model=meta.judge_model,
                  generator_model=meta.generator_model, finished_at=datetime.now(timezone.utc))  # fmt: skip
    aggregates = aggregate(scores)
    report = workspace.report(run.suite, run.logical_date, run.target)
    run.report_path = str(report)
    store.save_run(run, scores)
    views = {t["trace_id"]: ItemView(item_id=t["trace_id"], question=t["question"], answer=t["answer"],
                                     contexts=[f"{c['chunk_id']}: {c['text']}" for c in t["contexts"]]) for t in traces}  # fmt: skip
    write_report(report, render_report(run, scores, aggregates=aggregates, items=views, trend=trend_from_store(store, run)))
    write_metrics_json(workspace.metrics_json(report), aggregates)
    store.dispose()
    queued, _ = queue_candidates(workspace, run.logical_date, traces, scores)
    return run_summary(run, aggregates, items=meta.items).model_copy(update={"review_candidates": queued})
