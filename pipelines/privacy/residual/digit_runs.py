"""Long runs of digits as phones, cards and ids are written, told from the numbers of code and
prose."""

from __future__ import annotations

import re
from itertools import pairwise

from stdnum import isbn, luhn

from pipelines.privacy.phone_cues import PHONE_WORDS

_GROUP_END = r"(?![\dA-Za-wyz]|x(?!\d))"
_DIGIT_RUN = re.compile(
    rf"(?<![\w+.\-/\\])(?:\+|\(\+?)?\d+{_GROUP_END}\)?(?:(?:(?!\. )[ .\-/()]{{1,2}}|_|[ \t][\-/_][ \t])\(?\d+(?![\d:]){_GROUP_END}\)?)*"
)
"""Digits and the single separators people type between them (an underscore too: "612_345_678", or a
dash, slash or underscore with a blank on either side: "4111 - 1111 - 1111 - 1111"); a group before
":" is a time, not part, and one after a sentence's end (". ") a new number; a backslash before them
makes an escape ("\\x41"), letters right after them a token ("3406877694691ddd", a hash), except an
extension ("0555x266")."""

_SIGNED_ROW = re.compile(r"(?<![\w.+(])-?\d{1,3}(?:[ \t]+-?\d{1,3}){5,}(?![\w.])")
"""Six or more small signed integers in a row, as data files hold them ("26 -60 -34 11 -27 47"): a
table row (`_table_row` for the unsigned ones), which a "-" would otherwise cut into runs."""

_DATE = re.compile(
    r"(?<![\d\-/._])(?:(?:19|20)\d\d([\-/._])(?:0?[1-9]|1[0-2])\1(?:0?[1-9]|[12]\d|3[01])"
    r"|(?:0?[1-9]|[12]\d|3[01])([\-/._])(?:0?[1-9]|1[0-2])\2(?:19|20)\d\d)(?!\d)"
)
"""A calendar date ("2026-11-29", "29/11/2026"): it ends a run of digits, as in "ticket 66212
(29/11/2026)"; never one inside a run ("+54-9-11-1979-8744" is a phone)."""
_DATE_MASK = "\ue001"
_CLOCK = re.compile(
    r"(?<![\d:.])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,9})?)?"
    r"(?:[ \t]+(?:19|20)\d\d(?![\d:]))?(?:[ \t]*[+\-](?:0\d|1[0-4])(?:00|15|30|45)(?!\d))?(?![\d:])"
)
"""A time of day with the year and UTC offset that may follow it, as git, mail and syslog stamp
commits and messages ("Sat Apr 13 17:52:12 2013 -0700"): the seconds, year and offset are no number
of anyone's. An offset is at most 14 hours in quarters, so no phone passes for one."""
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>{}]+")
"""A DOI ("10.1145/210089.210111") names a paper."""
_FLOAT = re.compile(r"(?<![\w.])\d\.\d{5,}(?![\d.])")
"""One digit, a point and five or more: a float as programs print it ("[1.  0.66666667 0.66666667
1.]"); phones and cards written with points group their digits by two to four ("06.12.34.56.78",
"4111.1111.1111.1111"), except a mobile after its country code or a phone cue ("+31 6.12660487")."""
_COUNTRY_CODE_BEFORE = re.compile(r"(?:\+|\b00)\d{1,3}[ \t]*(?:\(0\)[ \t]*)?\Z")


def _dialled_before(m: re.Match[str]) -> bool:
    """A country code or a phone cue right before `m`: the digits after it are dialled."""
    before = max(0, m.start() - 40)
    return bool(
        _COUNTRY_CODE_BEFORE.search(m.string, before, m.start())
        or _PHONE_CUE_BEFORE.search(m.string, before, m.start())
    )


UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
"""A UUID, whose hex groups may all be digits ("96982221-3754-4521-...")."""
_TRUNK_AFTER_CODE = re.compile(r"(\+\d{1,3})[ \t]?\(0\)[ \t]?")
_ISBN = re.compile(r"\bISBN(?:-1[03])?:?[ \t]*(?:[\d][ \-]?){9,12}[\dX]\b", re.IGNORECASE)
"""A book's number, as documentation cites it ("ISBN 0-13-951294-2")."""
_YEAR_IN_PARENTHESES = re.compile(r"(?<=[ \t])\((?:1[6-9]|20)\d\d\)(?![\d\-])")
"""A citation's year after its pages ("7, Part II, 179-188 (1936)"); no area code or prefix is a
year in parentheses after a blank."""


