"""Families, not examples: a phone split by any separator and an address with any street word are
found.

- phones: Spanish numbers in every grouping people use, split by any separator (underscores too),
  with or without their country code; any punctuation at all after a cue; other countries' numbers
  with "(0)" trunks and extensions. Numbers come from libphonenumber's own metadata.
- addresses: every USPS street suffix (Faker's en_US list, which follows USPS Publication 28, and
  the standard abbreviations), every Spanish and Latin American type of street Faker's locales
  write, each in a whole address. The lists are the standard's, not the detector's.

Each one is replaced (no word of it survives) and, raw, trips the residual check.
"""

import importlib
import random
import string
from collections import Counter

import phonenumbers
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.privacy.anonymizer import Anonymizer
from pipelines.privacy.residual import residual_pii_reasons
from pipelines.privacy.street_types import USPS_STANDARD
from ragwatch_harness.bench.anonymize import _leaked

ANONYMIZER = Anonymizer(b"families-key")
SETTINGS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def _replaced_and_flagged(text: str, value: str) -> None:
    after = ANONYMIZER.anonymize_text(text, "scope", Counter())
    assert not _leaked(value, text, after), (text, after)
    assert residual_pii_reasons(text), text


def _spanish_number(seed: int, kind: phonenumbers.PhoneNumberType) -> str:
    rng = random.Random(seed)
    national = str(phonenumbers.example_number_for_type("ES", kind).national_number)
    while True:
        digits = national[:2] + "".join(rng.choice(string.digits) for _ in range(7))
        if (
            phonenumbers.is_valid_number(phonenumbers.parse(digits, "ES"))
            and len(set(digits[2:])) > 2
        ):
            return digits


def _grouped(digits: str, sizes: tuple[int, ...], separator: str) -> str:
    groups, i = [], 0
    for size in sizes:
        groups.append(digits[i : i + size])
        i += size
    return separator.join(groups)


spanish_numbers = st.builds(
    _spanish_number,
    st.integers(0, 2**32),
    st.sampled_from([phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE]),
)
groupings = st.sampled_from([(3, 3, 3), (3, 2, 2, 2), (2, 3, 2, 2), (9,)])
PLAIN_SEPARATORS = [" ", "-", ".", "/", "_", "\u2013", "\u2014", "\u2011", "\u00a0", "\u202f"]
"""What people put between digit groups anywhere; no cue is needed to read them as one number."""
COUNTRY_CODES = [
    "",
    "+34 ",
    "+34",
    "0034 ",
    "0034",
    "(+34) ",
    "(+34)",
    "+34.",
    "+34_",
    "+34-",
    "0034.",
]
UNCUED = [
    "Estoy en el {v} hasta las 18:00.",
    "The desk line {v} is open until 6pm.",
    "{v}",
    "ping {v} later",
    "({v})",
]


@SETTINGS
@given(
    spanish_numbers,
    groupings,
    st.sampled_from(PLAIN_SEPARATORS),
    st.sampled_from(COUNTRY_CODES),
    st.sampled_from(UNCUED),
)
def test_a_spanish_number_split_by_any_separator(digits, grouping, separator, country, template):
    value = country + _grouped(digits, grouping, separator)
    _replaced_and_flagged(template.format(v=value), value)


ANY_PUNCTUATION = sorted(set(string.punctuation) - set("()+") | set("·•‧|¦"))
CUED = [
    "Llámame al {v} por la tarde.",
    "Mi móvil es el {v}.",
    "Tel. {v}",
    "Call me on {v}.",
    "WhatsApp: {v}",
    "Whats app {v}",
    "Telf.: {v}",
    "Llámanos al {v}",
]


@SETTINGS
@given(
    spanish_numbers,
    groupings.filter(lambda g: len(g) > 1),
    st.sampled_from(ANY_PUNCTUATION),
    st.sampled_from(CUED),
)
def test_after_a_cue_any_punctuation_splits_a_number(digits, grouping, separator, template):
    value = _grouped(digits, grouping, separator)
    _replaced_and_flagged(template.format(v=value), value)


@pytest.mark.parametrize(
    "text", ["the table has 612,345,678 rows", "x = 612|345|678 | 1", "ratio 612:345:678"]
)
def test_without_a_cue_odd_punctuation_is_no_phone(text):
    """Counts, tables and ratios: "612,345,678" is a phone only when something says so."""
    assert ANONYMIZER.anonymize_text(text, "scope", Counter()) == text


