"""What a detector reports: a typed span of text and the canonical value its pseudonym is keyed
on."""

from __future__ import annotations

import re
from typing import NamedTuple

INVALID = "_INVALID"
"""Suffix of a type whose shape matched but whose checksum or numbering-plan check failed.

Recall comes first: "ES91 2100 0418 4502 0005 1333" is replaced whether or not its check digits
hold, because a typo in one digit still identifies a person. It is typed `IBAN_INVALID` rather than
`IBAN` so that counts tell confirmed values from shape-only ones.
"""

PSEUDONYM = re.compile(r"\[[A-Z][A-Z_]*_[0-9a-f]{8}\]")
"""The anonymizer's `[TYPE_xxxxxxxx]` tokens; nothing inside one is ever detected again."""


class Span(NamedTuple):
    start: int
    end: int
    type: str
    value: str
    canonical: str
    """Normalized value: one value spelled two ways gets one pseudonym."""


def invalid(entity_type: str) -> str:
    """The type of a value shaped like `entity_type` whose check failed."""
    return entity_type + INVALID


def base_type(entity_type: str) -> str:
    """`IBAN` for both `IBAN` and `IBAN_INVALID`."""
    return entity_type.removesuffix(INVALID)
