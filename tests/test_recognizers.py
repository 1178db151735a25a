"""Each detector on valid values, on wrong checksums and on the numbers that only look like PII."""

import re

import pytest

from pipelines.demo.corpus import load_demo_chunks
from pipelines.privacy.names import TECHNICAL_WORDS, _gazetteer, fold
from pipelines.privacy.recognizers import PSEUDONYM, RESIDUAL_PII_PATTERNS, find_pii


def detected(text: str) -> list[tuple[str, str]]:
    return [(span.type, span.value) for span in find_pii(text)]


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        ("Escríbeme a lucía.pérez@correo.es cuando puedas", "EMAIL", "lucía.pérez@correo.es"),
        ("mail: J.Smith+rag@Example.co.uk.", "EMAIL", "J.Smith+rag@Example.co.uk"),
        ("typo: juan..perez@gmail.com", "EMAIL", "juan..perez@gmail.com"),  # mistyped, still someone's
        ("Llámame al 612 345 678 por la tarde", "PHONE", "612 345 678"),
        ("fijo: 91 234 56 78", "PHONE", "91 234 56 78"),
        ("móvil +34 612 34 56 78.", "PHONE", "+34 612 34 56 78"),
        ("London office +44 20 7946 0958", "PHONE", "+44 20 7946 0958"),
        ("call +1 415 555 2671 today", "PHONE", "+1 415 555 2671"),
        ("llámame al (+34) 612-345-678", "PHONE", "(+34) 612-345-678"),
        ("Mi DNI es 12345678Z", "DNI", "12345678Z"),
        ("DNI 12345678-Z, gracias", "DNI", "12345678-Z"),
        ("DNI 12.345.678-Z", "DNI", "12.345.678-Z"),
        ("con NIE X1234567L no puedo", "NIE", "X1234567L"),
        ("NIE Y2345678Z", "NIE", "Y2345678Z"),
        ("IBAN ES91 2100 0418 4502 0005 1332 para el reembolso", "IBAN", "ES91 2100 0418 4502 0005 1332"),
        ("IBAN ES9121000418450200051332.", "IBAN", "ES9121000418450200051332"),
        ("UK account GB82 WEST 1234 5698 7654 32", "IBAN", "GB82 WEST 1234 5698 7654 32"),
        ("tarjeta 4111 1111 1111 1111 caduca 12/27", "CREDIT_CARD", "4111 1111 1111 1111"),
        ("card 5555-5555-5555-4444", "CREDIT_CARD", "5555-5555-5555-4444"),
        ("amex 3782 822463 10005", "CREDIT_CARD", "3782 822463 10005"),
        ("desde 83.45.112.9 me bloquean", "IP_ADDRESS", "83.45.112.9"),
        ("client 2001:db8::8a2e:370:7334 connected", "IP_ADDRESS", "2001:db8::8a2e:370:7334"),
        ("full 2001:0db8:85a3:0000:0000:8a2e:0370:7334", "IP_ADDRESS", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
        ("key sk-proj-abcdefghijklmnopqrstuvwxyz123456 leaked", "SECRET", "sk-proj-abcdefghijklmnopqrstuvwxyz123456"),
        ("AWS AKIAIOSFODNN7EXAMPLE here", "SECRET", "AKIAIOSFODNN7EXAMPLE"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "SECRET", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("slack xoxb-1234567890-abcdefghij", "SECRET", "xoxb-1234567890-abcdefghij"),
        ("maps AIzaSyA1234567890abcdefghijklmnopqrstuv", "SECRET", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
        ("Authorization: Bearer abcdefghijklmnop1234567890", "SECRET", "abcdefghijklmnop1234567890"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "SECRET",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("mi contraseña: Verano2024! no va", "SECRET", "Verano2024!"),
        ('DB_PASSWORD="hunter2-x"', "SECRET", "hunter2-x"),
        ("postgresql://admin:S3cr3t!pass@db.internal:5432/app", "URL_SECRET", "admin:S3cr3t!pass"),
        ("https://api.acme.io/export?format=csv&token=abc123XYZ&page=2", "URL_SECRET", "abc123XYZ"),
        ("Hola, soy José Ángel Núñez y tengo una duda", "PERSON", "José Ángel Núñez"),
        ("me llamo Xiomara.", "PERSON", "Xiomara"),
        ("Atentamente,\nMaría del Carmen Ruiz Pérez", "PERSON", "María del Carmen Ruiz Pérez"),
        ("Sr. García, su pedido está listo", "PERSON", "García"),
        ("ask Mr. Smith The team knows", "PERSON", "Smith"),
        ("My name is Mary O'Connor", "PERSON", "Mary O'Connor"),
        ("Gracias, Rosa", "PERSON", "Rosa"),
        ("ping Juan de la Torre about it", "PERSON", "Juan de la Torre"),
    ],
)
def test_detects_valid_values(text, entity, value):
    assert detected(text) == [(entity, value)]


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        ("Mi DNI es 12345678A", "DNI_INVALID", "12345678A"),  # wrong check letter: a typo is still someone's
        ("NIE X1234567A", "NIE_INVALID", "X1234567A"),
        ("IBAN ES9121000418450200051333", "IBAN_INVALID", "ES9121000418450200051333"),  # wrong mod-97 check
        ("tarjeta 4111 1111 1111 1112", "CREDIT_CARD_INVALID", "4111 1111 1111 1112"),  # fails Luhn
        ("número 1234567812345678", "CREDIT_CARD_INVALID", "1234567812345678"),
        ("+44 20 7946 095", "PHONE_INVALID", "+44 20 7946 095"),  # a country code, one digit short
        ("CIF B12345679", "CIF_INVALID", "B12345679"),
        ("NSS 28/12345678/41", "NSS_INVALID", "28/12345678/41"),
        ("SSN 666-12-3456", "SSN_INVALID", "666-12-3456"),  # no SSN has area 666
    ],
)
def test_shape_only_values_are_replaced_and_typed_invalid(text, entity, value):
    assert detected(text) == [(entity, value)]


