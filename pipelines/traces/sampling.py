"""One day's sample: select it, then read, anonymize, quarantine and write its parts into a staged
partition.

Nothing reaches disk before anonymization: quarantined rows are anonymized as text too. After
anonymization every free-text field goes through the independent residual check
(`privacy.residual`): a row where something still looks like PII is quarantined with the rules it
tripped as its reason, and the rest of the day publishes. The offending fields are withheld, not
written, even in quarantine.

Memory does not grow with the day: the selection holds trace ids only, rows are read a batch at
a time, anonymized in worker processes (in order, so reruns write the same bytes) and written in
row groups. How the selection is cut into parts and shared among tasks is `shards.py`'s concern.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any

from pipelines.core.batching import map_in_processes
from pipelines.core.records import QUARANTINE_SCHEMA, SAMPLED_TRACE_SCHEMA
from pipelines.core.user_question import NO_RULE, QuestionRule
from pipelines.core.workspace import PartitionPaths
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.stores.partitions import ParquetRowWriter
from pipelines.stores.traces import TraceStore
from pipelines.traces.prepare import prepare_batch, set_up_worker
from pipelines.traces.select import Selection, select_traces, selection_key_sql, stratum_target

log = logging.getLogger(__name__)


@dataclass
class SampleSummary:
    day: str
    population: int
    selected: int
    sampled: int = 0
    quarantined: int = 0
    quarantine_reasons: Counter = field(default_factory=Counter)
    pii_counts: Counter = field(default_factory=Counter)
    source_counts: dict[str, int] = field(default_factory=dict)
    """What a span-file source found in the whole day (spans lost to damaged lines, traces
    quarantined per reason, selected or not); empty for the SQL store."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "population": self.population,
            "selected": self.selected,
            "sampled": self.sampled,
            "quarantined": self.quarantined,
            "quarantine_reasons": dict(sorted(self.quarantine_reasons.items())),
            "pii_counts": dict(sorted(self.pii_counts.items())),
            **(
                {"source_counts": dict(sorted(self.source_counts.items()))}
                if self.source_counts
                else {}
            ),
        }


def day_interval(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=timezone.utc)
    return start, start + timedelta(days=1)


def select_day(
    store: TraceStore, day: date, *, rate: float, strata: list[str], min_per_stratum: int
) -> Selection:
    """The day's selected trace ids (sorted) and its strata: the one query that reads every row of
    the day."""
    start, end = day_interval(day)
    population = store.count_by(start, end, strata)
    if store.ranks_in_sql:  # a million rows' keys stay in the server: it sends the selectable ones
        targets = {
            stratum: stratum_target(n, rate, min_per_stratum) for stratum, n in population.items()
        }
        keyed = store.iter_lowest(start, end, strata, targets, selection_key_sql)
    else:
        keyed = store.iter_keys(start, end, strata)
    selection = select_traces(population, keyed, rate=rate, min_per_stratum=min_per_stratum)
    log.info(
        "%s: %d traces in the interval, %d selected at rate %s",
        day,
        selection.population,
        len(selection.trace_ids),
        rate,
    )
    return selection


@dataclass
class WrittenCounts:
    """What some parts of a day's sample hold: rows selected, sampled, quarantined by reason, PII
    replaced."""

    selected: int = 0
    sampled: int = 0
    quarantined: int = 0
    quarantine_reasons: Counter = field(default_factory=Counter)
    pii_counts: Counter = field(default_factory=Counter)


def write_parts(
    store: TraceStore,
    anonymizer: Anonymizer,
    day: date,
    parts: Iterable[tuple[int, list[str]]],
    out: PartitionPaths,
    scratch: Path,
    *,
    rows: int,
    rate: float,
    max_field_chars: int,
    question_rule: QuestionRule = NO_RULE,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> WrittenCounts:
    """Read, anonymize and write each `(part, selected ids)`: `out.part(part)` and
    `out.quarantine_part(part)`.

    `rows` is the number of ids in `parts`. Each file is written in `scratch` and renamed into `out`
    when the part is complete, so a retried shard replaces its parts whole and a failed one leaves
    none half-written.
    """
    start, end = day_interval(day)
    counts = WrittenCounts(selected=rows)
    pending_parts: deque[tuple[int, int]] = deque()

    def batches() -> Iterator[list[dict[str, Any]]]:
        for index, ids in parts:
            pending_parts.append((index, len(ids)))
            yield from _batched(store.iter_rows(start, end, ids), store.batch_size)
            yield []  # the end of a part (an empty part, too, gets its files)

    prepared = map_in_processes(
        prepare_batch,
        batches(),
        workers=workers if rows > store.batch_size else 1,
        initializer=set_up_worker,
        initargs=(anonymizer, max_field_chars, rate, question_rule),
    )
    done = 0
    part = None
    for batch in prepared:
        if part is None:
            index, expected = pending_parts.popleft()
            part = _PartFiles(out, scratch, index)
        if not batch:  # the part's end marker
            missing = expected - part.rows
            if missing:
                part.discard()
                # The rows vanished between selection and read (deleted upstream): say so, do not
                # guess.
                raise RuntimeError(
                    f"{missing} selected traces of {day} (part {index}) could not be read back; rerun the task"
                )
            part.commit()
            part = None
            continue
        for row in batch:
            if row.rejection is not None:
                part.quarantine.write(row.row)
                counts.quarantined += 1
                counts.quarantine_reasons[row.rejection] += 1
            else:
                part.sampled.write(row.row)
                counts.sampled += 1
            counts.pii_counts.update(row.pii_counts)
        part.rows += len(batch)
        done += len(batch)
        if progress:
            progress(done, rows)
        log.info("%s: %d/%d rows read, %d quarantined", day, done, rows, counts.quarantined)
    return counts


class _PartFiles:
    """The two files of one part, written in the scratch folder and renamed into the partition when
    complete."""

    def __init__(self, out: PartitionPaths, scratch: Path, index: int):
        self.final = (out.part(index), out.quarantine_part(index))
        tag = uuid.uuid4().hex
        self.temporary = (scratch / f"{tag}.sampled.parquet", scratch / f"{tag}.quarantine.parquet")
        self.sampled = ParquetRowWriter(self.temporary[0], SAMPLED_TRACE_SCHEMA)
        self.quarantine = ParquetRowWriter(self.temporary[1], QUARANTINE_SCHEMA)
        self.rows = 0

    def commit(self) -> None:
        self.sampled.close()
        self.quarantine.close()
        for temporary, final in zip(self.temporary, self.final):
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(temporary, final)

    def discard(self) -> None:
        self.sampled.close()
        self.quarantine.close()
        for temporary in self.temporary:
            temporary.unlink(missing_ok=True)


def _batched(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
