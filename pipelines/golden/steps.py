"""The golden-set build as steps with explicit inputs and outputs (Airflow tasks, dvc stages, CLI).

plan -> generate (in batches) -> filter -> split -> validate -> publish. Steps exchange names,
counts and paths; the data stays in the workspace.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipelines.golden.filters import filter_items
from pipelines.golden.generate import generate_items
from pipelines.golden.plan import Job, pick_trace_questions, plan_jobs, position_key
from pipelines.golden.review import apply_decisions, read_decisions
from pipelines.golden.split import assemble, test_split_ids
from pipelines.golden.store import (
    ITEMS_FILE, REJECTED_FILE, GoldenPaths, items_to_rows, read_items_parquet, read_jsonl, write_items_parquet,
    write_jsonl,
)  # fmt: skip
from pipelines.models.llm import build_llm, check_models_differ
from pipelines.records import GoldenItem
from pipelines.settings import Settings
from pipelines.stores.partitions import file_sha256, publish, read_manifest, reset_dir, write_manifest
from pipelines.text import sentences

log = logging.getLogger(__name__)


class GoldenValidationFailed(RuntimeError):
    """The staged golden set broke an expectation; nothing was published."""


def paths(settings: Settings, name: str) -> GoldenPaths:
    return GoldenPaths(settings.resolved_workspace, name)


def open_corpus_index(settings: Settings):
    """Imported lazily: DAG files import this module at parse time, and qdrant-client is heavy."""
    from pipelines.stores.corpus import CorpusIndex

    return CorpusIndex(settings)


def recent_trace_rows(workspace: Path, until: date, days: int) -> list[dict[str, Any]]:
    rows = []
    for offset in range(1, days + 1):
        part = workspace / "golden" / "traces" / f"dt={until - timedelta(days=offset)}" / "part-0.parquet"
        if part.exists():
            rows += pq.read_table(part, columns=["trace_id", "question", "app", "language"]).to_pylist()
    return rows


def plan_golden(settings: Settings, params: dict[str, Any], *, logical_date: date) -> dict[str, Any]:
    p = paths(settings, params["name"])
    traces = pick_trace_questions(recent_trace_rows(p.workspace, logical_date, params["trace_days"]), params["from_traces"])
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

        jobs = plan_jobs(chunks, params, related=related, traces=traces,
                         trace_contexts=lambda q: index.get([h.chunk_id for h in index.search(q, k=5, mode="hybrid")]))  # fmt: skip
    reset_dir(p.build)
    write_jsonl(p.plan, (j.model_dump() for j in jobs))
    meta = {"name": params["name"], "corpus_version": corpus_version, "created_at": logical_date.isoformat(),
            "jobs": len(jobs), "by_kind": dict(sorted(Counter(j.kind for j in jobs).items())),
            "current_chunk_ids": sorted(c.chunk_id for c in chunks)}  # fmt: skip
    (p.build / "plan.meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    size = params["batch_size"]
    batches = [[start, min(start + size, len(jobs))] for start in range(0, len(jobs), size)]
    log.info("planned %d jobs %s over corpus %s", len(jobs), meta["by_kind"], corpus_version)
    return {"name": params["name"], "jobs": len(jobs), "by_kind": meta["by_kind"], "batches": batches,
            "corpus_version": corpus_version}  # fmt: skip


def _plan_meta(p: GoldenPaths) -> dict[str, Any]:
    return json.loads((p.build / "plan.meta.json").read_text())


def generate_golden_batch(settings: Settings, name: str, start: int, end: int) -> dict[str, Any]:
    p = paths(settings, name)
    meta = _plan_meta(p)
    jobs = [Job.model_validate(row) for row in read_jsonl(p.plan)[start:end]]
    llm = build_llm(settings, "generator")
    items, failures = generate_items(llm, jobs, corpus_version=meta["corpus_version"], created_at=meta["created_at"])
    write_jsonl(p.parts / f"part-{start:06d}.jsonl", items_to_rows(items))
    write_jsonl(p.parts / f"failed-{start:06d}.jsonl", failures)
    llm.counters.log(log, f"generator batch {start}-{end}")
    return {"batch": [start, end], "items": len(items), "failed_jobs": len(failures), "llm": llm.counters.summary()}


def generate_golden(settings: Settings, name: str, batches: list[list[int]], progress=None) -> dict[str, Any]:
    totals = Counter()
    for i, (start, end) in enumerate(batches, start=1):
        result = generate_golden_batch(settings, name, start, end)
        totals.update(items=result["items"], failed_jobs=result["failed_jobs"])
        if progress:
            progress(i, len(batches))
    return dict(totals)


def filter_golden(settings: Settings, params: dict[str, Any]) -> dict[str, Any]:
    from pipelines.models.embeddings import build_embedder

    p = paths(settings, params["name"])
    candidates = [GoldenItem.model_validate(r) for part in sorted(p.parts.glob("part-*.jsonl")) for r in read_jsonl(part)]
    failed_jobs = [r for part in sorted(p.parts.glob("failed-*.jsonl")) for r in read_jsonl(part)]
    check_models_differ(settings, log)
    judge = build_llm(settings, "judge")
    embedder = build_embedder(settings)
    outcome = filter_items(candidates, judge, embedder.embed, near_duplicate_cosine=params["near_duplicate_cosine"])
    funnel = {"failed_generation_jobs": len(failed_jobs), **outcome.funnel,
              "rejected_by_reason": dict(sorted(Counter(r["reason"] for r in outcome.rejected).items()))}  # fmt: skip
    reset_dir(p.filtered)
    write_jsonl(p.filtered / "kept.jsonl", items_to_rows(outcome.kept))
    write_jsonl(p.filtered / "rejected.jsonl", outcome.rejected)
    (p.filtered / "funnel.json").write_text(json.dumps({"funnel": funnel, "judge_model": judge.model}, indent=1, sort_keys=True))
    judge.counters.log(log, "judge (filters)")
    return {"name": params["name"], "funnel": funnel, "judge_model": judge.model}


def split_golden(settings: Settings, params: dict[str, Any]) -> dict[str, Any]:
    p = paths(settings, params["name"])
    meta = _plan_meta(p)
    kept = [GoldenItem.model_validate(r) for r in read_jsonl(p.filtered / "kept.jsonl")]
    rejected = read_jsonl(p.filtered / "rejected.jsonl")
    human = [GoldenItem.model_validate(r) for r in read_jsonl(p.human)]
    baseline_manifest = read_manifest(p.published) if (p.published / ITEMS_FILE).exists() else None
    baseline = read_items_parquet(p.published / ITEMS_FILE) if baseline_manifest else None
    current = set(meta["current_chunk_ids"])
    result = assemble(kept, human, baseline, current, dev_fraction=params["dev_fraction"])

    decisions = []
    for path in sorted(p.reviews.glob("decisions-*.jsonl")):
        decisions += read_decisions(path)[0]
    pending = set(json.loads((p.reviews / "pending.json").read_text())) if (p.reviews / "pending.json").exists() else set()
    items, human_rejected = apply_decisions(result.items, decisions, pending)

    reset_dir(p.staged)
    write_items_parquet(p.staged / ITEMS_FILE, items)
    write_jsonl(p.staged / REJECTED_FILE, rejected + human_rejected)
    filtered = json.loads((p.filtered / "funnel.json").read_text())
    strata = Counter((i.split, i.qtype, i.language) for i in items)
    manifest = {
        "name": params["name"], "corpus_version": meta["corpus_version"], "created_at": meta["created_at"],
        "items": len(items), "splits": dict(sorted(Counter(i.split for i in items).items())),
        "strata": [{"split": s, "qtype": q, "language": lang, "n": n} for (s, q, lang), n in sorted(strata.items())],
        "sources": dict(sorted(Counter(i.source for i in items).items())),
        "funnel": filtered["funnel"], "judge_model": filtered["judge_model"], "human_rejected_ids": sorted(r["item_id"] for r in human_rejected),
        "generator_models": sorted({i.generator_model for i in items}),
        "baseline_version": baseline_manifest.get("version") if baseline_manifest else None,
        "baseline_test_ids": sorted(test_split_ids(baseline)) if baseline else None,
        "stale": sorted(i.item_id for i in result.stale),
        "replacements": dict(sorted(result.replacements.items())),
        "planned": meta["by_kind"], "params": {k: params[k] for k in sorted(params)},
    }  # fmt: skip
    write_manifest(p.staged, manifest)
    (p.staged / "_current_chunk_ids.json").write_text(json.dumps(meta["current_chunk_ids"]))
    log.info("golden %s: %d items %s, %d stale replaced, %d human-rejected",
             params["name"], len(items), manifest["splits"], len(result.stale), len(human_rejected))
    return {"name": params["name"], "items": len(items), "splits": manifest["splits"], "stale": len(result.stale),
            "staged": str(p.staged)}  # fmt: skip


def validate_golden(settings: Settings, name: str) -> dict[str, Any]:
    from pipelines.quality import validate_golden_dataset

    staged = paths(settings, name).staged
    report = validate_golden_dataset(staged)
    if not report.success:
        raise GoldenValidationFailed(
            f"{report.describe()}\nNothing was published; the previous version of golden set {name!r} is intact. "
            f"The staged files stay in {staged} for inspection."
        )
    return {"name": name, "validation": f"passed ({len(report.checks)} expectations)"}


def publish_golden(settings: Settings, name: str) -> dict[str, Any]:
    """Swap the staged set in, then `dvc add` + `dvc push` and tag `golden/<name>/vN` in the workspace."""
    from pipelines.versioning import ensure_workspace, latest_tag, tag, version_directory

    p = paths(settings, name)
    ensure_workspace(p.workspace, settings.resolved_dvc_remote)
    staged_sha = file_sha256(p.staged / ITEMS_FILE)
    current = latest_tag(p.workspace, f"golden/{name}/v")
    if current and (p.published / ITEMS_FILE).exists() and file_sha256(p.published / ITEMS_FILE) == staged_sha:
        log.info("golden %s unchanged since %s: nothing to publish", name, current)
        version = current.rsplit("/", 1)[-1]
    else:
        version = f"v{int(current.rsplit('/v', 1)[-1]) + 1 if current else 1}"
        manifest = read_manifest(p.staged)
        (p.staged / "_current_chunk_ids.json").unlink(missing_ok=True)
        write_manifest(p.staged, {**{k: v for k, v in manifest.items() if k != "files"}, "version": version})
        publish(p.staged, p.published)
        data = version_directory(p.workspace, p.published_relative, f"golden {name} {version}",
                                 extra_paths=[p.human, *sorted(p.reviews.glob("*"))])  # fmt: skip
        tag(p.workspace, f"golden/{name}/{version}", f"golden set {name} {version} (md5 {data.md5})")
    manifest = read_manifest(p.published)
    return {"name": name, "version": version, "tag": f"golden/{name}/{version}", "items": manifest["items"],
            "corpus_version": manifest["corpus_version"]}  # fmt: skip


def build_golden(settings: Settings, params: dict[str, Any], *, logical_date: date, progress=None) -> dict[str, Any]:
    """Every step in order, without Airflow (`ragwatch golden build`)."""
    plan = plan_golden(settings, params, logical_date=logical_date)
    generated = generate_golden(settings, params["name"], plan["batches"], progress=progress)
    filtered = filter_golden(settings, params)
    split = split_golden(settings, params)
    validated = validate_golden(settings, params["name"])
    published = publish_golden(settings, params["name"])
    return {**plan, **generated, **filtered, **split, **validated, **published}


def import_human(settings: Settings, name: str, file: Path) -> dict[str, Any]:
    """Validate a hand-written file against the current index and merge it into golden/human/<name>.jsonl."""
    from pipelines.golden.human import import_human_items

    p = paths(settings, name)
    with open_corpus_index(settings) as index:
        chunks = list(index.chunks())
        corpus_version = index.version()
    report = import_human_items(file, chunks, corpus_version=corpus_version, created_at=date.today().isoformat())
    merged = {r["item_id"]: r for r in read_jsonl(p.human)}
    merged.update({i.item_id: i.model_dump(mode="json") for i in report.items})
    write_jsonl(p.human, (merged[k] for k in sorted(merged)))
    return {"imported": len(report.items), "problems": report.problems, "total": len(merged), "path": str(p.human)}


def export_review(settings: Settings, name: str, out_dir: Path, fraction: float) -> dict[str, Any]:
    from pipelines.golden.review import review_sample, write_review_files

    p = paths(settings, name)
    kept = read_items_parquet(p.published / ITEMS_FILE)
    rejected = [r for r in read_jsonl(p.published / REJECTED_FILE) if r["reason"] != "human_rejected"]
    rows = review_sample(kept, rejected, fraction)
    csv_path, jsonl_path, key_path = write_review_files(rows, out_dir, name)
    p.reviews.mkdir(parents=True, exist_ok=True)
    verdicts = json.loads(key_path.read_text())
    (p.reviews / "pending.json").write_text(json.dumps(sorted(verdicts), indent=1))
    (p.reviews / "filter-verdicts.json").write_text(json.dumps(verdicts, indent=1, sort_keys=True))
    key_path.unlink()  # reviewers must not see the filters' verdicts; ragwatch keeps them
    return {"rows": len(rows), "kept": sum(v == "kept" for v in verdicts.values()),
            "rejected": sum(v == "rejected" for v in verdicts.values()), "csv": str(csv_path), "jsonl": str(jsonl_path)}  # fmt: skip


def import_review(settings: Settings, name: str, file: Path) -> dict[str, Any]:
    from pipelines.golden.review import agreement

    p = paths(settings, name)
    decisions, problems = read_decisions(file)
    verdicts_path = p.reviews / "filter-verdicts.json"
    verdicts = json.loads(verdicts_path.read_text()) if verdicts_path.exists() else {}
    unknown = [d.item_id for d in decisions if d.item_id not in verdicts]
    problems += [f"item {i} was not in the exported sample" for i in unknown]
    decisions = [d for d in decisions if d.item_id in verdicts]
    existing = sorted(p.reviews.glob("decisions-*.jsonl"))
    write_jsonl(p.reviews / f"decisions-{len(existing) + 1:04d}.jsonl", ({**d.__dict__} for d in decisions))
    return {"decisions": len(decisions), "problems": problems,
            "by_decision": dict(sorted(Counter(d.decision for d in decisions).items())),
            "agreement": agreement(decisions, verdicts)}  # fmt: skip
