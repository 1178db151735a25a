"""A trace store over span exports: the same reads the sampling makes of the SQL store, served from
a day's index.

`select_day` and `write_parts` call `count_by`, `iter_keys` and `iter_rows` with the day's interval;
the first call for an interval builds the index of that day's spans (`span_index`), every later one
(the selection's second query, each shard's reads) reuses it. The index is named by the source, the
interval and every file's path, size and modification time, so a file that grows or changes gets a
new index, and two tasks of the same day on one machine share one. A task on another machine builds
its own from the same files: the same bytes, so the same sample.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any

from pipelines.core.batching import available_cpus
from pipelines.core.user_question import NO_RULE, QuestionRule
from pipelines.stores.trace_sources.span_index import SpanIndex, SpanItem, build_span_index

log = logging.getLogger(__name__)
INDEX_KEEP_S = 2 * 86_400
CLOCK_SKEW_NS = 3_600 * 10**9
MAX_IDS_PER_QUERY = 10_000
"""Ids bound in one query of the index: SQLite refuses more than 32,766 parameters."""
PARALLEL_FROM_BYTES = 64 << 20
INDEX_VERSION = "spans-5"
"""Part of every index's name: bump it when assembly changes, so no index built by older rules is
reused."""


class FileTraceStore:
    ranks_in_sql = False

    def __init__(
        self,
        source: str,
        files: Callable[[], list[tuple[str, int, Any]]],
        read_file: Callable[[str], Iterable[SpanItem]],
        index_dir: Path,
        *,
        batch_size: int = 500,
        question_rule: QuestionRule = NO_RULE,
    ):
        """`files`: (name, size, modification) of every file the source holds now, the modification
        time in nanoseconds where the storage has one; `read_file`: the spans of one of them."""
        self.source, self.files, self.read_file = source, files, read_file
        self.index_dir, self.batch_size, self.question_rule = index_dir, batch_size, question_rule
        self._open: dict[tuple[datetime, datetime], SpanIndex] = {}

    def index(self, start: datetime, end: datetime) -> SpanIndex:
        if (start, end) in self._open:
            return self._open[(start, end)]
        # A file last written before the day began holds no span of it: a span is written after it
        # starts. A Collector rotating its files leaves weeks of them in the folder; a day reads
        # only those written since (an hour's margin for the clocks of the apps and of the
        # Collector's host).
        files = [
            f
            for f in self.files()
            if not isinstance(f[2], int) or f[2] >= _ns(start) - CLOCK_SKEW_NS
        ]
        fingerprint = hashlib.sha256(
            json.dumps(
                [
                    INDEX_VERSION,
                    self.source,
                    start.isoformat(),
                    end.isoformat(),
                    files,
                    self._rule_key(),
                ]
            ).encode()
        ).hexdigest()[:20]
        path = self.index_dir / f"{self.source}-{start:%Y-%m-%d}-{fingerprint}.sqlite"
        if not path.exists():
            # A day of many megabytes is assembled by every CPU the task has; a small one here,
            # without starting any.
            workers = available_cpus() if sum(f[1] for f in files) >= PARALLEL_FROM_BYTES else 1
            log.info(
                "%s: indexing the spans of %d files for %s (%d processes)",
                self.source,
                len(files),
                start.date(),
                workers,
            )
            spans = chain.from_iterable(self.read_file(name) for name, *_ in files)
            counts = build_span_index(
                path,
                spans,
                start,
                end,
                source=self.source,
                workers=workers,
                question_rule=self.question_rule,
            )
            log.info("%s: %s", self.source, dict(sorted(counts.items())))
            self._remove_stale(path, start)
        self._open[(start, end)] = SpanIndex(
            path, source=self.source, question_rule=self.question_rule
        )
        return self._open[(start, end)]

    def _rule_key(self) -> list[str | None]:
        # The rule decides which traces are rejected: an index built under another rule is not this
        # one.
        rule = self.question_rule
        return [rule.attribute, rule.pattern.pattern if rule.pattern else None]

    def _remove_stale(self, built: Path, start: datetime) -> None:
        """An index is as large as the day's files: drop the same day's from older files, and every
        day's older than `INDEX_KEEP_S` (its day was sampled long since; a backfill indexes it
        again)."""
        now = time.time()
        for other in self.index_dir.glob("*.sqlite"):
            same_day = other.name.startswith(f"{self.source}-{start:%Y-%m-%d}-")
            if other != built and (same_day or now - other.stat().st_mtime > INDEX_KEEP_S):
                other.unlink(missing_ok=True)

    def count_by(self, start: datetime, end: datetime, keys: Sequence[str]) -> dict[tuple, int]:
        return self.index(start, end).count_by(list(keys))

    def iter_keys(self, start: datetime, end: datetime, keys: Sequence[str]) -> Iterator[tuple]:
        yield from self.index(start, end).iter_keys(list(keys))

    def iter_rows(
        self, start: datetime, end: datetime, trace_ids: Iterable[str]
    ) -> Iterator[dict[str, Any]]:
        """Assembled rows of these ids, in trace-id order, `batch_size` traces' spans read at a
        time."""
        index = self.index(start, end)
        ordered = sorted(set(trace_ids))
        step = min(self.batch_size, MAX_IDS_PER_QUERY)
        for i in range(0, len(ordered), step):
            yield from index.iter_rows(ordered[i : i + step])

    def source_counts(self, start: datetime, end: datetime) -> dict[str, int]:
        """What the index found in the day: spans read and kept, traces, and the unusable ones per
        reason."""
        return self.index(start, end).counts()

    def close(self) -> None:
        for index in self._open.values():
            index.close()
        self._open.clear()


def _ns(value: datetime) -> int:
    return int(value.timestamp()) * 10**9


def file_fingerprints(paths: list[Path]) -> list[tuple[str, int, int]]:
    fingerprints = []
    for path in paths:
        stat = path.stat()
        fingerprints.append((str(path.resolve()), stat.st_size, stat.st_mtime_ns))
    return fingerprints
