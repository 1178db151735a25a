"""National ids, IBANs and card numbers: a shape proposes, a python-stdnum check types the value.

A candidate whose check holds gets the plain type (`DNI`); one that only has the shape gets
`DNI_INVALID` and is replaced all the same (see `spans.INVALID`). What counts as "the shape" is
stricter for the invalid case: a run of 16 digits in card groups is a mistyped card; thirteen digits
in a row that fail Luhn are a millisecond timestamp, and stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from stdnum import iban, luhn
from stdnum.es import cif, dni, nie
from stdnum.us import ssn

from pipelines.privacy import es_nss
from pipelines.privacy.matching import among_hex_groups, confirmed
from pipelines.privacy.spans import Span, invalid
from pipelines.privacy.views import TextView

NUMBER_DIGITS = 7
_NUMBER = re.compile(rf"[0-9](?:(?:[^\w\n]|_){{0,3}}[0-9]){{{NUMBER_DIGITS - 1}}}")
"""Every national id, phone, card and IBAN has seven digits close together, whatever separates them
("612_345_678", "612·345·678"); most prose has none."""


_WINDOW_BEFORE = 40
_WINDOW_AFTER = 48
"""Enough for any id around its seventh digit: an IBAN's country, a `(+34) ` prefix, 34
characters."""


def number_windows(view: TextView) -> list[tuple[int, int]]:
    """Stretches of `view.text` around its dense digit runs, cut at whitespace, merged when they
    meet.

    Digit-led detectors scan these alone: a long text with two numbers costs two short scans. A
    window ends on whitespace, so a lookahead at its end sees what it would see in the whole text.
    """
    return view.memo("number_windows", _number_windows)


def _number_windows(view: TextView) -> list[tuple[int, int]]:
    text = view.text
    windows: list[tuple[int, int]] = []
    for m in _NUMBER.finditer(text):
        if windows and m.start() < windows[-1][1]:
            start = windows[-1][0]
            windows.pop()
        else:
            start = max(0, m.start() - _WINDOW_BEFORE)
            start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start)) + 1
        end = min(len(text), m.end() + _WINDOW_AFTER)
        end = min(
            (i for i in (text.find(" ", end), text.find("\n", end)) if i != -1), default=len(text)
        )
        windows.append((start, end))
    return windows


def has_number(view: TextView) -> bool:
    return bool(number_windows(view))


def in_windows(
    regex: re.Pattern[str], text: str, windows: list[tuple[int, int]], haystack: str | None = None
):
    """`regex.finditer` over each window of `text` (or of `haystack`, its lowercase twin)."""
    for start, end in windows:
        yield from regex.finditer(text if haystack is None else haystack, start, end)


# The patterns open with a character class and check their left boundary right after it: the regex
# engine then skips to candidates at C speed instead of trying every position. A backslash before a
# value makes it an escape in code ("\\U00000394" is a Greek delta, not a CIF).
_DNI = re.compile(
    r"\d(?<![\w\-./\\]\d)(?:\d{7}|\d\.\d{3}\.\d{3})(?:[\-.]?[A-Za-z]|[ ][A-Z])(?![\w\-])"
)
_DNI_GROUPED = re.compile(r"\d(?<![\w\-./\\]\d)\d([ \-_])\d{3}\1\d{3}[ \-_]?[A-Z](?![\w\-])")
"""A DNI's digits in the groups it is printed in, split by blanks, dashes or underscores ("12 345
678 Z", "12-345-678-Z"); with dots `_DNI` reads it. The letter is a capital: "12 345 678 a" is a
count and a word."""
_NIE = re.compile(r"[XYZxyz](?<![\w\-./\\][XYZxyz])[\-. ]?\d{7}[\-. ]?[A-Za-z](?![\w\-])")
_CIF = re.compile(
    r"[A-HJNP-SUVWa-hjnp-suvw](?<![\w\-./\\][A-Za-z])[\-. ]?\d{2}[\-. ]?\d{5}[\-. ]?[0-9A-Ja-j](?![\w\-])"
)
_SSN = re.compile(r"\d(?<![\w\-./\\]\d)\d{2}([\- ])\d{2}\1\d{4}(?![\w\-]|[.,]\d)")
_SSN_SPELLED = re.compile(
    r"\d(?<![\w\-./\\]\d)\d{2}(?P<sep>[ \t]?[\-._/\u00b7][ \t]?)\d{2}(?P=sep)\d{4}(?![\w\-]|[.,/]\d)"
)
"""An SSN in its 3-2-4 groups split by any other punctuation, blanks around it or not
("536.90.4399", "536_90_4399", "536 / 90 / 4399"); only one the Social Security numbering rules
allow is taken (`stdnum.us.ssn`: no area 000, 666 or 9xx, no group 00, no serial 0000), so
"900.12.3456" stays."""
_SSN_AFTER_CUE = re.compile(
    r"(?:\bssn|social security(?: number| no\.?)?)(?:[\s:#.]|\bis\b|\bes\b){0,6}(\d{3}[\- ]?\d{2}[\- ]?\d{4})(?!\w)"
)
_NSS = re.compile(r"\d(?<![\w\-./\\]\d)\d([ /\-.]?)\d{7,8}\1\d{2}(?![\w\-]|[.,]\d)")
_NSS_AFTER_CUE = re.compile(
    r"(?:\bnss|\bnaf|seguridad social|afiliaci[oó]n)[^\d\n]{0,24}(\d{2}[ /\-.]?\d{7,8}[ /\-.]?\d{2})(?![\w\-])"
)
_IBAN = re.compile(
    r"[A-Za-z](?<![\w\\][A-Za-z])(?:[A-Za-z]|(?<=[A-Z])[A-Z] )\d{2}(?:[ \-._]?[A-Za-z0-9]){10,30}"
)
"""A country, its check digits (a blank may part them, the country in capitals: "ES 91 2100 ...";
"es 91" is a verb and a number), then groups split by blanks, dashes, dots or underscores."""
_CARD = re.compile(r"\d(?<![\w\-.\\+]\d)(?:[ \-.]?\d){12,18}(?![\w]|[\-.]\d)")
_SEPARATORS = re.compile(r"[ \-./]")
_SPELLED_SEPARATOR = r"(?:[ \t]?[\-/_.][ \t]?|[ \t])"
_CARD_SPELLED = re.compile(
    rf"\d(?<![\w\-.\\+/]\d)\d{{3}}(?P<sep>{_SPELLED_SEPARATOR})(?:\d{{4}}(?P=sep)\d{{4}}(?P=sep)\d{{1,4}}|\d{{6}}(?P=sep)\d{{4,5}})"
    r"(?![\w]|[\-./]\d)"
)
"""A card in its printed groups (4-4-4-4, Amex 4-6-5) split the same way throughout by any
separator, blanks around it or not ("4111 - 1111 - 1111 - 1111", "4111/1111/1111/1111",
"4111_1111_..."). Only a number that passes Luhn from a card issuer's range is one: "2024 / 0101 /
1200 / 0001" is not."""