@SETTINGS
@given(
    st.sampled_from(["GB", "DE", "FR", "NL", "BE", "CH", "AT", "IE", "IT", "US", "MX", "AR"]),
    st.integers(0, 2**32),
    st.sampled_from(PLAIN_SEPARATORS[:5]),
    st.sampled_from(["", " (0)", " (0) "]),
    st.sampled_from(["", " x123", "x4567", " ext. 12", " ext 7"]),
)
def test_international_numbers_with_trunks_and_extensions(
    region, seed, separator, trunk, extension
):
    rng = random.Random(seed)
    example = phonenumbers.example_number_for_type(region, phonenumbers.PhoneNumberType.MOBILE)
    national = str(example.national_number)
    for _ in range(100):
        number = phonenumbers.parse(
            national[:3] + "".join(rng.choice(string.digits) for _ in national[3:]), region
        )
        if phonenumbers.is_valid_number(number):
            break
    else:
        number = example
    code, rest = phonenumbers.format_number(
        number, phonenumbers.PhoneNumberFormat.INTERNATIONAL
    ).split(" ", 1)
    has_trunk = phonenumbers.national_significant_number(number) != phonenumbers.format_number(
        number, phonenumbers.PhoneNumberFormat.NATIONAL
    ).replace(" ", "").replace("-", "").lstrip("(").replace(")", "")
    value = f"{code}{trunk if has_trunk else ''}{' ' if not trunk.endswith(' ') else ''}{rest.replace(' ', separator).replace('-', separator)}{extension}"
    _replaced_and_flagged(f"Call me on {value} tomorrow.", value)


# --- addresses ------------------------------------------------------------------------------------
def _usps_suffixes() -> list[str]:
    names = importlib.import_module("faker.providers.address.en_US").Provider.street_suffixes
    return sorted(
        set(names) | {abbreviation.capitalize() for abbreviation in USPS_STANDARD.values()}
    )


def _spanish_types() -> list[str]:
    types = set()
    for locale in ("es_ES", "es_MX", "es_CO", "es_AR", "es_CL"):
        prefixes = importlib.import_module(
            f"faker.providers.address.{locale}"
        ).Provider.street_prefixes
        types.update(prefixes if not isinstance(prefixes, dict) else prefixes.keys())
    return sorted(types)


US_CITIES = [
    ("Mountain View", "CA", "94043"),
    ("Austin", "TX", "78701"),
    ("Portland", "OR", "97205-1234"),
]
NAMES = ["Willow", "Maple", "Regina", "Figueroa", "Baker", "Johnson", "Cedar", "Lincoln"]


@pytest.mark.parametrize(
    "layout",
    [
        "{street}, {city}, {state} {zip}",
        "{street}\n{city}, {state} {zip}",
        "{street} Apt. 12, {city}, {state} {zip}",
    ],
)
def test_every_usps_suffix_makes_an_address(layout):
    rng = random.Random(layout)
    for suffix in _usps_suffixes():
        city, state, zip_code = rng.choice(US_CITIES)
        street = f"{rng.randint(1, 99999)} {rng.choice(NAMES)} {suffix}"
        value = layout.format(street=street, city=city, state=state, zip=zip_code)
        _replaced_and_flagged(f"Ship it to {value}, please.", value)


def test_every_usps_suffix_makes_a_street_after_an_address_cue():
    rng = random.Random(7)
    for suffix in _usps_suffixes():
        value = f"{rng.randint(1, 9999)} {rng.choice(NAMES)} {suffix}"
        after = ANONYMIZER.anonymize_text(f"My address is {value}.", "scope", Counter())
        assert not _leaked(value, f"My address is {value}.", after), after


@pytest.mark.parametrize(
    "layout",
    ["{type} {name} {number}, {postcode} {city}", "{type} de {name} {number}\n{city}, {postcode}"],
)
def test_every_spanish_type_of_street_makes_an_address(layout):
    rng = random.Random(layout)
    for street_type in _spanish_types():
        name = rng.choice(["Juan Pérez", "Alcalá", "la Constitución", "Eufemia Bastida", "Mayor"])
        value = layout.format(
            type=street_type,
            name=name,
            number=rng.randint(1, 999),
            postcode=f"{rng.randint(1, 52):02d}{rng.randint(0, 999):03d}",
            city=rng.choice(["Madrid", "Sevilla", "Vitoria-Gasteiz"]),
        )
        _replaced_and_flagged(f"Mi dirección es {value}, gracias.", value)


