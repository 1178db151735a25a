"""File helpers every stage shares: JSON Lines, atomic writes, content hashes, fresh directories."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a CSV cell as a formula (CSV injection, OWASP)."""


def spreadsheet_safe(value):
    """A CSV cell a spreadsheet shows as text: one starting like a formula gets a leading `'`."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def from_spreadsheet(value):
    """Undo `spreadsheet_safe` on a cell read back from a CSV people edited."""
    if isinstance(value, str) and len(value) > 1 and value[0] == "'" and value[1] in FORMULA_START:
        return value[1:]
    return value


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    """One JSON object per line, keys sorted, UTF-8 kept readable; returns the rows written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> list[dict]:
    """The objects of a JSON Lines file; a missing file reads as empty."""
    if not path.exists():
        return []
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def atomic_write_text(path: Path, text: str) -> Path:
    """Write through a temporary file and a rename: readers see the old or the new file, never
    half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def reset_dir(path: Path) -> Path:
    """An empty directory at `path`, whatever was there."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def write_filled_in_rows(path: Path, columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> int:
    """A CSV for people to fill in, which `read_filled_in_rows` reads back: user and model text is
    in it, so every cell is `spreadsheet_safe` ("=HYPERLINK(...)" stays text); keys beyond `columns`
    are left out. Rows written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        written = 0
        for row in rows:
            writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
            written += 1
    return written


def read_filled_in_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a file people filled in: a CSV (as a spreadsheet saves it) or JSON lines."""
    # utf-8-sig: spreadsheets save CSV with a byte-order mark, which would otherwise rename the
    # first column ("\ufefftrace_id") and silently drop the link to the trace.
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8-sig") as fh:
            return [{k: from_spreadsheet(v) for k, v in row.items()} for row in csv.DictReader(fh)]
    rows = []
    # utf-8-sig reads a byte-order mark; "\n" only: `splitlines` would also cut at U+2028 or U+0085,
    # which JSON strings may hold unescaped.
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").split("\n"), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
    return rows
