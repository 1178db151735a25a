"""Adversarial PII cases: labelled traces holding the forms of PII and secrets real traffic holds.

Every value is planted in one of dozens of forms (an IBAN in lower case, a phone with en dashes, an
e-mail written "juan arroba gmail punto com", a PEM block cut short, a name typed in lower case after
"me llamo"...), in Spanish or English text, in one of the places a trace carries text: the question,
the answer, a retrieved context, a tool argument, a metadata value, a metadata key, or JSON-escaped
text inside a metadata value. Each planted value is recorded with its expected type, its form and
the exact string as it reads in the trace, so recall is measured per type and per form.

Deterministic by seed; importable without Airflow. `generate_pii_cases(n, seed=...)` is the entry.
"""

from __future__ import annotations

import base64
import functools
import importlib
import ipaddress
import json
import random
import string
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import phonenumbers
from faker import Faker
from stdnum import iban, luhn
from stdnum.es import cif, dni, nie
from stdnum.us import ssn

from pipelines.core.records import Context, ToolCall, Trace
from pipelines.privacy import es_nss

PLACES = ("question", "answer", "context", "tool_argument", "metadata_value", "metadata_key", "json_escaped")
LANGUAGES = ("es", "en")
_LOWER_ALNUM = string.ascii_lowercase + string.digits
_ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Planted:
    entity: str
    """The type the anonymizer should give it, e.g. PHONE, or IBAN_INVALID for a wrong check digit."""
    form: str
    """How it is written, e.g. "phone/es en dash" or "email/arroba punto"."""
    value: str
    """The exact string as it reads in the trace field (escaped, where the field is JSON-escaped)."""
    place: str
    language: str


@dataclass(frozen=True)
class PiiCase:
    trace: Trace
    planted: tuple[Planted, ...]


@dataclass(frozen=True)
class _Value:
    entity: str
    snippet: str
    """What goes into the sentence: the value with whatever cue or key it is written with."""
    value: str
    """The part that must not survive."""
    templates: str
    short: bool = False
    """Short and self-contained enough to be a metadata key."""


