"""Hand-written golden items without a language column take the language their question is written
in, among the configured ones, else `und`; a language the file states is kept."""

from __future__ import annotations

import csv
from pathlib import Path

from pipelines.core.records import Chunk, content_hash
from pipelines.golden.human import import_human_items

TEXT = "Die Sicherung des Index läuft jede Nacht um zwei Uhr und wird dreißig Tage lang aufbewahrt."
CHUNK = Chunk(
    chunk_id="sicherung#1",
    document="sicherung",
    section="Sicherung",
    ordinal=0,
    type="md",
    date="2026-12-01",
    language="de",
    text=TEXT,
    content_hash=content_hash(TEXT),
)
ROWS = [
    ("Wann läuft die Sicherung des Index?", "Jede Nacht um zwei Uhr.", ""),
    ("A quina hora s'executa la còpia de seguretat de l'índex?", "Cada nit a les dues.", ""),
    ("Quand la sauvegarde de l'index est-elle lancée ?", "Chaque nuit à deux heures.", ""),
    ("インデックスのバックアップはいつ実行されますか？", "毎晩2時です。", ""),
    ("Quando viene eseguito il backup dell'indice?", "Ogni notte alle due.", ""),
    ("Quando viene eseguito il backup dell'indice?", "Ogni notte alle due.", "it"),
]


def test_each_item_takes_its_questions_language_or_the_one_the_file_states(tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "reference_answer", "gold_chunk_ids", "language"])
        writer.writerows(
            [question, answer, CHUNK.chunk_id, language] for question, answer, language in ROWS
        )
    report = import_human_items(
        path, [CHUNK], corpus_version="v1", created_at="2026-12-05T00:00:00Z"
    )
    assert report.problems == []
    # Italian is not among the default languages: `und` (its own stratum), not the nearest one
    # configured.
    assert [item.language for item in report.items] == ["de", "ca", "fr", "und", "und", "it"]