def test_a_cue_makes_any_country_s_number_a_phone():
    # One digit short of a Spanish mobile, but a valid national number elsewhere: after "llámame" it is a phone.
    assert [t for t, _ in detected("llámame al 612 345 67")] == ["PHONE"]
    assert detected("pedido 612 345 67") == []


@pytest.mark.parametrize(
    "text",
    [
        "IP 999.1.1.1",  # no such address: a version-like string
        "epoch millis 1732875600123",  # thirteen digits failing Luhn, not grouped like a card
        "id 0012345678 en la tabla",  # zeros padding an id, not "00" dialling a country
        "ref 2147483647 and 4294967296",  # contiguous ten digits without a phone cue
        "sha a12345678b and 12345678 a",
    ],
)
def test_numbers_without_an_identifier_s_shape_stay(text):
    assert detected(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "El pedido 48213 del 2026-11-29 falla desde el 29/11/2026 a las 14:30:00",
        "order #1234567 and ORD-2026-000123 shipped on 2026-11-29T14:30:00Z",
        "request_id 550e8400-e29b-41d4-a716-446655440000",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 en main",
        "Uso Python 3.11.7 con pandas 2.2.3",
        "Qdrant escucha en localhost:6333 y Postgres en el puerto 5432",
        "cuesta 1.234,56 € al mes, o 49,99 €",
        "a[::2] y x[1::2] son slicing",
        "the password: required field, token: NAME",
        "sorted(items, key=str.lower)",
        "Rosa dijo que Will vendrá en May",
        "Hola Python, soy Django",
        "Me llamo Airflow",
        "Python Django Airflow Kubernetes",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/124.0.6367.91 Safari/537.36",
        "5 5 5 101 6 6 6 110 7 7 7 111 8 8 10 1000 9 9 11 1001 10 A 12 1010",  # a table row, not a phone
    ],
)
def test_hard_negatives(text):
    assert detected(text) == []


def test_names_are_accent_and_case_insensitive():
    (a,), (b,) = find_pii("soy José Pérez"), find_pii("soy Jose Perez")
    assert a.canonical == b.canonical == "jose perez"


def test_normalization_gives_one_canonical_value_per_identity():
    phones = {s.canonical for s in find_pii("612 345 678, +34 612 34 56 78, 0034612345678, 612-345-678")}
    emails = {s.canonical for s in find_pii("Juan.Perez@Gmail.com y juan.perez@gmail.com")}
    ibans = {s.canonical for s in find_pii("ES91 2100 0418 4502 0005 1332 / ES9121000418450200051332")}
    assert phones == {"+34612345678"} and emails == {"juan.perez@gmail.com"} and ibans == {"ES9121000418450200051332"}


def test_overlaps_go_to_the_higher_priority_type():
    spans = find_pii("postgresql://juan:Pw1234x@db.example.com/app")
    assert [(s.type, s.value) for s in spans] == [("URL_SECRET", "juan:Pw1234x")]


def test_numbers_glued_to_a_phone_do_not_hide_it():
    assert ("PHONE", "612 345 678") in detected("pedido 48213 612 345 678 2 veces")
    assert [t for t, _ in detected("4111 1111 1111 1111 612 345 678")] == ["CREDIT_CARD", "PHONE"]


def test_pseudonym_tokens_are_never_detected():
    text = "[EMAIL_0a1b2c3d] [PHONE_12345678] [PERSON_abcdef01] token=[URL_SECRET_99887766] Bearer [SECRET_00000000]"
    assert find_pii(text) == []


def test_residual_patterns_match_secrets_but_not_pseudonyms():
    compiled = {name: re.compile(pattern) for name, pattern in RESIDUAL_PII_PATTERNS.items()}
    examples = {
        "email": "ana@empresa.es",
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "bearer_token": "Authorization: Bearer abcdefghijklmnop1234567890",
        "api_key": "sk-proj-abcdefghijklmnopqrstuvwxyz123456",
        "url_credentials": "postgresql://admin:S3cr3t@db:5432/app",
    }
    assert set(examples) == set(compiled)
    for name, regex in compiled.items():
        assert regex.search(examples[name]), name
    anonymized = "[EMAIL_0a1b2c3d] Bearer [SECRET_00000000] postgresql://[URL_SECRET_99887766]@db:5432/app"
    assert not any(regex.search(anonymized) for regex in compiled.values())
    assert PSEUDONYM.fullmatch("[URL_SECRET_99887766]")
    assert all(regex.groups == 0 for regex in compiled.values())  # pandas warns on capture groups


def test_technical_words_are_not_names_anywhere():
    known = _gazetteer().known
    assert not TECHNICAL_WORDS & known
    assert {fold(w) for w in ("Rosa", "May", "Mark", "García", "Smith")} <= known  # words too, hence the cues


def test_the_demo_corpus_has_no_false_positives():
    """Python's reference manual is full of numbers, code and capitalised words, and holds no PII."""
    hits = [(c.chunk_id, s.type, s.value) for c in load_demo_chunks() for s in find_pii(c.text)]
    assert hits == []
