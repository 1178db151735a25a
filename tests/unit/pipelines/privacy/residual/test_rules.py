"""The independent last line of defence: broad shapes flagged by rule name, pseudonyms never."""

import doctest
import importlib
import inspect
import pkgutil

import pytest

from pipelines.privacy import residual
from pipelines.privacy.residual import residual_pii_reasons


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("llámame al 612 345 678", "long_digit_run"),
        ("+33 6 12 34 56 78", "long_digit_run"),
        ("Call me on +54 9-11-1942-5126 tomorrow.", "long_digit_run"),  # not a date in 1942
        ("06.12.34.56.78", "long_digit_run"),
        ("card 4111111111111111", "long_digit_run"),
        ("ref 612345678", "long_digit_run"),
        ("call (555) 123-4567 or (+34) 612 345 678", "long_digit_run"),
        ("cliente 987654321012 desde el 29/11/2026", "long_digit_run"),
        ("juan@gmail.com", "at_sign_like"),
        ("juan＠gmail．com", "at_sign_like"),
        ("juan (at) gmail (dot) com", "at_sign_like"),
        ("juan arroba gmail punto com", "at_sign_like"),
        ("juan at hotmail.com", "at_sign_like"),
        ("juan%40gmail.com", "at_sign_like"),
        ("key sk-proj-0123456789abcdef", "key_like_prefix"),
        ("AKIAIOSFODNN7EXAMPLE", "key_like_prefix"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", "key_like_prefix"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "pem_marker"),
        ("DB_PASSWORD=Sunshine2007*", "credential_assignment"),
        ('"api_key": "abc123def456"', "credential_assignment"),
        ("my password is hunter2", "password_sentence"),
        ("con la contraseña Qwerty2000# no entro", "password_next"),
        ("Authorization: Basic dXNlcjpwYXNz", "auth_header"),
        ("Bearer abcdefghijklmnop1234567890", "auth_header"),
        ("Cookie: sessionid=abc; csrftoken=def", "cookie_like"),
        ("PHPSESSID=f71rua96ozy6fwdyqdg1", "cookie_like"),
        ("postgresql://admin:S3cr3t@db:5432/app", "url_credentials"),
        ("https://x.io/export?access_token=abc123def456", "url_secret_param"),
        ("from 83.45.112.9", "ip_address_like"),
        ("from 2a02:9130::8a2e:370:7334", "ip_address_like"),
        ("DNI 12.345.678-Z", "national_id_like"),
        ("NIE X-1234567-L", "national_id_like"),
        ("SSN 536-90-4399", "national_id_like"),
        ("ES91 2100 0418 4502 0005 1332", "iban_like"),
        ("gb82west12345698765432".upper(), "iban_like"),
        ("Vivo en Calle Mayor 12, Madrid", "address_like"),
        ("Nos vemos en la ronda de Atocha 12, 3º", "address_like"),
        ("vivo en calle los olivos 5", "address_like"),
        ("at 221 Baker Street", "address_like"),
        ("vivo en C. Mayor 5", "address_like"),  # "C." after a Spanish word is still a street
        (
            "Ship it to C. Basilio Roca 4 Piso 9",
            "address_like",
        ),  # the PII probe's form: not the C language
        ("I live in C. Mayor 5", "address_like"),
        ("My flat: C. Mayor 5, Madrid", "address_like"),
        (
            "written in C. 45 # 12-30 is the office",
            "address_like",
        ),  # a numbered street after "in C." too
        ('{"phone": "612345678"}', "long_digit_run"),  # a JSON key that names no quantity
        ("contraseña %abc-123", "password_next"),  # not a directive: it holds digits
        ("Hola, me llamo Xiomara", "name_after_cue"),
        ("Saludos,\nMarta Vilaró", "name_after_cue"),
        (
            '{"message": "Bearer wrJBzs2R8IoEcc6tSngySw\\nAccept"}',
            "auth_header",
        ),  # JSON-escaped newline
        ("jua\u200bn@gmail.com", "at_sign_like"),
    ],
)
def test_each_rule_flags_its_shape(text, rule):
    assert rule in residual_pii_reasons(text)


