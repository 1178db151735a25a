"""The residual PII check of a sampled row as it is written: every free-text field, by the rules of
`privacy.residual`.

Staging runs it on each anonymized row (a row that trips a rule is quarantined) and validation runs
it again on the written partition. Both run it in worker processes, so this module imports only the
rules: a spawned worker that unpickles `residual_findings` loads neither pyarrow nor pandas (~130 MB
of RSS per worker).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pipelines.privacy.memo import per_distinct_context
from pipelines.privacy.residual import residual_pii_reasons
from pipelines.privacy.trace_context import span_ids, without_span_ids


def free_text_fields(row: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, text) for every free-text field of a sampled row as it is written, so none escapes
    the PII checks."""
    yield "question", row["question"] or ""
    yield "answer", row["answer"] or ""
    for i, context in enumerate(row["contexts"] if row["contexts"] is not None else []):
        if context is not None:
            yield f"contexts[{i}].text", context["text"] or ""
    for i, call in enumerate(row["tool_calls"] if row["tool_calls"] is not None else []):
        if call is not None:
            yield f"tool_calls[{i}].arguments", call["arguments"] or ""
    yield "metadata", _metadata_text(row["metadata"])


def _metadata_text(metadata: str | None) -> str:
    """The metadata as written, less the span ids the evaluation events need
    (`privacy.trace_context`)."""
    if not metadata:
        return ""
    try:
        parsed = json.loads(metadata)
    except json.JSONDecodeError:
        return metadata
    if not isinstance(parsed, dict) or not span_ids(parsed):
        return metadata
    return json.dumps(without_span_ids(parsed), ensure_ascii=False, sort_keys=True)


def residual_pii_by_field(row: dict[str, Any]) -> dict[str, list[str]]:
    """The residual rules each free-text field of a sampled row trips; empty when the row looks
    clean.

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
    """`residual_pii_reasons` of a retrieved context as written, checked once per process (see
    `memo`)."""
    return tuple(residual_pii_reasons(text))


def describe_residual(residual: dict[str, list[str]]) -> str:
    """ "answer: long_digit_run; metadata: at_sign_like": fields and rule names, never a value."""
    return "; ".join(f"{name}: {','.join(reasons)}" for name, reasons in residual.items())


def residual_findings(rows: list[dict[str, Any]]) -> list[str]:
    """Per written row (its free-text columns as Python values): the residual rules its fields trip,
    described without values ("" when clean)."""
    return [describe_residual(residual_pii_by_field(row)) for row in rows]
