"""The online eval's coverage step: how much of the day's traffic the golden set covers, and the
topics it misses.

Reads the day's sampled (anonymized) questions — at most `coverage_max_questions` traces, stratified
by app/language like the judged budget (a floor each, the rest in proportion, the smallest sampling
keys, so a rerun embeds the same questions) — folds repeats into distinct questions, and matches
them to the released golden set's reference passages by the signal (the embedding cosine or the
lexical one, signal.py) that best tells the golden set's user questions' own passages from others,
the threshold calibrated on those questions (threshold.py), estimates the matched share
(estimate.py) and corrects it for the matcher's error rates on those questions into the share
covered (correction.py), calibrates the topic cut (topic_cut.py), clusters the uncovered
questions (clusters.py), both on the two signals side by side, and sets apart the topics matched as
often as covered ones, the matcher's misses, from the topics the golden set misses
(topic_gaps.py). The result goes to `coverage.json` in
the run folder; finalize publishes it (run params, report, gauges) and queues the largest uncovered
topics in the review inbox, which the next golden build's trace questions start from. A coverage
that cannot be measured (no released golden set, no calibrated or set threshold) is `failed` with
the reason, and the eval goes on.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from pipelines.core.native_heap import return_freed_memory
from pipelines.core.settings import Settings
from pipelines.core.workspace import RunPaths
from pipelines.evaluation.coverage.clusters import cluster_uncovered
from pipelines.evaluation.coverage.correction import corrected, uncorrectable
from pipelines.evaluation.coverage.estimate import coverage_by_stratum, nearest_golden
from pipelines.evaluation.coverage.signal import MatchSignal, choose_signal
from pipelines.evaluation.coverage.threshold import document_of, evidence_items, golden_passages
from pipelines.evaluation.coverage.topic_cut import (
    MIN_USER_QUESTIONS,
    calibrate_topic_cut,
    subsample,
)
from pipelines.evaluation.coverage.topic_gaps import weigh_topics
from pipelines.evaluation.online_selection import read_judged, select_budget, stratum_of
from pipelines.evaluation.results.coverage import GoldenCoverage, TopicCut
from pipelines.golden.dataset import default_golden_name, load_golden_items, released_version
from pipelines.models.embeddings import build_embedder

log = logging.getLogger(__name__)
COLUMNS = ["trace_id", "app", "language", "question"]
READ_ROWS = 8_192
"""Rows per record batch of the four short columns."""


def measure_day_coverage(
    settings: Settings, parts: list[Path], *, golden: str | None = None
) -> GoldenCoverage:
    """Coverage of a day's partition (its part files) by the released golden set `golden` (default:
    params.yaml's)."""
    name = golden or default_golden_name(settings)
    common = dict(
        golden=name,
        max_questions=settings.coverage_max_questions,
        min_cluster_size=settings.coverage_min_cluster_size,
    )
    try:
        version = released_version(settings, name)
        items = [i for i in load_golden_items(settings, name) if i.review != "rejected"]
    except FileNotFoundError as exc:
        return GoldenCoverage(status="failed", reason=str(exc), **common)
    embedder = build_embedder(settings)
    passages = golden_passages(items)
    evidence = evidence_items(items)
    signal = choose_signal(embedder, passages, evidence, settings.coverage_threshold)
    threshold = signal.threshold
    common.update(
        golden_version=version,
        golden_questions=len(items),
        golden_passages=len(passages.texts),
        threshold=threshold,
    )
    if threshold.value is None:
        return GoldenCoverage(status="failed", reason=threshold.note, **common)
    selection = select_budget(
        parts,
        max_traces=settings.coverage_max_questions,
        min_per_stratum=settings.online_min_per_stratum,
        noise_share=0.0,
    )
    rows = distinct_questions(
        read_judged(parts, selection.judged, columns=COLUMNS, read_rows=READ_ROWS)
    )
    languages = [r["language"] for r in rows]
    vectors = signal.place([r["question"] for r in rows], languages, "the day's distinct questions")
    matches = nearest_golden(vectors, languages, signal.passage_vectors, passages.languages)
    covered = matches.covered(threshold.value)
    strata = [stratum_of(r["app"], r["language"]) for r in rows]
    asked = np.array([r["traces"] for r in rows], dtype=np.int64)
    day_traces = {s.stratum: s.day_traces for s in selection.counts.strata}
    by_stratum = corrected(coverage_by_stratum(strata, covered, day_traces, asked), threshold)
    embedded = {s.stratum: s.traces for s in by_stratum}
    weights = np.array([day_traces[s] / embedded[s] for s in strata]) * asked
    topic_cut = _topic_cut(signal, items, evidence)
    uncovered = np.flatnonzero(~covered)
    topics = cluster_uncovered(
        signal.describe(
            [rows[i]["question"] for i in uncovered],
            [languages[i] for i in uncovered],
            "uncovered questions",
            placed=vectors[uncovered],
        ),
        [rows[i] for i in uncovered],
        weights[uncovered],
        similarity=topic_cut.similarity,
        day_traces=selection.counts.day_traces,
        min_cluster_size=settings.coverage_min_cluster_size,
    )

    def described(block: np.ndarray) -> np.ndarray:
        return signal.describe(
            [rows[i]["question"] for i in block],
            [languages[i] for i in block],
            "matched questions",
            placed=vectors[block],
        )

    clusters, matcher_misses = weigh_topics(
        topics,
        np.flatnonzero(covered),
        languages,
        weights,
        described,
        similarity=topic_cut.similarity,
        threshold=threshold,
        day_traces=selection.counts.day_traces,
    )
    return_freed_memory()
    return GoldenCoverage(
        status="ok",
        **common,
        topic_cut=topic_cut,
        strata=by_stratum,
        level_note=uncorrectable(threshold),
        clusters=clusters,
        matcher_misses=matcher_misses,
        unclustered=len(uncovered) - sum(t.cluster.questions for t in topics),
    )


