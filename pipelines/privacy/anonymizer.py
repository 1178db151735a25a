"""Keyed pseudonyms: within one trace a value reads the same everywhere; across traces it does not.

A pseudonym is `[TYPE_xxxxxxxx]`, the first 8 hex digits of HMAC-SHA256(key, scope, type,
canonical value). Without the key it cannot be reversed or linked across scopes.

JSON-like values (tool arguments, metadata) are walked whole: keys are anonymized like any text (a
customer's e-mail can be a key), and a key that names what it holds (`password`, `phone`) vouches
for its value (see `fields`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from collections.abc import Callable
from typing import Any

from pipelines.core.records import Trace
from pipelines.privacy.fields import field_entity, whole_value_type
from pipelines.privacy.names import fold
from pipelines.privacy.recognizers import context_pii, find_pii, find_pii_many
from pipelines.privacy.spans import PSEUDONYM, Span
from pipelines.privacy.trace_context import span_ids, without_span_ids


class Anonymizer:
    def __init__(self, key: bytes):
        if not key:
            raise ValueError("the anonymizer needs a non-empty key")
        self._key = key

    def pseudonym(self, scope: str, entity_type: str, canonical: str) -> str:
        # A separator keeps ("ab", "c") and ("a", "bc") from sharing a message; lone surrogates
        # (from JSON such as "\ud800") are encoded as they are rather than crash the run.
        message = f"{scope}\x1f{entity_type}\x1f{canonical}".encode("utf-8", "surrogatepass")
        return f"[{entity_type}_{hmac.new(self._key, message, hashlib.sha256).hexdigest()[:8]}]"

    def anonymize_text(self, text: str, scope: str, counts: Counter) -> str:
        return self._replaced(text, find_pii(text), scope, counts)

    def _replaced(self, text: str, spans: list[Span], scope: str, counts: Counter) -> str:
        if not spans:
            return text
        parts, cursor = [], 0
        for span in spans:
            parts += (text[cursor : span.start], self.pseudonym(scope, span.type, span.canonical))
            cursor = span.end
            counts[span.type] += 1
        parts.append(text[cursor:])
        return "".join(parts)

    def _anonymize_field(
        self, value: str, spans: list[Span], entity: str, scope: str, counts: Counter
    ) -> str:
        """A string under a key that names its content: replaced whole when detection finds nothing
        in it (or always, for a secret), so "sunshine" under `password` does not survive."""
        if PSEUDONYM.fullmatch(value.strip()):
            return value
        found: Counter = Counter()
        anonymized = self._replaced(value, spans, scope, found)
        if found and entity != "SECRET":
            counts.update(found)
            return anonymized
        entity_type = whole_value_type(entity, value)
        if entity_type is None:
            counts.update(found)
            return anonymized
        canonical = (
            " ".join(fold(value).split())
            if entity in ("PERSON", "ADDRESS", "EMAIL")
            else value.strip()
        )
        counts[entity_type] += 1
        return self.pseudonym(scope, entity_type, canonical)

    def anonymize_value(
        self,
        value: Any,
        scope: str,
        counts: Counter,
        field: str | None = None,
        spans_of: Callable[[str], list[Span]] = find_pii,
    ) -> Any:
        """Every string inside a JSON-like value, keys included; `field` is the key `value` sits
        under.

        `spans_of` finds the PII of one string: `find_pii`, or a lookup of spans found beforehand.
        """
        if isinstance(value, str):
            entity = field_entity(field) if field else None
            if entity is None:
                return self._replaced(value, spans_of(value), scope, counts)
            return self._anonymize_field(value, spans_of(value), entity, scope, counts)
        if isinstance(value, dict):
            out: dict = {}
            for key, item in value.items():
                new_key = (
                    self._replaced(key, spans_of(key), scope, counts)
                    if isinstance(key, str)
                    else key
                )
                while new_key in out:  # two keys that were one value spelled two ways: keep both
                    new_key = f"{new_key}#"
                out[new_key] = self.anonymize_value(
                    item, scope, counts, key if isinstance(key, str) else field, spans_of
                )
            return out
        if isinstance(value, (list, tuple)):
            return [self.anonymize_value(item, scope, counts, field, spans_of) for item in value]
        return value

    def anonymize_trace(self, trace: Trace) -> tuple[Trace, Counter]:
        """The trace with every free-text field pseudonymized under one scope, and what was found.

        Its own strings are scanned at once (`find_pii_many`), its retrieved contexts one by one as
        corpus chunks seen before (`context_pii`), then all are replaced field by field.
        """
        counts: Counter = Counter()
        scope = trace.trace_id
        strings = [trace.question, trace.answer]
        for call in trace.tool_calls:
            strings += _strings(call.arguments)
        # Span ids are kept as they are (privacy/trace_context.py); the rest of the metadata is
        # scanned.
        metadata, kept_ids = without_span_ids(trace.metadata), span_ids(trace.metadata)
        strings += _strings(metadata)
        spans = dict(zip(strings, find_pii_many(strings)))
        spans.update((c.text, list(context_pii(c.text))) for c in trace.contexts)

        def text(value: str) -> str:
            return self._replaced(value, spans[value], scope, counts)

        anonymized = trace.model_copy(
            update={
                "question": text(trace.question),
                "answer": text(trace.answer),
                "contexts": [c.model_copy(update={"text": text(c.text)}) for c in trace.contexts],
                "tool_calls": [
                    call.model_copy(
                        update={
                            "arguments": self.anonymize_value(
                                call.arguments, scope, counts, spans_of=spans.__getitem__
                            )
                        }
                    )
                    for call in trace.tool_calls
                ],
                "metadata": {
                    **self.anonymize_value(metadata, scope, counts, spans_of=spans.__getitem__),
                    **kept_ids,
                },
            }
        )
        return anonymized, counts


def _strings(value: Any) -> list[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [
            s
            for key, item in value.items()
            for s in (*([key] if isinstance(key, str) else []), *_strings(item))
        ]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    return []


def clip_outside_pseudonyms(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, never inside a `[TYPE_xxxxxxxx]` token.

    Anonymize first, then clip: clipping raw text first can cut a value in two ("juan.perez@gm") so
    that no detector recognizes the half that is kept.
    """
    if len(text) <= limit:
        return text
    for m in PSEUDONYM.finditer(text, max(0, limit - 64), min(len(text), limit + 64)):
        if m.start() < limit < m.end():
            return text[: m.start()]
    return text[:limit]
