import json
from datetime import datetime, timezone

import pytest

from pipelines.core.records import Trace
from pipelines.traces.parse import Rejection, parse_row

GOOD = {
    "trace_id": "tr-1",
    "ts": "2026-11-29 10:00:00.000000",
    "question": "¿Qué hace la sentencia assert?",
    "answer": "Comprueba una condición.",
    "contexts": json.dumps(
        [{"chunk_id": "pydoc/assert#0", "text": "The assert statement...", "score": 0.8}]
    ),
    "tool_calls": json.dumps(
        [{"name": "vector_search", "arguments": {"query": "assert", "top_k": 5}}]
    ),
    "model": "qwen2.5-7b-instruct",
    "app": "docs-assistant",
    "language": "es",
    "user_feedback": 1,
    "latency_ms": 840,
    "metadata": json.dumps({"session": "s-1"}),
}


def test_a_good_row_becomes_a_trace_in_utc():
    trace = parse_row(GOOD, max_field_chars=10_000)
    assert isinstance(trace, Trace)
    assert trace.ts == datetime(2026, 11, 29, 10, tzinfo=timezone.utc)
    assert trace.tool_calls[0].arguments == {"query": "assert", "top_k": 5}


@pytest.mark.parametrize(
    ("change", "reason", "field"),
    [
        ({"question": None}, "missing_field", "question"),
        ({"question": "   "}, "missing_field", "question"),
        ({"contexts": '[{"chunk_id": "a", "text": "trunc'}, "invalid_json", "contexts"),
        ({"tool_calls": "{not json"}, "invalid_json", "tool_calls"),
        ({"answer": "x" * 10_001}, "field_too_large", "answer"),
        ({"ts": "2026-11-29 25:61:00"}, "bad_timestamp", "ts"),
        ({"user_feedback": 5}, "invalid_value", "user_feedback"),
        ({"contexts": json.dumps([{"text": "no id"}])}, "invalid_value", "contexts.0.chunk_id"),
    ],
)
def test_bad_rows_are_rejected_with_the_field_and_reason(change, reason, field):
    rejection = parse_row({**GOOD, **change}, max_field_chars=10_000)
    assert isinstance(rejection, Rejection)
    assert (rejection.reason, rejection.field) == (reason, field)
    assert rejection.detail


def test_a_question_that_is_the_prompt_is_quarantined_from_any_source():
    """The SQL store's question column too: an app that logged its filled template instead of the
    user's words."""
    context = "La sentencia assert comprueba una condición y lanza AssertionError si es falsa."
    prompt = f"Contexto:\n{context}\n\nPregunta: ¿Qué hace la sentencia assert?\nRespuesta:"
    row = {
        **GOOD,
        "question": prompt,
        "contexts": json.dumps([{"chunk_id": "pydoc/assert#0", "text": context}]),
    }
    rejection = parse_row(row, max_field_chars=10_000)
    assert isinstance(rejection, Rejection) and (rejection.reason, rejection.field) == (
        "question_is_prompt",
        "question",
    )
    from pipelines.core.user_question import QuestionRule

    rule = QuestionRule.of(None, r"Pregunta:\s*(?P<question>.+?)\s*Respuesta:")
    assert (
        parse_row(row, max_field_chars=10_000, question_rule=rule).question
        == "¿Qué hace la sentencia assert?"
    )


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [(None, "es"), ("es", "es"), ("pt", "pt")],
    ids=["not recorded", "recorded", "recorded, another"],
)
def test_a_language_not_recorded_is_the_questions_from_any_source(recorded, expected):
    """A SQL null or a span tree without a language attribute: the row gets the language its
    question is written in, never `und` from one source and the detected one from another."""
    trace = parse_row({**GOOD, "language": recorded}, max_field_chars=10_000)
    assert isinstance(trace, Trace) and trace.language == expected
    english = parse_row(
        {**GOOD, "language": None, "question": "What does assert do?"}, max_field_chars=10_000
    )
    assert english.language == "en"