def distinct_questions(rows) -> list[dict]:
    """The day's rows folded into distinct questions per app/language (case, spacing and surrounding
    punctuation aside), each keeping its first trace and counting the traces that asked it
    (`traces`): a question asked six times is one piece of evidence about the golden set, not
    six."""
    by_key: dict[tuple[str, str, str], dict] = {}
    for row in rows:
        key = (row["app"], row["language"], _normalised(row["question"]))
        if key in by_key:
            by_key[key]["traces"] += 1
        else:
            by_key[key] = {**row, "traces": 1}
    return list(by_key.values())


def _normalised(question: str) -> str:
    return " ".join(question.casefold().split()).strip(" ?¿!¡.,;:")


def _topic_cut(signal: MatchSignal, items, evidence) -> TopicCut:
    """The topic cut on the user questions when there are enough of them, else on the golden set's
    questions."""

    def documents(pool):
        return [
            document_of(i.gold_chunk_ids[0] if i.gold_chunk_ids else i.source_ref) for i in pool
        ]

    answerable = [k for k, i in enumerate(evidence) if i.gold_chunk_ids]
    if len(answerable) >= MIN_USER_QUESTIONS:
        pool = [evidence[k] for k in answerable]
        return calibrate_topic_cut(
            signal.evidence_topic_vectors[answerable],
            documents(pool),
            [i.language for i in pool],
            [i.item_id for i in pool],
            calibrated_on="user questions",
        )
    pool = subsample(
        [i for i in items if i.gold_chunk_ids and i.qtype in ("single_hop", "multi_hop")]
    )
    vectors = signal.describe(
        [i.question for i in pool], [i.language for i in pool], "golden questions"
    )
    return calibrate_topic_cut(
        vectors,
        documents(pool),
        [i.language for i in pool],
        [i.item_id for i in pool],
        calibrated_on="generated questions",
    )


def read_coverage(run: RunPaths) -> GoldenCoverage | None:
    return (
        GoldenCoverage.model_validate_json(run.coverage.read_text())
        if run.coverage.exists()
        else None
    )