# --- values ----------------------------------------------------------------------------------------
class _Maker:
    """Random values for one trace; Faker provides names and check-valid ids."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def token(self, n: int, alphabet: str = _ALNUM) -> str:
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
        local = self.rng.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}{self.rng.randint(1, 99)}"))
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

    def phone(self, region: str, kind=phonenumbers.PhoneNumberType.MOBILE) -> phonenumbers.PhoneNumber:
        example = phonenumbers.example_number_for_type(region, kind) or phonenumbers.example_number(region)
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
                self.token(self.rng.randint(10, 16), _ALNUM + "!@#$%&*-_"),
                "".join(
                    self.rng.choice(("correct", "horse", "battery", "staple", "luna", "gato", "mesa")) for _ in range(4)
                ),
                f"{self.token(5, string.ascii_lowercase)}{self.rng.randint(10, 999)}",
            )
        )


@functools.cache
def _faker(locale: str) -> Faker:
    return Faker(locale)


def _ascii(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _checked(make: Callable[[], str], module) -> str:
    while not module.is_valid(value := make()):
        pass
    return value


def _corrupt_digit(value: str, rng: random.Random, module) -> str:
    """One digit changed so that the check fails: a typo, as people make them."""
    digits = [i for i, c in enumerate(value) if c.isdigit()]
    while True:
        i = rng.choice(digits)
        broken = value[:i] + str((int(value[i]) + rng.randint(1, 9)) % 10) + value[i + 1 :]
        if not module.is_valid(broken):
            return broken


def _separated(groups: list[str], separator: str) -> str:
    return separator.join(groups)


def _group(digits: str, sizes: tuple[int, ...]) -> list[str]:
    out, i = [], 0
    for size in sizes:
        out.append(digits[i : i + size])
        i += size
    return out + ([digits[i:]] if digits[i:] else [])


# Each form returns a _Value. Forms are grouped by the family they test.
def _email_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def make(render: Callable[[str, str, str], str]) -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            local, domain, tld = m.email_parts()
            value = render(local, domain, tld)
            return _Value("EMAIL", value, value, "email", short=True)

        return form

    dots = lambda tld, word: f" {word} ".join(tld.split("."))  # noqa: E731 - "co dot uk"
    return {
        "email/plain": make(lambda l, d, t: f"{l}@{d}.{t}"),
        "email/upper case": make(lambda l, d, t: f"{l}@{d}.{t}".upper()),
        "email/plus tag": make(lambda l, d, t: f"{l}+rag@{d}.{t}"),
        "email/at dot": make(lambda l, d, t: f"{l} at {d} dot {dots(t, 'dot')}"),
        "email/AT DOT": make(lambda l, d, t: f"{l} AT {d} DOT {dots(t, 'DOT')}"),
        "email/arroba punto": make(lambda l, d, t: f"{l} arroba {d} punto {dots(t, 'punto')}"),
        "email/(at) (dot)": make(lambda l, d, t: f"{l} (at) {d} (dot) {dots(t, '(dot)')}"),
        "email/[at] [dot]": make(lambda l, d, t: f"{l}[at]{d}[dot]{dots(t, '[dot]').replace(' ', '')}"),
        "email/full-width at": make(lambda l, d, t: f"{l}＠{d}．{t.replace('.', '．')}"),
        "email/spaced at": make(lambda l, d, t: f"{l} @ {d}.{t}"),
        "email/url-encoded": make(lambda l, d, t: f"{l}%40{d}.{t}"),
        "email/html entity": make(lambda l, d, t: f"{l}&#64;{d}.{t}"),
        "email/at webmail": lambda m: _webmail_at(m),
    }


def _webmail_at(m: _Maker) -> _Value:
    local, _, _ = m.email_parts()
    value = f"{local} at {m.rng.choice(('gmail', 'hotmail', 'yahoo', 'outlook'))}.com"
    return _Value("EMAIL", value, value, "email", short=True)


_SEPARATORS = {
    "spaces": " ",
    "dots": ".",
    "dashes": "-",
    "en dash": "\u2013",
    "em dash": "\u2014",
    "non-breaking hyphen": "\u2011",
    "nbsp": "\u00a0",
    "narrow nbsp": "\u202f",
    "slashes": "/",
    "underscores": "_",
}
_PUNCTUATION = ",;:|·•*~'’\\#=^`\"!?"
"""Any other punctuation a number can be split by: a phone only after a cue ("612,345,678 rows" is a count)."""


def _phone_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def spanish(separator: str, sizes=(3, 3, 3), landline=False) -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            kind = phonenumbers.PhoneNumberType.FIXED_LINE if landline else phonenumbers.PhoneNumberType.MOBILE
            digits = str(m.phone("ES", kind).national_number)
            value = _separated(_group(digits, sizes), separator) if separator else digits
            return _Value("PHONE", value, value, "phone", short=True)

        return form

    def international(separator: str | None, prefix: str = "+") -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            region = m.rng.choice(("ES", "GB", "FR", "DE", "US", "MX", "IT", "PT", "NL", "AR", "BR", "CH", "IE", "CO"))
            number = m.phone(region)
            text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
            text = text.replace("+", prefix, 1)
            if separator is not None:
                text = text.replace(" ", separator).replace("-", separator)
            return _Value("PHONE", text, text, "phone", short=True)

        return form

    def national(region: str, templates: str = "phone") -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            kind = m.rng.choice((phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE))
            text = phonenumbers.format_number(m.phone(region, kind), phonenumbers.PhoneNumberFormat.NATIONAL)
            return _Value("PHONE", text, text, templates, short=True)

        return form

    def any_punctuation(m: _Maker) -> _Value:
        digits, separator = str(m.phone("ES").national_number), m.rng.choice(_PUNCTUATION)
        value = _separated(_group(digits, m.rng.choice(((3, 3, 3), (3, 2, 2, 2), (2, 3, 2, 2)))), separator)
        return _Value("PHONE", value, value, "phone_cued", short=True)

    def trunk_in_parentheses(m: _Maker) -> _Value:
        """ "+44 (0)20 7946 0958": the national trunk prefix shown, not dialled."""
        region = m.rng.choice(("GB", "DE", "FR", "NL", "BE", "CH", "AT", "IE"))
        code, rest = phonenumbers.format_number(m.phone(region), phonenumbers.PhoneNumberFormat.INTERNATIONAL).split(
            " ", 1
        )
        value = f"{code} (0){m.rng.choice(('', ' '))}{rest}"
        return _Value("PHONE", value, value, "phone", short=True)

    def with_extension(m: _Maker) -> _Value:
        text = phonenumbers.format_number(
            m.phone("US"),
            m.rng.choice((phonenumbers.PhoneNumberFormat.NATIONAL, phonenumbers.PhoneNumberFormat.INTERNATIONAL)),
        )
        value = text.replace(" ", m.rng.choice((" ", "-", "."))) if text.startswith("+") else text
        value += m.rng.choice(("x", " x", " ext. ", " ext ", "x")) + m.token(m.rng.randint(2, 5), string.digits)
        return _Value("PHONE", value, value, "phone", short=True)

    forms = {f"phone/es {name}": spanish(sep) for name, sep in _SEPARATORS.items()}
    forms |= {
        "phone/es any punctuation after a cue": any_punctuation,
        "phone/(0) trunk after the country code": trunk_in_parentheses,
        "phone/with an extension": with_extension,
        "phone/0034 dots": lambda m: _plus34(m, "0034.", "."),
        "phone/es contiguous": spanish(""),
        "phone/es landline in pairs": spanish(" ", (2, 3, 2, 2), landline=True),
        "phone/+34": lambda m: _plus34(m, "+34 "),
        "phone/0034": lambda m: _plus34(m, "0034 "),
        "phone/(+34)": lambda m: _plus34(m, "(+34) "),
        "phone/international": international(None),
        "phone/international dots": international("."),
        "phone/international en dash": international("\u2013"),
        "phone/international nbsp": international("\u00a0"),
        "phone/international 00": international(None, "00"),
        "phone/e164": lambda m: _e164(m),
        "phone/us national": national("US"),
        "phone/uk national": national("GB"),
        "phone/fr national": national("FR"),
        "phone/de national": national("DE"),
        "phone/mx national after a cue": national("MX", "phone_cued"),
    }
    return forms


def _plus34(m: _Maker, prefix: str, separator: str | None = None) -> _Value:
    digits = str(m.phone("ES").national_number)
    if separator is not None:
        value = prefix + separator.join(_group(digits, (3, 3, 3)))
    else:
        value = prefix + m.rng.choice(
            (f"{digits[:3]} {digits[3:5]} {digits[5:7]} {digits[7:]}", f"{digits[:3]}-{digits[3:6]}-{digits[6:]}")
        )
    return _Value("PHONE", value, value, "phone", short=True)


def _e164(m: _Maker) -> _Value:
    region = m.rng.choice(("GB", "FR", "DE", "US", "MX", "AR", "NL", "SE", "PL", "JP", "AU", "IN"))
    value = phonenumbers.format_number(m.phone(region), phonenumbers.PhoneNumberFormat.E164)
    return _Value("PHONE", value, value, "phone", short=True)


def _iban_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def valid(m: _Maker) -> str:
        locale = m.rng.choice(("es_ES", "de_DE", "fr_FR", "en_GB", "it_IT", "nl_NL", "pt_PT"))
        return _checked(m.faker(locale).iban, iban)

    def make(render: Callable[[str, random.Random], str], entity: str = "IBAN", corrupt: bool = False):
        def form(m: _Maker) -> _Value:
            compact = valid(m)
            if corrupt:
                compact = _corrupt_digit(compact, m.rng, iban)
            value = render(compact, m.rng)
            return _Value(entity, value, value, "iban", short=True)

        return form

    grouped = lambda c, sep: sep.join(c[i : i + 4] for i in range(0, len(c), 4))  # noqa: E731
    return {
        "iban/compact": make(lambda c, r: c),
        "iban/grouped": make(lambda c, r: grouped(c, " ")),
        "iban/lower case": make(lambda c, r: grouped(c, " ").lower()),
        "iban/dashes": make(lambda c, r: grouped(c, "-")),
        "iban/irregular groups": make(lambda c, r: f"{c[:6]} {c[6:14]} {c[14:]}"),
        "iban/wrong check digits": make(lambda c, r: grouped(c, " "), "IBAN_INVALID", corrupt=True),
    }


def _card_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def make(separator: str, kinds=("visa16", "mastercard", "discover", "jcb16"), entity="CREDIT_CARD", corrupt=False):
        def form(m: _Maker) -> _Value:
            digits = _checked(lambda: m.faker("en_US").credit_card_number(card_type=m.rng.choice(kinds)), luhn)
            if corrupt:
                digits = _corrupt_digit(digits, m.rng, luhn)
            sizes = (4, 6, 5) if len(digits) == 15 else (4, 4, 4, 4)
            value = _separated(_group(digits, sizes), separator) if separator else digits
            return _Value(entity, value, value, "card", short=True)

        return form

    return {
        "card/spaces": make(" "),
        "card/dashes": make("-"),
        "card/dots": make("."),
        "card/contiguous": make(""),
        "card/en dash": make("\u2013"),
        "card/amex": make(" ", kinds=("amex",)),
        "card/fails luhn": make(" ", entity="CREDIT_CARD_INVALID", corrupt=True),
    }


def _network_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def ip(make: Callable[[_Maker], tuple[str, str]]) -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            snippet, value = make(m)
            return _Value("IP_ADDRESS", snippet, value, "ip", short=True)

        return form

    fake = lambda m: m.faker("en_US")  # noqa: E731
    hexdigits = "0123456789abcdef"

    def v6(m: _Maker) -> str:
        """A global unicast address (2000::/3), as a client's is: not multicast, not RFC 3849's 2001:db8::/32."""
        while (first := f"{m.rng.randint(0x2000, 0x3FFF):x}") == "2001":
            pass
        return ipaddress.ip_address(":".join([first, *(m.token(4, hexdigits) for _ in range(7))])).compressed

    return {
        "ip/v4 public": ip(lambda m: (v := fake(m).ipv4_public(), v)),
        "ip/v4 private": ip(lambda m: (v := fake(m).ipv4_private(), v)),
        "ip/v4 with port": ip(lambda m: (f"{(v := fake(m).ipv4_public())}:8080", v)),
        "ip/v6": ip(lambda m: (v := v6(m), v)),
        "ip/v6 full": ip(
            lambda m: (
                v := ":".join([f"{m.rng.randint(0x2000, 0x3FFF):x}", *(m.token(4, hexdigits) for _ in range(7))]),
                v,
            )
        ),
        "ip/v4-mapped v6": ip(lambda m: (v := f"::ffff:{fake(m).ipv4_private()}", v)),
        "ip/v6 in brackets": ip(
            lambda m: (
                f"[{(v := v6(m).split(':')[0] + ':' + m.token(4, hexdigits) + '::' + m.token(4, hexdigits))}]:443",
                v,
            )
        ),
    }


def _national_id_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def value_form(entity: str, make: Callable[[_Maker], str], templates: str = "id") -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            value = make(m)
            return _Value(entity, value, value, templates, short=True)

        return form

    es = lambda m: m.faker("es_ES")  # noqa: E731

    def nss(m: _Maker) -> str:
        base = f"{m.rng.randint(1, 52):02d}{m.rng.randint(10**7, 10**8 - 1)}"
        return base + es_nss.calc_check_digits(base)

    def bad_nss(m: _Maker) -> str:
        number = nss(m)
        return f"{number[:2]}/{number[2:10]}/{(int(number[10:]) + 1) % 97:02d}"

    def us_ssn(m: _Maker) -> str:
        return _checked(
            lambda: f"{m.rng.randint(1, 899):03d}-{m.rng.randint(1, 99):02d}-{m.rng.randint(1, 9999):04d}", ssn
        )

    return {
        "dni/plain": value_form("DNI", lambda m: _checked(es(m).nif, dni)),
        "dni/dash": value_form("DNI", lambda m: (v := _checked(es(m).nif, dni))[:-1] + "-" + v[-1]),
        "dni/dots": value_form("DNI", lambda m: f"{(v := _checked(es(m).nif, dni))[:2]}.{v[2:5]}.{v[5:8]}-{v[8]}"),
        "dni/lower-case letter": value_form("DNI", lambda m: _checked(es(m).nif, dni).lower()),
        "dni/wrong letter": value_form("DNI_INVALID", lambda m: _wrong_letter(_checked(es(m).nif, dni), dni)),
        "nie/plain": value_form("NIE", lambda m: _checked(es(m).nie, nie)),
        "nie/dashes": value_form("NIE", lambda m: f"{(v := _checked(es(m).nie, nie))[0]}-{v[1:8]}-{v[8]}"),
        "nie/wrong letter": value_form("NIE_INVALID", lambda m: _wrong_letter(_checked(es(m).nie, nie), nie)),
        "nss/slashes": value_form("NSS", lambda m: es_nss.format(nss(m))),
        "nss/spaces": value_form("NSS", lambda m: es_nss.format(nss(m), " ")),
        "nss/contiguous after a cue": value_form("NSS", nss, "nss_cued"),
        "nss/wrong check digits": value_form("NSS_INVALID", bad_nss),
        "cif/plain": value_form("CIF", lambda m: _checked(es(m).cif, cif)),
        "cif/dashes": value_form("CIF", lambda m: f"{(v := _checked(es(m).cif, cif))[0]}-{v[1:8]}-{v[8]}"),
        "ssn/dashes": value_form("SSN", us_ssn),
        "ssn/contiguous after a cue": value_form("SSN", lambda m: us_ssn(m).replace("-", ""), "ssn_cued"),
        "ssn/impossible area": value_form(
            "SSN_INVALID", lambda m: f"666-{m.rng.randint(10, 99)}-{m.rng.randint(1000, 9999)}"
        ),
    }


def _wrong_letter(value: str, module) -> str:
    for letter in "TRWAGMYFPDXBNJZSQVHLCKE":
        if not module.is_valid(value[:-1] + letter):
            return value[:-1] + letter
    raise AssertionError(value)


def _secret_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def inline(build: Callable[[_Maker], tuple[str, str]], entity: str = "SECRET", templates: str = "secret"):
        def form(m: _Maker) -> _Value:
            snippet, value = build(m)
            return _Value(entity, snippet, value, templates)

        return form

    def password(render: str) -> Callable[[_Maker], _Value]:
        return inline(lambda m: (render.format(v=(v := m.password())), v), templates="password")

    def token(prefix: str, n: int, alphabet: str = _ALNUM) -> Callable[[_Maker], _Value]:
        return inline(lambda m: (v := prefix + m.token(n, alphabet), v), templates="token")

    hexdigits = "0123456789abcdef"
    return {
        "secret/password=": password("password={v}"),
        "secret/pass:": password("pass: {v}"),
        "secret/json password": password('{{"user": "admin", "password": "{v}"}}'),
        "secret/DB_PASSWORD=": password("DB_PASSWORD={v}"),
        "secret/my password is": password("my password is {v}"),
        "secret/mi contraseña es": password("mi contraseña es {v}"),
        "secret/contraseña next": password("con la contraseña {v} no puedo entrar"),
        "secret/pem rsa": inline(lambda m: (v := _pem(m, "RSA PRIVATE KEY"), v), templates="block"),
        "secret/pem pkcs8": inline(lambda m: (v := _pem(m, "PRIVATE KEY"), v), templates="block"),
        "secret/openssh": inline(lambda m: (v := _pem(m, "OPENSSH PRIVATE KEY"), v), templates="block"),
        "secret/pem cut short": inline(lambda m: (v := _pem(m, "EC PRIVATE KEY", end=False), v), templates="block"),
        "secret/authorization basic": inline(
            lambda m: (f"Authorization: Basic {(v := _basic(m))}", v), templates="header"
        ),
        "secret/authorization bearer": inline(
            lambda m: (f"Authorization: Bearer {(v := m.token(40, _ALNUM + '-._'))}", v), templates="header"
        ),
        "secret/bare bearer": inline(lambda m: (f"Bearer {(v := m.token(32, _ALNUM))}", v), templates="header"),
        "secret/cookie header": inline(
            lambda m: (f"Cookie: {(v := f'sessionid={m.token(32, _LOWER_ALNUM)}; csrftoken={m.token(32)}')}", v),
            templates="header",
        ),
        "secret/set-cookie": inline(
            lambda m: (f"Set-Cookie: {(v := f'session={m.token(24)}; Path=/; HttpOnly')}", v), templates="header"
        ),
        "secret/session id": inline(lambda m: (f"PHPSESSID={(v := m.token(26, _LOWER_ALNUM))}", v)),
        "secret/openai": token("sk-proj-", 48, _ALNUM + "_-"),
        "secret/openai legacy": token("sk-", 48),
        "secret/anthropic": token("sk-ant-api03-", 80, _ALNUM + "_-"),
        "secret/aws access key id": token("AKIA", 16, string.ascii_uppercase + string.digits),
        "secret/aws secret key": inline(lambda m: (f"aws_secret_access_key = {(v := m.token(40, _ALNUM + '/+'))}", v)),
        "secret/github": token("ghp_", 36),
        "secret/github fine-grained": token("github_pat_", 82, _ALNUM + "_"),
        "secret/gitlab": token("glpat-", 20, _ALNUM + "_-"),
        "secret/slack bot": inline(
            lambda m: (v := f"xoxb-{m.token(12, string.digits)}-{m.token(13, string.digits)}-{m.token(24)}", v)
        ),
        "secret/slack webhook": inline(
            lambda m: (
                f"https://hooks.slack.com/services/{(v := f'T{m.token(10, string.ascii_uppercase + string.digits)}/B{m.token(10, string.ascii_uppercase + string.digits)}/{m.token(24)}')}",
                v,
            )
        ),
        "secret/stripe": token("sk_live_", 24),
        "secret/google api key": token("AIza", 35, _ALNUM + "_-"),
        "secret/google oauth": token("ya29.", 60, _ALNUM + "_-"),
        "secret/hugging face": token("hf_", 34),
        "secret/npm": token("npm_", 36),
        "secret/pypi": token("pypi-AgEIcHlwaS5vcmc", 60, _ALNUM + "_-"),
        "secret/sendgrid": inline(lambda m: (v := f"SG.{m.token(22, _ALNUM + '_-')}.{m.token(43, _ALNUM + '_-')}", v)),
        "secret/twilio": token("SK", 32, hexdigits),
        "secret/azure ad client secret": inline(
            lambda m: (v := f"{m.token(3, _ALNUM)}8Q~{m.token(34, _ALNUM + '_-.~')}", v)
        ),
        "secret/azure storage key": inline(
            lambda m: (
                f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={(v := m.token(86, _ALNUM + '+/') + '==')};EndpointSuffix=core.windows.net",
                v,
            )
        ),
        "secret/jwt": inline(lambda m: (v := _jwt(m), v)),
        "url/query token": inline(lambda m: _query(m), entity="URL_SECRET", templates="url"),
        "url/fragment token": inline(
            lambda m: (f"https://app.acme.io/callback#access_token={(v := m.token(40))}&state=xyz", v),
            entity="URL_SECRET",
            templates="url",
        ),
        "url/credentials": inline(
            lambda m: (
                f"postgresql://{(v := f'{m.person()[0].lower()}:{m.password()}')}@db.internal:5432/app".replace(
                    " ", ""
                ),
                v.replace(" ", ""),
            ),
            entity="URL_SECRET",
            templates="url",
        ),
    }


def _pem(m: _Maker, label: str, end: bool = True) -> str:
    body = "\n".join(m.token(64, _ALNUM + "+/") for _ in range(m.rng.randint(4, 8)))
    block = f"-----BEGIN {label}-----\n{body}\n{m.token(20, _ALNUM)}=="
    return block + (f"\n-----END {label}-----" if end else "")


def _basic(m: _Maker) -> str:
    return base64.b64encode(f"{m.person()[0].lower()}:{m.password()}".encode()).decode()


def _jwt(m: _Maker) -> str:
    def b64(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'HS256', 'typ': 'JWT'})}.{b64({'sub': str(m.rng.randint(10**6, 10**7))})}.{m.token(43, _ALNUM + '_-')}"


def _query(m: _Maker) -> tuple[str, str]:
    param = m.rng.choice(
        ("token", "access_token", "api_key", "key", "sig", "code", "session", "X-Amz-Signature", "apikey")
    )
    value = m.token(m.rng.randint(20, 40))
    return f"https://api.acme.io/v1/export?format=csv&{param}={value}&page=2", value


def _address_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def address(build: Callable[[_Maker], str]) -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            value = build(m)
            return _Value("ADDRESS", value, value, "address")

        return form

    def spanish(street_type: str, catalan: bool = False) -> Callable[[_Maker], str]:
        def build(m: _Maker) -> str:
            name = m.rng.choice(_CATALAN_STREETS if catalan else _SPANISH_STREETS)
            number = m.rng.randint(1, 250)
            floor = m.rng.choice(
                ("", f", {m.rng.randint(1, 9)}º {m.rng.choice('ABCD')}", " bajo", f", {m.rng.randint(1, 6)}º izda.")
            )
            city, postcode = m.rng.choice(_SPANISH_CITIES)
            return f"{street_type} {name}{m.rng.choice((' ', ', '))}{number}{floor}, {postcode}{m.rng.randint(0, 99):02d} {city}"

        return build

    def english(m: _Maker) -> str:
        street = f"{m.rng.choice(_ENGLISH_STREETS)} {m.rng.choice(('Street', 'Avenue', 'Road', 'Lane', 'Drive', 'Boulevard', 'St', 'Ave'))}"
        if m.rng.random() < 0.5:
            city, state, zip_code = m.rng.choice(_US_CITIES)
            return f"{m.rng.randint(1, 9999)} {street}, {city}, {state} {zip_code}"
        city, postcode = m.rng.choice(_UK_CITIES)
        return f"{m.rng.randint(1, 300)}{m.rng.choice(('', 'B'))} {street}, {city} {postcode}"

    def any_spanish_type(m: _Maker) -> str:
        """A type of street from Faker's Spanish and Latin American locales, a named street and a number."""
        street_type = m.rng.choice(_faker_street_types())
        fake = m.faker("es_ES")
        name = m.rng.choice((f"{fake.first_name()} {fake.last_name()}", f"de {fake.last_name()}", fake.last_name()))
        city, postcode = m.rng.choice(_SPANISH_CITIES)
        return f"{street_type} {name} {m.rng.randint(1, 999)}, {postcode}{m.rng.randint(0, 99):02d} {city}"

    def any_usps_suffix(m: _Maker) -> str:
        """Any USPS street suffix (Faker's en_US list, or the standard abbreviation of USPS Publication 28),
        a unit at times, the city, state and ZIP on the same line or the next."""
        suffix = m.rng.choice(_usps_suffixes())
        fake = m.faker("en_US")
        street = f"{m.rng.randint(1, 99999)} {m.rng.choice((fake.first_name(), fake.last_name()))} {suffix}"
        unit = m.rng.choice(
            (
                "",
                "",
                f" Apt. {m.rng.randint(1, 999)}",
                f" Suite {m.rng.randint(100, 999)}",
                f", Unit {m.rng.randint(1, 99)}",
            )
        )
        city, state, zip_code = m.rng.choice(_US_CITIES)
        return f"{street}{unit}{m.rng.choice((', ', chr(10)))}{city}, {state} {zip_code}"

    def faker_locale(locale: str) -> Callable[[_Maker], str]:
        def build(m: _Maker) -> str:
            return m.faker(locale).address()

        return build

    return {
        "address/any spanish type of street": address(any_spanish_type),
        "address/any usps suffix": address(any_usps_suffix),
        **{f"address/faker {locale}": address(faker_locale(locale)) for locale in _FAKER_ADDRESS_LOCALES},
        "address/calle": address(spanish("Calle")),
        "address/c/": address(spanish("C/")),
        "address/avda.": address(spanish("Avda.")),
        "address/plaza": address(spanish("Plaza")),
        "address/paseo": address(spanish("Paseo")),
        "address/carrer": address(spanish("Carrer", catalan=True)),
        "address/passeig": address(spanish("Passeig", catalan=True)),
        "address/english": address(english),
    }


