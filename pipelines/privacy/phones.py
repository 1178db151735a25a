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
more often constants, ids and timestamps than North American phones. Nor are placeholders
(`123-456-789`, `987 654 321`, `600 000 000`), a ZIP+4 code (`02139-4307`) without a cue, or a
decimal number.

Separators are whatever people type. Spaces, dashes, dots, slashes, underscores and parentheses
anywhere (`TextView` has already turned every dash and odd space into `-` and ` `); after a cue, any
punctuation at all (`612,345,678`, `612|345|678`, `612·345·678`): without one, "612,345,678 rows" is
a count. An extension (`x151`, `ext. 12`) belongs to the number it follows.
"""

from __future__ import annotations

import functools
import re

import phonenumbers

from pipelines.privacy.identifiers import in_windows, number_windows
from pipelines.privacy.matching import among_hex_groups, best_of_windows
from pipelines.privacy.phone_cues import NUMBER_WORDS, PHONE_WORDS
from pipelines.privacy.spans import Span, invalid
from pipelines.privacy.views import TextView

DEFAULT_REGION = "ES"
NATIONAL_REGIONS = (
    "GB",
    "FR",
    "DE",
    "IT",
    "PT",
    "NL",
    "BE",
    "CH",
    "IE",
    "AT",
    "MX",
    "AR",
    "CO",
    "CL",
    "PE",
    "BR",
)
"""Tried, in this order, for a national number that is not Spanish; the first that accepts it
wins."""

_EXTENSION = re.compile(r"[ \t]*(?:x|ext\.?|extension|extn\.?)[ \t]*\d{1,6}(?!\w)", re.IGNORECASE)
_BEFORE_EXTENSION = r"(?=[ \t]*(?i:x|ext\.?|extension|extn\.?)[ \t]*\d)"
_PHONE = re.compile(
    rf"[+(\d](?<![\w+\-./:@#\\][+(\d])[\d \-.()/+_]{{5,40}}\d(?:{_BEFORE_EXTENSION}|(?![\w\-/@]|[.,:]\d))"
)
_PUNCTUATED = re.compile(
    r"[+(\d](?<![\w+\-./:@#\\][+(\d])\(?\+?\d{1,7}\)?(?:(?:[ \t]?[^\w\s][ \t]?|[ \t])\(?\d{1,5}\)?){1,7}"
    rf"(?:{_BEFORE_EXTENSION}|(?![\w]|[^\w\s]\d))"
)
"""Digit groups split by any punctuation (the first may hold the country code too:
"0034616!604!876"): a phone after a cue, or one that is self-evident (see `_self_evident`)."""
_ODD_SEPARATOR = re.compile(r"[^\d\s\-.()/+_]")
_NOT_DIALLED = re.compile(r"[^\d+()]+")
_TRUNK_IN_PARENTHESES = re.compile(r"\(0\)")
_CUE = re.compile(
    rf"\b(?:{'|'.join(map(re.escape, PHONE_WORDS + NUMBER_WORDS))})\b[^\d\n]{{0,24}}\Z"
)
_CUE_WINDOW = 40
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_ZIP_PLUS_FOUR = re.compile(r"\d{5}-\d{4}")
_CALENDAR_DATE = re.compile(
    r"(?P<day>\d{1,2})(?P<sep>[/.\-])(?P<month>\d{1,2})(?P=sep)(?P<year>(?:19|20)\d\d)"
    r"|(?P<iso_year>(?:19|20)\d\d)(?P<iso_sep>[/\-])(?P<iso_month>\d\d)(?P=iso_sep)(?P<iso_day>\d\d)"
)
"""A date, day first ("12/11/2026") or ISO ("2026-01-31"): a phone cue a few words earlier ("an
imaginary number)… Since 12/11/2026") does not make it a phone."""
_DECIMAL = re.compile(r"(?:[1-9]\d*|0)\.\d+")
"""One dot: a decimal number ("61.2345678", a latitude), not a phone, unless a cue says it is;
"0034.616604876" is dialled abroad, no decimal has its zeros."""
_NANP_GROUPS = re.compile(r"(?:\+?1[ \-.]?)?(?:\(\d{3}\)[ \-.]?|\d{3}[\-. ])\d{3}[\-. ]\d{4}")
_INTERNATIONAL = re.compile(r"\(?(?:\+|00)")
_COLUMNS = re.compile(r"\s{2,}|[./]{2,}")
"""Numbers in aligned columns or paths, not one number typed with separators."""


