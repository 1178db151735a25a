"""The anonymizer's rules take no language: a question detected as German, Catalan, French or
Portuguese (or `und`) has its e-mails, phones, IBANs and ids replaced like a Spanish or English one.
Only the name detector leans on Spanish and English (its cues, and its gazetteer's names); a known
first name and a surname are found in any."""

from __future__ import annotations

import pytest

from pipelines.core.language import detect_language
from pipelines.privacy.recognizers import find_pii


@pytest.mark.parametrize(
    ("language", "text", "found"),
    [
        (
            "de",
            "Ich heiße Hans Müller, meine E-Mail ist hans.mueller@example.de und meine IBAN DE89 3704 0044 0532 0130 00.",
            [
                ("PERSON", "Hans Müller"),
                ("EMAIL", "hans.mueller@example.de"),
                ("IBAN", "DE89 3704 0044 0532 0130 00"),
            ],
        ),
        (
            "ca",
            "Em dic Jordi Puig i el meu telèfon és el 612 345 678.",
            [("PERSON", "Jordi Puig"), ("PHONE", "612 345 678")],
        ),
        (
            "fr",
            "Je m'appelle Marie Dupont, appelez-moi au +33 6 12 34 56 78.",
            [("PERSON", "Marie Dupont"), ("PHONE", "+33 6 12 34 56 78")],
        ),
        (
            "pt",
            "Chamo-me João Silva e o meu DNI é 12345678Z.",
            [("PERSON", "João Silva"), ("DNI", "12345678Z")],
        ),
        (
            "und",
            "hans.mueller@example.de 612 345 678",
            [("EMAIL", "hans.mueller@example.de"), ("PHONE", "612 345 678")],
        ),
    ],
)
def test_pii_is_found_whatever_language_the_question_is_in(
    language: str, text: str, found: list
) -> None:
    assert detect_language(text) == language
    assert [(span.type, span.value) for span in find_pii(text)] == found
