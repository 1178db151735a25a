"""A span export carries no language column: each trace's language is the one its app recorded, else
the one its question is written in, among the configured languages, else `und` (never a guess into
English or Spanish)."""

from __future__ import annotations

import pytest

from pipelines.stores.trace_sources.assemble import assemble_trace
from pipelines.stores.trace_sources.spans import Span


def trace(question: str, **recorded: str) -> list[Span]:
    root = Span(
        "a" * 32,
        "1" * 16,
        "",
        "rag",
        1_000,
        9_000,
        {
            "openinference.span.kind": "CHAIN",
            "input.value": question,
            "output.value": "…",
            **recorded,
        },
    )
    retriever = Span(
        "a" * 32,
        "2" * 16,
        "1" * 16,
        "retrieve",
        2_000,
        3_000,
        {
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.id": "ops#1",
            "retrieval.documents.0.document.content": "…",
        },
    )
    return [root, retriever]


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Wie setze ich das Passwort eines Benutzers zurück?", "de"),  # the stopword count said en
        ("Comment réinitialiser le mot de passe d'un utilisateur ?", "fr"),  # it said es
        ("Com puc restablir la contrasenya d'un usuari?", "ca"),  # es
        ("Como redefino a senha de um usuário?", "pt"),  # es
        ("¿Cómo restablezco la contraseña de un usuario?", "es"),
        ("How do I reset a user's password?", "en"),
        ("ユーザーのパスワードをリセットするにはどうすればいいですか？", "und"),  # en
    ],
)
def test_a_trace_without_a_recorded_language_gets_its_questions(
    question: str, language: str
) -> None:
    assert assemble_trace(trace(question), source="openinference")["language"] == language


def test_the_language_the_app_recorded_wins() -> None:
    row = assemble_trace(
        trace("Wie setze ich das Passwort zurück?", **{"ragwatch.language": "de-AT"}), source="otlp"
    )
    assert row["language"] == "de-AT"