_FAKER_ADDRESS_LOCALES = ("en_US", "en_GB", "en_CA", "en_AU", "es_ES", "es_AR")
"""Whole addresses as Faker writes them, in the locales whose addresses name a type of street or end in
a postcode (Chile's "Los Copihues 191" has neither: a gazetteer of streets would be needed)."""


@functools.cache
def _faker_street_types() -> tuple[str, ...]:
    types = set()
    for locale in ("es_ES", "es_MX", "es_CO", "es_AR", "es_CL"):
        prefixes = getattr(importlib.import_module(f"faker.providers.address.{locale}").Provider, "street_prefixes", ())
        types.update(prefixes if not isinstance(prefixes, dict) else prefixes.keys())
    return tuple(sorted(types))


@functools.cache
def _usps_suffixes() -> tuple[str, ...]:
    from pipelines.privacy.street_types import USPS_STANDARD

    names = importlib.import_module("faker.providers.address.en_US").Provider.street_suffixes
    return tuple(sorted(set(names) | {abbreviation.capitalize() for abbreviation in USPS_STANDARD.values()}))


_SPANISH_STREETS = (
    "Mayor",
    "de Alcalá",
    "de la Constitución",
    "Gran Vía",
    "de Serrano",
    "del Prado",
    "de Goya",
    "San Bernardo",
    "de la Paz",
    "Real",
    "de los Reyes Católicos",
    "del Doctor Fleming",
)
_CATALAN_STREETS = ("de Mallorca", "de Gràcia", "d'Aragó", "de Sant Joan", "del Born", "de la Diputació", "Balmes")
_SPANISH_CITIES = (("Madrid", "280"), ("Barcelona", "080"), ("Sevilla", "410"), ("Valencia", "460"), ("Bilbao", "480"))
_ENGLISH_STREETS = ("Baker", "Elm", "Maple", "Fifth", "Oak", "Amphitheatre", "Sunset", "Highland", "Church", "Victoria")
_US_CITIES = (
    ("Mountain View", "CA", "94043"),
    ("New York", "NY", "10118"),
    ("Austin", "TX", "78701"),
    ("Springfield", "IL", "62701"),
)
_UK_CITIES = (("London", "NW1 6XE"), ("Manchester", "M1 1AE"), ("Leeds", "LS1 4AP"), ("Bristol", "BS1 5TR"))


