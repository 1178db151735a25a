"""Day partitions of parquet files, staged then published with a directory swap.

A partition is one directory: `part-0.parquet` (the rows), `_quarantine/part-0.parquet`
(unusable rows with a reason) and `_manifest.json` (counts and content hashes). Names that
start with `_` are skipped by pyarrow's dataset discovery, so `golden/traces` reads as a
hive-partitioned dataset of sampled rows only. The files hold no timestamps or paths, so a
rerun with the same inputs writes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

DATA_FILE = "part-0.parquet"
QUARANTINE_DIR = "_quarantine"
MANIFEST = "_manifest.json"
ROW_GROUP_SIZE = 2_000


def partition_path(root: Path, dataset: str, day: date) -> Path:
    return root / "golden" / dataset / f"dt={day.isoformat()}"


def staging_path(root: Path, dataset: str, day: date) -> Path:
    return root / ".staging" / dataset / f"dt={day.isoformat()}"


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


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    files = {
        str(p.relative_to(directory)): file_sha256(p)
        for p in sorted(directory.rglob("*.parquet"))
    }
    body = dict(manifest, files=files)
    (directory / MANIFEST).write_text(json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"{directory} has no {MANIFEST}: it was never staged or published completely")
    return json.loads(path.read_text())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def publish(staged: Path, final: Path) -> None:
    """Replace `final` by `staged` with two renames on one filesystem.

    Readers see the old or the new partition, never a half-written one; if a crash falls
    between the renames, the next publish finds the old one parked and cleans up.
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


def reset_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
