"""Rule-based PII detection: each detector module proposes typed spans, PRIORITY settles overlaps.

Detectors read a `TextView` (escapes decoded, invisible characters dropped, look-alikes mapped to
ASCII) and their spans are mapped back onto the original text. Each is gated by a cheap literal or
character-class search, so ordinary prose costs a few C-level scans.

Entity types (a pseudonym is `[TYPE_xxxxxxxx]`):
- SECRET: passwords, API and provider tokens, private keys, Authorization and Cookie values, session
  ids
- URL_SECRET: `user:password@` in a URL, token-like query and fragment values
- EMAIL, PHONE, IP_ADDRESS, ADDRESS (postal), PERSON
- IBAN, CREDIT_CARD, DNI, NIE, CIF, NSS (Spanish social security), SSN (US)
- <TYPE>_INVALID for each checked type (IBAN, CREDIT_CARD, DNI, NIE, CIF, NSS, SSN, PHONE): the
  shape matched, the checksum or numbering plan did not; replaced all the same (see
  `spans.INVALID`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from pipelines.privacy.addresses import detect_addresses
from pipelines.privacy.emails import detect_emails
from pipelines.privacy.identifiers import detect_identifiers
from pipelines.privacy.names import find_names
from pipelines.privacy.memo import per_distinct_context
from pipelines.privacy.network import detect_ip_addresses
from pipelines.privacy.phones import detect_phones
from pipelines.privacy.secrets import detect_secrets
from pipelines.privacy.spans import PSEUDONYM, Span
from pipelines.privacy.views import TextView

__all__ = ["ENTITY_TYPES", "PRIORITY", "PSEUDONYM", "Span", "find_pii", "find_pii_many"]

PRIORITY = {
    "SECRET": 0,
    "URL_SECRET": 0,
    "EMAIL": 1,
    "IBAN": 2,
    "CREDIT_CARD": 3,
    "NSS": 4,
    "SSN": 4,
    "DNI": 4,
    "NIE": 4,
    "CIF": 4,
    "PHONE": 5,
    "IP_ADDRESS": 6,
    "ADDRESS": 7,
    "PERSON": 8,
    "IBAN_INVALID": 2,
    "CREDIT_CARD_INVALID": 3,
    "NSS_INVALID": 4,
    "SSN_INVALID": 4,
    "DNI_INVALID": 4,
    "NIE_INVALID": 4,
    "CIF_INVALID": 4,
    "PHONE_INVALID": 5,
}
"""Lower wins an overlap: a password inside a URL is a secret first, whatever else it resembles.
Equal priorities go to the longer span, so a shape-only IBAN still covers its digits whole."""
ENTITY_TYPES = tuple(PRIORITY)

# The validation suite does not use these detectors: its last line of defence is the independent
# `residual.residual_pii_reasons`, which would otherwise pass whatever they miss.


def _detect_names(view: TextView) -> list[Span]:
    names = find_names(view.text, view.lower, view.word_set)
    return [Span(s, e, "PERSON", view.text[s:e], key) for s, e, key in names]


DETECTORS: tuple[Callable[[TextView], list[Span]], ...] = (
    detect_secrets,
    detect_emails,
    detect_identifiers,
    detect_phones,
    detect_ip_addresses,
    detect_addresses,
    _detect_names,
)


_TRIMMABLE = frozenset(("ADDRESS", "PERSON"))
"""Free-form spans: where a surer one covers part of them, the rest is still theirs to replace."""


def _resolve(candidates: list[Span], protected: list[tuple[int, int]]) -> list[Span]:
    """Highest priority first, then longest; a span that overlaps a chosen one or a pseudonym goes,
    except an address or a name, which keeps its longest part outside them ("Cookie: ...; My address
    is Flat 80i" leaves the rest of the address to replace)."""
    chosen: list[Span] = []
    taken = list(protected)
    for span in sorted(candidates, key=lambda s: (PRIORITY[s.type], s.start - s.end, s.start)):
        overlapping = [
            (start, end) for start, end in taken if span.start < end and start < span.end
        ]
        if overlapping and span.type in _TRIMMABLE:
            span = _longest_part_outside(span, overlapping)
            overlapping = [] if span is not None else overlapping
        if span is not None and not overlapping:
            chosen.append(span)
            taken.append((span.start, span.end))
    return sorted(chosen)


def _longest_part_outside(span: Span, taken: list[tuple[int, int]]) -> Span | None:
    parts = [(span.start, span.end)]
    for start, end in taken:
        parts = [
            piece
            for a, b in parts
            for piece in ((a, min(b, start)), (max(a, end), b))
            if piece[1] - piece[0] > 0
        ]
    a, b = max(parts, key=lambda piece: piece[1] - piece[0], default=(0, 0))
    if b - a < 3:
        return None
    return span._replace(start=a, end=b, value=span.value[a - span.start : b - span.start])


MIN_PII_CHARS = 6
"""No PII fits in fewer characters ("a@b.co"); shorter strings (metadata flags, channels) skip the
scan."""
MIN_TOKEN_CHARS = 20
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:_[A-Za-z]+)*")
"""One word of letters, or snake_case (a JSON key such as "user_agent"): no detector can match it
alone, short of a provider token, and those are twenty characters or more."""


def _nothing_to_find(text: str) -> bool:
    return len(text) < MIN_PII_CHARS or (
        len(text) < MIN_TOKEN_CHARS and _PLAIN_WORD.fullmatch(text) is not None
    )


FIELD_SEPARATOR = "\n\x00\n"
"""Between the strings `find_pii_many` scans as one: no detector matches across a NUL."""


def find_pii_many(texts: list[str]) -> list[list[Span]]:
    """`find_pii` of each string, found in one scan of them all joined.

    A trace holds a dozen strings, most of them short (a question, metadata values, JSON keys); one
    scan pays each detector's fixed cost once per trace instead of once per string.
    """
    found: list[list[Span]] = [[] for _ in texts]
    picked = [i for i, text in enumerate(texts) if not _nothing_to_find(text)]
    if not picked:
        return found
    starts, cursor = [], 0
    for i in picked:
        starts.append(cursor)
        cursor += len(texts[i]) + len(FIELD_SEPARATOR)
    for span in find_pii(FIELD_SEPARATOR.join(texts[i] for i in picked)):
        k = bisect.bisect_right(starts, span.start) - 1
        text, base = texts[picked[k]], starts[k]
        start, end = span.start - base, min(span.end - base, len(text))  # never past its own string
        if end > start:
            found[picked[k]].append(span._replace(start=start, end=end, value=text[start:end]))
    return found


@per_distinct_context
def context_pii(text: str) -> tuple[Span, ...]:
    """`find_pii` of a retrieved context, scanned once per process (see `memo`)."""
    return tuple(find_pii(text))


def find_pii(text: str) -> list[Span]:
    """Confirmed PII spans in `text`, non-overlapping, in text order; offsets index `text`
    itself."""
    if _nothing_to_find(text):
        return []
    view = TextView.of(text)
    candidates: list[Span] = []
    for detect in DETECTORS:
        candidates += detect(view)
    if not candidates:
        return []
    if (
        view.text is not text
    ):  # escapes decoded or look-alikes mapped: back to the original's offsets
        candidates = [
            span._replace(start=start, end=end, value=text[start:end])
            for span in candidates
            for start, end in [view.to_original(span.start, span.end)]
        ]
    protected = [m.span() for m in PSEUDONYM.finditer(text)] if "[" in text else []
    return _resolve([span for span in candidates if span.end > span.start], protected)
