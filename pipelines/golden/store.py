"""Where a golden build keeps its files in the data workspace, and how items are (de)serialized."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.records import GOLDEN_SCHEMA, GoldenItem

ITEMS_FILE = "items.parquet"
REJECTED_FILE = "rejected.jsonl"


@dataclass(frozen=True)
class GoldenPaths:
    workspace: Path
    name: str

    @property
    def build(self) -> Path:
        return self.workspace / "golden" / "build" / self.name

    @property
    def plan(self) -> Path:
        return self.build / "plan.jsonl"

    @property
    def parts(self) -> Path:
        return self.build / "parts"

    @property
    def filtered(self) -> Path:
        return self.build / "filtered"

    @property
    def staged(self) -> Path:
        return self.build / "staged"

    @property
    def published(self) -> Path:
        return self.workspace / "golden" / "datasets" / self.name

    @property
    def published_relative(self) -> Path:
        return self.published.relative_to(self.workspace)

    @property
    def human(self) -> Path:
        return self.workspace / "golden" / "human" / f"{self.name}.jsonl"

    @property
    def reviews(self) -> Path:
        return self.workspace / "golden" / "reviews" / self.name

    @property
    def corpus_record(self) -> Path:
        return self.workspace / "golden" / "corpus.json"


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def items_to_rows(items: Sequence[GoldenItem]) -> list[dict]:
    return [item.model_dump(mode="json") for item in items]


def write_items_parquet(path: Path, items: Sequence[GoldenItem]) -> None:
    rows = []
    for item in items:
        row = item.model_dump(mode="json")
        row["expected_args"] = None if item.expected_args is None else json.dumps(item.expected_args, ensure_ascii=False, sort_keys=True)
        rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=GOLDEN_SCHEMA), path, compression="zstd")


def read_items_parquet(path: Path) -> list[GoldenItem]:
    items = []
    for row in pq.read_table(path).to_pylist():
        row["expected_args"] = None if row["expected_args"] is None else json.loads(row["expected_args"])
        items.append(GoldenItem.model_validate(row))
    return items