def long_digit_run(text: str) -> bool:
    """Nine or more digits in one run, as phones, cards, IBANs and ids are written.

    Not one: a dotted version ("124.0.6367.91") or decimal ("3.141592653"), a row of a table ("8 10
    1000 9 9 11"): a one-digit group breaks a run, unless it follows a country code ("+33 6 ..."), a
    date ("#66212 (29/11/2026)") or a UUID, two blanks in a row, a ")" that closes nothing ("(see
    16) 3232235521"), a "+0" no country code starts with, and digits in a row of a length no
    identifier has. Nor digits no one has: a placeholder ("123-456-789", "987654321", "600 000
    000"), a binary number ("11100010 10001001"), a book's ISBN or a paper's DOI, a number its word
    names ("project 32555940559", "pedido 612345678"), a path's segments ("20126/41483022/"), a
    calendar's or table's row ("11 12 13 14 15 16 17"), two numbers side by side ("1024-65535",
    "294880 8192"), printed floats ("0.66666667"), and numbers code counts in a unit, multiplies or
    passes alone to a function ("300-1200-150-110 baud", "58977084786*y"). After a phone cue, digits
    split by any punctuation count too ("llámame al 612,345,678").
    """
    if "/" in text or "-" in text or "." in text or "_" in text:
        # "+54 9-11-1942-5126": after a country code, date-shaped digits are dialled
        text = _DATE.sub(
            lambda m: (
                m.group()
                if _COUNTRY_CODE_BEFORE.search(m.string, max(0, m.start() - 8), m.start())
                else _DATE_MASK
            ),
            text,
        )
        if "-" in text:
            text = UUID.sub(_DATE_MASK, text)
        if "10." in text:
            text = _DOI.sub(_DATE_MASK, text)
        if "." in text:
            text = _FLOAT.sub(lambda m: m.group() if _dialled_before(m) else _DATE_MASK, text)
    if ":" in text:
        text = _CLOCK.sub(_DATE_MASK, text)
    if "(0)" in text:
        text = _TRUNK_AFTER_CODE.sub(
            r"\1 ", text
        )  # "+49 (0)15590 685921": the trunk is not dialled
    if "isbn" in text or "ISBN" in text:
        text = _ISBN.sub(_DATE_MASK, text)
    if "(" in text:
        text = _YEAR_IN_PARENTHESES.sub(_DATE_MASK, text)
    ssn_cued = _SSN_CUE.search(text) is not None
    rows = [row.span() for row in _SIGNED_ROW.finditer(text)] if "-" in text else []
    for m in _DIGIT_RUN.finditer(text):
        if any(start <= m.start() and m.end() <= end for start, end in rows):
            continue  # the tail of a row of signed numbers ("-1 -1 0 10 10 12"): a "-" cut it off
        if text.startswith("/", m.end()):
            continue  # "20126/41483022/SI-Brochure-9.pdf": the segments of a path, not a number
        cursor = m.start()
        for run in _balanced_parts(m.group()):
            at = text.find(run, cursor, m.end()) if run else -1
            start, end = (
                (at, at + len(run)) if at != -1 else (m.start(), m.end())
            )  # the part's own place
            cursor = max(cursor, end)
            if (
                _is_long_digit_run(run, ssn_cued)
                and not _REFERENCE_BEFORE.search(text, max(0, m.start() - 32), m.start())
                and not _MEASURE_BEFORE.search(text, max(0, m.start() - 32), m.start())
                and not _a_quantity_in_code(text, start, end)
                and not _among_hex_groups(text, m.start(), m.end())
                and not _in_a_literal_collection(text, m.start(), m.end())
            ):
                return True
    if ODD_BETWEEN_DIGITS.search(text) is None:
        return False
    numbers = _CUED_PUNCTUATED.findall(text) + [
        n for n in _SELF_EVIDENT_PUNCTUATED.findall(text) if not _THOUSANDS.search(n)
    ]
    return any(
        sum(c.isdigit() for c in number) >= 9
        and not _nobody_s("".join(c for c in number if c.isdigit()))
        for number in numbers
    )


