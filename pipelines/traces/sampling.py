"""One day's sample: select it, then read, anonymize, quarantine and write its parts into a staged partition.

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

import json
import logging
import os
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any

from pipelines.privacy.anonymizer import Anonymizer, clip_outside_pseudonyms
from pipelines.privacy.memo import per_distinct_context
from pipelines.privacy.residual import residual_pii_reasons
from pipelines.records import (
    ANONYMIZER_VERSION,
    QUARANTINE_SCHEMA,
    SAMPLED_TRACE_SCHEMA,
    SAMPLER_VERSION,
    Trace,
)
from pipelines.batching import map_in_processes
from pipelines.stores.partitions import ParquetRowWriter
from pipelines.stores.traces import TraceStore
from pipelines.traces.parse import Rejection, parse_row
from pipelines.traces.select import Selection, select_traces, selection_key_sql, stratum_target
from pipelines.workspace import PartitionPaths

log = logging.getLogger(__name__)
QUARANTINE_CLIP_CHARS = 4_000
CLIP_MARGIN_CHARS = 16_000
RESIDUAL_PII = "residual_pii"
"""The quarantine reason of a row the anonymizer passed but the residual check did not."""


@dataclass
class SampleSummary:
    day: str
    population: int
    selected: int
    sampled: int = 0
    quarantined: int = 0
    quarantine_reasons: Counter = field(default_factory=Counter)
    pii_counts: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "day": self.day, "population": self.population, "selected": self.selected,
            "sampled": self.sampled, "quarantined": self.quarantined,
            "quarantine_reasons": dict(sorted(self.quarantine_reasons.items())),
            "pii_counts": dict(sorted(self.pii_counts.items())),
        }  # fmt: skip


def day_interval(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=timezone.utc)
    return start, start + timedelta(days=1)


def select_day(store: TraceStore, day: date, *, rate: float, strata: list[str], min_per_stratum: int) -> Selection:
    """The day's selected trace ids (sorted) and its strata: the one query that reads every row of the day."""
    start, end = day_interval(day)
    population = store.count_by(start, end, strata)
    if store.ranks_in_sql:  # a million rows' keys stay in the server: it sends the selectable ones
        targets = {stratum: stratum_target(n, rate, min_per_stratum) for stratum, n in population.items()}
        keyed = store.iter_lowest(start, end, strata, targets, selection_key_sql)
    else:
        keyed = store.iter_keys(start, end, strata)
    selection = select_traces(population, keyed, rate=rate, min_per_stratum=min_per_stratum)
    log.info("%s: %d traces in the interval, %d selected at rate %s", day, selection.population, len(selection.trace_ids), rate)
    return selection


@dataclass
class WrittenCounts:
    """What some parts of a day's sample hold: rows selected, sampled, quarantined by reason, PII replaced."""

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
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> WrittenCounts:
    """Read, anonymize and write each `(part, selected ids)`: `out.part(part)` and `out.quarantine_part(part)`.

    `rows` is the number of ids in `parts`. Each file is written in `scratch` and renamed into `out` when the part
    is complete, so a retried shard replaces its parts whole and a failed one leaves none half-written.
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
        _prepare_batch, batches(), workers=workers if rows > store.batch_size else 1,
        initializer=_set_up_worker, initargs=(anonymizer, max_field_chars, rate),
    )  # fmt: skip
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
                # The rows vanished between selection and read (deleted upstream): say so, do not guess.
                raise RuntimeError(f"{missing} selected traces of {day} (part {index}) could not be read back; rerun the task")
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
    """The two files of one part, written in the scratch folder and renamed into the partition when complete."""

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


@dataclass(frozen=True)
class PreparedRow:
    """One store row ready to write: a sampled row, or a quarantined one with its reason."""

    row: dict[str, Any]
    rejection: str | None
    pii_counts: Counter


_worker: dict[str, Any] = {}
"""What each worker process needs, set once when it starts (the anonymizer holds the key)."""


def _set_up_worker(anonymizer: Anonymizer, max_field_chars: int, rate: float) -> None:
    _worker.update(anonymizer=anonymizer, max_field_chars=max_field_chars, rate=rate)


def _prepare_batch(raws: list[dict[str, Any]]) -> list[PreparedRow]:
    """Parse, anonymize and residual-check a batch of raw rows (runs in a worker process)."""
    anonymizer, rate = _worker["anonymizer"], _worker["rate"]
    prepared = []
    for raw in raws:
        parsed = parse_row(raw, max_field_chars=_worker["max_field_chars"])
        if isinstance(parsed, Rejection):
            # Quarantined text is anonymized too; the summary's PII counts are those of sampled rows.
            prepared.append(PreparedRow(_quarantine_row(anonymizer, raw, parsed), parsed.reason, Counter()))
        else:
            clean, counts = anonymizer.anonymize_trace(parsed)
            row = _sampled_row(clean, counts, rate)
            residual = residual_pii_by_field(row)
            if residual:
                prepared.append(PreparedRow(_residual_quarantine_row(row, residual), RESIDUAL_PII, Counter()))
            else:
                prepared.append(PreparedRow(row, None, counts))
    return prepared


def _batched(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _sampled_row(trace: Trace, pii_counts: Counter, rate: float) -> dict[str, Any]:
    row = trace.model_dump(mode="python")
    row["tool_calls"] = [
        {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)}
        for c in trace.tool_calls
    ]
    row["metadata"] = json.dumps(trace.metadata, ensure_ascii=False, sort_keys=True)
    row.update(
        sample_rate=rate,
        sampler_version=SAMPLER_VERSION,
        anonymizer_version=ANONYMIZER_VERSION,
        pii_counts=json.dumps(dict(sorted(pii_counts.items()))),
    )
    return row


def free_text_fields(row: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, text) for every free-text field of a sampled row as it is written, so none escapes the PII checks."""
    yield "question", row["question"] or ""
    yield "answer", row["answer"] or ""
    for i, context in enumerate(row["contexts"] if row["contexts"] is not None else []):
        if context is not None:
            yield f"contexts[{i}].text", context["text"] or ""
    for i, call in enumerate(row["tool_calls"] if row["tool_calls"] is not None else []):
        if call is not None:
            yield f"tool_calls[{i}].arguments", call["arguments"] or ""
    yield "metadata", row["metadata"] or ""


