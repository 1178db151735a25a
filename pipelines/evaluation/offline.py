"""The weekly offline eval as steps: run the target, judge in batches, finalize, push.

prepare (golden test split -> system under test -> retrieval and tool scores) -> judge batches
(ragas judge metrics + noise ΔF) -> finalize (aggregates with CIs, gate vs baseline, results DB,
HTML report, metrics JSON) -> push (Pushgateway). Steps exchange a run folder and counts; the
responses and scores travel as JSONL files in that folder.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.evaluation.judge import JudgeInput, judge_items
from pipelines.evaluation.noise import NoisePool, noise_delta_f
from pipelines.evaluation.retrieval import attribute, query_metrics
from pipelines.evaluation.summary import run_summary
from pipelines.evaluation.target import HTTPTarget, ReferenceRAG, TargetResponse, respond_all
from pipelines.evaluation.tools import ToolTurn, score_tool_turns
from pipelines.golden.dataset import load_golden_items
from pipelines.golden.params import load_golden_params
from pipelines.golden.steps import open_corpus_index
from pipelines.golden.store import read_jsonl, write_jsonl
from pipelines.models.embeddings import build_embedder
from pipelines.models.llm import build_llm, check_models_differ
from pipelines.records import GoldenItem, Score
from pipelines.settings import Settings
from pipelines.stores.partitions import read_manifest, reset_dir
from pipelines.text import token_f1

log = logging.getLogger(__name__)
SUITE = "offline"
ALL_JUDGE_METRICS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "ragas_noise_sensitivity"]
GATED_METRICS = ["recall@5", "mrr", "faithfulness", "answer_relevancy", "context_precision", "context_recall"]
UNSUPPORTED_BELOW = 0.75
"""Faithfulness below this is the brief's "made-up answers" band: a generation failure."""
WRONG_BELOW = 0.2
"""Token F1 with the reference below this: the answer says something else."""


class GateFailed(RuntimeError):
    """The run regressed beyond the tolerance its eval-set size allows (raised only when asked to)."""


def eval_params(settings: Settings, **overrides: Any) -> dict[str, Any]:
    defaults = {
        "golden_name": load_golden_params(settings)["name"], "golden_version": None, "split": "test",
        "k": [1, 3, 5, 10], "metrics": ALL_JUDGE_METRICS, "target_url": None, "target_name": None,
        "retrieval_k": 5, "retrieval_mode": "hybrid", "prompt": None, "noise_mode": "hard", "noise_k": 2,
        "batch_size": 25, "fail_on_gate": False, "limit": None,
    }  # fmt: skip
    params = {**defaults, **{k: v for k, v in overrides.items() if v is not None}}
    params["target_name"] = params["target_name"] or (params["target_url"] or "reference-rag")
    return params


def run_dir(settings: Settings, suite: str, day: date, target: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in target)
    return settings.resolved_workspace / "golden" / "build" / "eval" / suite / f"{day.isoformat()}_{safe}"


def run_id(suite: str, day: date, target: str) -> str:
    """Deterministic per logical date and target: a rerun replaces its rows instead of adding some."""
    return f"{suite}:{day.isoformat()}:{target}"


def _stratum(item: GoldenItem) -> str:
    return f"{item.qtype}/{item.language}"



def build_target(settings: Settings, params: dict[str, Any], index):
    if params["target_url"]:
        return HTTPTarget(params["target_url"], name=params["target_name"])
    return ReferenceRAG(index, build_llm(settings, "generator"), k=params["retrieval_k"], mode=params["retrieval_mode"],
                        prompt=params["prompt"], name=params["target_name"])  # fmt: skip