PHONE_CUES = (*PHONE_WORDS, "llam", "llám")
"""The starts of words that cue a phone, each read as the start of a word ("phones", "llamada"),
"llam" for every form of "llamar" ("te llamo al"): a wider net than the recognizer's cues. The words
that only name a number ("number", "contact") are no cue here: they come before counts in prose."""
_ANY_PHONE_CUE = "|".join(map(re.escape, PHONE_CUES))
_CUED_PUNCTUATED = re.compile(
    rf"\b(?i:{_ANY_PHONE_CUE})\w*[^\d\n]{{0,24}}(\+?\(?\d{{1,5}}\)?(?:[ \t]?[^\w\s][ \t]?\(?\d{{1,5}}\)?){{1,7}})"
)
"""After a phone cue, digit groups split by any punctuation ("llámame al 612,345,678")."""
_PHONE_CUE_BEFORE = re.compile(rf"\b(?i:{_ANY_PHONE_CUE})\w*[^\d\n]{{0,24}}\Z")
_SELF_EVIDENT_PUNCTUATED = re.compile(
    r"(?<![\w+])(?:(?:\+|\(\+|(?<!\\)00)\d{1,7}\)?(?:(?:[ \t]?[^\w\s:][ \t]?|[ \t])\(?\d{1,5}\)?){2,7}"
    r"|\d{1,5}(?:·\d{1,5}){2,6}(?![\d·]))"
)
"""Without a cue, digit groups split by any punctuation after a country code ("+34|612|345|678"), or
by middle dots ("612·345·678"); not by colons, which split a MAC address ("00:50:56:12:34:56") or a
time. A "00" after a backslash is an octal escape ("\\370\\001\\001\\242", bytes in code), not the
prefix that dials abroad."""
_THOUSANDS = re.compile(r"\d[,'][ \t]?\d")
"""A count's thousands separators ("+12,345,678 lines"), not a phone's."""
ODD_BETWEEN_DIGITS = re.compile(r"\d[ \t]?[^\w\s.\-/()][ \t]?\d")
"""Punctuation the plain runs do not read between two digits: without one, those runs found it
all."""


_HEX_GROUP_BEFORE = re.compile(r"(?<![\w])(?=[0-9A-Fa-f]{0,3}[A-Fa-f])[0-9A-Fa-f]{4} \Z")
_HEX_GROUP_AFTER = re.compile(r" (?=[0-9A-Fa-f]{0,3}[A-Fa-f])[0-9A-Fa-f]{4}(?!\w)")


def _among_hex_groups(text: str, start: int, end: int) -> bool:
    """Digits between groups of four hex characters ("68C8 0230 4919 0278 6BEE"): part of a key's
    fingerprint, not a number."""
    return bool(
        _HEX_GROUP_BEFORE.search(text, max(0, start - 5), start)
        or _HEX_GROUP_AFTER.match(text, end)
    )


_COLLECTION_BEFORE = re.compile(r"[(\[{,][ \t]*\Z")
_COLLECTION_AFTER = re.compile(r"[ \t]*[,)\]}]")
_COMMA_BEFORE = re.compile(r",[ \t]*\Z")
_COMMA_AFTER = re.compile(r"[ \t]*,")


def _in_a_literal_collection(text: str, start: int, end: int) -> bool:
    """A number between brackets and commas with a comma on one side: a member of a tuple or list in
    code ("(26214400, 32768000000)"); "(612345678)" or "al 612345678, gracias" is not."""
    start += text.startswith(
        "(", start
    )  # a run may take its parentheses in: "(2152302898747, (2, 3))"
    end -= text[end - 1 : end] == ")"
    before = _COLLECTION_BEFORE.search(text, max(0, start - 3), start)
    after = _COLLECTION_AFTER.match(text, end)
    return bool(before and after) and bool(
        _COMMA_BEFORE.search(text, max(0, start - 3), start) or _COMMA_AFTER.match(text, end)
    )


_SSN_CUE = re.compile(r"(?i:ssn|social security|seguridad social)")
_REFERENCE_BEFORE = re.compile(
    r"\b(?i:project|proyecto|order|pedido|ticket|build|job|issue|invoice|factura|instance|cluster|commit|pipeline"
    r"|workflow|run|revision|revisión)"
    r"(?:[ \t]+(?i:number|id|no\.?|n[º°]|número|numero))?[ \t]*[:#=]?[ \t]*[\"'`]?\Z"
)
"""A word that names what the number is: "project 32555940559", "pedido #612345678", a migration's
"Revision ID: 686269002441" are references."""
_MEASURE_BEFORE = re.compile(
    r"(?<![\w.])[\"']?(?:[A-Za-z]+_|[a-z]+(?=[A-Z]))*(?i:total|used|free|available|avail|size|bytes|count|length"
    r"|sent|recv|rss|vms|shared|buffers|cached|capacity|limit|offset|blocks|memory)(?:_[A-Za-z]+)*[\"']?[ \t]*"
    r"(?:=|(?<=[\"']):)[ \t]*[\"']?\Z"
)
"""A keyword argument or a JSON key that names a quantity, as a repr or a report prints sizes and
counters ("svmem( total=10367352832", "read_bytes=18626220032", "maxRss": "36624662528"): bytes and
counts, not anyone's number."""


