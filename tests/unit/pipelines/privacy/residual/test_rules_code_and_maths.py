"""Code, maths and manual text the residual rules once quarantined, each beside the PII shape that
must still trip the same rule: a condition that clears the first may not clear the second.

The clean lines are quoted from documentation installed on the project's machine (man pages, package
code, docstrings and READMEs) where the clean corpora turned them up.
"""

import pytest

from pipelines.privacy.residual import residual_pii_reasons

CASES = [
    # (rule, clean text it no longer trips, PII next to it that it still trips)
    (
        "ip_address_like",
        "0:0:0:0:0:0:0:1  can be abbreviated as ::1.",
        "from 2a02:9130:0:0:8a2e:370:7334:1",
    ),
    (
        "ip_address_like",
        "2001:0DB8:0:0:8:800:200C:417A is a documentation address",
        "fe80::1ff:fe23:4567:890a",
    ),
    (
        "long_digit_run",
        r"b'\n\023com.google.protobufB\013StructProtoP\001Z/structpb\370\001\001\242\002\003GPB'",
        "0034\\612\\345\\678",
    ),
    (
        "long_digit_run",
        "Revision ID: 686269002441\nRevises: 4ab8a2c6b2ab",
        "Cliente ID: 686269002441",
    ),
    (
        "long_digit_run",
        "'0' was: cycle through 300-1200-150-110 baud; '4' was for",
        "300-1200-150-110",
    ),
    (
        "long_digit_run",
        "'0' was: cycle through 300-1200-150-110 baud",
        "llámame al 612 345 678 bytes",
    ),
    (
        "long_digit_run",
        "# n = (-52673223862*sqrt(405639795226) - 15764156209307469 -",
        "58977084786 y",
    ),
    ("long_digit_run", "x = 58977084786*y", "tel 612345678*"),
    ("long_digit_run", "x = int(612345678)", "mi número (612345678)"),
    ("long_digit_run", "see f(612345678)", "tel(612345678)"),
    ("long_digit_run", "    (2152302898747, (2, 3, 5, 7, 11)),", "mi número (612345678)"),
    (
        "long_digit_run",
        "[1.         0.66666667 0.66666667 1.        ]",
        "[0.5 0.66666667 612 345 678]",
    ),
    ("long_digit_run", "e, pi = 2.71828183 3.14159265", "06.12.34.56.78 o 612.345.678"),
    (
        "long_digit_run",
        "[1.         0.66666667 0.66666667 1.        ]",
        "Call me on +31 6.12660487 tomorrow.",
    ),
    (
        "credential_assignment",
        "client_request_token=client_request_token,",
        "client_request_token=xK9fQ2mP7rT4",
    ),
    (
        "credential_assignment",
        'region = re.sub(r".*Credential=[^/]+/[^/]+/([^/]+)/.*", r"\\1", auth)',
        "Credential=AKIAEXAMPLE7/20260101",
    ),
    (
        "cookie_like",
        "exporter = OTLPSpanExporter(session=requests.Session())",
        "sessionid=aB3dE5fG7hJ9k",
    ),
    (
        "cookie_like",
        "exporter = OTLPSpanExporter(session=requests.Session())",
        "session=Abc(12345678)x",
    ),
    (
        "at_sign_like",
        "the @hydra.main() function, or individual plugins",
        "escribe a juan@gmail.com(personal)",
    ),
    ("at_sign_like", "the @hydra.main() function", "juan @ gmail.com(x)"),
    (
        "at_sign_like",
        "in pytest tests decorated with @pytest.mark.langsmith.",
        "escribe a juan @gmail.com",
    ),
    (
        "at_sign_like",
        "in pytest tests decorated with @pytest.mark.langsmith.",
        "escribe a juan @ empresa.es",
    ),
    ("at_sign_like", "symbols versioned as foo@VER_1.  If the version", "juan@ver-1.es"),
    ("at_sign_like", "preceded by an @ character.  For example", "juan @ gmail . com"),
    ("at_sign_like", "preceded by an @ character.  For example", "juan@gmail. Com"),
    ("address_like", "my @data = ([qw/a b d/ x 50], [qw/b a d c/ x 50]);", "vivo en c/ Mayor 5"),
    (
        "address_like",
        "my @data = ([qw/a b d/ x 50], [qw/b a d c/ x 50]);",
        "my @data = ([qw/b a d c/ X 50]);",
    ),
]


@pytest.mark.parametrize(
    ("rule", "clean", "pii"), CASES, ids=[f"{rule}-{i}" for i, (rule, _, _) in enumerate(CASES)]
)
def test_code_passes_and_the_pii_beside_it_does_not(rule, clean, pii):
    assert residual_pii_reasons(clean) == []
    assert rule in residual_pii_reasons(pii)


def test_a_phone_cue_keeps_a_unit_or_an_operator_from_clearing_a_number():
    assert "long_digit_run" in residual_pii_reasons("tel 612 345 678 Hz")
    assert residual_pii_reasons("ref 612 345 678 Hz") == []
