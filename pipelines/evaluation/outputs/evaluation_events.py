"""Online scores back where teams look at their traces: one `gen_ai.evaluation.result` event per score, over OTLP.

With `RAGWATCH_OTLP_ENDPOINT` set (an OTLP/HTTP endpoint such as a Collector's `http://otel-collector:4318`), the
online eval's finalize sends every score of the run through the OpenTelemetry Logs API, as the GenAI semantic
conventions define the event: `gen_ai.evaluation.name` (the metric), `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label` (the operating band the value falls in: healthy, watch or problem) and
`gen_ai.evaluation.explanation` (what users see in that band, and the first action; for a failed score, why it
failed). Each event carries the evaluated trace's trace id and root span id as its trace context, so a tracing
backend shows the score on the trace it judged. A trace id that is not an OTLP id (the SQL store's own ids) sends
the event without a trace context and with `ragwatch.trace_id`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from pipelines.evaluation.statistics.diagnose import THRESHOLDS
from pipelines.records import Score
from pipelines.stores.partitions import iter_part_batches

log = logging.getLogger(__name__)
EVENT_NAME = "gen_ai.evaluation.result"
HEX_TRACE_ID = re.compile(r"[0-9a-f]{32}")
HEX_SPAN_ID = re.compile(r"[0-9a-f]{16}")


def evaluation_attributes(score: Score) -> dict[str, Any]:
    """The event's attributes for one score row."""
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": score.metric,
        "ragwatch.run_id": score.run_id,
        "ragwatch.stratum": score.stratum,
    }
    if score.judge_model:
        attributes["gen_ai.request.model"] = score.judge_model
    if score.value is None:
        attributes["error.type"] = score.status
        attributes["gen_ai.evaluation.explanation"] = (score.error or score.status)[:1000]
        return attributes
    attributes["gen_ai.evaluation.score.value"] = float(score.value)
    band = next((t for t in THRESHOLDS if t.metric == score.metric and t.contains(score.value)), None)
    if band is not None:
        attributes["gen_ai.evaluation.score.label"] = band.severity
        attributes["gen_ai.evaluation.explanation"] = (
            f"{band.users_see} ({score.metric} {band.band}); first action: {band.first_action}"
        )
    return attributes


def trace_context(trace_id: str, span_id: str | None):
    """The evaluated span as the event's context, when both ids are OTLP ids."""
    if not (HEX_TRACE_ID.fullmatch(trace_id) and span_id and HEX_SPAN_ID.fullmatch(span_id)):
        return None
    parent = SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def root_span_ids(parts: Iterable[Path], trace_ids: set[str]) -> dict[str, str]:
    """Trace id -> root span id of the judged traces, from the day's sampled partition: a row read from a span export
    records its root span's id in its metadata (`span_id`). Two columns are read, a batch at a time."""
    found = {}
    for batch in iter_part_batches(list(parts), batch_size=10_000, columns=["trace_id", "metadata"]):
        for trace_id, metadata in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            if trace_id not in trace_ids or not metadata:
                continue
            try:
                span_id = json.loads(metadata).get("span_id")
            except (ValueError, AttributeError):
                continue
            if isinstance(span_id, str):
                found[trace_id] = span_id
    return found


def emit_evaluation_events(
    endpoint: str, scores: Iterable[Score], span_ids: dict[str, str], *, timeout_s: float = 10.0
) -> int:
    """Send one event per score to `endpoint` (OTLP/HTTP, `/v1/logs` appended); returns how many were sent.

    `span_ids`: the evaluated span (the trace's root) of each trace id. Export errors fail the call, so a task that
    was asked to send the scores does not pass silently without them.
    """
    exporter = OTLPLogExporter(endpoint=endpoint.rstrip("/") + "/v1/logs", timeout=timeout_s)
    failures = _CountingExporter(exporter)
    provider = LoggerProvider(resource=Resource.create({"service.name": "ragwatch"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(failures, max_export_batch_size=512))
    logger = provider.get_logger("ragwatch.online_eval")
    sent = 0
    try:
        for score in scores:
            context = trace_context(score.item_id, span_ids.get(score.item_id))
            attributes = evaluation_attributes(score)
            if context is None:
                attributes["ragwatch.trace_id"] = score.item_id
            logger.emit(
                event_name=EVENT_NAME, attributes=attributes, context=context, severity_number=SeverityNumber.INFO
            )
            sent += 1
        provider.force_flush(int(timeout_s * 1000))
    finally:
        provider.shutdown()
    if failures.failed:
        raise RuntimeError(
            f"{failures.failed} of {sent} gen_ai.evaluation.result events were not accepted by "
            f"{endpoint} (RAGWATCH_OTLP_ENDPOINT)"
        )
    log.info("sent %d evaluation events to %s", sent, endpoint)
    return sent


class _CountingExporter:
    """The OTLP exporter, counting the records of batches it failed to send (the SDK only logs them)."""

    def __init__(self, inner: OTLPLogExporter):
        self.inner, self.failed = inner, 0

    def export(self, batch):
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        result = self.inner.export(batch)
        if result != LogRecordExportResult.SUCCESS:
            self.failed += len(batch)
        return result

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)