def _a_quantity_in_code(text: str, start: int, end: int) -> bool:
    """Digits counted in a unit, multiplied or raised, or passed alone to a function: what code and
    maths do with numbers, not with phones; unless a phone cue comes right before ("llámame al 612
    345 678 ms" is a phone)."""
    if _PHONE_CUE_BEFORE.search(text, max(0, start - 40), start):
        return False
    return bool(
        _UNIT_AFTER.match(text, end)
        or _ARITHMETIC_BEFORE.search(text, max(0, start - 4), start)
        or _ARITHMETIC_AFTER.match(text, end)
        or _sole_argument(text, start, end)
    )


_UNIT_AFTER = re.compile(
    r"[ \t]?(?:baud|bps|bits?|bytes?|[KMGT]i?B|[kMG]?Hz|ms|µs|ns|rpm|dpi|px)\b"
)
"""A unit right after the digits: "cycle through 300-1200-150-110 baud" lists rates; no one's number
is counted in baud."""
_ARITHMETIC_BEFORE = re.compile(r"[\w)][ \t]?(?:\*\*?|\^)[ \t]?\Z")
_ARITHMETIC_AFTER = re.compile(r"[ \t]?(?:\*\*?|\^)[ \t]?[\w(]")
"""An operand of a product or a power ("-58977084786*sqrt(5)", "2^1279"): a quantity in maths; no
one multiplies a phone. A "*" with no operand on its other side is a footnote's mark or a mask
("612345678*", "612***678")."""
_CALL_BEFORE = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\Z")


def _sole_argument(text: str, start: int, end: int) -> bool:
    """The digits are all a call passes, a function's name touching its "(": "sqrt(405639795226)"
    (prose opens a blank before "(": "mi número (612345678)")."""
    opening = (
        start if text.startswith("(", start) else start - 1
    )  # the run may take either parenthesis in
    return (
        text[opening : opening + 1] == "("
        and (text[end - 1] == ")" or text.startswith(")", end))
        and _CALL_BEFORE.search(text, max(0, opening - 64), opening) is not None
    )


def _balanced_parts(run: str) -> list[str]:
    """`run` split at two blanks in a row and at a ")" with no "(" before it in its part."""
    parts = []
    for part in run.split("  "):
        while ")" in part and ("(" not in part or part.index(")") < part.index("(")):
            head, _, part = part.partition(")")
            parts.append(head)
        parts.append(part)
    return [part.strip(" .-/") for part in parts]


_ASCENDING, _DESCENDING = "0123456789" * 2, "9876543210" * 2
_TRUNK = re.compile(r"\(0\)")
_DOTTED_QUAD = re.compile(
    r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:/\d{1,3})?"
)


def _nobody_s(digits: str) -> bool:
    """Digits no one is reached or paid at: up or down the keypad, one digit repeated, a few digits
    then zeros (a round number) or zeros then a few digits (a padded one), only zeros and ones
    (binary), a power of two, a book's ISBN-13."""
    return (
        digits in _ASCENDING
        or digits in _DESCENDING
        or len(digits.strip("0")) <= 3
        or digits.endswith("00000")  # "32768000000": a round figure; no phone ends in five zeros
        or _power_of_two(int(digits))  # "1125899906842624" is 2**50, "9007199254740991" 2**53 - 1
        or not digits.strip("01")
        or len(set(digits)) == 1
        or (len(digits) == 13 and isbn.is_valid(digits))  # 978/979 and the EAN-13 check digit
    )


def _power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1) == 0 or n & (n + 1) == 0)


