"""Spans as every file source hands them to the assembler, and the OTLP/JSON decoding that yields them.

The OpenTelemetry Collector's file exporter writes one `ExportTraceServiceRequest` per line in the OTLP/JSON
encoding: trace and span ids are hex strings (not the base64 of protobuf's generic JSON mapping), 64-bit integers
are strings, and attribute values are `AnyValue` objects (`{"stringValue": ...}`). Phoenix and OpenLLMetry export
through the same encoding, so one decoder serves the `otlp` and `openinference` sources.

A line that is not whole JSON (a file cut while being written, a crash) loses the spans it held, but not silently:
the trace ids and start times still readable in it are returned as damage, so those traces are quarantined as
`truncated_file` instead of being assembled from the spans that happened to survive elsewhere.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any


def utc_from_ns(ns: int) -> datetime:
    """Nanoseconds since the epoch as a UTC datetime, to the microsecond (a float would lose the last digits)."""
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=ns // 1_000)


class UnreadableSource(RuntimeError):
    """A trace file ragwatch cannot read at all; the message names it and says what was expected."""


@dataclass
class Span:
    """One span, its attributes flattened to Python values (an OTLP array is a list, a kvlist a dict)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Each event as {"name", "time_ns", "attributes"}: older GenAI instrumentations put messages there."""

    def as_json(self) -> str:
        return json.dumps(
            [
                self.trace_id,
                self.span_id,
                self.parent_span_id,
                self.name,
                self.start_ns,
                self.end_ns,
                self.attributes,
                self.resource,
                self.events,
            ],
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Span:
        return cls(*json.loads(text))


@dataclass(frozen=True)
class Damage:
    """A line that could not be decoded: the traces it mentions, with the earliest start time seen for each."""

    path: str
    line: int
    reason: str
    detail: str
    trace_starts: dict[str, int | None]


_TRACE_ID_IN_TEXT = re.compile(r'"traceId"\s*:\s*"([0-9A-Za-z+/=]{1,64})"')
_START_IN_TEXT = re.compile(r'"startTimeUnixNano"\s*:\s*"?(\d{1,20})')


def any_value(value: Any) -> Any:
    """An OTLP/JSON `AnyValue` as a Python value; `ValueError` for a shape OTLP does not define."""
    if not isinstance(value, dict):
        raise ValueError(f"an attribute value is a {type(value).__name__}, not an OTLP AnyValue object")
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
    """A trace or span id as lowercase hex. The Collector writes hex; a protobuf-JSON tool writes base64 (24 or 12
    characters with padding): both are accepted, so an export made either way is assembled the same."""
    if not value:
        return ""
    text = str(value)
    if re.fullmatch(r"[0-9a-fA-F]+", text) and len(text) in (16, 32):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return text
    return raw.hex() if len(raw) in (8, 16) else text


def request_spans(request: dict[str, Any]) -> Iterator[Span]:
    """The spans of one decoded ExportTraceServiceRequest; `ValueError`/`KeyError`/`TypeError` when it is not one."""
    resource_spans = request["resourceSpans"]
    if not isinstance(resource_spans, list):
        raise ValueError("resourceSpans is not a list")
    for resource_span in resource_spans:
        resource = key_values((resource_span.get("resource") or {}).get("attributes"))
        for scope_span in resource_span.get("scopeSpans") or resource_span.get("instrumentationLibrarySpans") or []:
            for raw in scope_span.get("spans") or []:
                yield Span(
                    trace_id=span_id(raw["traceId"]),
                    span_id=span_id(raw["spanId"]),
                    parent_span_id=span_id(raw.get("parentSpanId")),
                    name=str(raw.get("name", "")),
                    start_ns=int(raw.get("startTimeUnixNano") or 0),
                    end_ns=int(raw.get("endTimeUnixNano") or 0),
                    attributes=key_values(raw.get("attributes")),
                    resource=resource,
                    events=[
                        {
                            "name": e.get("name", ""),
                            "time_ns": int(e.get("timeUnixNano") or 0),
                            "attributes": key_values(e.get("attributes")),
                        }
                        for e in raw.get("events") or []
                    ],
                )


def otlp_json_files(path: Path) -> list[Path]:
    """The files of an OTLP/JSON source: the file itself, or every regular file under the folder, in name order
    (the Collector's rotation names sort in time order)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    if path.is_file():
        return [path]
    raise UnreadableSource(f"{path}: no such file or folder (RAGWATCH_TRACE_SOURCE_PATH)")


def read_otlp_json(path: Path) -> Iterator[Span | Damage]:
    """Every span of one OTLP/JSON-lines file, line by line, and a `Damage` for each line that cannot be decoded.

    A file of which not one line decodes is not trace data (another format, a binary, the wrong folder): that fails
    here, naming the file, rather than quarantining every trace of the day.
    """
    decoded = damaged = 0
    first_error = ""
    with open(path, "rb") as handle:
        for number, raw_line in enumerate(handle, start=1):
            line = raw_line.strip()
            if not line:
                continue
            try:
                spans = list(request_spans(json.loads(line)))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                damaged += 1
                first_error = first_error or f"line {number}: {type(exc).__name__}: {str(exc)[:200]}"
                # The exporter ends every request with a newline: a last line without one was cut while written.
                yield _damage(path, number, line, exc, truncated=not raw_line.endswith(b"\n"))
                continue
            decoded += 1
            yield from spans
    if damaged and not decoded:
        raise UnreadableSource(
            f"{path}: no line is an OTLP/JSON ExportTraceServiceRequest ({first_error}); "
            "point RAGWATCH_TRACE_SOURCE_PATH at the Collector file exporter's output"
        )


def _damage(path: Path, number: int, line: bytes, exc: Exception, *, truncated: bool) -> Damage:
    text = line.decode("utf-8", errors="replace")
    starts: dict[str, int | None] = {}
    # Each trace id is paired with the first start time written after it: in OTLP/JSON a span's startTimeUnixNano
    # follows its traceId.
    for match in _TRACE_ID_IN_TEXT.finditer(text):
        trace = span_id(match.group(1))
        start = _START_IN_TEXT.search(text, match.end())
        value = int(start.group(1)) if start else None
        known = starts.get(trace)
        starts[trace] = value if known is None else (known if value is None else min(known, value))
    reason = "truncated_file" if truncated else "unreadable_line"
    return Damage(
        str(path), number, reason, f"{path.name} line {number}: {type(exc).__name__}: {str(exc)[:160]}", starts
    )
