"""Online scores back where teams look at their traces: one `gen_ai.evaluation.result` event per
score, over OTLP.

With `RAGWATCH_OTLP_ENDPOINT` set (an OTLP/HTTP endpoint such as a Collector's
`http://otel-collector:4318`), the online eval's finalize sends its scores through the OpenTelemetry
Logs API as the GenAI semantic conventions define the event. Its trace context is the evaluated
GenAI operation: the LLM span whose reply is the judged answer (`evaluated_span_id` in the sampled
row's metadata), else the trace's root span (`span_id`); the model's response id (`response_id`)
travels as `gen_ai.response.id`, which ties the event to the operation where no span id does.

A score the judge produced carries `gen_ai.evaluation.score.value` and, where the metric has
operating bands, `gen_ai.evaluation.score.label` (healthy, watch or problem). A failed evaluation
carries `error.type` `_OTHER` (the convention's fallback: ragwatch records why a score failed as
text, not as a class) and the reason as its explanation. A metric that does not apply to a trace (no
contexts to be faithful to, no tool calls to check, the token budget spent before it ran) is not
sent: no evaluation ran, so there is no result to report, and `error.type` would claim a failure.
The results DB keeps those rows.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from pipelines.core.records import Score
from pipelines.evaluation.statistics.diagnose import THRESHOLDS
from pipelines.stores.partitions import iter_part_batches

log = logging.getLogger(__name__)
EVENT_NAME = "gen_ai.evaluation.result"
FAILED_EVALUATION = "_OTHER"
HEX_TRACE_ID = re.compile(r"(?!0{32})[0-9a-f]{32}")
HEX_SPAN_ID = re.compile(r"(?!0{16})[0-9a-f]{16}")


@dataclass(frozen=True)
class EvaluatedOperation:
    """The GenAI operation a trace's scores judge: its span id and the model's response id, each
    when known."""

    span_id: str | None = None
    response_id: str | None = None

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> EvaluatedOperation:
        """The LLM span that produced the answer, else the root span; a value that is no span id
        (one the anonymizer replaced, say) counts as absent."""
        span_ids = (metadata.get("evaluated_span_id"), metadata.get("span_id"))
        span_id = next(
            (s for s in span_ids if isinstance(s, str) and HEX_SPAN_ID.fullmatch(s)), None
        )
        response_id = metadata.get("response_id")
        return cls(span_id, response_id if isinstance(response_id, str) and response_id else None)


NOT_KNOWN = EvaluatedOperation()


def evaluation_attributes(score: Score, response_id: str | None = None) -> dict[str, Any] | None:
    """The event's attributes for one score row; None for a metric that did not apply (no event)."""
    if score.status == "skipped":
        return None
    attributes: dict[str, Any] = {"gen_ai.evaluation.name": score.metric}
    if score.value is None:
        attributes["error.type"] = FAILED_EVALUATION
        attributes["gen_ai.evaluation.explanation"] = (score.error or score.status)[:1000]
    else:
        attributes["gen_ai.evaluation.score.value"] = float(score.value)
        band = next(
            (t for t in THRESHOLDS if t.metric == score.metric and t.contains(score.value)), None
        )
        if band is not None:
            attributes["gen_ai.evaluation.score.label"] = band.severity
            attributes["gen_ai.evaluation.explanation"] = (
                f"{band.users_see} ({score.metric} {band.band}); first action: {band.first_action}"
            )
    if response_id:
        attributes["gen_ai.response.id"] = response_id
    # ragwatch's own keys stay out of the gen_ai namespace: the judge is not the evaluated
    # operation's model.
    attributes["ragwatch.run_id"] = score.run_id
    attributes["ragwatch.stratum"] = score.stratum
    if score.judge_model:
        attributes["ragwatch.judge_model"] = score.judge_model
    return attributes


def trace_context(trace_id: str, span_id: str | None):
    """The evaluated span as the event's context, when both ids are OTLP ids."""
    if not (HEX_TRACE_ID.fullmatch(trace_id) and span_id and HEX_SPAN_ID.fullmatch(span_id)):
        return None
    parent = SpanContext(
        int(trace_id, 16),
        int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def evaluated_operations(
    parts: Iterable[Path], trace_ids: set[str]
) -> dict[str, EvaluatedOperation]:
    """Trace id -> evaluated operation of the judged traces, from the day's sampled partition, whose
    rows carry the ids in their metadata (see `EvaluatedOperation.from_metadata`). Two columns are
    read, a batch at a time."""
    found = {}
    for batch in iter_part_batches(
        list(parts), batch_size=10_000, columns=["trace_id", "metadata"]
    ):
        for trace_id, metadata in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            if trace_id not in trace_ids or not metadata:
                continue
            try:
                parsed = json.loads(metadata)
            except ValueError:
                continue
            if (
                isinstance(parsed, dict)
                and (operation := EvaluatedOperation.from_metadata(parsed)) != NOT_KNOWN
            ):
                found[trace_id] = operation
    return found


def emit_evaluation_events(
    endpoint: str,
    scores: Iterable[Score],
    operations: dict[str, EvaluatedOperation],
    *,
    timeout_s: float = 10.0,
) -> int:
    """Send one event per applicable score to `endpoint` (OTLP/HTTP, `/v1/logs` appended); returns
    how many were sent.

    `operations`: the evaluated operation of each trace id (`evaluated_operations`). A trace id that
    is no OTLP id, or a trace with no span id, sends its events without a trace context and with
    `ragwatch.trace_id`. Export errors fail the call, so a task that was asked to send the scores
    does not pass silently without them.
    """
    exporter = OTLPLogExporter(endpoint=endpoint.rstrip("/") + "/v1/logs", timeout=timeout_s)
    failures = _CountingExporter(exporter)
    provider = LoggerProvider(resource=Resource.create({"service.name": "ragwatch"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(failures, max_export_batch_size=512))
    logger = provider.get_logger("ragwatch.online_eval")
    sent = not_applicable = 0
    try:
        for score in scores:
            operation = operations.get(score.item_id, NOT_KNOWN)
            attributes = evaluation_attributes(score, operation.response_id)
            if attributes is None:
                not_applicable += 1
                continue
            context = trace_context(score.item_id, operation.span_id)
            if context is None:
                attributes["ragwatch.trace_id"] = score.item_id
            logger.emit(
                event_name=EVENT_NAME,
                attributes=attributes,
                context=context,
                # without it the record's time is 0 and some backends file it in 1970
                timestamp=time.time_ns(),
                severity_number=SeverityNumber.INFO,
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
    log.info(
        "sent %d evaluation events to %s (%d not-applicable scores not sent)",
        sent,
        endpoint,
        not_applicable,
    )
    return sent


class _CountingExporter:
    """The OTLP exporter, counting the records of batches it failed to send (the SDK only logs
    them)."""

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