@pytest.mark.parametrize(
    "value",
    [
        "Calle 187 Bis R # 4-32 Este",  # Colombia
        "Cr. 7 # 45-10, 110111 Bogotá",
        "Av. 6 N° 481 Dto. 7\nParaná 3100, Entre Ríos",  # Argentina
        "Privada Cepeda 628 Interior 194\nNueva Grecia, YUC 04974",  # Mexico
        "Flat 23\nConnor Vista\nTurnermouth\nLS41 1PL",  # Britain, flat first
        "797/43 Dakota Rise\nLake Connor, NSW, 2093",  # Australia
        "2384 Zachary Extensions\nNew Gregory, NB T7J 9L1",  # Canada
    ],
)
def test_addresses_as_each_country_writes_them(value):
    after = ANONYMIZER.anonymize_text(f"Envíalo a {value}, por favor.", "scope", Counter())
    assert not _leaked(value, f"Envíalo a {value}, por favor.", after), after


# --- found by a reviewer's probe with shapes the bench never planted ------------------------------
ODD_PUNCTUATION = sorted(set(string.punctuation) - set("()+,':") | set("·•|"))
"""Every punctuation mark but thousands separators (",", "'") and colons (MAC addresses, times)."""
SPELLED_COUNTRY_CODES = ["+34 ", "+34", "0034 ", "(+34) ", "(+34)", "0034"]


@SETTINGS
@given(
    spanish_numbers,
    groupings.filter(lambda g: len(g) > 1),
    st.sampled_from(ODD_PUNCTUATION),
    st.sampled_from(SPELLED_COUNTRY_CODES),
    st.sampled_from(UNCUED),
)
def test_with_its_country_code_any_punctuation_splits_a_number_without_a_cue(
    digits, grouping, separator, country, template
):
    """ "+34|612|345|678" is a phone however it is split: no count or table opens with a country
    code."""
    value = country + _grouped(digits, grouping, separator)
    _replaced_and_flagged(template.format(v=value), value)


@SETTINGS
@given(spanish_numbers, groupings.filter(lambda g: len(g) > 1), st.sampled_from(UNCUED))
def test_middle_dots_split_a_number_without_a_cue(digits, grouping, template):
    value = _grouped(digits, grouping, "·")
    _replaced_and_flagged(template.format(v=value), value)


def _dni(number: int) -> str:
    return f"{number:08d}" + "TRWAGMYFPDXBNJZSQVHLCKE"[number % 23]


@pytest.mark.parametrize("separator", [" ", "-", "_", "."])
@pytest.mark.parametrize("before_letter", ["", " ", "-"])
@pytest.mark.parametrize(
    "template", ["Mi DNI es {v}, gracias.", "Customer record: {v} (verified).", "{v}"]
)
def test_a_dni_printed_in_groups_with_any_separator(separator, before_letter, template):
    for number in (12345678, 48213977, 70112233):
        digits, letter = _dni(number)[:8], _dni(number)[8]
        value = separator.join((digits[:2], digits[2:5], digits[5:])) + before_letter + letter
        if separator == "." and before_letter == " ":
            continue  # "12.345.678 Z" reads as well as a sentence's end and a capital
        _replaced_and_flagged(template.format(v=value), value)


@pytest.mark.parametrize(
    "iban", ["ES9121000418450200051332", "DE89370400440532013000", "GB29NWBK60161331926819"]
)
@pytest.mark.parametrize("layout", ["{cc} {rest}", "{cc}{rest_underscored}", "{cc}{rest_spaced}"])
def test_an_iban_split_by_underscores_or_with_a_blank_after_its_country(iban, layout):
    groups = [iban[2:4]] + [iban[i : i + 4] for i in range(4, len(iban), 4)]
    value = layout.format(
        cc=iban[:2],
        rest=" ".join(groups),
        rest_underscored="_".join(groups),
        rest_spaced=groups[0] + " " + " ".join(groups[1:]),
    )
    _replaced_and_flagged(f"Transfiere a {value} antes del lunes.", value)


@pytest.mark.parametrize(
    "street", ["77 W 45th St", "350 5th Ave", "1200 E 3rd Street", "9 N 101st Pl"]
)
@pytest.mark.parametrize(
    "layout", ["{street}", "{street}, Austin, TX 78701", "{street}, 2nd Floor, Austin, TX\n78701"]
)
def test_numbered_us_streets_and_a_zip_on_the_next_line(street, layout):
    """Ordinal street names ("W 45th St"), a floor named by its ordinal and a ZIP wrapped onto the
    next line ("Boston, MA\\n02110-1301", as license notices print it)."""
    value = layout.format(street=street)
    _replaced_and_flagged(f"Ship it to {value}, please.", value)


