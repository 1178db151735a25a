"""The span ids a trace's metadata carries, which are not anyone's data and must survive
anonymization.

The trace sources keep the root span's id and the id of the model span that wrote the answer; the
online eval's evaluation events are parented to them. A span id is a random 64-bit number written as
16 hex digits: one in a couple of thousand is all digits, reads as a card number, and would be
pseudonymized (the event cut from its span) or trip the residual check (the trace quarantined). So a
value of exactly that shape under these keys is kept as it is; anything else under them is
anonymized like every value.
"""

from __future__ import annotations

import re
from typing import Any

SPAN_ID_KEYS = ("span_id", "evaluated_span_id")
SPAN_ID = re.compile(r"[0-9a-f]{16}")


def span_ids(metadata: dict[str, Any]) -> dict[str, str]:
    """The metadata's span ids of the OTLP shape."""
    return {
        k: metadata[k]
        for k in SPAN_ID_KEYS
        if isinstance(metadata.get(k), str) and SPAN_ID.fullmatch(metadata[k])
    }


def without_span_ids(metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata less its span ids of the OTLP shape, for the checks that look for personal
    data."""
    kept = span_ids(metadata)
    return {k: v for k, v in metadata.items() if k not in kept}