def _dni(value: str) -> tuple[str, str]:
    compact = dni.compact(value.replace(".", "").replace("_", "")).upper()
    return ("DNI" if dni.is_valid(compact) else invalid("DNI")), compact


def _nie(value: str) -> tuple[str, str]:
    compact = nie.compact(value.replace(".", "")).upper()
    return ("NIE" if nie.is_valid(compact) else invalid("NIE")), compact


def _cif(value: str) -> tuple[str, str] | None:
    compact = cif.compact(value.replace(".", "")).upper()
    if cif.is_valid(compact):
        return "CIF", compact
    # A lowercase letter and digits is as likely a hex id; only a capital one is a mistyped CIF.
    return (invalid("CIF"), compact) if value[0].isupper() else None


def _ssn(value: str) -> tuple[str, str]:
    compact = ssn.compact(value.replace(" ", ""))
    return ("SSN" if ssn.is_valid(compact) else invalid("SSN")), compact


def _ssn_spelled(value: str) -> tuple[str, str] | None:
    compact = re.sub(r"\D", "", value)
    return ("SSN", compact) if ssn.is_valid(compact) else None


def _nss(value: str, *, cued: bool = False) -> tuple[str, str] | None:
    compact = es_nss.compact(value)
    if es_nss.is_valid(compact):
        return "NSS", compact
    # Twelve digits in a row are as likely a phone with its country code; 28/12345678/40 is an NSS.
    grouped = cued or bool(_SEPARATORS.search(value))
    return (invalid("NSS"), compact) if grouped and compact[:2] in es_nss.PROVINCES else None


def _card_grouped(groups: list[int]) -> bool:
    """Digit groups as cards are printed: 4-4-4-4(-1..4), Amex 4-6-5, Diners 4-6-4, or one run of
    16."""
    if groups == [16] or groups in ([4, 6, 5], [4, 6, 4]):
        return True
    return len(groups) >= 4 and all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4


