"""Spans as every file source hands them to the assembler, and the OTLP/JSON decoding that yields
them.

The OpenTelemetry Collector's file exporter writes one `ExportTraceServiceRequest` per line in the
OTLP/JSON encoding: trace and span ids are hex strings (not the base64 of protobuf's generic JSON
mapping), 64-bit integers are strings, and attribute values are `AnyValue` objects (`{"stringValue":
...}`). Phoenix and OpenLLMetry export through the same encoding, so one decoder serves the `otlp`
and `openinference` sources. A line is decoded by msgspec into typed structs (the shape is checked
in C, not dict by dict), and a span is stored as msgpack.

A line that is not whole JSON (a file cut while being written, a crash) loses the spans it held, but
not silently: what is still readable in it is returned as `Damage` (the trace ids with their start
times, how many spans, and the times its spans span), so the span index can quarantine every trace
those spans may have belonged to.
"""

from __future__ import annotations

import base64
import re
import string
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec

from pipelines.stores.trace_sources.collector_files import Line, collector_lines

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def utc_from_ns(ns: int) -> datetime:
    """Nanoseconds since the epoch as a UTC datetime, to the microsecond (a float would lose the
    last digits)."""
    return EPOCH + timedelta(microseconds=ns // 1_000)


def ns_from_time(value: Any, what: str) -> int:
    """An exported timestamp (ISO text, "Z" or an offset, naive read as UTC; or a datetime, as
    Parquet gives it) as nanoseconds since the epoch; `what` names it in the error."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    if not isinstance(value, datetime):
        raise ValueError(f"{what} is a {type(value).__name__}")
    utc = (
        value.replace(tzinfo=timezone.utc)
        if value.tzinfo is None
        else value.astimezone(timezone.utc)
    )
    return (utc - EPOCH) // timedelta(microseconds=1) * 1_000


class UnreadableSource(RuntimeError):
    """A trace file ragwatch cannot read at all; the message names it and says what was expected."""


class Span(msgspec.Struct, array_like=True):
    """One span, its attributes flattened to Python values (an OTLP array is a list, a kvlist a
    dict)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)
    resource: dict[str, Any] = msgspec.field(default_factory=dict)
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """Each event as {"name", "time_ns", "attributes"}: older GenAI instrumentations put messages
    there."""

    def record(self) -> bytes:
        """The span as the span index stores it (msgpack, one array)."""
        return _RECORD_ENCODER.encode(self)

    @classmethod
    def from_record(cls, record: bytes) -> Span:
        return _RECORD_DECODER.decode(record)


_RECORD_ENCODER = msgspec.msgpack.Encoder()
_RECORD_DECODER = msgspec.msgpack.Decoder(Span)
UNBOUNDED = (0, 2**63 - 1)


class Damage(msgspec.Struct, frozen=True):
    """A line that could not be decoded: the traces it names, with the earliest start time seen for
    each."""

    path: str
    line: int
    reason: str
    detail: str
    trace_starts: dict[str, int | None]
    spans_lost: int = 0
    """Spans whose id is still readable in the line: all of them lost (a cut line held more that
    left no trace)."""
    lost_window: tuple[int, int] | None = None
    """Set when the line may have held spans of traces it no longer names (a cut line; a line whose
    trace ids are not all readable): the earliest and latest span time (ns) readable in it, else in
    the line before it (the batch exported just before), else `UNBOUNDED`. None when every trace of
    the line is named."""


_TRACE_ID_IN_TEXT = re.compile(r'"traceId"\s*:\s*"([0-9A-Za-z+/=]{1,64})"')
_TRACE_ID_KEY = re.compile(r'"traceId"\s*:')
_START_IN_TEXT = re.compile(r'"startTimeUnixNano"\s*:\s*"?(\d{1,20})')
_TIME_IN_TEXT = re.compile(r'"(?:start|end)TimeUnixNano"\s*:\s*"?(\d{1,20})')
_SPAN_ID_KEY = re.compile(r'"spanId"\s*:')
_HEX = string.hexdigits


