"""The language detector: each configured language told apart on short questions, `und` for what is
none of them, and the configured set from RAGWATCH_LANGUAGES."""

from __future__ import annotations

import pytest

from pipelines.core.language import (
    DEFAULT_LANGUAGES,
    FALLBACK,
    UNDETERMINED,
    configured_languages,
    detect_language,
    template_language,
)
from pipelines.core.settings import SettingsError, load_settings

QUESTIONS = {
    "es": [
        "¿Cómo cambio la contraseña de mi cuenta?",
        "¿Qué límite de memoria tiene el nodo por defecto?",
    ],
    "ca": [
        "Com puc canviar la contrasenya del compte?",
        "Quin és el límit de memòria per defecte del node?",
    ],
    "en": ["How do I change my account password?", "Which port does the admin console listen on?"],
    "pt": [
        "Como posso alterar a senha da minha conta?",
        "Qual é o limite de memória padrão do nó?",
    ],
    "fr": [
        "Comment changer le mot de passe de mon compte ?",
        "Quel est le port de la console d'administration ?",
    ],
    "de": [
        "Wie ändere ich das Passwort meines Kontos?",
        "Auf welchem Port lauscht die Verwaltungskonsole?",
    ],
}
GERMAN = [
    "Wie kann ich den Index neu aufbauen?",
    "Was ist der Unterschied zwischen einer Liste und einem Tupel?",
    "Kann ich Qdrant mit Docker starten?",
    "Warum schlägt der Import der Dokumente fehl?",
    "Wo finde ich die Protokolle des Dienstes?",
    "Wo wohnt [PERSON_3f9a2c1d] und wie erreiche ich ihn?",
    "Gibt es eine Anleitung für die Sicherung unter https://example.org/backup?",
    "Gibt es eine Grenze für die Größe eines Dokuments?",
    "Was passiert, wenn es keinen Treffer gibt?",
]


@pytest.mark.parametrize(
    ("language", "question"), [(lang, q) for lang, qs in QUESTIONS.items() for q in qs]
)
def test_each_default_language_is_told_apart_on_a_short_question(
    language: str, question: str
) -> None:
    assert language in DEFAULT_LANGUAGES
    assert detect_language(question) == language


def test_a_german_question_is_never_filed_as_spanish() -> None:
    # The stopword count that came before knew English and Spanish only: "Gibt es …" was Spanish,
    # the rest English.
    assert [detect_language(q) for q in GERMAN] == ["de"] * len(GERMAN)


@pytest.mark.parametrize(
    "text",
    [
        "パスワードを変更するにはどうすればいいですか？",  # Japanese: no configured language writes it
        "Come posso cambiare la password del mio account?",  # Italian: not configured by default
        "Как изменить пароль учётной записи?",  # Russian
        "asdf qwer zxcv",  # nonsense
        "ok",  # too short to tell
        "Factura",  # Spanish, Catalan and Portuguese alike
        "?",
        "",
        "`pip install -U qdrant-client` https://qdrant.tech/documentation/",  # code and a URL only
    ],
)
def test_what_is_none_of_the_languages_or_too_short_is_und(text: str) -> None:
    assert detect_language(text) == UNDETERMINED
    assert (
        detect_language(text, default="es") == "es"
    )  # a caller's own fallback (a chunk's document language)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Où habite [PERSON_3f9a2c1d] ?", "fr"),
        ("¿Dónde vive [PERSON_3f9a2c1d]?", "es"),
        ("Wo wohnt [PERSON_3f9a2c1d]?", "de"),
        ("Consulta https://docs.example.com/install/getting-started/index.html", UNDETERMINED),
        ("Mira `SELECT count(*) FROM traces WHERE day = today`", UNDETERMINED),
    ],
)
def test_placeholders_code_and_urls_weigh_nothing(text: str, language: str) -> None:
    # Counted, the placeholder's letters left these questions `und`, and the URL and the code made
    # the last two English.
    assert detect_language(text) == language


def test_languages_outside_the_set_are_told_apart_once_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    italian = "Come posso cambiare la password del mio account?"
    assert detect_language(italian, languages=["es", "it"]) == "it"
    monkeypatch.setenv("RAGWATCH_LANGUAGES", '["es", "en", "IT"]')
    assert configured_languages() == ("es", "en", "it")
    assert detect_language(italian) == "it"
    assert detect_language(QUESTIONS["de"][0]) == UNDETERMINED  # German is not configured any more


def test_a_language_the_detector_does_not_know_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match="RAGWATCH_LANGUAGES: xx is not a language"):
        detect_language("¿Qué hora es?", languages=["es", "xx"])
    for wrong in ('["spanish"]', '["und"]', "[]"):
        monkeypatch.setenv("RAGWATCH_LANGUAGES", wrong)
        with pytest.raises(SettingsError, match="RAGWATCH_LANGUAGES"):
            load_settings()


def test_templates_fall_back_to_english_for_the_languages_they_lack() -> None:
    templates = {"en": "…", "es": "…"}
    assert template_language("es", templates) == "es"
    assert (
        template_language("de", templates)
        == template_language(UNDETERMINED, templates)
        == FALLBACK
        == "en"
    )