def _card(value: str) -> tuple[str, str] | None:
    groups = [len(g) for g in _SEPARATORS.split(value)]
    digits = _SEPARATORS.sub("", value)
    if (
        not 13 <= len(digits) <= 19
        or ("." in value and not _card_grouped(groups))
        or len(digits.strip("0")) <= 3
    ):
        # "3.1415926535897931" is a float, whatever Luhn says of its digits; "0000 0000 0000 0001"
        # no one's
        return None
    plausible_issuer = (
        digits[0] in "3456" or "2221" <= digits[:4] <= "2720" or digits[:4] in ("2131", "1800")
    )
    printed = (
        len(groups) == 1 or groups[0] == 4
    )  # cards are printed in one run or from a group of four
    if plausible_issuer and printed and luhn.is_valid(digits):
        return "CREDIT_CARD", digits
    # Sixteen digits in a row are a mistyped card, unless they are a constant: "1125899906842624" is
    # 2**50.
    return (
        (invalid("CREDIT_CARD"), digits)
        if _card_grouped(groups) and not power_of_two(int(digits))
        else None
    )


def _card_spelled(value: str) -> tuple[str, str] | None:
    digits = re.sub(r"\D", "", value)
    plausible_issuer = digits[0] in "3456" or "2221" <= digits[:4] <= "2720"
    return ("CREDIT_CARD", digits) if plausible_issuer and luhn.is_valid(digits) else None


def power_of_two(n: int) -> bool:
    """2**k or 2**k - 1: tables of sizes and limits ("2^50 = 1125899906842624",
    9007199254740991)."""
    return n > 0 and (n & (n - 1) == 0 or n & (n + 1) == 0)


def _iban_spans(view: TextView) -> Iterator[Span]:
    """The longest prefix of each candidate, ending between groups, that has an IBAN's structure.

    The country fixes the length, so "ES91 2100 0418 4502 0005 1332 para" is cut before "para". The
    structure is tested with corrected check digits: if only the check digits are wrong, the value
    is IBAN-shaped and typed IBAN_INVALID.
    """
    text = view.text
    for m in in_windows(_IBAN, text, number_windows(view)):
        start, end = m.span()
        alnum = [i for i in range(start, end) if text[i].isalnum()]
        for count in range(min(len(alnum), 34), 14, -1):
            stop = alnum[count - 1] + 1
            if stop < len(text) and (text[stop].isalnum() or text[stop] == "_"):
                continue  # not between groups
            compact = "".join(text[i] for i in alnum[:count]).upper()
            if not compact[:2].isalpha():
                break
            repaired = compact[:2] + iban.calc_check_digits(compact) + compact[4:]
            if iban.is_valid(repaired, check_country=False):
                entity = "IBAN" if iban.is_valid(compact) else invalid("IBAN")
                yield Span(start, stop, entity, text[start:stop], compact)
                break


def _confirmed_in_windows(regex, view: TextView, confirm, **options) -> Iterator[Span]:
    for start, end in number_windows(view):
        yield from confirmed(regex, view.text, confirm, pos=start, endpos=end, **options)


def detect_identifiers(view: TextView) -> list[Span]:
    """National ids (DNI, NIE, CIF, NSS, SSN), IBANs and card numbers in `view`."""
    if not has_number(view):
        return []
    found = list(_iban_spans(view))
    for regex, confirm, options in _NUMBER_DETECTORS:
        found += _confirmed_in_windows(regex, view, confirm, **options)
    lower, words = view.lower, view.word_set
    if not _SSN_WORDS.isdisjoint(words):
        found += _confirmed_in_windows(_SSN_AFTER_CUE, view, _ssn, group=1, haystack=lower)
    if not _NSS_WORDS.isdisjoint(words):
        found += _confirmed_in_windows(
            _NSS_AFTER_CUE, view, lambda value: _nss(value, cued=True), group=1, haystack=lower
        )
    return [s for s in found if not _in_a_fingerprint(view.text, s)]


def _in_a_fingerprint(text: str, span: Span) -> bool:
    """A card number between hex groups, or an IBAN whose check fails next to a group of four, is
    part of a key's fingerprint ("5FEF DCB1 ... AD30 7142 3153 0CAD E164 E107")."""
    if span.type.startswith("CREDIT_CARD"):
        return among_hex_groups(text, span.start, span.end)
    return span.type == invalid("IBAN") and among_hex_groups(
        text, span.start, span.end, letters=False
    )


_SSN_WORDS = frozenset(w + tail for w in ("ssn", "security") for tail in ("", ":", ",", "#"))
_NSS_WORDS = frozenset(
    w + tail
    for w in ("nss", "naf", "social", "afiliación", "afiliacion")
    for tail in ("", ":", ",")
)


_NUMBER_DETECTORS = (
    (_CARD, _card, {"windowed": True}),
    (_CARD_SPELLED, _card_spelled, {}),
    (_DNI, _dni, {}),
    (_DNI_GROUPED, _dni, {}),
    (_NIE, _nie, {}),
    (_CIF, _cif, {}),
    (_NSS, _nss, {}),
    (_SSN, _ssn, {}),
    (_SSN_SPELLED, _ssn_spelled, {}),
)
