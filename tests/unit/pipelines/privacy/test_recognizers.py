"""Each detector on valid values, on wrong checksums and on the numbers that only look like PII."""

import doctest

import pytest

from pipelines.privacy.names import TECHNICAL_WORDS, _gazetteer, fold
from pipelines.privacy.recognizers import find_pii
from ragwatch_harness.demo.corpus import load_demo_chunks


def detected(text: str) -> list[tuple[str, str]]:
    return [(span.type, span.value) for span in find_pii(text)]


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        ("Escríbeme a lucía.pérez@correo.es cuando puedas", "EMAIL", "lucía.pérez@correo.es"),
        ("mail: J.Smith+rag@Example.co.uk.", "EMAIL", "J.Smith+rag@Example.co.uk"),
        (
            "typo: juan..perez@gmail.com",
            "EMAIL",
            "juan..perez@gmail.com",
        ),  # mistyped, still someone's
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
        (
            "IBAN ES91 2100 0418 4502 0005 1332 para el reembolso",
            "IBAN",
            "ES91 2100 0418 4502 0005 1332",
        ),
        ("IBAN ES9121000418450200051332.", "IBAN", "ES9121000418450200051332"),
        ("UK account GB82 WEST 1234 5698 7654 32", "IBAN", "GB82 WEST 1234 5698 7654 32"),
        ("tarjeta 4111 1111 1111 1111 caduca 12/27", "CREDIT_CARD", "4111 1111 1111 1111"),
        ("card 5555-5555-5555-4444", "CREDIT_CARD", "5555-5555-5555-4444"),
        ("amex 3782 822463 10005", "CREDIT_CARD", "3782 822463 10005"),
        ("desde 83.45.112.9 me bloquean", "IP_ADDRESS", "83.45.112.9"),
        ("client 2a02:9130::8a2e:370:7334 connected", "IP_ADDRESS", "2a02:9130::8a2e:370:7334"),
        (
            "full 2a02:9130:85a3:0000:0000:8a2e:0370:7334",
            "IP_ADDRESS",
            "2a02:9130:85a3:0000:0000:8a2e:0370:7334",
        ),
        (
            "key sk-proj-abcdefghijklmnopqrstuvwxyz123456 leaked",
            "SECRET",
            "sk-proj-abcdefghijklmnopqrstuvwxyz123456",
        ),
        ("AWS AKIAIOSFODNN7EXAMPLE here", "SECRET", "AKIAIOSFODNN7EXAMPLE"),
        (
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "SECRET",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ),
        ("slack xoxb-1234567890-abcdefghij", "SECRET", "xoxb-1234567890-abcdefghij"),
        (
            "maps AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "SECRET",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        ),
        (
            "Authorization: Bearer abcdefghijklmnop1234567890",
            "SECRET",
            "abcdefghijklmnop1234567890",
        ),
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
        # e-mails written to dodge filters
        ("juan at gmail dot com", "EMAIL", "juan at gmail dot com"),
        (
            "escribe a juan.perez arroba empresa punto es",
            "EMAIL",
            "juan.perez arroba empresa punto es",
        ),
        ("mail me: juan (at) acme (dot) co (dot) uk.", "EMAIL", "juan (at) acme (dot) co (dot) uk"),
        ("juan[at]empresa[dot]es", "EMAIL", "juan[at]empresa[dot]es"),
        ("juan＠gmail．com", "EMAIL", "juan＠gmail．com"),
        ("juan @ gmail.com", "EMAIL", "juan @ gmail.com"),
        ("juan at hotmail.com", "EMAIL", "juan at hotmail.com"),
        ("?u=juan%40gmail.com", "EMAIL", "juan%40gmail.com"),
        ("juan&#64;gmail.com", "EMAIL", "juan&#64;gmail.com"),
        ("juan\\u0040gmail.com", "EMAIL", "juan\\u0040gmail.com"),  # JSON-escaped "@"
        ("jua\u200bn@gmail.com", "EMAIL", "jua\u200bn@gmail.com"),
        # phones: any separator, any country
        ("móvil 612\u2013345\u2013678", "PHONE", "612\u2013345\u2013678"),
        ("móvil 612\u2011345\u2011678", "PHONE", "612\u2011345\u2011678"),
        ("móvil 612\u00a0345\u00a0678", "PHONE", "612\u00a0345\u00a0678"),
        ("móvil 612.345.678", "PHONE", "612.345.678"),
        ("móvil 612/345/678", "PHONE", "612/345/678"),
        ("call (415) 555-2671", "PHONE", "(415) 555-2671"),
        ("ring 020 7946 0958 tomorrow", "PHONE", "020 7946 0958"),
        ("appelle-moi au 06 12 34 56 78", "PHONE", "06 12 34 56 78"),
        ("Tel. 0054 9 11 2862-7487", "PHONE", "0054 9 11 2862-7487"),
        ("+33.6.12.34.56.78", "PHONE", "+33.6.12.34.56.78"),
        ("WhatsApp +52 55 1234 5678", "PHONE", "+52 55 1234 5678"),
        (
            "llámame al 55 1234 5678",
            "PHONE",
            "55 1234 5678",
        ),  # a Mexican national number, after a cue
        # identifiers in any case, grouping and separator
        ("iban es91 2100 0418 4502 0005 1332.", "IBAN", "es91 2100 0418 4502 0005 1332"),
        ("IBAN ES91-2100-0418-4502-0005-1332", "IBAN", "ES91-2100-0418-4502-0005-1332"),
        ("IBAN ES9121 0004184502 00051332", "IBAN", "ES9121 0004184502 00051332"),
        ("IBAN DE89 3704 0044 0532 0130 00 gracias", "IBAN", "DE89 3704 0044 0532 0130 00"),
        ("card 4111.1111.1111.1111", "CREDIT_CARD", "4111.1111.1111.1111"),
        (
            "card 4111\u20131111\u20131111\u20131111",
            "CREDIT_CARD",
            "4111\u20131111\u20131111\u20131111",
        ),
        ("NSS 28/12345678/40", "NSS", "28/12345678/40"),
        ("mi número de la seguridad social es 281234567840", "NSS", "281234567840"),
        ("CIF B-1234567-4 de la empresa", "CIF", "B-1234567-4"),
        ("SSN 536-90-4399", "SSN", "536-90-4399"),
        ("my SSN is 536904399", "SSN", "536904399"),
        ("DNI 12345678z", "DNI", "12345678z"),
        ("client ::ffff:10.0.0.1 connected", "IP_ADDRESS", "::ffff:10.0.0.1"),
        ("server [2a02:9130::1]:443", "IP_ADDRESS", "2a02:9130::1"),
        # secrets
        ("password=sunshine", "SECRET", "sunshine"),
        ("my password is hunter2", "SECRET", "hunter2"),
        ("mi contraseña es Verano2024!", "SECRET", "Verano2024!"),
        ("con la contraseña Qwerty2000# no entro", "SECRET", "Qwerty2000#"),
        ("pass: Tr0ub4dor&3", "SECRET", "Tr0ub4dor&3"),
        (
            '{"user": "admin", "password": "correct horse battery"}',
            "SECRET",
            "correct horse battery",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "SECRET", "dXNlcjpwYXNzd29yZA=="),
        (
            "Cookie: sessionid=abc123def456; csrftoken=xyz789",
            "SECRET",
            "sessionid=abc123def456; csrftoken=xyz789",
        ),
        ("PHPSESSID=f71rua96ozy6fwdyqdg1h1hgqv", "SECRET", "f71rua96ozy6fwdyqdg1h1hgqv"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "SECRET",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        ("token glpat-abcdefghij0123456789", "SECRET", "glpat-abcdefghij0123456789"),
        (
            "token hf_abcdefghijklmnopqrstuvwxyz012345",
            "SECRET",
            "hf_abcdefghijklmnopqrstuvwxyz012345",
        ),
        (
            "npm npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "SECRET",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        ),
        ("stripe sk_live_abcdefghijklmnop1234", "SECRET", "sk_live_abcdefghijklmnop1234"),
        (
            "anthropic sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "SECRET",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        ),
        (
            "sendgrid SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
            "SECRET",
            "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        ),
        (
            "twilio SK0123456789abcdef0123456789abcdef",
            "SECRET",
            "SK0123456789abcdef0123456789abcdef",
        ),
        (
            "azure abc8Q~abcdefghijklmnopqrstuvwxyz0123456_",
            "SECRET",
            "abc8Q~abcdefghijklmnopqrstuvwxyz0123456_",
        ),
        (
            "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdefghijklmnopqrstuvwx",
            "SECRET",
            "T0123ABCD/B0123ABCD/abcdefghijklmnopqrstuvwx",
        ),
        (
            "https://app.io/cb#access_token=abc123def456ghi789&state=x",
            "URL_SECRET",
            "abc123def456ghi789",
        ),
        ("https://s3.io/f?X-Amz-Signature=0a1b2c3d4e5f", "URL_SECRET", "0a1b2c3d4e5f"),
        (
            "https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/org/repo",
            "SECRET",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ),
        # addresses
        (
            "Vivo en Calle Mayor 12, 28013 Madrid y trabajo",
            "ADDRESS",
            "Calle Mayor 12, 28013 Madrid",
        ),
        (
            "envíalo a C/ de Alcalá, 45, 3º B, 28014 Madrid.",
            "ADDRESS",
            "C/ de Alcalá, 45, 3º B, 28014 Madrid",
        ),
        (
            "Carrer de Mallorca 401, 08013 Barcelona",
            "ADDRESS",
            "Carrer de Mallorca 401, 08013 Barcelona",
        ),
        (
            "ship to 350 Fifth Avenue, New York, NY 10118 please",
            "ADDRESS",
            "350 Fifth Avenue, New York, NY 10118",
        ),
        ("221B Baker Street, London NW1 6XE", "ADDRESS", "221B Baker Street, London NW1 6XE"),
        # names: lower case, outside the gazetteer after a cue, compound and Catalan surnames
        ("me llamo xiomara quintero, hola", "PERSON", "xiomara quintero"),
        ("hola, soy juan garcía", "PERSON", "juan garcía"),
        ("Hola, soy Xiomara Quintana", "PERSON", "Xiomara Quintana"),
        ("my name is Łukasz Kochel", "PERSON", "Łukasz Kochel"),
        ("la reserva está a nombre de Geneviève Lecomte", "PERSON", "Geneviève Lecomte"),
        ("the booking for Kirstin Schleich", "PERSON", "Kirstin Schleich"),
        ("Saludos,\nMarta Vilaró i Puig", "PERSON", "Marta Vilaró i Puig"),
        ("soy Federico García-Lorca", "PERSON", "Federico García-Lorca"),
        ("Hello, Sr. da Cunha.", "PERSON", "da Cunha"),
        ("me llamo Abril Morata i Ballesteros", "PERSON", "Abril Morata i Ballesteros"),
        (
            '{"q": "soy Jos\\u00e9 P\\u00e9rez"}',
            "PERSON",
            "Jos\\u00e9 P\\u00e9rez",
        ),  # JSON-escaped accents
    ],
)
def test_detects_the_forms_real_traffic_holds(text, entity, value):
    assert detected(text) == [(entity, value)]


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        (
            "Mi DNI es 12345678A",
            "DNI_INVALID",
            "12345678A",
        ),  # wrong check letter: a typo is still someone's
        ("NIE X1234567A", "NIE_INVALID", "X1234567A"),
        (
            "IBAN ES9121000418450200051333",
            "IBAN_INVALID",
            "ES9121000418450200051333",
        ),  # wrong mod-97 check
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
    # One digit short of a Spanish mobile, but a valid national number elsewhere: after "llámame" it
    # is a phone.
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
        # a table row, not a phone
        "5 5 5 101 6 6 6 110 7 7 7 111 8 8 10 1000 9 9 11 1001 10 A 12 1010",
        # a date a few words after a phone cue ("number") is still a date
        "an imaginary number)… Since 23/12/2026 at 13:11 order #6084102 fails",
        "adding a real number and an imaginary number. Since 2026-01-31 at 12:34",
    ],
)
def test_hard_negatives(text):
    assert detected(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Python 3.11.7, pandas 2.2.3 and numpy 1.26.4 on Ubuntu 22.04; Chrome/124.0.6367.91",
        "timestamps 1732875600 and 1732875600123 in the logs; epoch 0",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "def login(password: str, token: str | None = None) -> None:",
        "api_key = os.environ['API_KEY'] and token = get_token()",
        "password = getpass.getpass(); secret_key = settings.secret_key",
        "Set max_tokens=1024, temperature=0.7 and top_k=40",
        "The session expired, see session.py line 42",
        "Use the Bearer scheme described in RFC 6750; Basic authentication is also supported",
        "Mark the task as done. Will it work in May?",
        "Error code 404, retry after 3600 seconds on port 5432/tcp",
        "El pedido #48213 se envió el 29/11/2026 a las 14:30, versión 2024.11.29.1",
        "AKIA is the prefix of AWS access key ids; keys start with sk- at OpenAI",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
        "see the docs at docs.python.org or ask at the forum",
        "a @ b is matrix multiplication; @property decorates a getter",
        "GET /v1/users/12345678/orders?page=2&sort=desc&format=json",
        "for Python and for Django we use the for loop",
        "I'm Spanish and I'm sure it works; soy nuevo en Python",
        "Thanks, the fix works. Regards, the data team",
        "En la calle hay obras desde 2024 y la plaza está cerrada",
        "Chapter 3 Data Model covers it, see Section 12 Compound Statements",
        "Hola, ¿qué tal? Gracias por la ayuda",
        "cost 1,234,567 units or 1.234.567 € in 2026-11-29T14:30:00Z",
    ],
)
def test_technical_prose_is_not_shredded(text):
    assert detected(text) == []