def _name_forms() -> dict[str, Callable[[_Maker], _Value]]:
    def name(build: Callable[[_Maker], tuple[str, str]], templates: str = "name") -> Callable[[_Maker], _Value]:
        def form(m: _Maker) -> _Value:
            snippet, value = build(m)
            return _Value("PERSON", snippet, value, templates, short=templates == "name")

        return form

    def full(m: _Maker) -> str:
        first, last = m.person()
        return f"{first} {last}"

    def unlisted(m: _Maker) -> str:
        first, last = m.unlisted_person()
        return f"{first} {last}"

    def catalan(m: _Maker) -> str:
        fake = m.faker("es_CA")
        return f"{fake.first_name()} {fake.last_name()} i {fake.last_name()}"

    def lower(m: _Maker) -> str:
        first, last = m.person(("es_ES", "en_US"))
        return f"{first} {last}".lower()

    return {
        "name/known, no cue": name(lambda m: (v := full(m), v)),
        "name/me llamo, unlisted": name(lambda m: (f"me llamo {(v := unlisted(m))}", v), "name_phrase"),
        "name/my name is, unlisted": name(lambda m: (f"my name is {(v := unlisted(m))}", v), "name_phrase"),
        "name/soy, unlisted": name(lambda m: (f"soy {(v := unlisted(m))}", v), "name_phrase"),
        "name/a nombre de, unlisted": name(
            lambda m: (f"la reserva está a nombre de {(v := unlisted(m))}", v), "name_phrase"
        ),
        "name/for, unlisted": name(lambda m: (f"the booking for {(v := unlisted(m))}", v), "name_phrase"),
        "name/lower case after a cue": name(
            lambda m: (f"{m.rng.choice(('me llamo', 'soy', 'hola, soy', 'my name is'))} {(v := lower(m))}", v),
            "name_phrase",
        ),
        "name/signature": name(
            lambda m: (
                f"{m.rng.choice(('Saludos', 'Un saludo', 'Atentamente', 'Regards', 'Best regards'))},\n{(v := catalan(m))}",
                v,
            ),
            "signature",
        ),
        "name/catalan after a cue": name(lambda m: (f"me llamo {(v := catalan(m))}", v), "name_phrase"),
        "name/hyphenated surname": name(
            lambda m: (f"soy {(v := f'{m.person()[0]} {m.person()[1]}-{m.person()[1]}')}", v), "name_phrase"
        ),
        "name/particles": name(
            lambda m: (
                v
                := f"{m.person(('es_ES',))[0]} {m.rng.choice(('de la', 'del', 'de'))} {m.rng.choice(('Fuente', 'Río', 'Torre', 'Vega', 'Cruz'))}",
                v,
            )
        ),
        "name/title, unlisted": name(
            lambda m: (f"{m.rng.choice(('Sr.', 'Sra.', 'Dr.', 'Mr.', 'Ms.'))} {(v := m.unlisted_person()[1])}", v),
            "name_phrase",
        ),
        "name/greeting": name(
            lambda m: (f"{m.rng.choice(('Hola', 'Gracias,', 'Thanks', 'Hi'))} {(v := m.person()[0])}", v), "name_phrase"
        ),
    }


