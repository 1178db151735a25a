"""The golden-set build as steps with explicit inputs and outputs (Airflow tasks, dvc stages, CLI).

plan -> generate (in batches) -> filter -> split -> validate -> release. Steps exchange names,
counts and paths as small typed results; the data stays in the workspace.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pipelines.core.batching import batch_ranges
from pipelines.core.files import (
    file_sha256,
    read_filled_in_rows,
    read_jsonl,
    reset_dir,
    write_jsonl,
)
from pipelines.golden.budget import budget_counts, filter_budget, generation_budget, plan_budget
from pipelines.golden.cost import added, build_cost, model_usage
from pipelines.golden.dataset import read_items, write_items
from pipelines.golden.filters import filter_items
from pipelines.golden.generate import generate_items
from pipelines.golden.params import GoldenParams
from pipelines.golden.plan import Job, TraceQuestionSample, plan_jobs, position_key
from pipelines.golden.review import apply_decisions, read_decisions
from pipelines.golden.split import assemble, floor_shortfalls, test_split_ids
from pipelines.core.handoff import batch_label, check_parts
from pipelines.models.budget import BUDGET_REASON, is_refusal
from pipelines.models.backends import build_llm, check_models_differ
from pipelines.models.usage import scope
from pipelines.core.records import GoldenItem
from pipelines.core.settings import Settings
from pipelines.stores.corpus import open_corpus_index
from pipelines.stores.partitions import iter_part_batches, promote, read_manifest, write_manifest
from pipelines.core.text import sentences
from pipelines.core.validation import ValidationPassed
from pipelines.core.workspace import GoldenPaths, StaleVersion, Workspace

log = logging.getLogger(__name__)


class GoldenPlan(BaseModel):
    name: str
    jobs: int
    by_kind: dict[str, int]
    batches: list[tuple[int, int]]
    """Job ranges: what the generation tasks map over."""
    corpus_version: str


class GeneratedBatch(BaseModel):
    batch: tuple[int, int]
    items: int
    failed_jobs: int
    llm: dict[str, Any]
    """The generator's counters for this batch (requests, tokens, failures)."""


class Generated(BaseModel):
    items: int
    failed_jobs: int


class Filtered(BaseModel):
    name: str
    funnel: dict[str, Any]
    judge_model: str
    cost: dict[str, Any]
    """Requests and tokens of generation and filtering, per generated and per kept item
    (golden/cost.py)."""


class StagedSet(BaseModel):
    name: str
    items: int
    splits: dict[str, int]
    stale: int
    staged: Path


class Release(BaseModel):
    name: str
    version: str
    tag: str
    items: int
    corpus_version: str


class GoldenBuild(BaseModel):
    plan: GoldenPlan
    generated: Generated
    filtered: Filtered
    staged: StagedSet
    validation: ValidationPassed
    release: Release


def paths(settings: Settings, name: str) -> GoldenPaths:
    return Workspace.from_settings(settings).golden(name)


TRACE_QUESTION_COLUMNS = ["trace_id", "app", "language", "question"]
TRACE_READ_BATCH_ROWS = 65_536


def recent_trace_questions(
    workspace: Workspace, until: date, days: int, n: int
) -> list[dict[str, Any]]:
    """`n` questions of the sampled (anonymized) traces of the `days` days before `until`: real
    phrasing.

    First one question of each topic the golden set missed (`uncovered_topic_questions`), then the
    hash-ordered stratified pick. Each day's partition is read in batches of the four columns the
    pick needs, and only the candidates `TraceQuestionSample` keeps stay in memory: 14 days of 1 M
    traces cost what one batch costs.
    """
    first = uncovered_topic_questions(workspace, until, days)[:n]
    sample = TraceQuestionSample(n)
    for offset in range(1, days + 1):
        day = until - timedelta(days=offset)
        workspace.traces_version(
            day
        )  # a golden set never learns from a sample its .dvc file does not name
        parts = workspace.traces_partition(day).parts  # none: the day was not sampled
        for batch in iter_part_batches(
            parts, batch_size=TRACE_READ_BATCH_ROWS, columns=TRACE_QUESTION_COLUMNS
        ):
            sample.add(*(batch.column(name).to_pylist() for name in TRACE_QUESTION_COLUMNS))
    taken = {row["trace_id"] for row in first}
    return (
        first + [row for row in sample.picked() if row["trace_id"] not in taken][: n - len(first)]
    )


