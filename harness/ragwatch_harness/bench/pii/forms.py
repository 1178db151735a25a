"""The forms PII and secrets take in real traffic, one function per form, named "family/how it is
written".

Every value is planted in one of dozens of forms: an IBAN in lower case, a phone with en dashes, an
e-mail written "juan arroba gmail punto com", a PEM block cut short, a name typed in lower case
after "me llamo"... A form draws its value from a `Maker` (deterministic by seed) and returns the
`Value` to plant; the words around values (street names, separators, sentences) are
tests/data/pii_cases.yaml's.
"""

from __future__ import annotations

import base64
import functools
import importlib
import ipaddress
import json
import random
import string
from collections.abc import Callable

import phonenumbers
from stdnum import iban, luhn
from stdnum.es import cif, dni, nie
from stdnum.us import ssn

from pipelines.privacy import es_nss
from ragwatch_harness.bench.pii.phrases import (
    CATALAN_STREETS,
    ENGLISH_STREETS,
    FAKER_ADDRESS_LOCALES,
    SEPARATORS,
    SPANISH_CITIES,
    SPANISH_STREETS,
    UK_CITIES,
    US_CITIES,
)
from ragwatch_harness.bench.pii.values import ALNUM, LOWER_ALNUM, Maker, Value


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


# Each form returns a Value. Forms are grouped by the family they test.
def _email_forms() -> dict[str, Callable[[Maker], Value]]:
    def make(render: Callable[[str, str, str], str]) -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            local, domain, tld = m.email_parts()
            value = render(local, domain, tld)
            return Value("EMAIL", value, value, "email", short=True)

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
        "email/[at] [dot]": make(
            lambda l, d, t: f"{l}[at]{d}[dot]{dots(t, '[dot]').replace(' ', '')}"
        ),
        "email/full-width at": make(lambda l, d, t: f"{l}＠{d}．{t.replace('.', '．')}"),
        "email/spaced at": make(lambda l, d, t: f"{l} @ {d}.{t}"),
        "email/url-encoded": make(lambda l, d, t: f"{l}%40{d}.{t}"),
        "email/html entity": make(lambda l, d, t: f"{l}&#64;{d}.{t}"),
        "email/at webmail": lambda m: _webmail_at(m),
    }


def _webmail_at(m: Maker) -> Value:
    local, _, _ = m.email_parts()
    value = f"{local} at {m.rng.choice(('gmail', 'hotmail', 'yahoo', 'outlook'))}.com"
    return Value("EMAIL", value, value, "email", short=True)


_PUNCTUATION = ",;:|·•*~'’\\#=^`\"!?"
"""Any other punctuation a number can be split by: a phone only after a cue ("612,345,678 rows" is a
count)."""


def _phone_forms() -> dict[str, Callable[[Maker], Value]]:
    def spanish(separator: str, sizes=(3, 3, 3), landline=False) -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            kind = (
                phonenumbers.PhoneNumberType.FIXED_LINE
                if landline
                else phonenumbers.PhoneNumberType.MOBILE
            )
            digits = str(m.phone("ES", kind).national_number)
            value = _separated(_group(digits, sizes), separator) if separator else digits
            return Value("PHONE", value, value, "phone", short=True)

        return form

    def international(separator: str | None, prefix: str = "+") -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            region = m.rng.choice(
                ("ES", "GB", "FR", "DE", "US", "MX", "IT", "PT", "NL", "AR", "BR", "CH", "IE", "CO")
            )
            number = m.phone(region)
            text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
            text = text.replace("+", prefix, 1)
            if separator is not None:
                text = text.replace(" ", separator).replace("-", separator)
            return Value("PHONE", text, text, "phone", short=True)

        return form

    def national(region: str, templates: str = "phone") -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            kind = m.rng.choice(
                (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE)
            )
            text = phonenumbers.format_number(
                m.phone(region, kind), phonenumbers.PhoneNumberFormat.NATIONAL
            )
            return Value("PHONE", text, text, templates, short=True)

        return form

    def any_punctuation(m: Maker) -> Value:
        digits, separator = str(m.phone("ES").national_number), m.rng.choice(_PUNCTUATION)
        value = _separated(
            _group(digits, m.rng.choice(((3, 3, 3), (3, 2, 2, 2), (2, 3, 2, 2)))), separator
        )
        return Value("PHONE", value, value, "phone_cued", short=True)

    def trunk_in_parentheses(m: Maker) -> Value:
        """ "+44 (0)20 7946 0958": the national trunk prefix shown, not dialled."""
        region = m.rng.choice(("GB", "DE", "FR", "NL", "BE", "CH", "AT", "IE"))
        code, rest = phonenumbers.format_number(
            m.phone(region), phonenumbers.PhoneNumberFormat.INTERNATIONAL
        ).split(" ", 1)
        value = f"{code} (0){m.rng.choice(('', ' '))}{rest}"
        return Value("PHONE", value, value, "phone", short=True)

    def with_extension(m: Maker) -> Value:
        text = phonenumbers.format_number(
            m.phone("US"),
            m.rng.choice(
                (
                    phonenumbers.PhoneNumberFormat.NATIONAL,
                    phonenumbers.PhoneNumberFormat.INTERNATIONAL,
                )
            ),
        )
        value = text.replace(" ", m.rng.choice((" ", "-", "."))) if text.startswith("+") else text
        value += m.rng.choice(("x", " x", " ext. ", " ext ", "x")) + m.token(
            m.rng.randint(2, 5), string.digits
        )
        return Value("PHONE", value, value, "phone", short=True)

    forms = {f"phone/es {name}": spanish(sep) for name, sep in SEPARATORS.items()}
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


