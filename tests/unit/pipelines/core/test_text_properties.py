"""Folding (lowercase, accents off) keeps its definition whatever the text: BM25 terms, passage
matching and name lists all depend on two writers of one word folding alike."""

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.core.text import fold


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=200))
def test_folding_drops_exactly_the_combining_marks_of_the_decomposed_lowercase_text(text):
    decomposed = unicodedata.normalize("NFKD", text.lower())
    assert fold(text) == "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def test_folding_spanish_and_english():
    assert fold("Configuración del ÍNDICE, ñandú") == "configuracion del indice, nandu"
    assert fold("plain ASCII") == "plain ascii"