def uncovered_topic_questions(workspace: Workspace, until: date, days: int) -> list[dict[str, Any]]:
    """The first question of each topic of the day's traffic the golden set did not cover, as the
    online eval queued them (`inbox/uncovered-<day>.csv`, largest topic first) over the `days` days
    before `until`, newest day first: the next build asks about what users ask and the golden set
    lacks."""
    picked, topics = [], set()
    for offset in range(1, days + 1):
        path = workspace.uncovered_topics(until - timedelta(days=offset))
        for row in read_filled_in_rows(path) if path.exists() else []:
            if row["topic"] not in topics:
                topics.add(row["topic"])
                picked.append({name: row[name] for name in TRACE_QUESTION_COLUMNS})
    return picked


def plan_golden(settings: Settings, params: GoldenParams, *, logical_date: date) -> GoldenPlan:
    p = paths(settings, params.name)
    jobs, chunk_ids, corpus_version = planned_jobs(settings, params, logical_date=logical_date)
    reset_dir(p.build)
    write_jsonl(p.plan, (j.model_dump() for j in jobs))
    by_kind = dict(sorted(Counter(j.kind for j in jobs).items()))
    batches = batch_ranges(len(jobs), params.batch_size)
    meta = {
        "name": params.name,
        "corpus_version": corpus_version,
        "created_at": logical_date.isoformat(),
        "jobs": len(jobs),
        "by_kind": by_kind,
        "current_chunk_ids": chunk_ids,
        "budget": plan_budget(settings.llm_budget_tokens, len(batches)),
    }
    p.plan_meta.write_text(json.dumps(meta, indent=1, sort_keys=True))
    log.info("planned %d jobs %s over corpus %s", len(jobs), by_kind, corpus_version)
    return GoldenPlan(
        name=params.name,
        jobs=len(jobs),
        by_kind=by_kind,
        batches=batches,
        corpus_version=corpus_version,
    )


def planned_jobs(
    settings: Settings, params: GoldenParams, *, logical_date: date
) -> tuple[list[Job], list[str], str]:
    """The generation jobs a build would run, the current chunk ids and the corpus version; reads,
    writes nothing."""
    workspace = Workspace.from_settings(settings)
    traces = recent_trace_questions(workspace, logical_date, params.trace_days, params.from_traces)
    with open_corpus_index(settings) as index:
        chunks = list(index.chunks())
        if not chunks:
            raise RuntimeError("the corpus index is empty: run `ragwatch corpus index PATH` first")
        corpus_version = index.version()

        def related(chunk):
            probe = (sentences(chunk.text) or [chunk.text])[0]
            for hit in index.search(probe, k=4, mode="hybrid"):
                if position_key(hit.chunk_id) != position_key(chunk.chunk_id):
                    return next(iter(index.get([hit.chunk_id])), None)
            return None

        jobs = plan_jobs(
            chunks,
            params,
            related=related,
            traces=traces,
            tool_test_floor=settings.gate_min_pairs,
            trace_contexts=lambda q: index.get(
                [h.chunk_id for h in index.search(q, k=5, mode="hybrid")]
            ),
        )
    return jobs, sorted(c.chunk_id for c in chunks), corpus_version


def _plan_meta(p: GoldenPaths) -> dict[str, Any]:
    return json.loads(p.plan_meta.read_text())


def planned_batches(settings: Settings, params: GoldenParams) -> list[tuple[int, int]]:
    """The batches of the plan on disk (for a generate step run on its own, as dvc repro does)."""
    return batch_ranges(len(read_jsonl(paths(settings, params.name).plan)), params.batch_size)


