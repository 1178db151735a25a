"""The online eval's coverage step: how much of the day's traffic the golden set covers, and the topics it misses.

Reads the day's sampled (anonymized) questions — at most `coverage_max_questions`, stratified by app/language
like the judged budget (a floor each, the rest in proportion, the smallest sampling keys, so a rerun embeds the
same questions) — and the released golden set's questions; embeds both with the run's embedding model,
calibrates the threshold (threshold.py), estimates coverage (estimate.py) and clusters the uncovered questions
(clusters.py). The result goes to `coverage.json` in the run folder; finalize publishes it (run params,
report, gauges) and queues the largest uncovered topics in the review inbox, which the next golden build's
trace questions start from. A coverage that cannot be measured (no released golden set, no threshold) is
`failed` with the reason, and the eval goes on.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from pipelines.evaluation.coverage.clusters import cluster_uncovered
from pipelines.evaluation.coverage.estimate import coverage_by_stratum, nearest_golden
from pipelines.evaluation.coverage.result import GoldenCoverage
from pipelines.evaluation.coverage.threshold import calibrate_threshold
from pipelines.evaluation.runs.folder import read_meta
from pipelines.evaluation.runs.online_selection import read_judged, select_budget, stratum_of
from pipelines.files import atomic_write_text
from pipelines.golden.dataset import default_golden_name, load_golden_items, released_version
from pipelines.models.embeddings import build_embedder
from pipelines.native_heap import return_freed_memory
from pipelines.settings import Settings
from pipelines.workspace import RunPaths, Workspace

log = logging.getLogger(__name__)
COLUMNS = ["trace_id", "app", "language", "question"]
READ_ROWS = 8_192
"""Rows per record batch of the four short columns."""
EMBED_ROWS = 256
"""Questions per embedding call: the log says how far it got after each."""
LOG_EVERY_S = 30.0


def measure_online_coverage(settings: Settings, run_dir: Path) -> GoldenCoverage:
    """Coverage of the run's day by the released golden set, written to the run folder's coverage.json."""
    run = RunPaths(run_dir)
    meta = read_meta(run)
    parts = Workspace.from_settings(settings).traces_partition(meta.logical_date).parts
    coverage = measure_day_coverage(settings, parts)
    atomic_write_text(run.coverage, coverage.model_dump_json(indent=1))
    day = coverage.day
    if coverage.status == "ok" and day is not None and day.ratio is not None:
        log.info("golden coverage of %s: %.3f [%.3f, %.3f] of %d questions, %d uncovered topics", meta.logical_date,
                 day.ratio, day.ci_low, day.ci_high, day.questions, len(coverage.clusters))  # fmt: skip
    else:
        log.info("golden coverage of %s: not measured: %s", meta.logical_date, coverage.reason)
    return coverage


def measure_day_coverage(settings: Settings, parts: list[Path], *, golden: str | None = None) -> GoldenCoverage:
    """Coverage of a day's partition (its part files) by the released golden set `golden` (default: params.yaml's)."""
    name = golden or default_golden_name(settings)
    common = dict(golden=name, max_questions=settings.coverage_max_questions,
                  min_cluster_size=settings.coverage_min_cluster_size)
    try:
        version = released_version(settings, name)
        items = [i for i in load_golden_items(settings, name) if i.review != "rejected"]
    except FileNotFoundError as exc:
        return GoldenCoverage(status="failed", reason=str(exc), **common)
    embedder = build_embedder(settings)
    golden_vectors = _embed(embedder, [i.question for i in items], "golden questions")
    threshold = calibrate_threshold(items, golden_vectors, setting=settings.coverage_threshold)
    common.update(golden_version=version, golden_questions=len(items), threshold=threshold)
    if threshold.value is None:
        return GoldenCoverage(status="failed", reason=f"no similarity threshold: {threshold.note}", **common)
    selection = select_budget(parts, max_traces=settings.coverage_max_questions,
                              min_per_stratum=settings.online_min_per_stratum, noise_share=0.0)  # fmt: skip
    rows = list(read_judged(parts, selection.judged, columns=COLUMNS, read_rows=READ_ROWS))
    vectors = _embed(embedder, [r["question"] for r in rows], "the day's questions")
    matches = nearest_golden(vectors, [r["language"] for r in rows], golden_vectors, [i.language for i in items])
    covered = matches.covered(threshold.value)
    strata = [stratum_of(r["app"], r["language"]) for r in rows]
    day_traces = {s.stratum: s.day_traces for s in selection.counts.strata}
    by_stratum = coverage_by_stratum(strata, covered, day_traces)
    embedded = {s.stratum: s.questions for s in by_stratum}
    weights = np.array([day_traces[s] / embedded[s] for s in strata])
    uncovered = np.flatnonzero(~covered)
    clusters = cluster_uncovered(vectors[uncovered], [rows[i] for i in uncovered], weights[uncovered],
                                 similarity=threshold.topic_similarity, day_traces=selection.counts.day_traces,
                                 min_cluster_size=settings.coverage_min_cluster_size)  # fmt: skip
    return_freed_memory()
    return GoldenCoverage(status="ok", **common, strata=by_stratum, clusters=clusters,
                          unclustered=len(uncovered) - sum(c.questions for c in clusters))  # fmt: skip


def read_coverage(run: RunPaths) -> GoldenCoverage | None:
    return GoldenCoverage.model_validate_json(run.coverage.read_text()) if run.coverage.exists() else None


def _embed(embedder, texts: list[str], what: str) -> np.ndarray:
    """Normalised vectors of `texts`, one row each, logging the count every LOG_EVERY_S seconds."""
    vectors, logged = [], time.monotonic()
    for start in range(0, len(texts), EMBED_ROWS):
        vectors += embedder.embed(texts[start : start + EMBED_ROWS])
        if time.monotonic() - logged > LOG_EVERY_S:
            log.info("golden coverage: embedded %d of %d %s", len(vectors), len(texts), what)
            logged = time.monotonic()
    return np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1) if texts else np.zeros((0, 1))
