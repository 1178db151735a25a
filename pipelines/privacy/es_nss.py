"""NSS (Número de la Seguridad Social, Spanish social security number), in python-stdnum's shape.

Twelve digits, written 28/12345678/40: a two-digit province code, an eight-digit serial and two
check digits. Older numbers have a seven-digit serial (eleven digits in all). The check digits are
the first ten (or nine) digits modulo 97, where a serial below 10,000,000 is read without its
leading zero, so the old and new spellings of one number share their check digits.

>>> validate('28/12345678/40')
'281234567840'
>>> validate('28/12345678/41')
Traceback (most recent call last):
    ...
stdnum.exceptions.InvalidChecksum: ...
>>> compact('28 1234567 42')
'28123456742'
>>> is_valid('28/1234567/42'), is_valid('12 12345678 05')
(True, True)
>>> format('121234567805')
'12/12345678/05'
"""

from __future__ import annotations

from stdnum.exceptions import (
    InvalidChecksum,
    InvalidComponent,
    InvalidFormat,
    InvalidLength,
    ValidationError,
)
from stdnum.util import clean, isdigits

PROVINCES = frozenset(f"{code:02d}" for code in (*range(1, 54), 66))
"""INE province codes (01-52), 53 for numbers issued to people living abroad, 66 for older special
cases."""


def compact(number: str) -> str:
    """The digits alone: separators (space, slash, dash, dot) removed."""
    return clean(number, " /-.").strip()


def calc_check_digits(number: str) -> str:
    """The two check digits of the province and serial (nine or ten digits)."""
    province, serial = int(number[:2]), int(number[2:])
    base = province * 10**7 + serial if serial < 10**7 else int(number)
    return f"{base % 97:02d}"


def validate(number: str) -> str:
    """The compact number if it is a valid NSS; a stdnum ValidationError otherwise."""
    number = compact(number)
    if not isdigits(number):
        raise InvalidFormat()
    if len(number) not in (11, 12):
        raise InvalidLength()
    if number[:2] not in PROVINCES:
        raise InvalidComponent()
    if calc_check_digits(number[:-2]) != number[-2:]:
        raise InvalidChecksum()
    return number


def is_valid(number: str) -> bool:
    try:
        return bool(validate(number))
    except ValidationError:
        return False


def format(number: str, separator: str = "/") -> str:  # noqa: A001 - python-stdnum's name
    number = compact(number)
    return separator.join((number[:2], number[2:-2], number[-2:]))
