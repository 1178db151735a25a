"""Rule-based PII detectors: a cheap regex proposes candidates, a checksum or parser confirms them.

Each detector is gated by a literal-led search over the whole text, or by the presence of a
dense run of digits, so ordinary prose costs a few C-level scans. Overlapping spans are resolved
by PRIORITY.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import phonenumbers
from stdnum import iban, luhn
from stdnum.es import dni, nie

from pipelines.privacy.names import find_names

PRIORITY = {
    "SECRET": 0,
    "URL_SECRET": 0,
    "EMAIL": 1,
    "IBAN": 2,
    "CREDIT_CARD": 3,
    "DNI": 4,
    "NIE": 4,
    "PHONE": 5,
    "IP_ADDRESS": 6,
    "PERSON": 7,
}
"""Lower wins an overlap: a password inside a URL is a secret first, whatever else it resembles."""
ENTITY_TYPES = tuple(PRIORITY)

PSEUDONYM = re.compile(r"\[[A-Z][A-Z_]*_[0-9a-f]{8}\]")
"""The anonymizer's `[TYPE_xxxxxxxx]` tokens; nothing inside one is ever detected again."""

EMAIL = r"(?<![\w.+%\-])[\w.+%\-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w\-])"
JWT = r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
BEARER = r"\b[Bb]earer[ \t]+([A-Za-z0-9\-._~+/]{16,}=*)"
API_KEY = (
    r"\b(?:sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{20,}|sk_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"
    r"|xox[bpars]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z_\-]{35})(?![\w\-])"
)
URL_CREDENTIALS = r"(?i:\b[a-z][a-z0-9+.\-]*://)([^\s/@:\[\]]+:[^\s/@\[\]]+)@"
_URL_QUERY_SECRET = (
    r"[?&;](?i:[\w\-]*?(?:token|api[_\-]?key|apikey|key|sig|signature|password|passwd|pwd|secret|auth))"
    r"=([^&\s#\"'<>\[\]]+)"
)
_SECRET_ASSIGNMENT = (  # matched on lowercased text: the key name only has to end in a keyword
    r"(?:_key|-key|apikey|token|secret|passw(?:or)?d|pwd|contraseña|clave)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"([^\s\"'`,;&<>\[\]{}()]{6,})"
)
# The digit patterns open with a character class and check their left boundary right after it:
# the regex engine then skips to candidates at C speed instead of trying every position.
_DNI = r"\d(?<![\w\-./]\d)(?:\d{7}|\d\.\d{3}\.\d{3})(?:-?[A-Za-z]|[ ][A-Z])(?![\w\-])"
_NIE = r"[XYZxyz](?<![\w\-./][XYZxyz])-?\d{7}-?[A-Za-z](?![\w\-])"
_IBAN = r"[A-Z](?<!\w[A-Z])[A-Z]\d{2}(?:[ \-]?[A-Z0-9]{4}){2,7}(?:[ \-]?[A-Z0-9]{1,3})?(?!\w)"
_CARD = r"\d(?<![\w\-.]\d)(?:[ \-]?\d){12,18}(?!\w|[\-.]\d)"
_PHONE = r"[+(\d](?<![\w+\-./:@#][+(\d])[\d \-.()+]{5,40}\d(?![\w\-/:@]|[.,]\d)"
_IPV4 = r"\d(?<![\w.]\d)\d{0,2}(?:\.\d{1,3}){3}(?!\w|\.\d)"
_IPV6 = r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])"

RESIDUAL_PII_PATTERNS: dict[str, str] = {
    name: re.sub(r"(?<!\\)\((?!\?)", "(?:", pattern)  # pandas' str.contains warns on capture groups
    for name, pattern in (
        ("email", EMAIL),
        ("jwt", JWT),
        ("bearer_token", BEARER),
        ("api_key", API_KEY),
        ("url_credentials", URL_CREDENTIALS),
    )
}
"""High-precision patterns a validation suite runs over anonymized text; none matches a pseudonym."""


class Span(NamedTuple):
    start: int
    end: int
    type: str
    value: str
    canonical: str
    """Normalized value: one value spelled two ways gets one pseudonym."""