def generate_golden_batch(settings: Settings, name: str, start: int, end: int) -> GeneratedBatch:
    p = paths(settings, name)
    meta = _plan_meta(p)
    jobs = [Job.model_validate(row) for row in read_jsonl(p.plan)[start:end]]
    llm = build_llm(settings, "generator")
    llm.budget = generation_budget(meta)
    with scope(stage="golden_generate"):
        items, failures = generate_items(
            llm, jobs, corpus_version=meta["corpus_version"], created_at=meta["created_at"]
        )
    failures = [{**f, "error": BUDGET_REASON} if is_refusal(f["error"]) else f for f in failures]
    write_jsonl(p.generated_part(start), (item.model_dump(mode="json") for item in items))
    write_jsonl(p.failed_part(start), failures)
    # budget_spent: the tokens charged to the budget (an estimate where the server reports none),
    # for the filters.
    p.cost_part(start).write_text(
        json.dumps(
            {**model_usage(llm.counters.summary()), "budget_spent": llm.budget.spent},
            sort_keys=True,
        )
    )
    llm.counters.log(log, f"generator batch {start}-{end}")
    return GeneratedBatch(
        batch=(start, end), items=len(items), failed_jobs=len(failures), llm=llm.counters.summary()
    )


def generate_golden(
    settings: Settings, name: str, batches: list[tuple[int, int]], progress=None
) -> Generated:
    totals = Counter()
    for i, (start, end) in enumerate(batches, start=1):
        result = generate_golden_batch(settings, name, start, end)
        totals.update(items=result.items, failed_jobs=result.failed_jobs)
        if progress:
            progress(i, len(batches))
    return Generated(items=totals["items"], failed_jobs=totals["failed_jobs"])


def generated_parts(p: GoldenPaths, batches: list[tuple[int, int]]) -> list[int]:
    """The planned generation batches' starts, once every batch's three files (items, failed jobs,
    cost) are there: a lost part fails the build naming its batch instead of shrinking the golden
    set."""
    planned = {
        path: batch_label(i, batch)
        for i, batch in enumerate(batches)
        for path in (p.generated_part(batch[0]), p.failed_part(batch[0]), p.cost_part(batch[0]))
    }
    found = p.parts.glob("*") if p.parts.is_dir() else []
    check_parts(
        f"golden {p.build.name}: generated parts",
        planned,
        found,
        rerun="rerun the golden_build `generate` task (clear it in the Airflow UI; outside Airflow, "
        "`ragwatch golden stage generate`)",
    )
    return [start for start, _ in batches]


def filter_golden(settings: Settings, params: GoldenParams) -> Filtered:
    from pipelines.models.embeddings import build_embedder

    p = paths(settings, params.name)
    starts = generated_parts(p, planned_batches(settings, params))
    candidates = [
        GoldenItem.model_validate(r)
        for start in starts
        for r in read_jsonl(p.generated_part(start))
    ]
    failed_jobs = [r for start in starts for r in read_jsonl(p.failed_part(start))]
    check_models_differ(settings, log)
    judge = build_llm(settings, "judge")
    parts = [json.loads(p.cost_part(start).read_text()) for start in starts]
    meta = _plan_meta(p)
    judge.budget = filter_budget(meta, sum(part.get("budget_spent", 0) for part in parts))
    embedder = build_embedder(settings)
    with scope(stage="golden_filter"):
        outcome = filter_items(
            candidates, judge, embedder.embed, near_duplicate_cosine=params.near_duplicate_cosine
        )
    funnel = {
        "failed_generation_jobs": len(failed_jobs),
        **outcome.funnel,
        "rejected_by_reason": dict(sorted(Counter(r["reason"] for r in outcome.rejected).items())),
    }
    generation = added(parts)
    cost = build_cost(
        generation,
        model_usage(judge.counters.summary()),
        generated=len(candidates),
        kept=len(outcome.kept),
    )
    if (budget := budget_counts(meta, failed_jobs, outcome.rejected)) is not None:
        cost["budget"] = budget
    reset_dir(p.filtered)
    write_jsonl(p.kept, (item.model_dump(mode="json") for item in outcome.kept))
    write_jsonl(p.filter_rejected, outcome.rejected)
    p.funnel.write_text(
        json.dumps(
            {"funnel": funnel, "judge_model": judge.model, "cost": cost}, indent=1, sort_keys=True
        )
    )
    judge.counters.log(log, "judge (filters)")
    log.info(
        "golden %s cost: %d requests (%s per kept item), %d prompt + %d completion tokens for %d kept of %d generated",
        params.name,
        cost["total"]["requests"],
        cost["per_kept_item"]["requests"],
        cost["total"]["prompt_tokens"],
        cost["total"]["completion_tokens"],
        cost["kept"],
        cost["generated"],
    )
    return Filtered(name=params.name, funnel=funnel, judge_model=judge.model, cost=cost)