def any_value(value: Any) -> Any:
    """An OTLP/JSON `AnyValue` as a Python value; `ValueError` for a shape OTLP does not define."""
    if not isinstance(value, dict):
        raise ValueError(
            f"an attribute value is a {type(value).__name__}, not an OTLP AnyValue object"
        )
    if not value:
        return None
    (kind, inner), *rest = value.items()
    if rest:
        raise ValueError(f"an AnyValue holds {sorted(value)} at once")
    if kind == "stringValue":
        return inner
    if kind == "boolValue":
        return bool(inner)
    if kind == "intValue":
        return int(inner)  # 64-bit integers are JSON strings in OTLP/JSON
    if kind == "doubleValue":
        return float(inner)
    if kind == "bytesValue":
        return inner
    if kind == "arrayValue":
        return [any_value(v) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return key_values((inner or {}).get("values", []))
    raise ValueError(f"unknown AnyValue kind {kind!r}")


def key_values(items: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {item["key"]: any_value(item.get("value", {})) for item in items or []}


def span_id(value: Any) -> str:
    """A trace or span id as lowercase hex. The Collector writes hex; a protobuf-JSON tool writes
    base64 (24 or 12 characters with padding): both are accepted, so an export made either way is
    assembled the same."""
    if not value:
        return ""
    text = value if value.__class__ is str else str(value)
    if len(text) in (16, 32) and not text.strip(_HEX):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return text
    return raw.hex() if len(raw) in (8, 16) else text


class _KeyValue(msgspec.Struct):
    key: str
    value: Any = msgspec.field(default_factory=dict)


class _Event(msgspec.Struct):
    name: Any = ""
    timeUnixNano: Any = 0
    attributes: list[_KeyValue] | None = None


class _Span(msgspec.Struct):
    traceId: Any
    spanId: Any
    parentSpanId: Any = None
    name: Any = ""
    startTimeUnixNano: Any = 0
    endTimeUnixNano: Any = 0
    attributes: list[_KeyValue] | None = None
    events: list[_Event] | None = None


class _ScopeSpans(msgspec.Struct):
    spans: list[_Span] | None = None


class _Resource(msgspec.Struct):
    attributes: list[_KeyValue] | None = None


class _ResourceSpans(msgspec.Struct):
    resource: _Resource | None = None
    scopeSpans: list[_ScopeSpans] | None = None
    instrumentationLibrarySpans: list[_ScopeSpans] | None = None


class _Request(msgspec.Struct):
    resourceSpans: list[_ResourceSpans]


_REQUEST = msgspec.json.Decoder(_Request)


def _attributes(items: list[_KeyValue] | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for item in items or ():
        value = item.value
        # Most values are strings: read them here rather than through any_value's general case.
        if value.__class__ is dict and len(value) == 1 and "stringValue" in value:
            attributes[item.key] = value["stringValue"]
        else:
            attributes[item.key] = any_value(value)
    return attributes


def request_spans(line: bytes | str) -> list[Span]:
    """The spans of one ExportTraceServiceRequest in OTLP/JSON; `ValueError` (msgspec's errors are
    ValueErrors) or `TypeError` when it is not one."""
    spans = []
    for resource_span in _REQUEST.decode(line).resourceSpans:
        resource = _attributes(resource_span.resource.attributes) if resource_span.resource else {}
        for scope_span in (
            resource_span.scopeSpans or resource_span.instrumentationLibrarySpans or ()
        ):
            for raw in scope_span.spans or ():
                spans.append(
                    Span(
                        span_id(raw.traceId),
                        span_id(raw.spanId),
                        span_id(raw.parentSpanId),
                        str(raw.name),
                        int(raw.startTimeUnixNano or 0),
                        int(raw.endTimeUnixNano or 0),
                        _attributes(raw.attributes),
                        resource,
                        [
                            {
                                "name": event.name,
                                "time_ns": int(event.timeUnixNano or 0),
                                "attributes": _attributes(event.attributes),
                            }
                            for event in raw.events or ()
                        ],
                    )
                )
    return spans


def otlp_json_files(path: Path) -> list[Path]:
    """The files of an OTLP/JSON source: the file itself, or every regular file under the folder, in
    name order (the Collector's rotation names sort in time order)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    if path.is_file():
        return [path]
    raise UnreadableSource(f"{path}: no such file or folder (RAGWATCH_TRACE_SOURCE_PATH)")


def read_otlp_json(path: Path) -> Iterator[Span | Damage]:
    """Every span of one OTLP/JSON-lines file, and a `Damage` for each line that cannot be
    decoded."""
    for item in read_otlp_lines(path):
        if isinstance(item, Damage):
            yield item
        else:
            yield from item


def read_otlp_lines(path: Path) -> Iterator[list[Span] | Damage]:
    """The spans of one OTLP/JSON-lines file (plain, gzip or zstd: `collector_lines`), a list a
    line, and a `Damage` for each line that cannot be decoded."""
    tally = _FileTally(str(path))
    for line in collector_lines(path):
        yield tally.decode(line)
    tally.check()


class _FileTally:
    """What one file held: a file of which not one line decodes, and no line even begins like an
    export request, is not trace data (another format, a binary, the wrong folder). That fails,
    naming the file, rather than quarantining every trace of the day; a file whose only line was cut
    is trace data, damaged."""

    def __init__(self, path: str, times_before: tuple[int, int] | None = None):
        self.path, self.last_times = path, times_before
        self.decoded = self.damaged = 0
        self.first_error = ""
        self.looks_like_otlp = False

    def decode(self, line: Line) -> list[Span] | Damage:
        try:
            spans = request_spans(line.text)
        except (ValueError, TypeError, OverflowError) as exc:
            self.damaged += 1
            self.first_error = (
                self.first_error or f"line {line.number}: {type(exc).__name__}: {str(exc)[:200]}"
            )
            # A compressed stream that was cut (`problem`) is the Collector's, even with no text
            # left to show it.
            self.looks_like_otlp |= bool(line.problem) or line.text.lstrip()[:20].startswith(
                b'{"resourceSpans"'
            )
            return _damage(Path(self.path), line, exc, self.last_times)
        self.decoded += 1
        if spans:
            self.last_times = (min(s.start_ns for s in spans), max(s.end_ns for s in spans))
        return spans

    def check(self) -> None:
        if self.damaged and not self.decoded and not self.looks_like_otlp:
            raise UnreadableSource(
                f"{self.path}: no line is an OTLP/JSON ExportTraceServiceRequest ({self.first_error}); "
                "point RAGWATCH_TRACE_SOURCE_PATH at the Collector file exporter's output"
            )


def _damage(path: Path, line: Line, exc: Exception, times_before: tuple[int, int] | None) -> Damage:
    text = line.text.decode("utf-8", errors="replace")
    starts: dict[str, int | None] = {}
    # Each trace id is paired with the first start time written after it: in OTLP/JSON a span's
    # startTimeUnixNano follows its traceId.
    named = _TRACE_ID_IN_TEXT.findall(text)
    for match in _TRACE_ID_IN_TEXT.finditer(text):
        trace = span_id(match.group(1))
        start = _START_IN_TEXT.search(text, match.end())
        value = int(start.group(1)) if start else None
        known = starts.get(trace)
        starts[trace] = value if known is None else (known if value is None else min(known, value))
    window = None
    if not line.whole or len(named) < len(_TRACE_ID_KEY.findall(text)):
        times = [int(t) for t in _TIME_IN_TEXT.findall(text)]
        window = (min(times), max(times)) if times else (times_before or UNBOUNDED)
    reason = "unreadable_line" if line.whole else "truncated_file"
    problem = line.problem or f"{type(exc).__name__}: {str(exc)[:160]}"
    return Damage(
        str(path),
        line.number,
        reason,
        f"{path.name} line {line.number}: {problem}",
        starts,
        spans_lost=len(_SPAN_ID_KEY.findall(text)),
        lost_window=window,
    )