def _email(value: str) -> str:
    # No stricter check than the pattern: a mistyped address is still someone's, and anything
    # RESIDUAL_PII_PATTERNS would flag after anonymization must be anonymized in the first place.
    return value.lower()


def _checked(module) -> Callable[[str], str | None]:
    """A python-stdnum module as a confirmer: its compact form when the check digit holds."""
    # Dots too: a DNI is often written 12.345.678-Z, which stdnum's compact keeps.
    return lambda value: compact if module.is_valid(compact := module.compact(value.replace(".", ""))) else None


def _card(value: str) -> str | None:
    digits = value.replace(" ", "").replace("-", "")
    plausible_issuer = digits[0] in "3456" or "2221" <= digits[:4] <= "2720" or digits[:4] in ("2131", "1800")
    return digits if 13 <= len(digits) <= 19 and plausible_issuer and luhn.is_valid(digits) else None


_DOTTED_QUAD = re.compile(r"\d+(?:\.\d+){3}")


def _phone_shaped(value: str) -> bool:
    """Digit groups as people write phones: "9 11 1001 10" is a row of a table, not a number.

    Only a country code ("+1", "+33 6 ...") stands next to a one-digit group.
    """
    groups = value.replace("-", " ").replace(".", " ").split()
    return all(
        len(group.strip("()+")) > 1 or group.startswith(("+", "(+")) or (i and groups[i - 1].startswith(("+", "(+")))
        for i, group in enumerate(groups)
    )


def _phone(value: str) -> str | None:
    if not 8 <= sum(c.isdigit() for c in value) <= 15 or _DOTTED_QUAD.fullmatch(value) or not _phone_shaped(value):
        return None
    try:
        number = phonenumbers.parse(value, "ES")  # national numbers without a prefix are Spanish
    except phonenumbers.NumberParseException:
        return None
    return (
        phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
        if phonenumbers.is_valid_number(number)
        else None
    )


def _ip(value: str) -> str | None:
    if ":" in value and (len(value) < 6 or sum(1 for group in value.split(":") if group) < 2):
        return None  # "::", "1::2": slicing in code, not addresses
    try:
        return ipaddress.ip_address(value).compressed
    except ValueError:
        return None


def _looks_secret(value: str) -> str | None:
    # "password: required" is prose; a real secret mixes in digits or symbols, or is long.
    return value if not value.isalpha() or len(value) >= 16 else None


def _verbatim(value: str) -> str:
    return value


NUMBER_DIGITS = 7
_NUMBER = re.compile(rf"[0-9](?:[ \-.()+/]{{0,3}}[0-9]){{{NUMBER_DIGITS - 1}}}")
"""Every national id, phone, card and IBAN has seven digits close together; most prose has none."""


def _hint(*literals: str) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, literals)))


@dataclass(frozen=True)
class _Detector:
    type: str
    regex: re.Pattern[str]
    confirm: Callable[[str], str | None]
    """The canonical value of a candidate, or None when its checksum or parse fails."""
    hint: re.Pattern[str] | None = None
    """A cheap search (literal-led, so it runs at C speed) the text must pass before the regex."""
    lowercase: bool = False
    """Match over the lowercased text: case-insensitive regexes are several times slower."""
    needs_number: bool = False
    """Skip texts without NUMBER_DIGITS digits close together."""
    group: int = 0
    windowed: bool = False
    """Retry digit groups inside a failed candidate: greedy runs swallow neighbouring numbers."""