FORMS: dict[str, Callable[[_Maker], _Value]] = {
    **_email_forms(),
    **_phone_forms(),
    **_iban_forms(),
    **_card_forms(),
    **_network_forms(),
    **_national_id_forms(),
    **_secret_forms(),
    **_address_forms(),
    **_name_forms(),
}
"""Every form the generator plants, by name ("family/how it is written")."""

# --- sentences around a value ----------------------------------------------------------------------
TEMPLATES = {
    "email": {
        "es": ("Escríbeme a {v} cuando puedas.", "Mi correo es {v}", "Contacto: {v}"),
        "en": ("You can reach me at {v}.", "My e-mail is {v}", "Contact: {v}"),
    },
    "phone": {
        "es": ("Llámame al {v} por la tarde.", "Mi móvil es el {v}.", "Estoy en el {v} hasta las 18:00.", "Tel. {v}"),
        "en": ("Call me on {v}.", "My number is {v}.", "Phone: {v}", "The desk line {v} is open until 6pm."),
    },
    "phone_cued": {"es": ("Llámame al {v}.", "Mi teléfono: {v}"), "en": ("Call me on {v}.", "My phone number is {v}.")},
    "iban": {
        "es": ("Para el reembolso, mi IBAN es {v}.", "Transferid a la cuenta {v} por favor."),
        "en": ("For the refund my IBAN is {v}.", "Please wire it to {v}."),
    },
    "card": {
        "es": ("Me cobraron dos veces en la tarjeta {v}.", "Tarjeta {v}, caduca 12/27."),
        "en": ("I was charged twice on my card {v}.", "Card {v} expires 12/27."),
    },
    "ip": {
        "es": ("Me bloquean desde la IP {v}.", "El cliente {v} no conecta."),
        "en": ("Requests from {v} are being blocked.", "Client {v} times out."),
    },
    "id": {
        "es": ("Mi documento es {v}, por si hay que verificar.", "Con el {v} no me deja completar el alta."),
        "en": ("My ID number is {v}.", "The form rejects {v} as my document."),
    },
    "nss_cued": {
        "es": ("Mi número de la Seguridad Social es {v}.", "NSS: {v}"),
        "en": ("My Spanish social security number (NSS) is {v}.",),
    },
    "ssn_cued": {"es": ("Mi SSN es {v}.",), "en": ("My SSN is {v}.", "Social security number: {v}")},
    "password": {
        "es": ("No puedo entrar: {v}", "Esto es lo que tengo: {v}"),
        "en": ("I can't log in: {v}", "This is my config: {v}"),
    },
    "token": {
        "es": ("Estoy probando con la key {v} y da 401.", "El token {v} ya no vale."),
        "en": ("I'm testing with the key {v} and get a 401.", "The token {v} stopped working."),
    },
    "secret": {
        "es": ("Esta es la config: {v}", "Uso {v} en producción."),
        "en": ("Here is the config: {v}", "We use {v} in prod."),
    },
    "header": {
        "es": ("Mando la cabecera {v} y falla.", "Petición:\n{v}\nAccept: */*"),
        "en": ("I send the header {v} and it fails.", "Request:\n{v}\nAccept: */*"),
    },
    "block": {
        "es": ("Este es el fichero de la clave:\n{v}\n¿Por qué no carga?",),
        "en": ("Here is the key file:\n{v}\nWhy won't it load?",),
    },
    "url": {
        "es": ("El enlace {v} devuelve 403.", "Conecto con {v} y no va."),
        "en": ("The link {v} returns 403.", "Connecting to {v} fails."),
    },
    "address": {
        "es": ("Enviadlo a {v}, por favor.", "Mi dirección es {v}."),
        "en": ("Ship it to {v}, please.", "My address is {v}."),
    },
    "name": {
        "es": ("Ayer hablé con {v} sobre el error.", "{v} dice que el despliegue falla."),
        "en": ("Yesterday I talked to {v} about the bug.", "{v} says the deploy fails."),
    },
    "name_phrase": {
        "es": ("Hola, {v}. Tengo una duda.", "Buenas, {v} y no me funciona."),
        "en": ("Hello, {v}. I have a question.", "Hi, {v} and it breaks."),
    },
    "signature": {"es": ("Gracias por la ayuda.\n\n{v}",), "en": ("Thanks for the help.\n\n{v}",)},
}
QUESTIONS = {
    "es": (
        "¿Cómo funciona la sentencia with en Python?",
        "¿Qué garantiza un bloque finally?",
        "No entiendo los generadores.",
    ),
    "en": (
        "How does the with statement work in Python?",
        "What does a finally block guarantee?",
        "I don't get generators.",
    ),
}
ANSWERS = {
    "es": "Según la referencia, la sentencia with llama a __enter__ y __exit__.",
    "en": "According to the reference, the with statement calls __enter__ and __exit__.",
}
CONTEXT = "The with statement is used to wrap the execution of a block with methods defined by a context manager."
_KEY_PLACES_TEMPLATES = ("email", "phone", "ip", "id", "name", "iban", "card")


