"""Folders of parquet files with a manifest, staged then promoted into place with a directory swap.

A partition (`PartitionPaths`) holds the rows, the quarantined rows and a manifest (counts and
content hashes). Files hold no timestamps or paths, so a rerun with the same inputs writes the
same bytes. Writing is streamed in fixed-size row groups: memory does not grow with the rows.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.files import file_sha256

ROW_GROUP_SIZE = 2_000


class ParquetRowWriter:
    """Appends dict rows to one parquet file in fixed-size row groups (bounded memory)."""

    def __init__(self, path: Path, schema: pa.Schema):
        self.path, self.schema, self.rows_written = path, schema, 0
        self._buffer: list[dict[str, Any]] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=True)

    def write(self, row: dict[str, Any]) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= ROW_GROUP_SIZE:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self._writer.write_table(pa.Table.from_pylist(self._buffer, schema=self.schema))
            self.rows_written += len(self._buffer)
            self._buffer = []

    def close(self) -> None:
        self._flush()
        if self.rows_written == 0:
            self._writer.write_table(self.schema.empty_table())
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        self.close()


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write `manifest` plus the sha256 of every parquet file in the manifest's folder."""
    folder = path.parent
    files = {str(p.relative_to(folder)): file_sha256(p) for p in sorted(folder.rglob("*.parquet"))}
    body = dict(manifest, files=files)
    path.write_text(json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_manifest(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise FileNotFoundError(f"{path.parent} has no {path.name}: it was never staged or released completely")
    return json.loads(path.read_text())


def promote(staged: Path, final: Path) -> None:
    """Replace the folder `final` by `staged` with two renames on one filesystem.

    Readers see the old or the new folder, never a half-written one; if a crash falls between
    the renames, the next promotion finds the old one parked and cleans up.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    parked = final.with_name(f".{final.name}.old")
    if parked.exists():
        shutil.rmtree(parked)
    if final.exists():
        os.rename(final, parked)
    os.rename(staged, final)
    if parked.exists():
        shutil.rmtree(parked)