def _is_long_digit_run(run: str, ssn_cued: bool = False) -> bool:
    if sum(c.isdigit() for c in run) < 9 or run.startswith(("+0", "(+0")):
        return False
    if _nobody_s("".join(c for c in run if c.isdigit())) or _DOTTED_QUAD.fullmatch(run):
        return False  # a dotted quad is an IPv4 address: "ip_address_like" judges it
    if run.strip("()").isdigit():
        return _identifier_length(run.strip("()"), ssn_cued)
    if run.startswith(("+", "(+")) and "(0)" in run:
        run = _TRUNK.sub(
            " ", run
        )  # "+33 (0) 6 12 05 14 82": the trunk prefix, not a group of the number
    groups = re.findall(r"[+(]*\d+", run)
    if sum(len(group) >= 5 for group in groups) >= 3:
        # "294880 81920 11592 388392": a row of sizes; no phone or card has three such groups
        return False
    if not run.lstrip("(").startswith("+") and set(re.sub(r"[\d()+]", "", run)) == {"."}:
        return _dotted_identifier(
            [len(group.lstrip("(")) for group in groups], "".join(c for c in run if c.isdigit())
        )
    if _table_row(groups) or _side_by_side(run, groups):
        return False
    digits = 0
    for i, group in enumerate(groups):
        country_code_before = i and groups[i - 1].startswith(("+", "(+", "00"))
        if group.isdigit() and len(group) == 1 and i and not country_code_before:
            digits = 0  # a table of small numbers, not one number
            continue
        if (
            group.isdigit() and len(group) >= 9 and not country_code_before
        ):  # one number beside others ("2507191691 1")
            if _identifier_length(group, ssn_cued) and not _nobody_s(group):
                return True
            digits = 0
            continue
        digits += sum(c.isdigit() for c in group)
        if digits >= 9:
            return True
    return False


def _side_by_side(run: str, groups: list[str]) -> bool:
    """Two numbers, not one: a range ("1024-65535", "689-694") or a long one beside another ("294880
    8192"). A phone in two groups opens with its trunk 0 or a short prefix: "01632 960958",
    "0612-345678"."""
    if (
        len(groups) != 2
        or not all(group.isdigit() for group in groups)
        or groups[0].startswith("0")
    ):
        return False
    first, second = groups
    return ("-" in run and int(first) < int(second)) or len(first) >= 5


def _table_row(groups: list[str]) -> bool:
    """Small numbers in a row, as calendars and tables print them ("11 12 13 14 15 16 17", "26 -60
    -34 11 -100"): six groups or more of at most three digits and no country code, or four or more
    counting up by one."""
    if groups[0].startswith(("+", "(+")) or not all(group.isdigit() for group in groups):
        return False
    values = [int(group) for group in groups]
    counting = len(values) >= 4 and all(b - a == 1 for a, b in pairwise(values))
    return counting or (len(groups) >= 6 and max(map(len, groups)) <= 3)


def _dotted_identifier(groups: list[int], digits: str) -> bool:
    """Digit groups split by dots only, as versions ("124.0.6367.91", "100.100.112"), decimals and
    dotted quads are written: an identifier only in the shapes phones and cards take with dots, a
    Spanish number ("612.345.678", "91.123.45.67"), one with a trunk 0 ("06.12.34.56.78",
    "020.7946.0958") or dialled abroad ("0034.612.345.678"), a North American one ("415.555.2671"),
    a card ("4111.1111.1111.1111")."""
    n = len(digits)
    if digits.startswith("00") and groups[0] >= 3 and 11 <= n <= 15:
        # "0034.616604876": dialled abroad, whatever the grouping ("0.0197076236097" is a decimal)
        return True
    if len(groups) < 3:
        return False  # a decimal number
    return (
        (n == 9 and digits[0] in "6789" and min(groups) >= 2)
        or (10 <= n <= 12 and digits[0] == "0" and min(groups) >= 2)
        or (n == 10 and groups == [3, 3, 4])
        or (13 <= n <= 19 and len(groups) >= 3 and all(g == 4 for g in groups[:-1]))
    )


def _identifier_length(digits: str, ssn_cued: bool = False) -> bool:
    """Digits in a row as identifiers are written, told from the constants, ids and timestamps of
    code: 9 starting as a Spanish phone does (6-9; "299792458" is the speed of light), or any 9 in a
    text that speaks of social security (an SSN written without its dashes); 10 or 13 only when no
    epoch timestamp or 32-bit constant starts that way ("1732875600", "1732875600123",
    "2147483647"); 11-12 (a number with its country code, an NSS); 16 (a card); 14-15 and 17-19 when
    they pass the card checksum (Luhn) or dial out of a country ("00...")."""
    n = len(digits)
    if n == 9 and ssn_cued:
        return True
    if 14 <= n <= 19:
        return digits.startswith("00") or luhn.is_valid(digits) or n == 16
    return (
        (n == 9 and digits[0] in "6789")
        or 11 <= n <= 12
        or (n == 10 and digits[0] in "06789")
        or (n == 13 and digits[0] != "1")
    )
