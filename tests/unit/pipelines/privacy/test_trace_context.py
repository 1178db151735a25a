"""Span ids survive anonymization and the residual check; nothing else under their keys does."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from pipelines.core.records import Trace
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.traces.prepare import _sampled_row
from pipelines.traces.residual_fields import residual_pii_by_field

CARD = "4532015112830366"  # all digits and Luhn-valid: a span id one in a couple of thousand times


def trace(metadata: dict) -> Trace:
    return Trace(
        trace_id="a" * 32,
        ts=datetime(2026, 12, 7, tzinfo=timezone.utc),
        question="How do I restart the pod?",
        answer="Run kubectl rollout restart.",
        metadata=metadata,
    )


def test_an_all_digit_span_id_is_kept_and_passes_the_residual_check():
    anonymized, counts = Anonymizer(b"key").anonymize_trace(
        trace({"span_id": CARD, "evaluated_span_id": CARD})
    )
    assert anonymized.metadata == {"span_id": CARD, "evaluated_span_id": CARD} and not counts
    assert residual_pii_by_field(_sampled_row(anonymized, counts, 1.0)) == {}


def test_the_same_digits_anywhere_else_are_anonymized_or_flagged():
    anonymized, counts = Anonymizer(b"key").anonymize_trace(
        trace({"span_id": f"card {CARD}", "note": CARD})
    )
    assert CARD not in json.dumps(anonymized.metadata) and counts["CREDIT_CARD"] == 2
    row = _sampled_row(
        trace({"span_id": CARD, "note": CARD}), {}, 1.0
    )  # as if the anonymizer had missed it
    assert residual_pii_by_field(row) == {"metadata": ["long_digit_run"]}
