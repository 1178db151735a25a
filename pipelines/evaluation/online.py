"""The daily online eval: reference-free scores of one day's sampled (anonymized) traces.

Faithfulness and answer relevancy through the ragas judge, online noise sensitivity (the
generator answers again with irrelevant chunks injected; ΔF as offline), and tool-call validity
against each tool's JSON schema. Every score row carries its trace id; strata are app/language.
The lowest-scoring traces become golden candidates (source=trace) in the review queue.
"""

from __future__ import annotations

import json
import logging
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipelines.evaluation.judge import JudgeInput, judge_items
from pipelines.evaluation.noise import noise_delta_f
from pipelines.evaluation.offline import noise_pool, run_and_close, run_dir, run_id
from pipelines.evaluation.summary import run_summary
from pipelines.evaluation.target import ReferenceRAG
from pipelines.evaluation.tools import tool_call_validity
from pipelines.golden.params import load_golden_params
from pipelines.golden.steps import open_corpus_index
from pipelines.golden.store import GoldenPaths, write_jsonl
from pipelines.models.embeddings import build_embedder
from pipelines.models.llm import build_llm, check_models_differ
from pipelines.records import Score, ToolCall
from pipelines.settings import Settings
from pipelines.stores.partitions import DATA_FILE, MANIFEST, partition_path

log = logging.getLogger(__name__)
SUITE = "online"
TARGET = "production"
METRICS = ["faithfulness", "answer_relevancy"]
CANDIDATES = 5
"""Lowest-scoring traces per day sent to the golden review queue."""


def partition_ready(settings: Settings, day: date) -> bool:
    """The sensor's question: has trace_sampling published this day's partition?"""
    return (partition_path(settings.resolved_workspace, "traces", day) / MANIFEST).exists()


def _dataset_version(settings: Settings, day: date) -> str:
    dvc_file = partition_path(settings.resolved_workspace, "traces", day).with_suffix(".dvc")
    if dvc_file.exists():
        import yaml

        return f"traces/dt={day}@{yaml.safe_load(dvc_file.read_text())['outs'][0]['md5'][:12]}"
    return f"traces/dt={day}"


def read_sampled(settings: Settings, day: date) -> list[dict[str, Any]]:
    if not partition_ready(settings, day):
        raise FileNotFoundError(f"no published sample for {day}: run trace_sampling for that day first")
    return pq.read_table(partition_path(settings.resolved_workspace, "traces", day) / DATA_FILE).to_pylist()


def score_online(settings: Settings, day: date, *, noise_mode: str = "hard", noise_k: int = 2) -> dict[str, Any]:
    traces = read_sampled(settings, day)
    rid, version = run_id(SUITE, day, TARGET), _dataset_version(settings, day)
    inputs = [JudgeInput(item_id=t["trace_id"], stratum=f"{t['app']}/{t['language']}", question=t["question"],
                         answer=t["answer"], contexts=[c["text"] for c in t["contexts"]],
                         context_ids=[c["chunk_id"] for c in t["contexts"]]) for t in traces]  # fmt: skip
    check_models_differ(settings, log)
    judge, generator, embedder = build_llm(settings, "judge"), build_llm(settings, "generator"), build_embedder(settings)
    scores: list[Score] = []
    for trace, item in zip(traces, inputs):
        calls = [ToolCall(name=c["name"], arguments=json.loads(c["arguments"] or "{}")) for c in trace["tool_calls"]]
        outcome = tool_call_validity(calls)
        scores.append(outcome.score(run_id=rid, suite=SUITE, item_id=item.item_id, stratum=item.stratum,
                                    metric="tool_call_validity", dataset_version=version))  # fmt: skip
    with open_corpus_index(settings) as index:
        pool = noise_pool(index, inputs) if inputs else None
    regenerate = ReferenceRAG(index=None, llm=generator, name="generator")
    language = {i.question: i.stratum.rsplit("/", 1)[-1] for i in inputs}

    async def judged():
        try:
            clean = await judge_items(inputs, METRICS, judge, embedder, run_id=rid, suite=SUITE, dataset_version=version)
            faithfulness = {s.item_id: s for s in clean if s.metric == "faithfulness"}
            noise = await noise_delta_f(
                inputs, pool, lambda q, ctx: regenerate.answer_with(q, language.get(q, "en"), ctx), judge,
                run_id=rid, suite=SUITE, dataset_version=version, mode=noise_mode, k=noise_k, clean_scores=faithfulness,
            ) if inputs else []  # fmt: skip
            return clean + [n.score for n in noise]
        finally:
            await generator.aclose()

    scores += run_and_close(judged(), judge)
    judge.counters.log(log, "online judge")
    generator.counters.log(log, "online generator (noise)")
    folder = run_dir(settings, SUITE, day, TARGET)
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "scores-online.jsonl", (s.model_dump() for s in scores))
    meta = {"run_id": rid, "dataset_version": version, "target": TARGET, "logical_date": day.isoformat(),
            "items": len(traces), "generator_model": generator.model, "judge_model": judge.model}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    return finalize_online(settings, folder, traces, scores)