def _plus34(m: Maker, prefix: str, separator: str | None = None) -> Value:
    digits = str(m.phone("ES").national_number)
    if separator is not None:
        value = prefix + separator.join(_group(digits, (3, 3, 3)))
    else:
        value = prefix + m.rng.choice(
            (
                f"{digits[:3]} {digits[3:5]} {digits[5:7]} {digits[7:]}",
                f"{digits[:3]}-{digits[3:6]}-{digits[6:]}",
            )
        )
    return Value("PHONE", value, value, "phone", short=True)


def _e164(m: Maker) -> Value:
    region = m.rng.choice(("GB", "FR", "DE", "US", "MX", "AR", "NL", "SE", "PL", "JP", "AU", "IN"))
    value = phonenumbers.format_number(m.phone(region), phonenumbers.PhoneNumberFormat.E164)
    return Value("PHONE", value, value, "phone", short=True)


def _iban_forms() -> dict[str, Callable[[Maker], Value]]:
    def valid(m: Maker) -> str:
        locale = m.rng.choice(("es_ES", "de_DE", "fr_FR", "en_GB", "it_IT", "nl_NL", "pt_PT"))
        return _checked(m.faker(locale).iban, iban)

    def make(
        render: Callable[[str, random.Random], str], entity: str = "IBAN", corrupt: bool = False
    ):
        def form(m: Maker) -> Value:
            compact = valid(m)
            if corrupt:
                compact = _corrupt_digit(compact, m.rng, iban)
            value = render(compact, m.rng)
            return Value(entity, value, value, "iban", short=True)

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


def _card_forms() -> dict[str, Callable[[Maker], Value]]:
    def make(
        separator: str,
        kinds=("visa16", "mastercard", "discover", "jcb16"),
        entity="CREDIT_CARD",
        corrupt=False,
    ):
        def form(m: Maker) -> Value:
            digits = _checked(
                lambda: m.faker("en_US").credit_card_number(card_type=m.rng.choice(kinds)), luhn
            )
            if corrupt:
                digits = _corrupt_digit(digits, m.rng, luhn)
            sizes = (4, 6, 5) if len(digits) == 15 else (4, 4, 4, 4)
            value = _separated(_group(digits, sizes), separator) if separator else digits
            return Value(entity, value, value, "card", short=True)

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