@pytest.mark.parametrize(
    "text",
    [
        "Llámame al [PHONE_1a2b3c4d] o escribe a [EMAIL_0f9e8d7c]",
        'password=[SECRET_00000000] {"password": "[SECRET_0a1b2c3d]"} Authorization: Basic [SECRET_12345678]',
        "Bearer [SECRET_0a1b2c3d] Cookie: [SECRET_deadbeef] https://hooks.slack.com/services/[SECRET_0a1b2c3d]",
        "postgresql://[URL_SECRET_99887766]@db:5432/app?token=[URL_SECRET_11223344]",
        "Hola, me llamo [PERSON_0a1b2c3d]. Saludos,\n[PERSON_0a1b2c3d]",
        "IBAN [IBAN_INVALID_0a1b2c3d], tarjeta [CREDIT_CARD_0a1b2c3d], IP [IP_ADDRESS_0a1b2c3d]",
    ],
)
def test_pseudonyms_never_trip_a_rule(text):
    assert residual_pii_reasons(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "El pedido 48213 del 2026-11-29 falla desde el 29/11/2026 a las 14:30:00",
        "order #1234567 and ORD-2026-000123 shipped on 2026-11-29T14:30:00Z",
        "request_id 550e8400-e29b-41d4-a716-446655440000, commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/124.0.6367.91 Safari/537.36",
        "Uso Python 3.11.7 con pandas 2.2.3; pi = 3.141592653589793; epoch 1732875600, 1732875600123",
        "the password: required field, token: NAME; max_tokens=1024",
        "Basic authentication is simple; the Bearer scheme is in RFC 6750",
        "@property\ndef x(self): return a @ b",
        "5 5 5 101 6 6 6 110 7 7 7 111 8 8 10 1000 9 9 11 1001 10 A 12 1010",
        "-1 -1 -1 -1 -1 -1 -1 0 10 10 10 12",  # the "-" must not cut the row's tail off as a number
        "sess-af674dc3266e6b5f and 2147483647",
        "my password is incorrect; mi contraseña es demasiado corta",
        "Saludos,\nEl equipo de datos",
        # a ticket number, then a date
        "Support ticket #66212 (02/08/2026) and ticket #54195 (2026-07-30)",
        "'{:+010d}'.format(120) gives '+000000120'; str.zfill: '01  012 0123'",
        "'1234567890'.isdigit() (see note 16) 3232235521 is an address as an integer",
        "El coste mensual del planificador ronda los 5470 euros; la cola ronda las 300 peticiones",
    ],
)
def test_technical_prose_passes(text):
    assert residual_pii_reasons(text) == []


def test_reasons_name_the_rule_never_the_value():
    reasons = residual_pii_reasons("juan@gmail.com 612 345 678 password=Sunshine2007*")
    assert reasons == ["long_digit_run", "at_sign_like", "credential_assignment"]
    assert not any(value in " ".join(reasons) for value in ("juan", "612", "Sunshine"))


def _residual_modules():
    yield residual
    for info in pkgutil.iter_modules(residual.__path__, f"{residual.__name__}."):
        yield importlib.import_module(info.name)


def test_it_shares_no_code_with_the_detectors():
    # Its own modules and python-stdnum's checksums only: a detector's shape missed a value, so the
    # same shape would miss it again. The words that cue a phone are a list, not a shape, and the
    # rules read each as the start of a word.
    own = ("from pipelines.privacy.residual", "from pipelines.privacy.phone_cues import")
    for module in _residual_modules():
        source = inspect.getsource(module)
        imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
        outside = [line for line in imports if "pipelines" in line and not line.startswith(own)]
        assert outside == [], module.__name__


def test_the_docstring_examples_hold():
    modules = list(_residual_modules())
    assert len(modules) > 1
    for module in modules:
        assert doctest.testmod(module).failed == 0, module.__name__