def split_golden(settings: Settings, params: GoldenParams) -> StagedSet:
    p = paths(settings, params.name)
    meta = _plan_meta(p)
    kept = [GoldenItem.model_validate(r) for r in read_jsonl(p.kept)]
    rejected = read_jsonl(p.filter_rejected)
    human = [GoldenItem.model_validate(r) for r in read_jsonl(p.human)]
    baseline_manifest = read_manifest(p.released_manifest) if p.released_items.exists() else None
    baseline = read_items(p.released_items) if baseline_manifest else None
    current = set(meta["current_chunk_ids"])
    result = assemble(
        kept,
        human,
        baseline,
        current,
        dev_fraction=params.dev_fraction,
        min_test=settings.gate_min_pairs,
    )

    decisions = [d for path in p.decision_files for d in read_decisions(path)[0]]
    pending = set(json.loads(p.pending_review.read_text())) if p.pending_review.exists() else set()
    items, human_rejected = apply_decisions(result.items, decisions, pending)

    reset_dir(p.staged)
    write_items(p.staged_items, items)
    write_jsonl(p.staged_rejected, rejected + human_rejected)
    filtered = json.loads(p.funnel.read_text())
    strata = Counter((i.split, i.qtype, i.language) for i in items)
    shortfalls = floor_shortfalls(items, settings.gate_min_pairs, meta["by_kind"].get("tool", 0))
    for line in shortfalls:
        log.warning("golden %s: %s", params.name, line)
    splits = dict(sorted(Counter(i.split for i in items).items()))
    manifest = {
        "name": params.name,
        "corpus_version": meta["corpus_version"],
        "created_at": meta["created_at"],
        "items": len(items),
        "splits": splits,
        "strata": [
            {"split": s, "qtype": q, "language": lang, "n": n}
            for (s, q, lang), n in sorted(strata.items())
        ],
        "sources": dict(sorted(Counter(i.source for i in items).items())),
        "funnel": filtered["funnel"],
        "judge_model": filtered["judge_model"],
        "cost": filtered.get("cost"),
        "human_rejected_ids": sorted(r["item_id"] for r in human_rejected),
        "generator_models": sorted({i.generator_model for i in items}),
        "baseline_version": baseline_manifest.get("version") if baseline_manifest else None,
        "baseline_test_ids": sorted(test_split_ids(baseline)) if baseline else None,
        "stale": sorted(i.item_id for i in result.stale),
        "replacements": dict(sorted(result.replacements.items())),
        "test_floor": settings.gate_min_pairs,
        "test_floor_additions": sorted(result.floor_additions),
        "test_shortfalls": shortfalls,
        "planned": meta["by_kind"],
        "params": params.model_dump(),
    }
    write_manifest(p.staged_manifest, manifest)
    p.staged_chunk_ids.write_text(json.dumps(meta["current_chunk_ids"]))
    log.info(
        "golden %s: %d items %s, %d stale replaced, %d human-rejected",
        params.name,
        len(items),
        splits,
        len(result.stale),
        len(human_rejected),
    )
    return StagedSet(
        name=params.name, items=len(items), splits=splits, stale=len(result.stale), staged=p.staged
    )