def residual_pii_by_field(row: dict[str, Any]) -> dict[str, list[str]]:
    """The residual rules each free-text field of a sampled row trips; empty when the row looks clean.

    A context is checked once per process however many rows hold it (`context_residual_reasons`).
    """
    found = {}
    for name, text in free_text_fields(row):
        check = context_residual_reasons if name.startswith("contexts[") else residual_pii_reasons
        if reasons := check(text):
            found[name] = list(reasons)
    return found


@per_distinct_context
def context_residual_reasons(text: str) -> tuple[str, ...]:
    """`residual_pii_reasons` of a retrieved context as written, checked once per process (see `memo`)."""
    return tuple(residual_pii_reasons(text))


def describe_residual(residual: dict[str, list[str]]) -> str:
    """"answer: long_digit_run; metadata: at_sign_like": fields and rule names, never a value."""
    return "; ".join(f"{name}: {','.join(reasons)}" for name, reasons in residual.items())


def _withheld(reasons: list[str]) -> str:
    return f"[withheld by ragwatch: residual PII check ({','.join(reasons)})]"


def _residual_quarantine_row(row: dict[str, Any], residual: dict[str, list[str]]) -> dict[str, Any]:
    """The anonymized row's free text, the fields that tripped a rule withheld: a value the anonymizer
    missed must not reach the quarantine partition either, which is published with the day."""
    fields = {name: _withheld(residual[name]) if name in residual else text for name, text in free_text_fields(row)}
    return {
        "trace_id": row["trace_id"],
        "reason": RESIDUAL_PII,
        "field": next(iter(residual)),
        "detail": describe_residual(residual),
        "raw": json.dumps(fields, ensure_ascii=False, sort_keys=True),
        "sampler_version": SAMPLER_VERSION,
        "anonymizer_version": ANONYMIZER_VERSION,
    }


def _quarantine_row(anonymizer: Anonymizer, raw: dict[str, Any], rejection: Rejection) -> dict[str, Any]:
    trace_id = str(raw.get("trace_id"))
    counts: Counter = Counter()
    fields = {}
    for name, value in raw.items():
        if value is None:
            fields[name] = None
            continue
        text = str(value)
        # Anonymize first, then clip: a value cut at the clip point ("juan.perez@gm") is no longer
        # recognisable. The margin holds any value that straddles the clip point, a PEM key included.
        anonymized = anonymizer.anonymize_text(text[: QUARANTINE_CLIP_CHARS + CLIP_MARGIN_CHARS], trace_id, counts)
        clipped = clip_outside_pseudonyms(anonymized, QUARANTINE_CLIP_CHARS)
        if clipped != anonymized or len(text) > QUARANTINE_CLIP_CHARS + CLIP_MARGIN_CHARS:
            clipped += f"… [clipped by ragwatch: {len(text):,} characters in the store]"
        reasons = residual_pii_reasons(clipped)
        fields[name] = _withheld(reasons) if reasons else clipped
    return {
        "trace_id": trace_id,
        "reason": rejection.reason,
        "field": rejection.field,
        "detail": anonymizer.anonymize_text(rejection.detail, trace_id, counts),
        "raw": json.dumps(fields, ensure_ascii=False, sort_keys=True),
        "sampler_version": SAMPLER_VERSION,
        "anonymizer_version": ANONYMIZER_VERSION,
    }
