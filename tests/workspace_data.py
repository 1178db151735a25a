"""Small published data for the versioning tests: a day's trace partition and a staged golden set, in their real formats."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.golden.dataset import write_items
from pipelines.records import GoldenItem
from pipelines.stores.partitions import write_manifest
from pipelines.workspace import Workspace


def write_promoted_partition(workspace: Workspace, day: date, rows: int = 20) -> Path:
    """A promoted partition of `day` (what `promote_trace_sample` leaves), relative to the workspace."""
    paths = workspace.traces_partition(day)
    paths.quarantine_part(0).parent.mkdir(parents=True)
    table = pa.table({"trace_id": [f"{day}-{i}" for i in range(rows)], "question": [f"question {i} of {day}?" for i in range(rows)]})
    pq.write_table(table, paths.part(0))
    pq.write_table(table.slice(0, 0).append_column("reason", pa.array([], pa.string())), paths.quarantine_part(0))
    write_manifest(paths.manifest, {"day": day.isoformat(), "sampled": rows, "quarantined": 0})
    return workspace.relative(paths.root)


def write_staged_golden(workspace: Workspace, name: str, items: int = 6) -> list[GoldenItem]:
    """A staged golden set (what `split_golden` leaves for validation and release)."""
    p = workspace.golden(name)
    golden = [GoldenItem(item_id=f"item-{i}", question=f"question {i}?", reference_answer=f"answer {i}", qtype="single_hop",
                         language="en", source="corpus", source_ref=f"doc.md#s/{i}", split="test" if i % 3 else "dev",
                         generator_model="offline", corpus_version="corpus-1", created_at="2026-11-30")
              for i in range(items)]  # fmt: skip
    write_items(p.staged_items, golden)
    p.staged_rejected.write_text("")
    write_manifest(p.staged_manifest, {"name": name, "items": items, "corpus_version": "corpus-1"})
    return golden