def test_names_are_accent_and_case_insensitive():
    (a,), (b,) = find_pii("soy José Pérez"), find_pii("soy Jose Perez")
    assert a.canonical == b.canonical == "jose perez"


def test_normalization_gives_one_canonical_value_per_identity():
    phones = {
        s.canonical for s in find_pii("612 345 678, +34 612 34 56 78, 0034612345678, 612-345-678")
    }
    emails = {s.canonical for s in find_pii("Juan.Perez@Gmail.com y juan.perez@gmail.com")}
    ibans = {
        s.canonical for s in find_pii("ES91 2100 0418 4502 0005 1332 / ES9121000418450200051332")
    }
    assert (
        phones == {"+34612345678"}
        and emails == {"juan.perez@gmail.com"}
        and ibans == {"ES9121000418450200051332"}
    )


def test_overlaps_go_to_the_higher_priority_type():
    spans = find_pii("postgresql://juan:Pw1234x@db.example.com/app")
    assert [(s.type, s.value) for s in spans] == [("URL_SECRET", "juan:Pw1234x")]


def test_numbers_glued_to_a_phone_do_not_hide_it():
    assert ("PHONE", "612 345 678") in detected("pedido 48213 612 345 678 2 veces")
    assert [t for t, _ in detected("4111 1111 1111 1111 612 345 678")] == ["CREDIT_CARD", "PHONE"]


