"""The last step of an eval run: aggregates with CIs, the results DB, the HTML report, the metrics
file.

`publish_run` is what both suites do with their scores; the offline eval gates against its baseline
first (`finalize_offline_eval`), the online eval queues review candidates after (online.py).
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path

from pipelines.core.files import read_jsonl
from pipelines.core.records import Score
from pipelines.core.settings import Settings
from pipelines.core.workspace import RunPaths, Workspace
from pipelines.evaluation.metrics.retrieval import attribute
from pipelines.evaluation.outputs.cost_trend import weekly_cost
from pipelines.evaluation.outputs.judge_audit import JUDGE_AUDIT, audit_run
from pipelines.evaluation.outputs.report import (
    ItemView,
    render_report,
    trend_from_store,
    write_metrics_json,
    write_report,
)
from pipelines.evaluation.outputs.summary import RunSummary, run_summary
from pipelines.evaluation.runs.budget import budget_skips
from pipelines.evaluation.runs.cost import PREPARE_PART, run_cost
from pipelines.evaluation.runs.folder import (
    RETRIEVAL_TOOLS_PART,
    RunMeta,
    load_planned_retests,
    load_planned_scores,
    read_meta,
)
from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.evaluation.statistics.gate.run_gate import gate_against_baseline
from pipelines.evaluation.statistics.judge_noise import run_judge_noise
from pipelines.models.backends import build_llm
from pipelines.stores.results import EvalRun, ResultsStore

log = logging.getLogger(__name__)
UNSUPPORTED_BELOW = 0.75
"""Faithfulness below this is the "made-up answers" band: a correct answer this poorly supported is
still a generation failure."""


def supported(scores: dict[str, Score]) -> bool | None:
    """Whether the answer is supported by its contexts (faithfulness ≥ 0.75); None when not
    scored."""
    faithfulness = scores.get("faithfulness")
    if faithfulness is None or faithfulness.status != "ok":
        return None
    return faithfulness.value >= UNSUPPORTED_BELOW


def correct(scores: dict[str, Score]) -> bool | None:
    """The correctness judge's verdict on the answer (the `answer_correctness` score); None when not
    graded."""
    correctness = scores.get("answer_correctness")
    if correctness is None or correctness.status != "ok":
        return None
    return correctness.value == 1.0


def read_verdicts(run_paths: RunPaths) -> dict[str, dict]:
    """item id -> {"correct": bool | None, "reason": str} from the judge batches' correctness
    verdicts: the reasons the report shows per item (the verdict itself is read from the
    `answer_correctness` score)."""
    return {row["item_id"]: row for path in run_paths.verdict_files for row in read_jsonl(path)}


def finalize_offline_eval(settings: Settings, run_dir: Path) -> RunSummary:
    """Aggregate with CIs, gate against the baseline, save to the results DB, write the report."""
    run_paths = RunPaths(run_dir)
    meta = read_meta(run_paths)
    scores = load_planned_scores(run_paths, meta, prepared=(RETRIEVAL_TOOLS_PART,))
    verdicts = read_verdicts(run_paths)
    by_item: dict[str, dict[str, Score]] = {}
    for score in scores:
        by_item.setdefault(score.item_id, {})[score.metric] = score
    views = {}
    for row in read_jsonl(run_paths.responses):
        item = row["item"]
        verdict, item_scores = verdicts.get(item["item_id"], {}), by_item.get(item["item_id"], {})
        views[item["item_id"]] = ItemView(
            item_id=item["item_id"],
            question=item["question"],
            answer=row["answer"] or f"(no answer: {row['error']})",
            contexts=[f"{c['chunk_id']}: {c['text']}" for c in row["contexts"]],
            reference_answer=item["reference_answer"],
            attribution=attribute(
                [c["chunk_id"] for c in row["contexts"]],
                item["gold_chunk_ids"],
                correct(item_scores),
                supported(item_scores),
            ),
            correctness=verdict.get("reason"),
        )

    store = ResultsStore.from_settings(settings)
    store.create()
    try:
        run = EvalRun(
            run_id=meta.run_id,
            suite=meta.suite,
            logical_date=meta.logical_date,
            target=meta.target,
            dataset_version=meta.dataset_version,
            judge_model=build_llm(settings, "judge").model,
            generator_model=meta.generator_model,
            params={
                **meta.params.model_dump(mode="json"),
                "context_depth": meta.context_depth,
                **({"subset": meta.subset} if meta.subset else {}),
            },
            finished_at=datetime.now(timezone.utc),
        )
        cost = run_cost(
            run_paths,
            meta.batches,
            items=meta.items,
            suite=meta.suite,
            run_id=meta.run_id,
            prepared=(PREPARE_PART,),
        )
        spent = {"budget": meta.budget, "skipped_for_budget": budget_skips(scores)}
        run.cost = cost.model_copy(update=spent).model_dump()
        gate = gate_against_baseline(
            store,
            run,
            scores,
            min_pairs=settings.gate_min_pairs,
            baseline_run=meta.params.baseline_run,
            reference_run=meta.params.reference_run,
        )
        run.gate_passed, run.gate = (gate.passed, gate.to_dict()) if gate else (None, None)
        summary = publish_run(settings, store, run, scores, views, run_paths, meta, run_gate=gate)
    finally:
        store.dispose()
    log.info("offline eval %s: %s; report %s", run.run_id, summary.gate, summary.report)
    return summary


JUDGE_NOISE = "judge_noise"
"""The run params key of the judge-noise statistics (statistics/judge_noise.py): the report, summary
and push read them there."""


def publish_run(
    settings: Settings,
    store: ResultsStore,
    run: EvalRun,
    scores: list[Score],
    views: dict[str, ItemView],
    run_paths: RunPaths,
    meta: RunMeta,
    *,
    run_gate=None,
) -> RunSummary:
    """Save the run and its scores to the results DB, write its report and metrics file; its
    summary. The run folder's retests (the retested items' second judgements, and a note on missing
    retest files) feed the judge-noise statistics only, never the aggregates, the gate or the
    results DB's scores."""
    workspace = Workspace.from_settings(settings)
    aggregates = aggregate(scores)
    report = workspace.report(run.suite, run.logical_date, run.target)
    run.report_path = str(report)
    retest_rows, retest_note = load_planned_retests(run_paths, meta)
    noise = [n.to_dict() for n in run_judge_noise(scores, retest_rows, aggregates)]
    run.params = {
        **run.params,
        JUDGE_AUDIT: audit_run(settings, run, scores, views),
        JUDGE_NOISE: {
            "retested_items": len({r.item_id for r in retest_rows}),
            "note": retest_note,
            "metrics": noise,
        },
    }
    store.save_run(run, scores)
    cost_trend = weekly_cost(store, run.suite, run.target, until=run.logical_date)
    write_report(
        report,
        render_report(
            run,
            scores,
            aggregates=aggregates,
            items=views,
            trend=trend_from_store(store, run),
            run_gate=run_gate,
            min_n=settings.diagnosis_min_n,
            correction=settings.diagnosis_correction,
            cost_trend=cost_trend,
        ),
    )
    write_metrics_json(workspace.metrics_json(report), aggregates)
    return run_summary(
        run,
        aggregates,
        items=meta.items,
        min_n=settings.diagnosis_min_n,
        correction=settings.diagnosis_correction,
    )