def _embed(place: str, sentence: str, snippet: str, value: str, lang: str, m: _Maker, draft: dict) -> str:
    """Put `sentence` in `place` of the draft; return the value as it reads there."""
    if place == "question":
        draft["question"] = f"{draft['question']} {sentence}"
    elif place == "answer":
        draft["answer"] = f"{sentence} {draft['answer']}"
    elif place == "context":
        draft["contexts"].append(
            Context(chunk_id=f"tickets/{m.rng.randint(10000, 99999)}#0", text=f"Ticket: {sentence}", score=0.4)
        )
    elif place == "tool_argument":
        arguments = m.rng.choice(
            ({"query": sentence}, {"filters": [{"note": sentence}], "top_k": 5}, {"body": {"text": sentence}})
        )
        draft["tool_calls"].append(
            ToolCall(name=m.rng.choice(("web_search", "sql_query", "http_request")), arguments=arguments)
        )
    elif place == "metadata_value":
        draft["metadata"][f"note_{len(draft['metadata'])}"] = sentence
    elif place == "metadata_key":
        draft["metadata"][snippet] = {"seen": m.rng.randint(1, 9)}
    else:  # json_escaped: a payload serialized twice, as loggers do
        escaped = json.dumps({"message": sentence}, ensure_ascii=True)
        draft["metadata"][f"raw_{len(draft['metadata'])}"] = escaped
        return json.dumps(value, ensure_ascii=True)[1:-1]
    return value