# --- card numbers and SSNs split by any separator, checked by their checksum or numbering rules
CARDS = [
    "4111111111111111",
    "5500000000000004",
    "6011111111111117",
    "4539578763621486",
    "3566002020360505",
]
"""Luhn-valid numbers of Visa, Mastercard, Discover and JCB, printed 4-4-4-4."""
SPACED_SEPARATORS = [" ", "-", ".", "/", "_", " - ", " / ", " _ ", "\u2013", " \u2013 "]
"""Between digit groups as people type them: alone, or with a blank on either side ("4111 -
1111")."""
EN_AND_ES = [
    "Mi tarjeta es {v} y caduca en mayo.",
    "Card on file: {v} (verified).",
    "Pagó con la {v}.",
    "{v}",
]


@pytest.mark.parametrize("separator", SPACED_SEPARATORS)
@pytest.mark.parametrize("template", EN_AND_ES)
def test_a_card_split_by_any_separator(separator, template):
    for card in CARDS:
        value = separator.join(card[i : i + 4] for i in range(0, 16, 4))
        _replaced_and_flagged(template.format(v=value), value)


SSNS = ["536-90-4399", "078-12-3456", "372-45-8912", "284-61-9037"]
SSN_SEPARATORS = ["-", " ", ".", "_", "/", "\u00b7", " - ", " . ", " / ", "\u2013"]


@pytest.mark.parametrize("separator", SSN_SEPARATORS)
@pytest.mark.parametrize(
    "template",
    [
        "Mi SSN es {v}, gracias.",
        "Customer record: {v} (verified).",
        "Su número {v} figura en el W-2.",
        "{v}",
    ],
)
def test_a_us_ssn_split_by_any_separator(separator, template):
    for ssn_value in SSNS:
        value = ssn_value.replace("-", separator)
        _replaced_and_flagged(template.format(v=value), value)


# --- Spanish addresses: every common type of street with every way of numbering and a floor after
# it --
SPANISH_TYPES = [
    "Calle",
    "C/",
    "Ctra.",
    "Carretera",
    "Urb.",
    "Urbanización",
    "Camí",
    "Camino",
    "Pza.",
    "Plaza",
    "Avda.",
    "Avenida",
    "Pº",
    "Paseo",
    "Ronda",
    "Travesía",
    "Trav.",
    "Glorieta",
    "Rambla",
    "Vía",
    "Cuesta",
    "Callejón",
    "Bulevar",
    "Polígono",
    "Carrer",
    "Passeig",
]
SPANISH_NUMBERS = [
    "12",
    "nº 12",
    "km 7",
    "Km. 7,5",
    "s/n",
    "57 - 3º Izq",
    "nº 12, 2º B",
    "parcela 14",
    "12, 5ª planta",
    "12, bajo",
    "45, 3º-2ª",
    "8 - 1º dcha.",
    "nave 3",
]
"""A number, a road's kilometre point, a plot ("parcela") or a unit ("nave"), then the floor and
door after a comma or a dash ("57 - 3º Izq")."""


@pytest.mark.parametrize("number", SPANISH_NUMBERS)
@pytest.mark.parametrize(
    "template",
    ["Envíalo a {v}, por favor.", "El cliente vive en {v} desde enero.", "Dirección: {v}"],
)
def test_every_spanish_type_of_street_with_any_number_and_floor(number, template):
    rng = random.Random(number + template)
    for street_type in SPANISH_TYPES:
        name = rng.choice(
            ["de Valencia", "Los Pinos", "de la Font", "Mayor", "del Pilar", "Velázquez"]
        )
        value = (
            f"{street_type} {name}, {number}"
            if rng.random() < 0.5
            else f"{street_type} {name} {number}"
        )
        _replaced_and_flagged(template.format(v=value), value)


@pytest.mark.parametrize("make", ["URLSafeSerializer", "URLSafeTimedSerializer"])
@pytest.mark.parametrize(
    "payload",
    [{"id": 5, "name": "itsdangerous"}, {"user_id": 42}, {"_fresh": True, "csrf_token": "x"}],
)
@pytest.mark.parametrize(
    "template", ["token = '{v}'", "# {v}\ndata = auth_s.loads(token)", "La cookie vale {v}."]
)
def test_a_signed_payload_is_a_secret(make, payload, template):
    """itsdangerous and Flask sessions sign a base64url JSON object ("eyJ..."): whoever holds it is
    let in, example or not, so it is replaced as a secret (and the row publishes) rather than
    quarantined."""
    value = getattr(importlib.import_module("itsdangerous"), make)("some-key").dumps(payload)
    text = template.format(v=value)
    after = ANONYMIZER.anonymize_text(text, "scope", Counter())
    assert value not in after and "[SECRET_" in after, after
    assert residual_pii_reasons(text) and not residual_pii_reasons(after)