def prepare_offline_eval(settings: Settings, params: dict[str, Any], *, logical_date: date) -> dict[str, Any]:
    """Run the system under test on the golden test split; score retrieval and tool use."""
    version = params["golden_version"] or read_manifest(
        settings.resolved_workspace / "golden" / "datasets" / params["golden_name"])["version"]  # fmt: skip
    items = [i for i in load_golden_items(settings, params["golden_name"], version) if i.split == params["split"]]
    if not items:
        raise ValueError(f"golden set {params['golden_name']} {version} has no {params['split']} items")
    if params["limit"]:
        # A quick check on a stable subset: the same items every run, so runs stay comparable.
        items = sorted(items, key=lambda i: hashlib.sha256(i.item_id.encode()).hexdigest())[: params["limit"]]
    dataset_version = f"{params['golden_name']}@{version}"
    folder = reset_dir(run_dir(settings, SUITE, logical_date, params["target_name"]))
    rid = run_id(SUITE, logical_date, params["target_name"])
    with open_corpus_index(settings) as index:
        target = build_target(settings, params, index)
        if isinstance(target, ReferenceRAG):
            target.retrieve_all(items)
        responses = run_and_close(respond_all(target, items), getattr(target, "llm", None))
    write_jsonl(folder / "responses.jsonl", (_response_row(i, r) for i, r in zip(items, responses)))
    scores = _retrieval_scores(items, responses, params["k"], rid, dataset_version)
    turns = [ToolTurn(item_id=i.item_id, stratum=_stratum(i), question=i.question, expected_tool=i.expected_tool,
                      expected_args=i.expected_args, tool_calls=r.tool_calls, error=r.error)
             for i, r in zip(items, responses) if i.qtype == "tool"]  # fmt: skip
    scores += asyncio.run(score_tool_turns(turns, run_id=rid, suite=SUITE, dataset_version=dataset_version))
    write_jsonl(folder / "scores-retrieval-tools.jsonl", (s.model_dump() for s in scores))
    failed = sum(r.error is not None for r in responses)
    meta = {"run_id": rid, "dataset_version": dataset_version, "target": params["target_name"],
            "logical_date": logical_date.isoformat(), "items": len(items), "target_failures": failed,
            "generator_model": getattr(getattr(target, "llm", None), "model", None), "params": params}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(meta, indent=1, sort_keys=True, default=str))
    size = params["batch_size"]
    batches = [[s, min(s + size, len(items))] for s in range(0, len(items), size)]
    log.info("offline eval %s: %d items on %s, %d target failures", rid, len(items), params["target_name"], failed)
    return {"run_dir": str(folder), "run_id": rid, "items": len(items), "target_failures": failed, "batches": batches}


def run_and_close(coroutine, llm):
    """Run a coroutine and close the LLM's HTTP clients on the same loop."""
    async def main():
        try:
            return await coroutine
        finally:
            if llm is not None:
                await llm.aclose()

    return asyncio.run(main())


def _response_row(item: GoldenItem, response: TargetResponse) -> dict[str, Any]:
    return {"item": item.model_dump(mode="json"), "answer": response.answer, "contexts": response.contexts,
            "tool_calls": [c.model_dump() for c in response.tool_calls], "error": response.error,
            "latency_s": round(response.latency_s, 4)}  # fmt: skip


def _retrieval_scores(items, responses, ks, rid: str, dataset_version: str) -> list[Score]:
    scores = []
    for item, response in zip(items, responses):
        if not item.gold_chunk_ids or item.qtype == "tool":
            continue  # retrieval metrics need gold chunks (adversarial items have none by design)
        if response.error is not None:
            values = {name: None for name in query_metrics([], ["x"], ks)}
        else:
            values = query_metrics(response.retrieved_ids, item.gold_chunk_ids, ks)
        for metric, value in values.items():
            scores.append(Score(run_id=rid, suite=SUITE, item_id=item.item_id, stratum=_stratum(item), metric=metric,
                                value=value, status="ok" if value is not None else "failed",
                                error=None if value is not None else f"target failed: {response.error}",
                                dataset_version=dataset_version))  # fmt: skip
    return scores


def _judge_input(row: dict[str, Any]) -> JudgeInput:
    item = GoldenItem.model_validate(row["item"])
    # An adversarial item's reference ("not enough information") has no claim a context could hold:
    # the reference-based metrics are skipped for it rather than scored 0.
    reference = item.reference_answer if item.gold_chunk_ids else None
    return JudgeInput(item_id=item.item_id, stratum=_stratum(item), question=item.question, answer=row["answer"],
                      contexts=[c["text"] for c in row["contexts"]], reference=reference,
                      reference_contexts=item.reference_contexts, context_ids=[c["chunk_id"] for c in row["contexts"]],
                      gold_chunk_ids=item.gold_chunk_ids)  # fmt: skip


NEIGHBOURS = 20


