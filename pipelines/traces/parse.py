"""Turn one raw store row into a Trace, or into a rejection that names the field and reason."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from pipelines.core.language import detect_language
from pipelines.core.records import Trace
from pipelines.core.user_question import NO_RULE, QuestionRule, choose_question
from pipelines.stores.trace_sources.assemble import SOURCE_REJECTION

JSON_FIELDS = ("contexts", "tool_calls", "metadata")
TEXT_FIELDS = ("question", "answer", "contexts", "tool_calls", "metadata")


@dataclass(frozen=True)
class Rejection:
    reason: str
    """Stable machine-readable cause, the same for a trace whatever its source: missing_field (no
    question or no answer), invalid_json, field_too_large, bad_timestamp, invalid_value,
    question_is_prompt (the question holds the prompt built around it); from span exports also
    unknown_attribute_shape, truncated_file, unreadable_line, incomplete_trace."""
    field: str | None
    detail: str


def parse_row(
    raw: dict[str, Any], *, max_field_chars: int, question_rule: QuestionRule = NO_RULE
) -> Trace | Rejection:
    if (
        rejected := raw.get(SOURCE_REJECTION)
    ) is not None:  # a span tree the file source could not assemble
        reason, field, detail = rejected
        return Rejection(reason, field, detail)
    for name in TEXT_FIELDS:
        value = raw.get(name)
        if isinstance(value, str) and len(value) > max_field_chars:
            return Rejection(
                "field_too_large",
                name,
                f"{name} has {len(value):,} characters (limit {max_field_chars:,})",
            )
    question = raw.get("question")
    if question is not None and not isinstance(
        question, str
    ):  # SQLite keeps whatever type was inserted
        return Rejection(
            "invalid_value", "question", f"question is a {type(question).__name__}, not text"
        )
    if not (question or "").strip():
        return Rejection("missing_field", "question", "question is null or empty")
    if raw.get("answer") is None:
        return Rejection("missing_field", "answer", "answer is null")

    ts = parse_timestamp(raw.get("ts"))
    if ts is None:
        return Rejection(
            "bad_timestamp", "ts", f"cannot read {str(raw.get('ts'))[:40]!r} as a UTC timestamp"
        )

    fields = dict(raw, ts=ts)
    for name in JSON_FIELDS:
        value = raw.get(name)
        if value is None or value == "":
            fields[name] = None
            continue
        if isinstance(value, str):
            try:
                fields[name] = json.loads(value)
            except json.JSONDecodeError as exc:
                return Rejection(
                    "invalid_json", name, f"{name} is not valid JSON: {exc.msg} at char {exc.pos}"
                )
    fields = {
        k: v
        for k, v in fields.items()
        if v is not None or k in ("model", "user_feedback", "latency_ms")
    }
    try:
        trace = Trace.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        return Rejection("invalid_value", where, f"{where}: {first['msg']}")
    # Whatever the source, a question that is the prompt built around it is not the user's question.
    chosen = choose_question(
        [("question", trace.question)], [c.text for c in trace.contexts if c.text], question_rule
    )
    if chosen.rejection is not None:
        return Rejection(*chosen.rejection)
    update: dict[str, Any] = {}
    if chosen.question != trace.question:
        update["question"] = chosen.question
    if (
        raw.get("language") is None
    ):  # not recorded, in a SQL column or on a span: the question's language
        update["language"] = detect_language(chosen.question)
    return trace.model_copy(update=update) if update else trace


def parse_timestamp(value: Any) -> datetime | None:
    """The instant in UTC: naive values are UTC already, others are converted (`+02:00` -> its UTC
    time)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return (
        value.replace(tzinfo=timezone.utc)
        if value.tzinfo is None
        else value.astimezone(timezone.utc)
    )