_DETECTORS = (  # on equal spans the earlier detector names the type
    _Detector("URL_SECRET", re.compile(URL_CREDENTIALS), _verbatim, _hint("://"), group=1),
    _Detector("URL_SECRET", re.compile(_URL_QUERY_SECRET), _verbatim, _hint("="), group=1),
    _Detector(
        "SECRET",
        re.compile(API_KEY),
        _verbatim,
        re.compile(r"sk[-_]|AKIA|ASIA|AIza|gh[pousr]_|github_pat_|xox[bpars]-"),
    ),
    _Detector("SECRET", re.compile(JWT), _verbatim, _hint("eyJ")),
    _Detector("SECRET", re.compile(BEARER), _verbatim, _hint("earer"), group=1),
    _Detector("SECRET", re.compile(_SECRET_ASSIGNMENT), _looks_secret, lowercase=True, group=1),
    _Detector("EMAIL", re.compile(EMAIL), _email, _hint("@")),
    _Detector("IBAN", re.compile(_IBAN), _checked(iban), needs_number=True, windowed=True),
    _Detector("CREDIT_CARD", re.compile(_CARD), _card, needs_number=True, windowed=True),
    _Detector("DNI", re.compile(_DNI), _checked(dni), needs_number=True),
    _Detector("NIE", re.compile(_NIE), _checked(nie), needs_number=True),
    _Detector("PHONE", re.compile(_PHONE), _phone, needs_number=True, windowed=True),
    _Detector("IP_ADDRESS", re.compile(_IPV4), _ip, re.compile(r"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]")),
    _Detector("IP_ADDRESS", re.compile(_IPV6), _ip, re.compile(r":[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]")),
)
_GROUP = re.compile(r"[^\s\-]+")
_MAX_GROUPS = 10


def _windows(
    detector: _Detector, text: str, groups: list[tuple[int, int]], whole_tried: bool = False
) -> Iterator[Span]:
    """The longest, leftmost run of whole groups that confirms; then the same on either side."""
    for size in range(len(groups) - whole_tried, 0, -1):
        for i in range(len(groups) - size + 1):
            start, end = groups[i][0], groups[i + size - 1][1]
            canonical = detector.confirm(text[start:end])
            if canonical is not None:
                yield Span(start, end, detector.type, text[start:end], canonical)
                yield from _windows(detector, text, groups[:i])
                yield from _windows(detector, text, groups[i + size :])
                return


def _detect(detector: _Detector, text: str, haystack: str) -> Iterator[Span]:
    """Confirmed spans of one detector; `haystack` is `text` or its same-length lowercase."""
    for m in detector.regex.finditer(haystack):
        start, end = m.span(detector.group)
        canonical = detector.confirm(text[start:end])
        if canonical is not None:
            yield Span(start, end, detector.type, text[start:end], canonical)
        elif detector.windowed:
            groups = [g.span() for g in _GROUP.finditer(text, start, end)]
            if 1 < len(groups) <= _MAX_GROUPS:
                yield from _windows(detector, text, groups, whole_tried=True)


def _resolve(candidates: list[Span], protected: list[tuple[int, int]]) -> list[Span]:
    """Highest priority first, then longest; a span that overlaps a chosen one or a pseudonym goes."""
    chosen: list[Span] = []
    taken = list(protected)
    for span in sorted(candidates, key=lambda s: (PRIORITY[s.type], s.start - s.end, s.start)):
        if not any(span.start < end and start < span.end for start, end in taken):
            chosen.append(span)
            taken.append((span.start, span.end))
    return sorted(chosen)


def _lowercase(text: str) -> str:
    lower = text.lower()
    # A few characters lowercase to two ("İ"); keep those as they are so offsets still line up.
    return lower if len(lower) == len(text) else "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _haystack(detector: _Detector, text: str, memo: dict[str, object]) -> str | None:
    """What the detector's regex should scan, or None when a cheap gate already rules it out."""
    if detector.needs_number:
        if "number" not in memo:
            memo["number"] = _NUMBER.search(text) is not None
        if not memo["number"]:
            return None
    if detector.lowercase and "lower" not in memo:
        memo["lower"] = _lowercase(text)
    haystack = memo["lower"] if detector.lowercase else text
    return haystack if detector.hint is None or detector.hint.search(haystack) else None


def find_pii(text: str) -> list[Span]:
    """Confirmed PII spans in `text`, non-overlapping, in text order."""
    memo: dict[str, object] = {}
    candidates = []
    for detector in _DETECTORS:
        haystack = _haystack(detector, text, memo)
        if haystack is not None:
            candidates.extend(_detect(detector, text, haystack))
    candidates += [Span(start, end, "PERSON", text[start:end], key) for start, end, key in find_names(text)]
    if not candidates:
        return []
    protected = [m.span() for m in PSEUDONYM.finditer(text)] if "[" in text else []
    return _resolve(candidates, protected)