def validate_golden(settings: Settings, name: str) -> ValidationPassed:
    from pipelines.golden.quality import validate_golden_dataset

    p = paths(settings, name)
    return validate_golden_dataset(p).passed_or_raise(
        f"the released version of golden set {name!r}", p.staged
    )


def release_golden(settings: Settings, name: str) -> Release:
    """Promote the staged set into place, `dvc add` + `dvc push` it and tag `golden/<name>/vN` in
    the workspace.

    A release killed after its promotion leaves a released set whose manifest names a version with
    no tag, and whose `.dvc` file names the previous one: readers refuse it (`released_version`),
    and the next release completes it first, under the version its manifest names, before it
    compares the staged set with it.
    """
    from pipelines.core.versioning import (
        ensure_workspace,
        has_tag,
        latest_tag,
        tag,
        version_directory,
        workspace_lock,
    )

    workspace = Workspace.from_settings(settings)
    p = workspace.golden(name)
    ensure_workspace(workspace, settings.resolved_dvc_remote)
    with workspace_lock(
        workspace
    ):  # from reading the latest tag to writing the next: two releases never both take vN
        unfinished = unfinished_release(workspace, name)
        if unfinished:
            log.warning(
                "golden %s %s was promoted by a release that stopped: versioning it now",
                name,
                unfinished,
            )
            data = version_directory(
                workspace, p.released, f"golden {name} {unfinished}", extra_paths=_release_inputs(p)
            )
            if not has_tag(
                workspace, p.tag(unfinished)
            ):  # tagged before: a `.dvc` file older than its record
                tag(
                    workspace, p.tag(unfinished), f"golden set {name} {unfinished} (md5 {data.md5})"
                )
        current = latest_tag(workspace, p.tag_prefix)
        staged_sha = file_sha256(p.staged_items) if p.staged_items.exists() else None
        if (
            current
            and p.released_items.exists()
            and staged_sha in (None, file_sha256(p.released_items))
        ):
            # None: the staged set was promoted by a release that stopped after it (a retried task)
            log.info("golden %s unchanged since %s: nothing to release", name, current)
            version = current.rsplit("/", 1)[-1]
        else:
            version = f"v{int(current.removeprefix(p.tag_prefix)) + 1 if current else 1}"
            manifest = read_manifest(p.staged_manifest)
            p.staged_chunk_ids.unlink(missing_ok=True)
            write_manifest(
                p.staged_manifest,
                {**{k: v for k, v in manifest.items() if k != "files"}, "version": version},
            )
            promote(p.staged, p.released)
            data = version_directory(
                workspace, p.released, f"golden {name} {version}", extra_paths=_release_inputs(p)
            )
            tag(workspace, p.tag(version), f"golden set {name} {version} (md5 {data.md5})")
    manifest = read_manifest(p.released_manifest)
    return Release(
        name=name,
        version=version,
        tag=p.tag(version),
        items=manifest["items"],
        corpus_version=manifest["corpus_version"],
    )


def _release_inputs(p: GoldenPaths) -> list[Path]:
    """The small text inputs committed with a release: hand-written items and the review's files."""
    return [p.human, p.pending_review, p.filter_verdicts, *p.decision_files]


def unfinished_release(workspace: Workspace, name: str) -> str | None:
    """The version a promoted release's manifest names when its versioning did not finish (no tag,
    or a `.dvc` file that names other data); None when the release is complete or there is none."""
    from pipelines.core.versioning import has_tag

    p = workspace.golden(name)
    if not p.released_manifest.exists():
        return None
    version = read_manifest(p.released_manifest)["version"]
    try:
        versioned = workspace.release_version(name) is not None
    except StaleVersion:
        versioned = False
    return None if versioned and has_tag(workspace, p.tag(version)) else version


