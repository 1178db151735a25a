"""A day's spans on disk, grouped by trace, so a file source feeds the same selection path as the
SQL store.

Span exports are not ordered by trace: a trace's spans arrive in whichever batch each span ended in,
possibly in different files. Grouping them in memory would hold the whole day. Instead one pass over
the files appends every span near the day to a SQLite file (its own scratch, never the team's data),
into one of `BUCKETS` tables chosen by a hash of the trace id; each table is then read whole (a
bucket's pages lie together, so the day is read once, in order), sorted by trace id in memory (a
bucket holds 1/256 of the day) and each trace assembled once, to record the keys the selection needs
(day, app, language, feedback, model) and whether it can be used. Memory stays at one export line
plus one bucket, whatever the day's size; disk holds the day's spans once.

A trace is whole or quarantined. A damaged line (`Damage`) loses its spans: the traces it still
names are quarantined under its reason (`truncated_file`, `unreadable_line`). A line whose trace ids
cannot all be read (a cut line always: what followed the cut is gone) may also have held spans of
traces it no longer names. A span is exported in a batch soon after it ends, and ends inside its
parent, so such a lost span ended within `LOST_SPAN_MARGIN` of the times still readable in the line,
and inside its trace's time extent: every trace whose surviving spans span a moment of that window
is quarantined as `incomplete_trace`, never sampled as clean. The counts say how many spans were
lost and how many traces each rule quarantined.
"""

from __future__ import annotations

import bisect
import logging
import os
import sqlite3
import uuid
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any

from pipelines.core.user_question import NO_RULE, QuestionRule
from pipelines.stores.trace_sources.assemble import SOURCE_REJECTION, assemble_trace
from pipelines.stores.trace_sources.spans import Damage, Span, utc_from_ns

