"""An OpenTelemetry SDK span exporter writing OTLP/JSON lines, the format of the Collector's file
exporter.

`opentelemetry-exporter-otlp-json-file` (0.66b1) would do this, but it pins
`opentelemetry-exporter-otlp-common` 0.66b1 where Airflow's set has 0.66b2, so it cannot join the
pinned dependency set. This exporter uses the SDK's own OTLP encoder (`encode_spans`, the one the
OTLP/HTTP exporter sends) and protobuf's JSON mapping, then applies the two rules by which OTLP/JSON
differs from that mapping: trace and span ids are hex, not base64, and enums are integers. The demo
writes its traffic with it and the tests export through it.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The ExportTraceServiceRequest of `spans` in the OTLP/JSON encoding."""
    return request_json(encode_spans(spans))


def request_json(request: Message) -> dict[str, Any]:
    """An OTLP request message (as an OTLP/HTTP endpoint receives it) in the OTLP/JSON encoding."""
    encoded = MessageToDict(request, use_integers_for_enums=True)
    _hex_ids(encoded)
    return encoded


def _hex_ids(value: Any) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ID_FIELDS and isinstance(inner, str):
                value[key] = base64.b64decode(inner).hex()
            else:
                _hex_ids(inner)
    elif isinstance(value, list):
        for inner in value:
            _hex_ids(inner)


class OtlpJsonFileExporter(SpanExporter):
    """Appends one ExportTraceServiceRequest per export call to `path`, one JSON object per line."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held until shutdown, like the SDK's
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        line = json.dumps(otlp_json(spans), ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            if self._file.closed:
                return SpanExportResult.FAILURE
            self._file.write(line)
            self._file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._file.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