def noise_pool(index, inputs: list[JudgeInput]) -> NoisePool:
    """Candidate distractors: each question's dense neighbours, read back from the index.

    Hard negatives are then the candidates closest to the question in words that are neither gold
    nor retrieved; taking candidates from the index's stored vectors avoids embedding the corpus
    again in every batch.
    """
    ids = {h.chunk_id for i in inputs for h in index.search(i.question, k=NEIGHBOURS, mode="dense")}
    return NoisePool(index.get(sorted(ids)))


def judge_offline_batch(settings: Settings, folder: Path, start: int, end: int) -> dict[str, Any]:
    """Judge metrics and noise ΔF for responses[start:end]; a failed target call fails its metrics."""
    meta = json.loads((folder / "run.json").read_text())
    params = meta["params"]
    rows = [r for r in read_jsonl(folder / "responses.jsonl")[start:end] if r["item"]["qtype"] != "tool"]
    check_models_differ(settings, log)
    judge, embedder = build_llm(settings, "judge"), build_embedder(settings)
    scores: list[Score] = []
    judged = [r for r in rows if r["error"] is None]
    for row in rows:
        if row["error"] is not None:
            scores += [Score(run_id=meta["run_id"], suite=SUITE, item_id=row["item"]["item_id"], stratum=_judge_input(row).stratum,
                             metric=m, value=None, status="failed", error=f"target failed: {row['error']}",
                             dataset_version=meta["dataset_version"]) for m in [*params["metrics"], "noise_delta_f"]]  # fmt: skip
    inputs = [_judge_input(r) for r in judged]
    with open_corpus_index(settings) as index:
        target = build_target(settings, params, index)
        pool = noise_pool(index, inputs)

        async def both():
            judged_scores = await judge_items(inputs, params["metrics"], judge, embedder, run_id=meta["run_id"],
                                              suite=SUITE, dataset_version=meta["dataset_version"])  # fmt: skip
            clean = {s.item_id: s for s in judged_scores if s.metric == "faithfulness"}
            language = {r["item"]["question"]: r["item"]["language"] for r in judged}
            noise = await noise_delta_f(
                inputs, pool, lambda q, ctx: target.answer_with(q, language.get(q, "en"), ctx), judge,
                run_id=meta["run_id"], suite=SUITE, dataset_version=meta["dataset_version"],
                mode=params["noise_mode"], k=params["noise_k"], clean_scores=clean,
            ) if inputs else []  # fmt: skip
            return judged_scores + [n.score for n in noise]

        scores += run_and_close(both(), getattr(target, "llm", None))
    write_jsonl(folder / f"scores-judge-{start:06d}.jsonl", (s.model_dump() for s in scores))
    judge.counters.log(log, f"judge batch {start}-{end}")
    return {"batch": [start, end], "scores": len(scores), "failed": sum(s.status == "failed" for s in scores),
            "judge": judge.counters.summary()}  # fmt: skip


def load_scores(folder: Path) -> list[Score]:
    return [Score.model_validate(r) for path in sorted(folder.glob("scores-*.jsonl")) for r in read_jsonl(path)]


def answer_ok(scores: dict[str, Score], answer: str | None, reference: str | None) -> bool | None:
    """Right and supported: faithfulness in the healthy bands and words in common with the reference."""
    faithfulness = scores.get("faithfulness")
    if answer is None or faithfulness is None or faithfulness.status != "ok":
        return None
    return faithfulness.value >= UNSUPPORTED_BELOW and token_f1(answer, reference or "") >= WRONG_BELOW