def build_golden(
    settings: Settings, params: GoldenParams, *, logical_date: date, progress=None
) -> GoldenBuild:
    """Every step in order, without Airflow (`ragwatch golden build`)."""
    plan = plan_golden(settings, params, logical_date=logical_date)
    generated = generate_golden(settings, params.name, plan.batches, progress=progress)
    filtered = filter_golden(settings, params)
    staged = split_golden(settings, params)
    validation = validate_golden(settings, params.name)
    release = release_golden(settings, params.name)
    return GoldenBuild(
        plan=plan,
        generated=generated,
        filtered=filtered,
        staged=staged,
        validation=validation,
        release=release,
    )


class HumanImport(BaseModel):
    imported: int
    problems: list[str]
    total: int
    path: Path


def import_human(settings: Settings, name: str, file: Path) -> HumanImport:
    """Validate a hand-written file against the current index and merge it into
    golden/human/<name>.jsonl."""
    from pipelines.golden.human import import_human_items

    p = paths(settings, name)
    with open_corpus_index(settings) as index:
        chunks = list(
            index.chunks(batch_size=4096)
        )  # local mode scans the collection once per page
        corpus_version = index.version()
    report = import_human_items(
        file, chunks, corpus_version=corpus_version, created_at=date.today().isoformat()
    )
    merged = {r["item_id"]: r for r in read_jsonl(p.human)}
    merged.update({i.item_id: i.model_dump(mode="json") for i in report.items})
    write_jsonl(p.human, (merged[k] for k in sorted(merged)))
    return HumanImport(
        imported=len(report.items), problems=report.problems, total=len(merged), path=p.human
    )


class ReviewExport(BaseModel):
    rows: int
    kept: int
    rejected: int
    csv: Path
    jsonl: Path


def export_review(settings: Settings, name: str, out_dir: Path, fraction: float) -> ReviewExport:
    from pipelines.golden.review import review_sample, write_review_files

    p = paths(settings, name)
    kept = read_items(p.released_items)
    rejected = [r for r in read_jsonl(p.released_rejected) if r["reason"] != "human_rejected"]
    rows = review_sample(kept, rejected, fraction)
    csv_path, jsonl_path, key_path = write_review_files(rows, out_dir, name)
    p.reviews.mkdir(parents=True, exist_ok=True)
    verdicts = json.loads(key_path.read_text())
    p.pending_review.write_text(json.dumps(sorted(verdicts), indent=1))
    p.filter_verdicts.write_text(json.dumps(verdicts, indent=1, sort_keys=True))
    key_path.unlink()  # reviewers must not see the filters' verdicts; ragwatch keeps them
    return ReviewExport(
        rows=len(rows),
        kept=sum(v == "kept" for v in verdicts.values()),
        rejected=sum(v == "rejected" for v in verdicts.values()),
        csv=csv_path,
        jsonl=jsonl_path,
    )


class ReviewImport(BaseModel):
    decisions: int
    problems: list[str]
    by_decision: dict[str, int]
    agreement: dict[str, Any]


def import_review(settings: Settings, name: str, file: Path) -> ReviewImport:
    from pipelines.golden.review import agreement

    p = paths(settings, name)
    decisions, problems = read_decisions(file)
    verdicts = json.loads(p.filter_verdicts.read_text()) if p.filter_verdicts.exists() else {}
    unknown = [d.item_id for d in decisions if d.item_id not in verdicts]
    problems += [f"item {i} was not in the exported sample" for i in unknown]
    decisions = [d for d in decisions if d.item_id in verdicts]
    write_jsonl(p.decisions(len(p.decision_files) + 1), ({**d.__dict__} for d in decisions))
    return ReviewImport(
        decisions=len(decisions),
        problems=problems,
        by_decision=dict(sorted(Counter(d.decision for d in decisions).items())),
        agreement=agreement(decisions, verdicts),
    )