def _phone_shaped(value: str) -> bool:
    """Digit groups as people write phones: "9 11 1001 10" is a row of a table, not a number.

    Only a country code ("+1", "+33 6 ...", "0054 9 11") stands next to a one-digit group. `value`
    has its separators turned into blanks.
    """
    groups = value.split()
    country = ("+", "(+", "00", "(00")
    return all(
        len(group.strip("()+")) > 1
        or group.startswith(country)
        or (i and groups[i - 1].startswith(country))
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


_ASCENDING, _DESCENDING = "0123456789" * 2, "9876543210" * 2


def placeholder_digits(digits: str) -> bool:
    """Digits nobody is reached at: a run up or down the keypad ("123456789", "987654321"), one
    digit repeated, or a few digits among zeros ("600000000", "000000012"), as documentation and
    forms write examples."""
    return (
        digits in _ASCENDING
        or digits in _DESCENDING
        or len(set(digits)) == 1
        or len(digits.strip("0")) <= 3
    )


def _calendar_date(value: str) -> bool:
    m = _CALENDAR_DATE.fullmatch(value.strip())
    if m is None:
        return False
    day, month = (m["day"], m["month"]) if m["day"] is not None else (m["iso_day"], m["iso_month"])
    return 1 <= int(day) <= 31 and 1 <= int(month) <= 12


def confirm_phone(value: str, cued: bool = False) -> tuple[str, str] | None:
    """(PHONE or PHONE_INVALID, canonical) for a candidate, or None when it is not phone-like."""
    digits = _digits(value)
    if (
        not 8 <= len(digits) <= 15
        or _calendar_date(value)
        or _DOTTED_QUAD.fullmatch(value)
        or _COLUMNS.search(value)
        or placeholder_digits(digits)
    ):
        return None
    if not cued and (_ZIP_PLUS_FOUR.fullmatch(value) or _DECIMAL.fullmatch(value.strip("()"))):
        return None
    # "612_345_678", "612·345·678": libphonenumber reads blanks; "+44 (0)20": the trunk prefix is
    # not dialled
    value = _NOT_DIALLED.sub(
        " ", _TRUNK_IN_PARENTHESES.sub(" ", value) if value.startswith(("+", "(+")) else value
    ).strip()
    digits = _digits(value)
    if not _phone_shaped(value):
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
    grouped = digits != value.strip("()")
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
    windows = number_windows(view)
    for m in in_windows(_PHONE, text, windows):
        start, end = m.span()
        verdict = confirm_phone(text[start:end])
        if verdict is None and _cued(view.lower, start):
            verdict = confirm_phone(text[start:end], cued=True)
        found += _with_extension(text, best_of_windows(confirm_phone, text, start, end, verdict))
    cue_words = windows and not _CUE_WORDS.isdisjoint(view.word_set)
    if cue_words or (windows and ("+" in text or "·" in text or "00" in text)):
        for m in in_windows(_PUNCTUATED, text, windows):
            start, end = m.span()
            if not _ODD_SEPARATOR.search(text, start, end):
                continue
            if cue_words and _cued(view.lower, start):
                verdict = confirm_phone(text[start:end], cued=True)
            elif _self_evident(text[start:end]):
                verdict = confirm_phone(text[start:end])
                verdict = verdict if verdict is not None and verdict[0] == "PHONE" else None
            else:
                continue
            if verdict is not None:
                found += _with_extension(
                    text, [Span(start, end, verdict[0], text[start:end], verdict[1])]
                )
    return [span for span in found if not among_hex_groups(text, span.start, span.end)]


_THOUSANDS = re.compile(r"\d[,'][ \t]?\d")
_ODD_BUT_A_MIDDLE_DOT = re.compile(r"[^\d\s\-.()/+_·]")


def _self_evident(candidate: str) -> bool:
    """Digit groups split by odd punctuation that read as a phone with no cue: the number opens with
    its country code ("+34|612|345|678", "0034·612·345·678"), or its only odd separator is a middle
    dot ("612·345·678"), a typographic dot no count, ratio or table puts between digit groups.
    Thousands separators ("+12,345,678 lines") are a count's and colons a MAC address's or a time's
    ("00:50:56:12:34:56"), whatever comes first; libphonenumber must still find the number valid."""
    if _THOUSANDS.search(candidate) or ":" in candidate:
        return False
    # "((+34) 616!604!876)": the match may open with the bracket the number stands in.
    return (
        _INTERNATIONAL.match(candidate.lstrip("(")) is not None
        or _ODD_BUT_A_MIDDLE_DOT.search(candidate) is None
    )


def _with_extension(text: str, spans) -> list[Span]:
    """Each span with the extension that follows it ("(849)342-0555x26678"), if one does."""
    out = []
    for span in spans:
        extension = _EXTENSION.match(text, span.end)
        if extension:
            span = span._replace(end=extension.end(), value=text[span.start : extension.end()])
        out.append(span)
    return out


_CUE_WORDS = frozenset(
    head + cue.split()[0] + tail
    for cue in PHONE_WORDS + NUMBER_WORDS
    for head in ("", '"', "'", "(", "¿", "¡")
    for tail in ("", ":", ",", ".", ".:", ".,", "..")
)
"""The first word of every cue, as a text's words hold it ("(tel.:"): the punctuation-split numbers
are sought only in text that has one."""