def finalize_offline_eval(settings: Settings, folder: Path) -> dict[str, Any]:
    """Aggregate with CIs, gate against the baseline, save to the results DB, write the report."""
    from pipelines.evaluation.report import ItemView, render_report, report_path, trend_from_store, write_metrics_json, write_report
    from pipelines.evaluation.stats import aggregate, regression_gate
    from pipelines.stores.results import EvalRun, ResultsStore

    meta = json.loads((folder / "run.json").read_text())
    scores = load_scores(folder)
    rows = read_jsonl(folder / "responses.jsonl")
    by_item: dict[str, dict[str, Score]] = {}
    for score in scores:
        by_item.setdefault(score.item_id, {})[score.metric] = score
    views = {}
    for row in rows:
        item = row["item"]
        ok = answer_ok(by_item.get(item["item_id"], {}), row["answer"], item["reference_answer"])
        views[item["item_id"]] = ItemView(
            item_id=item["item_id"], question=item["question"], answer=row["answer"] or f"(no answer: {row['error']})",
            contexts=[f"{c['chunk_id']}: {c['text']}" for c in row["contexts"]], reference_answer=item["reference_answer"],
            attribution=attribute([c["chunk_id"] for c in row["contexts"]], item["gold_chunk_ids"], ok),
        )  # fmt: skip

    store = ResultsStore.from_settings(settings)
    store.create()
    aggregates = aggregate(scores)
    run = EvalRun(run_id=meta["run_id"], suite=SUITE, logical_date=date.fromisoformat(meta["logical_date"]),
                  target=meta["target"], dataset_version=meta["dataset_version"],
                  judge_model=build_llm(settings, "judge").model, generator_model=meta["generator_model"],
                  params=meta["params"], finished_at=datetime.now(timezone.utc))  # fmt: skip
    baseline = store.baseline_for(run)
    gate = None
    if baseline:
        baseline_scores = store.scores(baseline.run_id)
        # Gate what both runs measured: a metric switched off in this run's params is not a regression.
        measured = {s.metric for s in scores} & {s.metric for s in baseline_scores}
        gated = [m for m in GATED_METRICS if m in measured]
        gate = regression_gate(scores, baseline_scores, gated) if gated else None
    run.gate_passed, run.gate = (gate.passed, gate.to_dict()) if gate else (None, None)
    report = report_path(settings.reports_dir, run)
    run.report_path = str(report)
    store.save_run(run, scores)
    write_report(report, render_report(run, scores, aggregates=aggregates, items=views, trend=trend_from_store(store, run),
                                       gate=gate, baseline=baseline))  # fmt: skip
    write_metrics_json(report.with_suffix(".metrics.json"), aggregates)
    summary = {**run_summary(run, aggregates, items=meta["items"]), "metrics_json": str(report.with_suffix(".metrics.json")),
               "baseline": baseline.run_id if baseline else None}
    store.dispose()
    log.info("offline eval %s: %s; report %s", run.run_id, summary["gate"], report)
    return summary


def push_eval(settings: Settings, summary: dict[str, Any], *, app: str | None = None) -> dict[str, Any]:
    """Push the run's aggregates (re-read from the results DB) to the Pushgateway.

    Only the newest run of a suite and target is pushed: a push replaces the suite's group, so a
    backfilled past day must not overwrite today's gauges (its scores are in the results DB).
    """
    from pipelines.evaluation.stats import aggregate
    from pipelines.publish import publish_scores
    from pipelines.stores.results import ResultsStore

    store = ResultsStore.from_settings(settings)
    latest = store.latest_run(summary["suite"], summary["target"])
    if latest is None or latest.run_id != summary["run_id"]:
        store.dispose()
        newer = latest.logical_date.isoformat() if latest else "none"
        return {"pushed_to": None, "skipped": f"a newer {summary['suite']} run ({newer}) owns the gauges"}
    aggregates = aggregate(store.scores(summary["run_id"]))
    store.dispose()
    result = publish_scores(settings, aggregates, suite=summary["suite"], app=app, gate_passed=latest.gate_passed,
                            succeeded_at=latest.finished_at or datetime.now(timezone.utc))  # fmt: skip
    if not result.ok:
        raise RuntimeError(f"push failed: {result.error}. The scores are safe in the results DB; the task retries.")
    return {"pushed_to": result.destination, "mode": result.mode, "samples": result.samples}


def enforce_gate(summary: dict[str, Any], fail_on_gate: bool) -> dict[str, Any]:
    if fail_on_gate and summary.get("gate_passed") is False:
        raise GateFailed(f"{summary['gate']} (report: {summary['report']})")
    return summary


def run_offline_eval(settings: Settings, params: dict[str, Any], *, logical_date: date, progress=None) -> dict[str, Any]:
    """Every step without Airflow (`ragwatch eval offline`)."""
    prepared = prepare_offline_eval(settings, params, logical_date=logical_date)
    folder = Path(prepared["run_dir"])
    for i, (start, end) in enumerate(prepared["batches"], start=1):
        judge_offline_batch(settings, folder, start, end)
        if progress:
            progress(i, len(prepared["batches"]))
    summary = finalize_offline_eval(settings, folder)
    summary["push"] = push_eval(settings, summary)
    return enforce_gate(summary, params["fail_on_gate"])
