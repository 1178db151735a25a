"""The demo's coverage against its designed truth: the day the online eval reads, measured by the
coverage step with the threshold and error rates learnt on the demo's imported user questions.

Real parts: the demo's traffic of that day, the demo corpus as the indexer chunks it, `ragwatch
golden import`'s reader, the shipped embedding model, the coverage step. The golden build's
generated items are stood in for by items on every seventh chunk of the corpus (their passages
are what the user questions' are told from); the anonymizer is skipped.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.core.records import GoldenItem
from pipelines.core.user_question import QUESTION_IS_PROMPT
from pipelines.core.workspace import Workspace
from pipelines.corpus.chunking import load_chunks
from pipelines.evaluation.coverage.daily import distinct_questions, measure_day_coverage
from pipelines.evaluation.coverage.estimate import coverage_by_stratum
from pipelines.golden.dataset import write_items
from pipelines.golden.human import import_human_items
from pipelines.stores.partitions import write_manifest
from pipelines.traces.parse import Rejection, parse_row
from ragwatch_harness.demo.corpus_files import write_demo_corpus
from ragwatch_harness.demo.reviewed import asked_passages, write_reviewed
from ragwatch_harness.demo.seed import DESIGNED_COVERAGE, NEW_TOPIC_SHARE, demo_traffic
from ragwatch_harness.demo.traces import day_traces
from tests.support.memo_embedder import memoized_coverage_embedder

DAY = date(2026, 12, 6)
PER_DAY, SEED = 300, 7
"""`ragwatch demo seed`'s defaults."""


def demo_golden_set(tmp_path) -> list[GoldenItem]:
    """The demo's imported user questions, plus generated items on every seventh indexed chunk."""
    write_demo_corpus(tmp_path / "corpus")
    chunks = load_chunks(tmp_path / "corpus")
    report = import_human_items(
        write_reviewed(tmp_path / "reviewed.jsonl"),
        chunks,
        corpus_version="demo",
        created_at=str(DAY),
    )
    assert not report.problems
    generated = [
        GoldenItem(
            item_id=f"generated-{k}-{language}",
            question=f"What does {chunk.section} say?",
            reference_answer="…",
            qtype="single_hop",
            language=language,
            source="corpus",
            source_ref=chunk.chunk_id,
            gold_chunk_ids=[chunk.chunk_id],
            reference_contexts=[chunk.text],
            generator_model="offline",
            corpus_version="demo",
            created_at=str(DAY),
        )
        for k, chunk in enumerate(chunks[::7])
        for language in ("en", "es")
    ]
    return report.items + generated


def test_a_question_quoting_its_passage_is_never_taken_for_a_prompt():
    # A quote as long as a retrieved passage's opening would send the trace to quarantine.
    rows = demo_traffic(days=1, per_day=PER_DAY, seed=SEED, end=DAY + timedelta(days=1))
    parsed = [parse_row(row, max_field_chars=200_000) for row in rows]
    assert not [p for p in parsed if isinstance(p, Rejection) and p.reason == QUESTION_IS_PROMPT]
    assert sum(not isinstance(p, Rejection) for p in parsed) >= 0.95 * PER_DAY


def test_the_demos_coverage_reads_within_a_tenth_of_its_designed_truth(
    settings, tmp_path, monkeypatch
):
    memoized_coverage_embedder(monkeypatch)
    items = demo_golden_set(tmp_path)
    # Every passage the demo's users ask about is a golden item's source passage, in each language.
    for passage in asked_passages():
        for language in ("en", "es"):
            assert any(
                i.language == language
                and passage.quote in " ".join(i.reference_contexts[0].split())
                for i in items
            )
    workspace = Workspace.from_settings(settings)
    paths = workspace.golden("demo")
    write_items(paths.released_items, items)
    write_manifest(paths.released_manifest, {"name": "demo", "version": "v1"})
    traces = day_traces(DAY, per_day=PER_DAY, seed=SEED, new_topic_share=NEW_TOPIC_SHARE)
    partition = workspace.traces_partition(DAY)
    partition.part(0).parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "trace_id": t.trace.trace_id,
            "app": t.trace.app,
            "language": t.trace.language,
            "question": t.trace.question,
        }
        for t in traces
    ]
    pq.write_table(pa.Table.from_pylist(rows), partition.part(0))

    measured = measure_day_coverage(settings, partition.parts)

    # The truth, in the step's own units: its distinct questions, each covered when it asks about
    # a passage (not packaging), the day's traces weighted as the step weighs them.
    asks = {t.trace.trace_id: t.asked_about for t in traces}
    distinct = distinct_questions(rows)
    strata = [f"{r['app']}/{r['language']}" for r in distinct]
    truly_covered = np.array([asks[r["trace_id"]] is not None for r in distinct])
    truth = coverage_by_stratum(
        strata,
        truly_covered,
        dict(Counter(f"{r['app']}/{r['language']}" for r in rows)),
        np.array([r["traces"] for r in distinct]),
    )[-1].matched
    assert measured.status == "ok", measured.reason
    threshold = measured.threshold
    assert threshold.method == "calibrated" and threshold.positives >= 40
    assert measured.day.questions == len(distinct)
    assert truth == pytest.approx(DESIGNED_COVERAGE, abs=0.06)
    assert abs(measured.day.ratio - truth) <= 0.10, (measured.day, truth, threshold)
    # The packaging questions are the largest uncovered topic.
    top = measured.clusters[0]
    assert all("pip" in r.question for r in top.representatives)
    print(
        f"\ndemo day {DAY}: coverage {measured.day.ratio:.3f} [{measured.day.level_ci_low:.3f}, "
        f"{measured.day.level_ci_high:.3f}] (matched {measured.day.matched:.3f}) against true "
        f"{truth:.3f}, designed {DESIGNED_COVERAGE:.2f}; {threshold.signal} {threshold.value:.3f} "
        f"TPR {threshold.tpr:.2f} FPR {threshold.fpr:.2f} AUC {threshold.auc:.2f} on "
        f"{threshold.positives} user questions; {len(distinct)} distinct questions"
    )