def _one_case(rng: random.Random, index: int, start: datetime) -> PiiCase:
    lang = rng.choice(LANGUAGES)
    m = _Maker(rng)
    draft = {
        "question": rng.choice(QUESTIONS[lang]),
        "answer": ANSWERS[lang],
        "tool_calls": [],
        "metadata": {"channel": "web"},
        "contexts": [Context(chunk_id="pydoc/with#0", text=CONTEXT, score=0.9)],
    }
    planted = []
    for _ in range(rng.choice((1, 2, 3, 4))):
        form = rng.choice(list(FORMS))
        value = FORMS[form](m)
        places = [
            p for p in PLACES if p != "metadata_key" or (value.short and value.templates in _KEY_PLACES_TEMPLATES)
        ]
        place = rng.choice(places)
        sentence = (
            value.snippet
            if place == "metadata_key"
            else rng.choice(TEMPLATES[value.templates][lang]).format(v=value.snippet)
        )
        as_written = _embed(place, sentence, value.snippet, value.value, lang, m, draft)
        planted.append(Planted(value.entity, form, as_written, place, lang))
    trace = Trace(
        trace_id=f"pii-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
        ts=start + timedelta(seconds=index),
        model="qwen2.5-7b-instruct",
        app="support-bot",
        language=lang,
        user_feedback=None,
        latency_ms=rng.randint(200, 3000),
        **draft,
    )
    return PiiCase(trace, tuple(planted))


def generate_pii_cases(n: int, *, seed: int) -> list[PiiCase]:
    """`n` traces with one to four planted values each; the same seed, the same cases."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 28, tzinfo=UTC)
    return [_one_case(rng, i, start) for i in range(n)]