def test_pseudonym_tokens_are_never_detected():
    text = "[EMAIL_0a1b2c3d] [PHONE_12345678] [PERSON_abcdef01] token=[URL_SECRET_99887766] Bearer [SECRET_00000000]"
    assert find_pii(text) == []


def test_technical_words_are_not_names_anywhere():
    known = _gazetteer().known
    assert not TECHNICAL_WORDS & known
    assert {
        fold(w) for w in ("Rosa", "May", "Mark", "García", "Smith")
    } <= known  # words too, hence the cues


def test_the_demo_corpus_has_no_false_positives():
    """Python's reference manual is full of numbers, code and capitalised words, and holds no
    PII."""
    hits = [(c.chunk_id, s.type, s.value) for c in load_demo_chunks() for s in find_pii(c.text)]
    assert hits == []


def test_the_nss_module_checks_like_python_stdnum():
    from pipelines.privacy import es_nss

    assert doctest.testmod(es_nss, optionflags=doctest.ELLIPSIS).failed == 0
    assert es_nss.calc_check_digits("1212345678") == "05" and es_nss.is_valid("12 12345678 05")
    assert not es_nss.is_valid("99/12345678/05")  # no such province


def test_scanning_many_strings_at_once_finds_what_scanning_each_finds():
    from pipelines.privacy.recognizers import find_pii_many
    from ragwatch_harness.bench.anonymize import trace_texts
    from ragwatch_harness.bench.pii import generate_pii_cases

    for case in generate_pii_cases(150, seed=3):
        texts = trace_texts(case.trace)
        assert find_pii_many(texts) == [find_pii(text) for text in texts]


def test_a_private_key_cut_short_is_replaced_to_its_last_base64_line():
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\nZ1BdnSIHo0DeXk+x\n\nWhy won't it load?"
    (span,) = find_pii(block)
    assert (
        span.type == "SECRET"
        and span.value.endswith("Z1BdnSIHo0DeXk+x")
        and "Why" not in span.value
    )
