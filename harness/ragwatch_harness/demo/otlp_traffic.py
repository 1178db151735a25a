"""The demo's traffic as OTLP/JSON span files (`make demo TRACE_SOURCE=otlp`), written by the
OpenTelemetry SDK.

Each demo trace becomes what a GenAI-instrumented RAG app exports: a root span (app, language and
feedback as `ragwatch.*` attributes, its duration the trace's latency), an `execute_tool` span per
tool call, a `retrieval` span (the question as `gen_ai.retrieval.query.text`, the contexts as
`gen_ai.retrieval.documents` with each chunk's text as `content` beside the convention's id and
score) and a `chat` span (the model, the question in, the answer out). The SDK writes them through
`OtlpJsonFileExporter`, with the trace's own timestamps and its id: the demo's `tr-<uuid>` ids
become the uuid's 32 hex digits, a valid OTLP trace id.

Rows the SQL demo breaks on purpose are written as far as spans can carry them: a missing question
is a root with none (quarantined as `missing_field`, as the SQL row is); a context list that is not
JSON or a timestamp that is not one cannot exist in a span and is left out.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import set_span_in_context

from pipelines.core.settings import Settings
from pipelines.stores.trace_sources.otlp_file_exporter import OtlpJsonFileExporter
from pipelines.traces.parse import Rejection, parse_row

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
FLUSH_EVERY = 500
"""Traces between flushes: the batch processor drops spans its queue cannot hold, and the demo must
lose none."""


def otlp_trace_id(trace_id: str) -> str:
    """The demo's `tr-<uuid>` as 32 hex digits; any other id as the first 32 hex digits of its
    SHA-256."""
    digits = trace_id.removeprefix("tr-").replace("-", "")
    if len(digits) == 32 and all(c in "0123456789abcdef" for c in digits):
        return digits
    return hashlib.sha256(trace_id.encode()).hexdigest()[:32]


class _DemoIds(IdGenerator):
    """The trace id the writer asks for next, and span ids drawn from it, so a reseed writes the
    same ids."""

    def __init__(self):
        self.trace_ids: deque[int] = deque()
        self.count = 0

    def generate_trace_id(self) -> int:
        return self.trace_ids.popleft()

    def generate_span_id(self) -> int:
        self.count += 1
        return int(hashlib.sha256(f"span-{self.count}".encode()).hexdigest()[:16], 16) or 1


def _ns(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1) * 1_000


def write_otlp_traffic(
    rows: Iterable[dict[str, Any]], path: Path, *, max_field_chars: int
) -> dict[str, int]:
    """Append `rows` (the SQL demo's raw rows) to the OTLP/JSON file `path`; counts of traces
    written and left out."""
    ids = _DemoIds()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "ragwatch-demo"}), id_generator=ids
    )
    provider.add_span_processor(
        BatchSpanProcessor(
            OtlpJsonFileExporter(path), max_queue_size=FLUSH_EVERY * 8, max_export_batch_size=512
        )
    )
    tracer = provider.get_tracer("ragwatch.demo")
    counts = {"traces": 0, "left_out": 0}
    try:
        for row in rows:
            parsed = parse_row(row, max_field_chars=max_field_chars)
            if isinstance(parsed, Rejection) and parsed.reason != "missing_field":
                counts["left_out"] += 1
                continue
            trace = row if isinstance(parsed, Rejection) else parsed.model_dump()
            ids.trace_ids.append(int(otlp_trace_id(str(row["trace_id"])), 16))
            _write_trace(tracer, trace, row)
            counts["traces"] += 1
            if counts["traces"] % FLUSH_EVERY == 0:
                provider.force_flush()
    finally:
        provider.shutdown()
    return counts


def _write_trace(tracer, trace: dict[str, Any], raw: dict[str, Any]) -> None:
    start = (
        _ns(trace["ts"])
        if isinstance(trace["ts"], datetime)
        else _ns(datetime.fromisoformat(str(raw["ts"])))
    )
    end = start + int(trace.get("latency_ms") or 1) * 1_000_000
    root_attributes: dict[str, Any] = {"ragwatch.app": trace.get("app") or "default"}
    if raw.get("language"):  # what the app recorded: a null stays unrecorded, as in the SQL row
        root_attributes["ragwatch.language"] = raw["language"]
    if trace.get("user_feedback") is not None:
        root_attributes["ragwatch.user_feedback"] = trace["user_feedback"]
    root = tracer.start_span("rag.request", start_time=start, attributes=root_attributes)
    question = trace.get("question")
    if question:
        context = set_span_in_context(root)
        step = max(1, (end - start) // 8)
        for i, call in enumerate(trace.get("tool_calls") or []):
            span = tracer.start_span(
                f"execute_tool {call['name']}",
                context=context,
                start_time=start + step // 4 + i,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call["name"],
                    "gen_ai.tool.call.arguments": json.dumps(
                        call.get("arguments") or {}, ensure_ascii=False
                    ),
                },
            )
            span.end(end_time=start + step // 2)
        documents = [
            {"id": c["chunk_id"], "score": c.get("score"), "content": c["text"]}
            for c in trace.get("contexts") or []
        ]
        span = tracer.start_span(
            "retrieval docs",
            context=context,
            start_time=start + step,
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": question,
                "gen_ai.retrieval.documents": json.dumps(documents, ensure_ascii=False),
            },
        )
        span.end(end_time=start + 2 * step)
        chat: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": question}]}],
                ensure_ascii=False,
            ),
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": trace.get("answer") or ""}],
                        "finish_reason": "stop",
                    }
                ],
                ensure_ascii=False,
            ),
        }
        if trace.get("model"):
            chat["gen_ai.request.model"] = chat["gen_ai.response.model"] = trace["model"]
        span = tracer.start_span(
            f"chat {trace.get('model') or ''}".strip(),
            context=context,
            start_time=start + 2 * step,
            attributes=chat,
        )
        span.end(end_time=end - 1)
    root.end(end_time=end)


def seed_demo_otlp(
    settings: Settings, *, days: int, per_day: int, seed: int, replace: bool
) -> dict[str, Any]:
    """The demo's traffic (the SQL demo's rows, same seed) as OTLP/JSON files in
    RAGWATCH_TRACE_SOURCE_PATH."""
    from ragwatch_harness.demo.seed import demo_traffic

    if not settings.trace_source_path:
        raise RuntimeError(
            "set RAGWATCH_TRACE_SOURCE_PATH to the folder the demo's OTLP files go to"
        )
    folder = Path(settings.trace_source_path)
    path = folder / "traces.jsonl"
    if path.exists() and not replace:
        raise RuntimeError(f"{path} already holds spans; pass --replace to rewrite it")
    path.unlink(missing_ok=True)
    today = datetime.now(timezone.utc).date()
    rows = demo_traffic(days=days, per_day=per_day, seed=seed, end=today)
    counts = write_otlp_traffic(rows, path, max_field_chars=settings.max_field_chars)
    return {
        **counts,
        "first_day": (today - timedelta(days=days)).isoformat(),
        "last_day": (today - timedelta(days=1)).isoformat(),
        "path": str(path),
    }