def _network_forms() -> dict[str, Callable[[Maker], Value]]:
    def ip(make: Callable[[Maker], tuple[str, str]]) -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            snippet, value = make(m)
            return Value("IP_ADDRESS", snippet, value, "ip", short=True)

        return form

    fake = lambda m: m.faker("en_US")  # noqa: E731
    hexdigits = "0123456789abcdef"

    def v6(m: Maker) -> str:
        """A global unicast address (2000::/3), as a client's is: not multicast, not RFC 3849's
        2001:db8::/32."""
        while (first := f"{m.rng.randint(0x2000, 0x3FFF):x}") == "2001":
            pass
        return ipaddress.ip_address(
            ":".join([first, *(m.token(4, hexdigits) for _ in range(7))])
        ).compressed

    return {
        "ip/v4 public": ip(lambda m: (v := fake(m).ipv4_public(), v)),
        "ip/v4 private": ip(lambda m: (v := fake(m).ipv4_private(), v)),
        "ip/v4 with port": ip(lambda m: (f"{(v := fake(m).ipv4_public())}:8080", v)),
        "ip/v6": ip(lambda m: (v := v6(m), v)),
        "ip/v6 full": ip(
            lambda m: (
                v := ":".join(
                    [
                        f"{m.rng.randint(0x2000, 0x3FFF):x}",
                        *(m.token(4, hexdigits) for _ in range(7)),
                    ]
                ),
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


def _national_id_forms() -> dict[str, Callable[[Maker], Value]]:
    def value_form(
        entity: str, make: Callable[[Maker], str], templates: str = "id"
    ) -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            value = make(m)
            return Value(entity, value, value, templates, short=True)

        return form

    es = lambda m: m.faker("es_ES")  # noqa: E731

    def nss(m: Maker) -> str:
        base = f"{m.rng.randint(1, 52):02d}{m.rng.randint(10**7, 10**8 - 1)}"
        return base + es_nss.calc_check_digits(base)

    def bad_nss(m: Maker) -> str:
        number = nss(m)
        return f"{number[:2]}/{number[2:10]}/{(int(number[10:]) + 1) % 97:02d}"

    def us_ssn(m: Maker) -> str:
        return _checked(
            lambda: (
                f"{m.rng.randint(1, 899):03d}-{m.rng.randint(1, 99):02d}-{m.rng.randint(1, 9999):04d}"
            ),
            ssn,
        )

    return {
        "dni/plain": value_form("DNI", lambda m: _checked(es(m).nif, dni)),
        "dni/dash": value_form("DNI", lambda m: (v := _checked(es(m).nif, dni))[:-1] + "-" + v[-1]),
        "dni/dots": value_form(
            "DNI", lambda m: f"{(v := _checked(es(m).nif, dni))[:2]}.{v[2:5]}.{v[5:8]}-{v[8]}"
        ),
        "dni/lower-case letter": value_form("DNI", lambda m: _checked(es(m).nif, dni).lower()),
        "dni/wrong letter": value_form(
            "DNI_INVALID", lambda m: _wrong_letter(_checked(es(m).nif, dni), dni)
        ),
        "nie/plain": value_form("NIE", lambda m: _checked(es(m).nie, nie)),
        "nie/dashes": value_form(
            "NIE", lambda m: f"{(v := _checked(es(m).nie, nie))[0]}-{v[1:8]}-{v[8]}"
        ),
        "nie/wrong letter": value_form(
            "NIE_INVALID", lambda m: _wrong_letter(_checked(es(m).nie, nie), nie)
        ),
        "nss/slashes": value_form("NSS", lambda m: es_nss.format(nss(m))),
        "nss/spaces": value_form("NSS", lambda m: es_nss.format(nss(m), " ")),
        "nss/contiguous after a cue": value_form("NSS", nss, "nss_cued"),
        "nss/wrong check digits": value_form("NSS_INVALID", bad_nss),
        "cif/plain": value_form("CIF", lambda m: _checked(es(m).cif, cif)),
        "cif/dashes": value_form(
            "CIF", lambda m: f"{(v := _checked(es(m).cif, cif))[0]}-{v[1:8]}-{v[8]}"
        ),
        "ssn/dashes": value_form("SSN", us_ssn),
        "ssn/contiguous after a cue": value_form(
            "SSN", lambda m: us_ssn(m).replace("-", ""), "ssn_cued"
        ),
        "ssn/impossible area": value_form(
            "SSN_INVALID", lambda m: f"666-{m.rng.randint(10, 99)}-{m.rng.randint(1000, 9999)}"
        ),
    }


def _wrong_letter(value: str, module) -> str:
    for letter in "TRWAGMYFPDXBNJZSQVHLCKE":
        if not module.is_valid(value[:-1] + letter):
            return value[:-1] + letter
    raise AssertionError(value)


def _secret_forms() -> dict[str, Callable[[Maker], Value]]:
    def inline(
        build: Callable[[Maker], tuple[str, str]], entity: str = "SECRET", templates: str = "secret"
    ):
        def form(m: Maker) -> Value:
            snippet, value = build(m)
            return Value(entity, snippet, value, templates)

        return form

    def password(render: str) -> Callable[[Maker], Value]:
        return inline(lambda m: (render.format(v=(v := m.password())), v), templates="password")

    def token(prefix: str, n: int, alphabet: str = ALNUM) -> Callable[[Maker], Value]:
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
        "secret/openssh": inline(
            lambda m: (v := _pem(m, "OPENSSH PRIVATE KEY"), v), templates="block"
        ),
        "secret/pem cut short": inline(
            lambda m: (v := _pem(m, "EC PRIVATE KEY", end=False), v), templates="block"
        ),
        "secret/authorization basic": inline(
            lambda m: (f"Authorization: Basic {(v := _basic(m))}", v), templates="header"
        ),
        "secret/authorization bearer": inline(
            lambda m: (f"Authorization: Bearer {(v := m.token(40, ALNUM + '-._'))}", v),
            templates="header",
        ),
        "secret/bare bearer": inline(
            lambda m: (f"Bearer {(v := m.token(32, ALNUM))}", v), templates="header"
        ),
        "secret/cookie header": inline(
            lambda m: (
                f"Cookie: {(v := f'sessionid={m.token(32, LOWER_ALNUM)}; csrftoken={m.token(32)}')}",
                v,
            ),
            templates="header",
        ),
        "secret/set-cookie": inline(
            lambda m: (f"Set-Cookie: {(v := f'session={m.token(24)}; Path=/; HttpOnly')}", v),
            templates="header",
        ),
        "secret/session id": inline(lambda m: (f"PHPSESSID={(v := m.token(26, LOWER_ALNUM))}", v)),
        "secret/openai": token("sk-proj-", 48, ALNUM + "_-"),
        "secret/openai legacy": token("sk-", 48),
        "secret/anthropic": token("sk-ant-api03-", 80, ALNUM + "_-"),
        "secret/aws access key id": token("AKIA", 16, string.ascii_uppercase + string.digits),
        "secret/aws secret key": inline(
            lambda m: (f"aws_secret_access_key = {(v := m.token(40, ALNUM + '/+'))}", v)
        ),
        "secret/github": token("ghp_", 36),
        "secret/github fine-grained": token("github_pat_", 82, ALNUM + "_"),
        "secret/gitlab": token("glpat-", 20, ALNUM + "_-"),
        "secret/slack bot": inline(
            lambda m: (
                v
                := f"xoxb-{m.token(12, string.digits)}-{m.token(13, string.digits)}-{m.token(24)}",
                v,
            )
        ),
        "secret/slack webhook": inline(
            lambda m: (
                f"https://hooks.slack.com/services/{(v := f'T{m.token(10, string.ascii_uppercase + string.digits)}/B{m.token(10, string.ascii_uppercase + string.digits)}/{m.token(24)}')}",
                v,
            )
        ),
        "secret/stripe": token("sk_live_", 24),
        "secret/google api key": token("AIza", 35, ALNUM + "_-"),
        "secret/google oauth": token("ya29.", 60, ALNUM + "_-"),
        "secret/hugging face": token("hf_", 34),
        "secret/npm": token("npm_", 36),
        "secret/pypi": token("pypi-AgEIcHlwaS5vcmc", 60, ALNUM + "_-"),
        "secret/sendgrid": inline(
            lambda m: (v := f"SG.{m.token(22, ALNUM + '_-')}.{m.token(43, ALNUM + '_-')}", v)
        ),
        "secret/twilio": token("SK", 32, hexdigits),
        "secret/azure ad client secret": inline(
            lambda m: (v := f"{m.token(3, ALNUM)}8Q~{m.token(34, ALNUM + '_-.~')}", v)
        ),
        "secret/azure storage key": inline(
            lambda m: (
                f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={(v := m.token(86, ALNUM + '+/') + '==')};EndpointSuffix=core.windows.net",
                v,
            )
        ),
        "secret/jwt": inline(lambda m: (v := _jwt(m), v)),
        "url/query token": inline(lambda m: _query(m), entity="URL_SECRET", templates="url"),
        "url/fragment token": inline(
            lambda m: (
                f"https://app.acme.io/callback#access_token={(v := m.token(40))}&state=xyz",
                v,
            ),
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


def _pem(m: Maker, label: str, end: bool = True) -> str:
    body = "\n".join(m.token(64, ALNUM + "+/") for _ in range(m.rng.randint(4, 8)))
    block = f"-----BEGIN {label}-----\n{body}\n{m.token(20, ALNUM)}=="
    return block + (f"\n-----END {label}-----" if end else "")


def _basic(m: Maker) -> str:
    return base64.b64encode(f"{m.person()[0].lower()}:{m.password()}".encode()).decode()


def _jwt(m: Maker) -> str:
    def b64(data: dict) -> str:
        return (
            base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode())
            .rstrip(b"=")
            .decode()
        )

    return f"{b64({'alg': 'HS256', 'typ': 'JWT'})}.{b64({'sub': str(m.rng.randint(10**6, 10**7))})}.{m.token(43, ALNUM + '_-')}"


def _query(m: Maker) -> tuple[str, str]:
    param = m.rng.choice(
        (
            "token",
            "access_token",
            "api_key",
            "key",
            "sig",
            "code",
            "session",
            "X-Amz-Signature",
            "apikey",
        )
    )
    value = m.token(m.rng.randint(20, 40))
    return f"https://api.acme.io/v1/export?format=csv&{param}={value}&page=2", value


def _address_forms() -> dict[str, Callable[[Maker], Value]]:
    def address(build: Callable[[Maker], str]) -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            value = build(m)
            return Value("ADDRESS", value, value, "address")

        return form

    def spanish(street_type: str, catalan: bool = False) -> Callable[[Maker], str]:
        def build(m: Maker) -> str:
            name = m.rng.choice(CATALAN_STREETS if catalan else SPANISH_STREETS)
            number = m.rng.randint(1, 250)
            floor = m.rng.choice(
                (
                    "",
                    f", {m.rng.randint(1, 9)}º {m.rng.choice('ABCD')}",
                    " bajo",
                    f", {m.rng.randint(1, 6)}º izda.",
                )
            )
            city, postcode = m.rng.choice(SPANISH_CITIES)
            return f"{street_type} {name}{m.rng.choice((' ', ', '))}{number}{floor}, {postcode}{m.rng.randint(0, 99):02d} {city}"

        return build

    def english(m: Maker) -> str:
        street = f"{m.rng.choice(ENGLISH_STREETS)} {m.rng.choice(('Street', 'Avenue', 'Road', 'Lane', 'Drive', 'Boulevard', 'St', 'Ave'))}"
        if m.rng.random() < 0.5:
            city, state, zip_code = m.rng.choice(US_CITIES)
            return f"{m.rng.randint(1, 9999)} {street}, {city}, {state} {zip_code}"
        city, postcode = m.rng.choice(UK_CITIES)
        return f"{m.rng.randint(1, 300)}{m.rng.choice(('', 'B'))} {street}, {city} {postcode}"

    def any_spanish_type(m: Maker) -> str:
        """A type of street from Faker's Spanish and Latin American locales, a named street and a
        number."""
        street_type = m.rng.choice(_faker_street_types())
        fake = m.faker("es_ES")
        name = m.rng.choice(
            (f"{fake.first_name()} {fake.last_name()}", f"de {fake.last_name()}", fake.last_name())
        )
        city, postcode = m.rng.choice(SPANISH_CITIES)
        return f"{street_type} {name} {m.rng.randint(1, 999)}, {postcode}{m.rng.randint(0, 99):02d} {city}"

    def any_usps_suffix(m: Maker) -> str:
        """Any USPS street suffix (Faker's en_US list, or the standard abbreviation of USPS
        Publication 28), a unit at times, the city, state and ZIP on the same line or the next."""
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
        city, state, zip_code = m.rng.choice(US_CITIES)
        return f"{street}{unit}{m.rng.choice((', ', chr(10)))}{city}, {state} {zip_code}"

    def faker_locale(locale: str) -> Callable[[Maker], str]:
        def build(m: Maker) -> str:
            return m.faker(locale).address()

        return build

    return {
        "address/any spanish type of street": address(any_spanish_type),
        "address/any usps suffix": address(any_usps_suffix),
        **{
            f"address/faker {locale}": address(faker_locale(locale))
            for locale in FAKER_ADDRESS_LOCALES
        },
        "address/calle": address(spanish("Calle")),
        "address/c/": address(spanish("C/")),
        "address/avda.": address(spanish("Avda.")),
        "address/plaza": address(spanish("Plaza")),
        "address/paseo": address(spanish("Paseo")),
        "address/carrer": address(spanish("Carrer", catalan=True)),
        "address/passeig": address(spanish("Passeig", catalan=True)),
        "address/english": address(english),
    }


@functools.cache
def _faker_street_types() -> tuple[str, ...]:
    types = set()
    for locale in ("es_ES", "es_MX", "es_CO", "es_AR", "es_CL"):
        prefixes = getattr(
            importlib.import_module(f"faker.providers.address.{locale}").Provider,
            "street_prefixes",
            (),
        )
        types.update(prefixes if not isinstance(prefixes, dict) else prefixes.keys())
    return tuple(sorted(types))


@functools.cache
def _usps_suffixes() -> tuple[str, ...]:
    from pipelines.privacy.street_types import USPS_STANDARD

    names = importlib.import_module("faker.providers.address.en_US").Provider.street_suffixes
    return tuple(
        sorted(set(names) | {abbreviation.capitalize() for abbreviation in USPS_STANDARD.values()})
    )


def _name_forms() -> dict[str, Callable[[Maker], Value]]:
    def name(
        build: Callable[[Maker], tuple[str, str]], templates: str = "name"
    ) -> Callable[[Maker], Value]:
        def form(m: Maker) -> Value:
            snippet, value = build(m)
            return Value("PERSON", snippet, value, templates, short=templates == "name")

        return form

    def full(m: Maker) -> str:
        first, last = m.person()
        return f"{first} {last}"

    def unlisted(m: Maker) -> str:
        first, last = m.unlisted_person()
        return f"{first} {last}"

    def catalan(m: Maker) -> str:
        fake = m.faker("es_CA")
        return f"{fake.first_name()} {fake.last_name()} i {fake.last_name()}"

    def lower(m: Maker) -> str:
        first, last = m.person(("es_ES", "en_US"))
        return f"{first} {last}".lower()

    return {
        "name/known, no cue": name(lambda m: (v := full(m), v)),
        "name/me llamo, unlisted": name(
            lambda m: (f"me llamo {(v := unlisted(m))}", v), "name_phrase"
        ),
        "name/my name is, unlisted": name(
            lambda m: (f"my name is {(v := unlisted(m))}", v), "name_phrase"
        ),
        "name/soy, unlisted": name(lambda m: (f"soy {(v := unlisted(m))}", v), "name_phrase"),
        "name/a nombre de, unlisted": name(
            lambda m: (f"la reserva está a nombre de {(v := unlisted(m))}", v), "name_phrase"
        ),
        "name/for, unlisted": name(
            lambda m: (f"the booking for {(v := unlisted(m))}", v), "name_phrase"
        ),
        "name/lower case after a cue": name(
            lambda m: (
                f"{m.rng.choice(('me llamo', 'soy', 'hola, soy', 'my name is'))} {(v := lower(m))}",
                v,
            ),
            "name_phrase",
        ),
        "name/signature": name(
            lambda m: (
                f"{m.rng.choice(('Saludos', 'Un saludo', 'Atentamente', 'Regards', 'Best regards'))},\n{(v := catalan(m))}",
                v,
            ),
            "signature",
        ),
        "name/catalan after a cue": name(
            lambda m: (f"me llamo {(v := catalan(m))}", v), "name_phrase"
        ),
        "name/hyphenated surname": name(
            lambda m: (f"soy {(v := f'{m.person()[0]} {m.person()[1]}-{m.person()[1]}')}", v),
            "name_phrase",
        ),
        "name/particles": name(
            lambda m: (
                v
                := f"{m.person(('es_ES',))[0]} {m.rng.choice(('de la', 'del', 'de'))} {m.rng.choice(('Fuente', 'Río', 'Torre', 'Vega', 'Cruz'))}",
                v,
            )
        ),
        "name/title, unlisted": name(
            lambda m: (
                f"{m.rng.choice(('Sr.', 'Sra.', 'Dr.', 'Mr.', 'Ms.'))} {(v := m.unlisted_person()[1])}",
                v,
            ),
            "name_phrase",
        ),
        "name/greeting": name(
            lambda m: (
                f"{m.rng.choice(('Hola', 'Gracias,', 'Thanks', 'Hi'))} {(v := m.person()[0])}",
                v,
            ),
            "name_phrase",
        ),
    }


FORMS: dict[str, Callable[[Maker], Value]] = {
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
