"""A day's spans on disk, grouped by trace, so a file source feeds the same selection path as the SQL store.

Span exports are not ordered by trace: a trace's spans arrive in whichever batch each span ended in, possibly in
different files. Grouping them in memory would hold the whole day. Instead one pass over the files appends every
span near the day to a SQLite file (its own scratch, never the team's data), which then sorts them by trace id on
disk; each trace is assembled once, a trace at a time, to record the keys the selection needs (day, app, language,
feedback, model) and whether it can be used. Memory stays at one decoded export line plus one trace, whatever the
day's size; disk holds the day's spans once.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from itertools import groupby
from pathlib import Path
from typing import Any

from pipelines.stores.trace_sources.assemble import SOURCE_REJECTION, assemble_trace
from pipelines.stores.trace_sources.spans import Damage, Span, utc_from_ns
from pipelines.user_question import NO_RULE, QuestionRule

log = logging.getLogger(__name__)
SPAN_MARGIN = timedelta(days=1)
"""Spans kept around the day: a trace's spans may start after midnight, or its late spans land in tomorrow's file."""
INSERT_ROWS = 5_000
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

SCHEMA = """
CREATE TABLE spans (trace_id TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE damage (trace_id TEXT PRIMARY KEY, start_ns INTEGER, reason TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE traces (trace_id TEXT PRIMARY KEY, ts_ns INTEGER NOT NULL, app TEXT, language TEXT, user_feedback INTEGER,
                     model TEXT, rejection TEXT);
CREATE TABLE counts (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
KEY_COLUMNS = ("app", "language", "user_feedback", "model")


def _ns(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1) * 1_000


def build_span_index(
    path: Path,
    items: Iterable[Span | Damage],
    start: datetime,
    end: datetime,
    *,
    source: str,
    question_rule: QuestionRule = NO_RULE,
) -> Counter:
    """Write the index of the traces whose root span starts in [start, end) to `path` (atomically); the counts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    counts: Counter = Counter()
    low, high = _ns(start - SPAN_MARGIN), _ns(end + SPAN_MARGIN)
    try:
        with sqlite3.connect(scratch) as db:
            db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;" + SCHEMA)
            _load(db, items, low, high, counts)
            db.execute("CREATE INDEX spans_by_trace ON spans (trace_id)")
            _summarise(db, _ns(start), _ns(end), source, question_rule, counts)
            db.executemany("INSERT INTO counts VALUES (?, ?)", sorted(counts.items()))
        db.close()
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)
    return counts


def _load(db: sqlite3.Connection, items: Iterable[Span | Damage], low: int, high: int, counts: Counter) -> None:
    rows: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, Damage):
            counts[f"lines_{item.reason}"] += 1
            log.warning(
                "trace source: %s (%s); its %d traces are quarantined", item.detail, item.reason, len(item.trace_starts)
            )
            for trace_id, start_ns in item.trace_starts.items():
                if start_ns is None or low <= start_ns < high:
                    # The first damage seen names the trace's reason; its surviving spans are kept for the record.
                    db.execute(
                        "INSERT OR IGNORE INTO damage VALUES (?, ?, ?, ?)",
                        (trace_id, start_ns, item.reason, item.detail),
                    )
            continue
        counts["spans_read"] += 1
        if not low <= item.start_ns < high:
            continue
        rows.append((item.trace_id, item.as_json()))
        if len(rows) >= INSERT_ROWS:
            db.executemany("INSERT INTO spans VALUES (?, ?)", rows)
            counts["spans_kept"] += len(rows)
            rows.clear()
    db.executemany("INSERT INTO spans VALUES (?, ?)", rows)
    counts["spans_kept"] += len(rows)


def _summarise(
    db: sqlite3.Connection, start_ns: int, end_ns: int, source: str, question_rule: QuestionRule, counts: Counter
) -> None:
    """One row of selection keys per trace of the day, assembled a trace at a time in trace-id order."""
    pending: list[tuple] = []
    damaged = {row[0]: row[1:] for row in db.execute("SELECT trace_id, start_ns, reason FROM damage")}
    cursor = db.execute("SELECT trace_id, body FROM spans ORDER BY trace_id")
    for trace_id, group in groupby(cursor, key=lambda row: row[0]):
        row = assemble_trace([Span.from_json(body) for _, body in group], source=source, question_rule=question_rule)
        damage = damaged.pop(trace_id, None)
        rejection = damage[1] if damage else (row.get(SOURCE_REJECTION) or (None,))[0]
        ts_ns = _ns(row["ts"]) if row["ts"] else (damage[0] if damage else None)
        if ts_ns is None or not start_ns <= ts_ns < end_ns:
            continue
        counts["traces"] += 1
        counts[f"rejected_{rejection}" if rejection else "assembled"] += 1
        pending.append((trace_id, ts_ns, row["app"], row["language"], row["user_feedback"], row["model"], rejection))
        if len(pending) >= INSERT_ROWS:
            db.executemany("INSERT INTO traces VALUES (?, ?, ?, ?, ?, ?, ?)", pending)
            pending.clear()
    # Traces every span of which was in a damaged line: known by id and start only, placed by that start.
    for trace_id, (start, reason) in damaged.items():
        if start is not None and start_ns <= start < end_ns:
            counts["traces"] += 1
            counts[f"rejected_{reason}"] += 1
            pending.append((trace_id, start, "default", "und", None, None, reason))
    db.executemany("INSERT INTO traces VALUES (?, ?, ?, ?, ?, ?, ?)", pending)


class SpanIndex:
    """Read access to a built index: the selection's keys and the assembled rows of chosen traces."""

    def __init__(self, path: Path, *, source: str, question_rule: QuestionRule = NO_RULE):
        self.path, self.source, self.question_rule = path, source, question_rule
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)

    def counts(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT name, value FROM counts ORDER BY name"))

    def count_by(self, keys: list[str]) -> dict[tuple, int]:
        columns = _columns(keys)
        query = f"SELECT {', '.join(columns) or '1'}, count(*) FROM traces" + (
            f" GROUP BY {', '.join(columns)}" if columns else ""
        )
        return {tuple(row[:-1]) if columns else (): row[-1] for row in self.db.execute(query)}

    def iter_keys(self, keys: list[str]) -> Iterator[tuple]:
        query = f"SELECT {', '.join(['trace_id', *_columns(keys)])} FROM traces"
        yield from self.db.execute(query)

    def iter_rows(self, trace_ids: list[str]) -> Iterator[dict[str, Any]]:
        """The assembled rows of these traces of the day (those it holds), in trace-id order."""
        marks = ",".join("?" * len(trace_ids))
        known = {
            row[0]: row[1:]
            for row in self.db.execute(
                f"SELECT t.trace_id, t.ts_ns, t.rejection, d.detail FROM traces t LEFT JOIN damage d USING (trace_id) "
                f"WHERE t.trace_id IN ({marks})",
                trace_ids,
            )
        }
        spans = self.db.execute(
            f"SELECT trace_id, body FROM spans WHERE trace_id IN ({marks}) ORDER BY trace_id", trace_ids
        )
        grouped = {
            trace_id: [Span.from_json(body) for _, body in group]
            for trace_id, group in groupby(spans, key=lambda r: r[0])
        }
        for trace_id in sorted(known):
            ts_ns, rejection, damage_detail = known[trace_id]
            if trace_id in grouped:
                row = assemble_trace(grouped.pop(trace_id), source=self.source, question_rule=self.question_rule)
            else:
                row = {"trace_id": trace_id, "ts": None}
            if damage_detail is not None:
                row[SOURCE_REJECTION] = (rejection, None, damage_detail)
            if row["ts"] is None:
                row["ts"] = utc_from_ns(ts_ns)
            yield row

    def close(self) -> None:
        self.db.close()


def _columns(keys: list[str]) -> list[str]:
    unknown = [k for k in keys if k not in KEY_COLUMNS]
    if unknown:
        raise ValueError(f"a file trace source cannot stratify by {unknown}; choose from {list(KEY_COLUMNS)}")
    return list(keys)