def finalize_online(settings: Settings, folder: Path, traces: list[dict[str, Any]], scores: list[Score]) -> dict[str, Any]:
    from pipelines.evaluation.report import ItemView, render_report, report_path, trend_from_store, write_metrics_json, write_report
    from pipelines.evaluation.stats import aggregate
    from pipelines.stores.results import EvalRun, ResultsStore

    meta = json.loads((folder / "run.json").read_text())
    store = ResultsStore.from_settings(settings)
    store.create()
    run = EvalRun(run_id=meta["run_id"], suite=SUITE, logical_date=date.fromisoformat(meta["logical_date"]), target=TARGET,
                  dataset_version=meta["dataset_version"], judge_model=meta["judge_model"],
                  generator_model=meta["generator_model"], finished_at=datetime.now(timezone.utc))  # fmt: skip
    aggregates = aggregate(scores)
    report = report_path(settings.reports_dir, run)
    run.report_path = str(report)
    store.save_run(run, scores)
    views = {t["trace_id"]: ItemView(item_id=t["trace_id"], question=t["question"], answer=t["answer"],
                                     contexts=[f"{c['chunk_id']}: {c['text']}" for c in t["contexts"]]) for t in traces}  # fmt: skip
    write_report(report, render_report(run, scores, aggregates=aggregates, items=views, trend=trend_from_store(store, run)))
    write_metrics_json(report.with_suffix(".metrics.json"), aggregates)
    store.dispose()
    candidates = queue_candidates(settings, run.logical_date, traces, scores)
    return {**run_summary(run, aggregates, items=meta["items"]), "review_candidates": candidates}


def queue_candidates(settings: Settings, day: date, traces: list[dict[str, Any]], scores: list[Score]) -> int:
    """The day's lowest-scoring traces, as golden candidates (source=trace) in the review queue.

    Written as `golden/reviews/<set>/candidates-<day>.csv` with the columns `ragwatch golden import`
    reads: a reviewer writes the reference answer and the gold passages, then imports the file.
    """
    import csv

    by_trace: dict[str, list[float]] = {}
    for score in scores:
        if score.status == "ok" and score.metric in ("faithfulness", "answer_relevancy"):
            by_trace.setdefault(score.item_id, []).append(score.value)
    ranked = sorted((sum(v) / len(v), trace_id) for trace_id, v in by_trace.items())[:CANDIDATES]
    traces_by_id = {t["trace_id"]: t for t in traces}
    folder = GoldenPaths(settings.resolved_workspace, load_golden_params(settings)["name"]).reviews
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"candidates-{day.isoformat()}.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["trace_id", "question", "reference_answer", "gold_passages", "split",
                                                "production_answer", "mean_score", "language"])  # fmt: skip
        writer.writeheader()
        for mean, trace_id in ranked:
            trace = traces_by_id[trace_id]
            writer.writerow({"trace_id": trace_id, "question": trace["question"], "reference_answer": "", "gold_passages": "",
                             "split": "", "production_answer": trace["answer"], "mean_score": f"{mean:.3f}",
                             "language": trace["language"]})  # fmt: skip
    return len(ranked)
