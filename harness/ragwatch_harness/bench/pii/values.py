"""The values a form writes: `Maker` draws them (names, phones, check-valid ids) from one trace's
random stream, and a form returns a `Value`, the string to plant with the part of it that must not
survive."""

from __future__ import annotations

import functools
import random
import string
import unicodedata
from dataclasses import dataclass

import phonenumbers
from faker import Faker

LOWER_ALNUM = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Value:
    entity: str
    snippet: str
    """What goes into the sentence: the value with whatever cue or key it is written with."""
    value: str
    """The part that must not survive."""
    templates: str
    short: bool = False
    """Short and self-contained enough to be a metadata key."""


class Maker:
    """Random values for one trace; Faker provides names and check-valid ids."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def token(self, n: int, alphabet: str = ALNUM) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def faker(self, locale: str) -> Faker:
        fake = _faker(locale)
        fake.seed_instance(self.rng.getrandbits(32))
        return fake

    def person(self, locales=("es_ES", "en_US", "es_MX", "en_GB")) -> tuple[str, str]:
        fake = self.faker(self.rng.choice(locales))
        return fake.first_name(), fake.last_name()

    def unlisted_person(self) -> tuple[str, str]:
        """A name from a locale the gazetteer does not read: it can only be found from its cue."""
        return self.person(("fr_FR", "de_DE", "it_IT", "pt_BR", "nl_NL", "pl_PL"))

    def email_parts(self) -> tuple[str, str, str]:
        first, last = (_ascii(part).lower().replace(" ", "") for part in self.person())
        local = self.rng.choice(
            (f"{first}.{last}", f"{first[0]}{last}", f"{first}{self.rng.randint(1, 99)}")
        )
        domain, tld = self.rng.choice(
            (
                ("gmail", "com"),
                ("empresa", "es"),
                ("hotmail", "es"),
                ("acme", "io"),
                ("outlook", "com"),
                ("correo", "es"),
                ("example", "co.uk"),
            )
        )
        return local, domain, tld

    def phone(
        self, region: str, kind=phonenumbers.PhoneNumberType.MOBILE
    ) -> phonenumbers.PhoneNumber:
        example = phonenumbers.example_number_for_type(region, kind) or phonenumbers.example_number(
            region
        )
        national = str(example.national_number)
        while True:
            digits = national[:2] + self.token(len(national) - 2, string.digits)
            number = phonenumbers.parse(digits, region)
            if phonenumbers.is_valid_number(number):
                return number

    def password(self) -> str:
        return self.rng.choice(
            (
                f"{self.rng.choice(('Verano', 'Sunshine', 'Barcelona', 'Dragon', 'Qwerty'))}{self.rng.randint(1990, 2026)}"
                f"{self.rng.choice('!#$*.')}",
                self.token(self.rng.randint(10, 16), ALNUM + "!@#$%&*-_"),
                "".join(
                    self.rng.choice(
                        ("correct", "horse", "battery", "staple", "luna", "gato", "mesa")
                    )
                    for _ in range(4)
                ),
                f"{self.token(5, string.ascii_lowercase)}{self.rng.randint(10, 999)}",
            )
        )


@functools.cache
def _faker(locale: str) -> Faker:
    return Faker(locale)


def _ascii(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
