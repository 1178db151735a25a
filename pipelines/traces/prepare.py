"""A batch of raw store rows made ready to write, in a worker process: parsed, anonymized,
residual-checked.

Sampling reads rows in the parent and writes them there; this is the work between, run in spawned
workers (`batching.map_in_processes`). It imports only what that work needs: a spawned worker loads
the module of the function it runs, and pyarrow and SQLAlchemy, the parent's, would cost every
worker ~100 MB of RSS.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pipelines.core.records import ANONYMIZER_VERSION, SAMPLER_VERSION, Trace
from pipelines.core.user_question import QuestionRule
from pipelines.privacy.anonymizer import Anonymizer, clip_outside_pseudonyms
from pipelines.privacy.residual import residual_pii_reasons
from pipelines.traces.parse import Rejection, parse_row
from pipelines.traces.residual_fields import (
    describe_residual,
    free_text_fields,
    residual_pii_by_field,
)

QUARANTINE_CLIP_CHARS = 4_000
CLIP_MARGIN_CHARS = 16_000
RESIDUAL_PII = "residual_pii"
"""The quarantine reason of a row the anonymizer passed but the residual check did not."""


@dataclass(frozen=True)
class PreparedRow:
    """One store row ready to write: a sampled row, or a quarantined one with its reason."""

    row: dict[str, Any]
    rejection: str | None
    pii_counts: Counter


_worker: dict[str, Any] = {}
"""What each worker process needs, set once when it starts (the anonymizer holds the key)."""


def set_up_worker(
    anonymizer: Anonymizer, max_field_chars: int, rate: float, question_rule: QuestionRule
) -> None:
    _worker.update(
        anonymizer=anonymizer,
        max_field_chars=max_field_chars,
        rate=rate,
        question_rule=question_rule,
    )


def prepare_batch(raws: list[dict[str, Any]]) -> list[PreparedRow]:
    """Parse, anonymize and residual-check a batch of raw rows (runs in a worker process)."""
    anonymizer, rate = _worker["anonymizer"], _worker["rate"]
    prepared = []
    for raw in raws:
        parsed = parse_row(
            raw, max_field_chars=_worker["max_field_chars"], question_rule=_worker["question_rule"]
        )
        if isinstance(parsed, Rejection):
            # Quarantined text is anonymized too; the summary's PII counts are those of sampled
            # rows.
            prepared.append(
                PreparedRow(_quarantine_row(anonymizer, raw, parsed), parsed.reason, Counter())
            )
        else:
            clean, counts = anonymizer.anonymize_trace(parsed)
            row = _sampled_row(clean, counts, rate)
            residual = residual_pii_by_field(row)
            if residual:
                prepared.append(
                    PreparedRow(_residual_quarantine_row(row, residual), RESIDUAL_PII, Counter())
                )
            else:
                prepared.append(PreparedRow(row, None, counts))
    return prepared


def _sampled_row(trace: Trace, pii_counts: Counter, rate: float) -> dict[str, Any]:
    row = trace.model_dump(mode="python")
    row["tool_calls"] = [
        {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)}
        for c in trace.tool_calls
    ]
    row["metadata"] = json.dumps(trace.metadata, ensure_ascii=False, sort_keys=True)
    row.update(
        sample_rate=rate,
        sampler_version=SAMPLER_VERSION,
        anonymizer_version=ANONYMIZER_VERSION,
        pii_counts=json.dumps(dict(sorted(pii_counts.items()))),
    )
    return row


def _withheld(reasons: list[str]) -> str:
    return f"[withheld by ragwatch: residual PII check ({','.join(reasons)})]"


def _residual_quarantine_row(row: dict[str, Any], residual: dict[str, list[str]]) -> dict[str, Any]:
    """The anonymized row's free text, the fields that tripped a rule withheld: a value the
    anonymizer missed must not reach the quarantine partition either, which is published with the
    day."""
    fields = {
        name: _withheld(residual[name]) if name in residual else text
        for name, text in free_text_fields(row)
    }
    return {
        "trace_id": row["trace_id"],
        "reason": RESIDUAL_PII,
        "field": next(iter(residual)),
        "detail": describe_residual(residual),
        "raw": json.dumps(fields, ensure_ascii=False, sort_keys=True),
        "sampler_version": SAMPLER_VERSION,
        "anonymizer_version": ANONYMIZER_VERSION,
    }


def _quarantine_row(
    anonymizer: Anonymizer, raw: dict[str, Any], rejection: Rejection
) -> dict[str, Any]:
    trace_id = str(raw.get("trace_id"))
    counts: Counter = Counter()
    fields = {}
    for name, value in raw.items():
        if value is None:
            fields[name] = None
            continue
        text = str(value)
        # Anonymize first, then clip: a value cut at the clip point ("juan.perez@gm") is no longer
        # recognisable. The margin holds any value that straddles the clip point, a PEM key
        # included.
        anonymized = anonymizer.anonymize_text(
            text[: QUARANTINE_CLIP_CHARS + CLIP_MARGIN_CHARS], trace_id, counts
        )
        clipped = clip_outside_pseudonyms(anonymized, QUARANTINE_CLIP_CHARS)
        if clipped != anonymized or len(text) > QUARANTINE_CLIP_CHARS + CLIP_MARGIN_CHARS:
            clipped += f"… [clipped by ragwatch: {len(text):,} characters in the store]"
        reasons = residual_pii_reasons(clipped)
        fields[name] = _withheld(reasons) if reasons else clipped
    return {
        "trace_id": trace_id,
        "reason": rejection.reason,
        "field": rejection.field,
        "detail": anonymizer.anonymize_text(rejection.detail, trace_id, counts),
        "raw": json.dumps(fields, ensure_ascii=False, sort_keys=True),
        "sampler_version": SAMPLER_VERSION,
        "anonymizer_version": ANONYMIZER_VERSION,
    }
