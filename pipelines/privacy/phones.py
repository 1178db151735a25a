"""Phone numbers of any country, as people type them, confirmed by Google's libphonenumber.

What is taken for a phone, from surest to least sure:
- a number with its country code (`+44 20 7946 0958`, `0044...`, `(+34) 612-345-678`): PHONE when
  libphonenumber finds it valid, PHONE_INVALID when it only has a phone's shape;
- a Spanish national number (`612 345 678`, `912345678`): the default region;
- another country's national number, written the way that country writes it: with its trunk
  prefix (`020 7946 0958`, `06 12 34 56 78`, `030 12345678`) or in North American groups
  (`(415) 555-2671`, `415.555.2671`);
- after a cue ("tel.", "llámame al", "call me on", "my number is"): any region, contiguous too,
  and PHONE_INVALID for a phone-length number that no region accepts.
Ten digits in a row with no cue (`2147483647`) are not taken: in engineers' questions they are far
more often constants, ids and timestamps than North American phones.

Separators are whatever people type; `TextView` has already turned every dash and odd space into
`-` and ` `.
"""

from __future__ import annotations

import functools
import re

import phonenumbers

from pipelines.privacy.identifiers import in_windows, number_windows
from pipelines.privacy.matching import best_of_windows
from pipelines.privacy.spans import Span, invalid
from pipelines.privacy.views import TextView

DEFAULT_REGION = "ES"
NATIONAL_REGIONS = ("GB", "FR", "DE", "IT", "PT", "NL", "BE", "CH", "IE", "AT", "MX", "AR", "CO", "CL", "PE", "BR")
"""Tried, in this order, for a national number that is not Spanish; the first that accepts it wins."""

_PHONE = re.compile(r"[+(\d](?<![\w+\-./:@#][+(\d])[\d \-.()/+]{5,40}\d(?![\w\-/@]|[.,:]\d)")
_CUE = re.compile(
    r"(?:\btel[ée]?f?(?:ono)?|\btlf|\btfno|\bm[óo]vil|\bcelular|\bwhats ?app|\bfax|\bphone|\bmobile|\bcell"
    r"|\bll[áa]ma(?:me|nos|r)?|\bcall|\btext me|\bring|\bn[úu]mero|\bnumber|\bcontact[oa]?|\bsms"
    r"|\bext\b)[^\d\n]{0,24}\Z"
)
_CUE_WINDOW = 40
_DOTTED_QUAD = re.compile(r"\d+(?:\.\d+){3}")
_NANP_GROUPS = re.compile(r"(?:\+?1[ \-.]?)?(?:\(\d{3}\)[ \-.]?|\d{3}[\-. ])\d{3}[\-. ]\d{4}")
_INTERNATIONAL = re.compile(r"\(?(?:\+|00)")
_COLUMNS = re.compile(r"\s{2,}|[./]{2,}")
"""Numbers in aligned columns or paths, not one number typed with separators."""


def _phone_shaped(value: str) -> bool:
    """Digit groups as people write phones: "9 11 1001 10" is a row of a table, not a number.

    Only a country code ("+1", "+33 6 ...", "0054 9 11") stands next to a one-digit group.
    """
    groups = value.replace("-", " ").replace(".", " ").replace("/", " ").split()
    country = ("+", "(+", "00", "(00")
    return all(
        len(group.strip("()+")) > 1 or group.startswith(country) or (i and groups[i - 1].startswith(country))
        for i, group in enumerate(groups)
    )


@functools.lru_cache(maxsize=8192)
def _valid_in(value: str, region: str | None) -> str | None:
    """E.164 form of `value` when libphonenumber accepts it for `region` (None: it carries a +)."""
    try:
        number = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def confirm_phone(value: str, cued: bool = False) -> tuple[str, str] | None:
    """(PHONE or PHONE_INVALID, canonical) for a candidate, or None when it is not phone-like."""
    digits = _digits(value)
    if not 8 <= len(digits) <= 15 or _DOTTED_QUAD.fullmatch(value) or _COLUMNS.search(value) or not _phone_shaped(value):
        return None
    if _INTERNATIONAL.match(value):
        dialled_00 = value.lstrip("(").startswith("00")
        plus = "+" + (digits[2:] if dialled_00 else digits)
        e164 = _valid_in(plus, None)
        if e164:
            return "PHONE", e164
        # "+" is only ever typed before a country code, and none starts with 0; "00" also pads ids.
        return (invalid("PHONE"), plus) if (cued or not dialled_00) and plus[1] != "0" else None
    e164 = _valid_in(value, DEFAULT_REGION)
    if e164:
        return "PHONE", e164
    grouped = not digits == value.strip("()")
    trunk = digits.startswith("0") and not digits.startswith("00")
    if cued or (grouped and 9 <= len(digits) <= 13 and (trunk or _NANP_GROUPS.fullmatch(value))):
        for region in ("US", *NATIONAL_REGIONS):
            e164 = _valid_in(value, region)
            if e164:
                return "PHONE", e164
    if cued and 9 <= len(digits):
        return invalid("PHONE"), digits
    return None


def _cued(lower: str, start: int) -> bool:
    return _CUE.search(lower, max(0, start - _CUE_WINDOW), start) is not None


def detect_phones(view: TextView) -> list[Span]:
    text = view.text
    found: list[Span] = []
    for m in in_windows(_PHONE, text, number_windows(view)):
        start, end = m.span()
        verdict = confirm_phone(text[start:end])
        if verdict is None and _cued(view.lower, start):
            verdict = confirm_phone(text[start:end], cued=True)
        found += best_of_windows(confirm_phone, text, start, end, verdict)
    return found
