"""The language bench: shares right, `und` and wrong per language, outside languages right only as
`und`, the threshold sweep, and a whole run with detectors in fresh processes."""

from __future__ import annotations

import pytest

from ragwatch_harness.bench import language as bench
from ragwatch_harness.bench.language_texts import LanguageText

LANGUAGES = ["es", "de"]
TEXTS = [
    LanguageText("es", "gettext-question", "¿Dónde se guardan las copias de seguridad del índice?"),
    LanguageText("es", "gnome-help", "Cambiar el tamaño del texto en la pantalla"),
    LanguageText("de", "gettext-question", "Soll die neue Rolle Datenbanken erzeugen dürfen?"),
    LanguageText("de", "debian-faq", "Wie kann ich mein System auf dem neuesten Stand halten?"),
    LanguageText("it", "debian-faq", "Come posso mantenere aggiornato il mio sistema?"),
]


def test_shares_count_outside_languages_right_only_as_und() -> None:
    items = bench.outside_right(TEXTS, LANGUAGES)
    predictions = [
        ("es", 0.9, 1.0),
        ("es", 0.4, 1.0),
        ("es", 0.9, 1.0),
        ("de", 0.9, 0.05),
        ("es", 0.9, 0.02),
    ]
    plain = bench.shares(items, predictions)
    assert plain[("es", "all")] == {"n": 2, "right": 1.0, "und": 0.0, "wrong": 0.0}
    assert plain[("de", "all")] == {"n": 2, "right": 0.5, "und": 0.0, "wrong": 0.5}
    assert plain[("und", "all")]["wrong"] == 1.0 and plain[("und", "it:debian-faq")]["n"] == 1
    strict = bench.shares(items, predictions, threshold=0.5, in_set=0.1)
    assert strict[("es", "gnome-help")]["und"] == 1.0  # confidence 0.4
    assert strict[("de", "debian-faq")]["und"] == 1.0  # 5 % of the probability in the set
    assert strict[("und", "all")]["right"] == 1.0
    rows = {
        (r["in_set"], r["threshold"]): r
        for r in bench.sweep(items, predictions, LANGUAGES, (0.0, 0.1))
    }
    assert rows[(0.0, 0.0)]["outside_forced"] == 1.0 and rows[(0.1, 0.0)]["outside_forced"] == 0.0
    assert rows[(0.1, 0.5)]["right"] == pytest.approx((0.5 + 0.0) / 2)


def test_a_run_measures_each_detector_in_a_fresh_process() -> None:
    result = bench.run_language_bench(
        LANGUAGES,
        detectors=["ragwatch", "previous"],
        texts=TEXTS,
        progress=lambda _: 0,
        min_timed_s=0.0,
    )
    assert set(result["n"]) == {f"{t.language}:{t.source}" for t in TEXTS}
    ours, previous = result["detectors"]["ragwatch"], result["detectors"]["previous"]
    assert ours["shares"]["es:all"]["right"] == ours["shares"]["de:all"]["right"] == 1.0
    assert ours["shares"]["und:all"]["right"] == 1.0  # the Italian question is `und`
    assert previous["shares"]["de:all"]["right"] == 0.0  # it knew English and Spanish only
    assert (
        ours["load_s"] > 0 and ours["added_mb"] > 0 and ours["per_text_us"] > 0 and "sweep" in ours
    )
    table = bench.format_language_bench(result)
    assert "| ragwatch | 100.0%" in table and "| previous |" in table


def test_an_unknown_detector_is_named() -> None:
    with pytest.raises(ValueError, match="unknown detector 'fasttext'"):
        bench.measure_detector("fasttext", LANGUAGES, ["text"])
