"""IBAN-shaped text, its country and length from python-stdnum's IBAN registry, its check by
stdnum's mod 97-10."""

from __future__ import annotations

import re
from functools import cache

from stdnum import numdb
from stdnum.iso7064 import mod_97_10

from pipelines.privacy.residual.digit_runs import UUID


@cache
def _iban_length(country: str) -> int | None:
    """The length of `country`'s IBANs by python-stdnum's copy of the SWIFT IBAN registry; None for
    a country without IBANs."""
    bban = _REGISTRY.info(country)[0][1].get("bban")
    return None if bban is None else 4 + sum(int(n) for n in _BBAN_PART.findall(bban))


_REGISTRY = numdb.get("iban")
_BBAN_PART = re.compile(r"(\d+)!")
"""A BBAN's structure as the registry writes it: "4!n4!n1!n1!n10!n" is 4 + 4 + 1 + 1 + 10
characters."""


def iban_like(text: str) -> bool:
    """A country of the IBAN registry, two digits, then as many letters and digits as that country's
    IBAN has, in any grouping, at least eight of them digits: the IBAN ends there (at a separator or
    the end of the text) or passes its mod-97 check. A GPG fingerprint ("DA39 A3EE 5E6B ...") has
    the shape, seldom a country, length and check, and never text around it like an IBAN's; in lower
    case the groups must stand apart, or a hex id ("de56a8f0...") would pass for one."""
    for m in _IBAN_START.finditer(text):
        length = _iban_length(m.group(1).upper())
        if length is None or UUID.match(text, m.start()):
            continue
        chars, i, separated = [], m.start(), False
        while i < len(text) and len(chars) < length:
            c = text[i]
            if c.isascii() and c.isalnum():
                chars.append(c)
            elif (
                c in " -_"
                and chars
                and i + 1 < len(text)
                and text[i + 1].isascii()
                and text[i + 1].isalnum()
            ):
                separated = True
            else:
                break
            i += 1
        iban = "".join(chars).upper()
        if (
            len(iban) < length
            or sum(c.isdigit() for c in iban) < 8
            or (m.group(1).islower() and not separated)
        ):
            continue
        if (
            i == len(text) or not text[i].isalnum() or mod_97_10.is_valid(iban[4:] + iban[:4])
        ) and not (
            _GROUP_OF_FOUR_BEFORE.search(text, max(0, m.start() - 5), m.start())
            or _GROUP_OF_FOUR_AFTER.match(text, i)
        ):
            return True
    return False


_GROUP_OF_FOUR_BEFORE = re.compile(r"(?<!\w)[0-9A-Fa-f]{4} \Z")
_GROUP_OF_FOUR_AFTER = re.compile(r" [0-9A-Fa-f]{4}(?!\w)")
"""An IBAN is a run of groups of its own; one with a group of four hex right before or after it is
part of a fingerprint."""


_IBAN_START = re.compile(r"(?<![\w\-])([A-Z]{2}|[a-z]{2})\d{2}(?=[ \-_]?[A-Za-z0-9])")
"""Not inside a dashed token: "fd4618de-ad91-0f51-..." is a UUID."""
