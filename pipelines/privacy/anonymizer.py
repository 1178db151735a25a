"""Keyed pseudonyms: within one trace a value reads the same everywhere; across traces it does not.

A pseudonym is `[TYPE_xxxxxxxx]`, the first 8 hex digits of HMAC-SHA256(key, scope, type,
canonical value). Without the key it cannot be reversed or linked across scopes.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from typing import Any

from pipelines.privacy.recognizers import find_pii
from pipelines.records import Trace


class Anonymizer:
    def __init__(self, key: bytes):
        if not key:
            raise ValueError("the anonymizer needs a non-empty key")
        self._key = key

    def pseudonym(self, scope: str, entity_type: str, canonical: str) -> str:
        # A separator keeps ("ab", "c") and ("a", "bc") from sharing a message.
        message = f"{scope}\x1f{entity_type}\x1f{canonical}".encode()
        return f"[{entity_type}_{hmac.new(self._key, message, hashlib.sha256).hexdigest()[:8]}]"

    def anonymize_text(self, text: str, scope: str, counts: Counter) -> str:
        spans = find_pii(text)
        if not spans:
            return text
        parts, cursor = [], 0
        for span in spans:
            parts += (text[cursor : span.start], self.pseudonym(scope, span.type, span.canonical))
            cursor = span.end
            counts[span.type] += 1
        parts.append(text[cursor:])
        return "".join(parts)

    def anonymize_value(self, value: Any, scope: str, counts: Counter) -> Any:
        """Every string inside a JSON-like value; dict keys are schema, not content, and stay."""
        if isinstance(value, str):
            return self.anonymize_text(value, scope, counts)
        if isinstance(value, dict):
            return {key: self.anonymize_value(item, scope, counts) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.anonymize_value(item, scope, counts) for item in value]
        return value

    def anonymize_trace(self, trace: Trace) -> tuple[Trace, Counter]:
        """The trace with every free-text field pseudonymized under one scope, and what was found."""
        counts: Counter = Counter()
        scope = trace.trace_id

        def text(value: str) -> str:
            return self.anonymize_text(value, scope, counts)

        anonymized = trace.model_copy(
            update={
                "question": text(trace.question),
                "answer": text(trace.answer),
                "contexts": [c.model_copy(update={"text": text(c.text)}) for c in trace.contexts],
                "tool_calls": [
                    call.model_copy(update={"arguments": self.anonymize_value(call.arguments, scope, counts)})
                    for call in trace.tool_calls
                ],
                "metadata": self.anonymize_value(trace.metadata, scope, counts),
            }
        )
        return anonymized, counts