log = logging.getLogger(__name__)
SPAN_MARGIN = timedelta(days=1)
"""Spans kept around the day: a trace's spans may start after midnight, or its late spans land in
tomorrow's file."""
LOST_SPAN_MARGIN = 10 * 10**9
"""How far (ns) a span lost in a damaged line may have ended from the times still readable in it:
twice the OpenTelemetry SDK's default export delay (5 s), which bounds how far apart the spans of
one batch ended."""
INCOMPLETE = "incomplete_trace"
BUCKETS = 256
INSERT_ROWS = 50_000
CACHE_KB = 65_536
"""SQLite's page cache while loading: every bucket's last pages stay in it, so appends do not read
pages back."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

SCHEMA = """
CREATE TABLE damage (trace_id TEXT PRIMARY KEY, start_ns INTEGER, reason TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE traces (trace_id TEXT PRIMARY KEY, ts_ns INTEGER NOT NULL, app TEXT, language TEXT, user_feedback INTEGER,
                     model TEXT, rejection TEXT, detail TEXT);
CREATE TABLE counts (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
""" + "".join(
    f"CREATE TABLE spans_{b:02x} (trace_id TEXT NOT NULL, body BLOB NOT NULL);\n"
    for b in range(BUCKETS)
)
KEY_COLUMNS = ("app", "language", "user_feedback", "model")
SpanItem = Span | list[Span] | Damage
"""What a file reader yields: a span, a line's spans, or a damaged line."""


def bucket_table(trace_id: str) -> str:
    return f"spans_{zlib.crc32(trace_id.encode()) % BUCKETS:02x}"


def _ns(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1) * 1_000


def build_span_index(
    path: Path,
    items: Iterable[SpanItem],
    start: datetime,
    end: datetime,
    *,
    source: str,
    workers: int = 1,
    question_rule: QuestionRule = NO_RULE,
) -> Counter:
    """Write the index of the traces whose root span starts in [start, end) to `path` (atomically);
    the counts. `workers`: the processes that assemble the traces."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    counts: Counter = Counter()
    low, high = _ns(start - SPAN_MARGIN), _ns(end + SPAN_MARGIN)
    try:
        with sqlite3.connect(scratch, timeout=LOCK_WAIT_S) as db:
            db.executescript(
                "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;"
                f"PRAGMA cache_size=-{CACHE_KB};" + SCHEMA
            )
            windows = _load(db, items, low, high, counts)
            _summarise(
                db,
                scratch,
                (_ns(start), _ns(end)),
                (source, question_rule),
                windows,
                counts,
                workers,
            )
            for b in range(BUCKETS):
                db.execute(f"CREATE INDEX spans_{b:02x}_by_trace ON spans_{b:02x} (trace_id)")
            db.executemany("INSERT INTO counts VALUES (?, ?)", sorted(counts.items()))
        db.close()
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)
    return counts


class _LostWindows:
    """The moments at which spans of unnamed traces were lost, merged into disjoint intervals."""

    def __init__(self, damage: list[Damage]):
        merged: list[list[Any]] = []
        for item in sorted(damage, key=lambda d: d.lost_window):
            first, last = item.lost_window
            first, last = max(0, first - LOST_SPAN_MARGIN), last + LOST_SPAN_MARGIN
            if merged and first <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last, item.detail])
        self.lows = [w[0] for w in merged]
        self.windows = merged

    def overlapping(self, first_ns: int, last_ns: int) -> str | None:
        """The detail of a damaged line whose lost spans may have belonged to a trace spanning these
        times."""
        i = bisect.bisect_right(self.lows, last_ns) - 1
        if i >= 0 and self.windows[i][1] >= first_ns:
            return self.windows[i][2]
        return None

    def __len__(self) -> int:
        return len(self.windows)


def _load(
    db: sqlite3.Connection, items: Iterable[SpanItem], low: int, high: int, counts: Counter
) -> _LostWindows:
    rows: dict[str, list[tuple[str, bytes]]] = defaultdict(list)
    pending = 0
    unnamed: list[Damage] = []
    for item in items:
        if isinstance(item, Damage):
            _record_damage(db, item, low, high, counts)
            if item.lost_window is not None:
                unnamed.append(item)
            continue
        spans = item if isinstance(item, list) else (item,)
        counts["spans_read"] += len(spans)
        for span in spans:
            if low <= span.start_ns < high:
                rows[bucket_table(span.trace_id)].append((span.trace_id, span.record()))
                pending += 1
        if pending >= INSERT_ROWS:
            counts["spans_kept"] += _flush(db, rows)
            pending = 0
    counts["spans_kept"] += _flush(db, rows)
    return _LostWindows(unnamed)


def _flush(db: sqlite3.Connection, rows: dict[str, list[tuple[str, bytes]]]) -> int:
    written = 0
    for table, bucket in rows.items():
        db.executemany(f"INSERT INTO {table} VALUES (?, ?)", bucket)
        written += len(bucket)
    rows.clear()
    return written


def _record_damage(
    db: sqlite3.Connection, item: Damage, low: int, high: int, counts: Counter
) -> None:
    counts[f"lines_{item.reason}"] += 1
    counts["spans_lost"] += item.spans_lost
    unnamed = "" if item.lost_window is None else "; it may have held spans of other traces too"
    log.warning(
        "trace source: %s (%s); %d spans lost, the %d traces it names are quarantined%s",
        item.detail,
        item.reason,
        item.spans_lost,
        len(item.trace_starts),
        unnamed,
    )
    for trace_id, start_ns in item.trace_starts.items():
        if start_ns is None or low <= start_ns < high:
            # The first damage seen names the trace's reason; its surviving spans are kept for the
            # record.
            db.execute(
                "INSERT OR IGNORE INTO damage VALUES (?, ?, ?, ?)",
                (trace_id, start_ns, item.reason, item.detail),
            )


def _summarise(
    db: sqlite3.Connection,
    scratch: Path,
    interval: tuple[int, int],
    assembly: tuple[str, QuestionRule],
    lost: _LostWindows,
    counts: Counter,
    workers: int,
) -> None:
    """One row of selection keys per trace of the day, each trace assembled once: `BUCKETS_PER_TASK`
    buckets a task, in `workers` processes that read the scratch file (the assembly is most of the
    index's work)."""
    from pipelines.core.batching import map_in_processes

    damaged = {
        row[0]: row[1:]
        for row in db.execute("SELECT trace_id, start_ns, reason, detail FROM damage")
    }
    db.commit()  # what the workers read
    tasks = [
        range(b, min(b + BUCKETS_PER_TASK, BUCKETS)) for b in range(0, BUCKETS, BUCKETS_PER_TASK)
    ]
    setup = (str(scratch), interval, assembly, damaged, lost)
    found: set[str] = set()
    for rows, damaged_found, task_counts in map_in_processes(
        _summarise_buckets, tasks, workers=workers, initializer=_set_up_summary, initargs=setup
    ):
        db.executemany("INSERT INTO traces VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.commit()  # a task's rows at a time: a long write would lock the workers' reads out
        found |= damaged_found
        counts.update(task_counts)
    # Traces every span of which was in a damaged line: known by id and start only, placed by that
    # start.
    pending = []
    for trace_id, (start, reason, detail) in sorted(damaged.items()):
        if trace_id not in found and start is not None and interval[0] <= start < interval[1]:
            counts["traces"] += 1
            counts[f"rejected_{reason}"] += 1
            pending.append((trace_id, start, "default", "und", None, None, reason, detail))
    db.executemany("INSERT INTO traces VALUES (?, ?, ?, ?, ?, ?, ?, ?)", pending)
    counts["lost_windows"] = len(lost)


BUCKETS_PER_TASK = 8
LOCK_WAIT_S = 600
"""How long a reader waits for the writer's commit, and the writer for the readers: seconds on a
busy machine."""
_summary_setup: tuple = ()


def _set_up_summary(*setup) -> None:
    global _summary_setup
    _summary_setup = setup


def _summarise_buckets(buckets: range) -> tuple[list[tuple], set[str], Counter]:
    """The key rows of the day's traces in these buckets, the damaged traces met there, and the
    counts."""
    scratch, (start_ns, end_ns), (source, question_rule), damaged, lost = _summary_setup
    rows, found, counts = [], set(), Counter()
    db = sqlite3.connect(f"file:{scratch}?mode=ro", uri=True, timeout=LOCK_WAIT_S)
    try:
        for b in buckets:
            spans_of_bucket = db.execute(f"SELECT trace_id, body FROM spans_{b:02x}").fetchall()
            spans_of_bucket.sort(key=itemgetter(0))
            for trace_id, group in groupby(spans_of_bucket, key=itemgetter(0)):
                spans = [Span.from_record(body) for _, body in group]
                row = assemble_trace(spans, source=source, question_rule=question_rule)
                damage = damaged.get(trace_id)
                if damage:
                    found.add(trace_id)
                ts_ns = _ns(row["ts"]) if row["ts"] else (damage[0] if damage else None)
                if ts_ns is None or not start_ns <= ts_ns < end_ns:
                    continue
                if damage:
                    rejection, detail = damage[1:]
                elif lost and (
                    window := lost.overlapping(
                        min(s.start_ns for s in spans), max(s.end_ns for s in spans)
                    )
                ):
                    rejection, detail = (
                        INCOMPLETE,
                        f"spans of this trace may have been lost in {window}",
                    )
                else:
                    rejection, detail = (row.get(SOURCE_REJECTION) or (None,))[0], None
                counts["traces"] += 1
                counts[f"rejected_{rejection}" if rejection else "assembled"] += 1
                keys = (row["app"], row["language"], row["user_feedback"], row["model"])
                rows.append((trace_id, ts_ns, *keys, rejection, detail))
    finally:
        db.close()
    return rows, found, counts


class SpanIndex:
    """Read access to a built index: the selection's keys and the assembled rows of chosen
    traces."""

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
                f"SELECT trace_id, ts_ns, rejection, detail FROM traces WHERE trace_id IN ({marks})",
                trace_ids,
            )
        }
        by_table: dict[str, list[str]] = defaultdict(list)
        for trace_id in known:
            by_table[bucket_table(trace_id)].append(trace_id)
        grouped: dict[str, list[Span]] = defaultdict(list)
        for table, ids in by_table.items():
            query = (
                f"SELECT trace_id, body FROM {table} WHERE trace_id IN ({','.join('?' * len(ids))})"
            )
            for trace_id, body in self.db.execute(query, ids):
                grouped[trace_id].append(Span.from_record(body))
        for trace_id in sorted(known):
            ts_ns, rejection, detail = known[trace_id]
            if trace_id in grouped:
                row = assemble_trace(
                    grouped.pop(trace_id), source=self.source, question_rule=self.question_rule
                )
            else:
                row = {"trace_id": trace_id, "ts": None}
            if (
                detail is not None
            ):  # quarantined by the source's damage, whatever its spans would assemble into
                row[SOURCE_REJECTION] = (rejection, None, detail)
            if row["ts"] is None:
                row["ts"] = utc_from_ns(ts_ns)
            yield row

    def close(self) -> None:
        self.db.close()


def _columns(keys: list[str]) -> list[str]:
    unknown = [k for k in keys if k not in KEY_COLUMNS]
    if unknown:
        raise ValueError(
            f"a file trace source cannot stratify by {unknown}; choose from {list(KEY_COLUMNS)}"
        )
    return list(keys)
