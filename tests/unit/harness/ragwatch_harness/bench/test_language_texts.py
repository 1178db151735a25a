"""The language bench's texts: short sentences and questions out of compiled gettext catalogs
(written here in the GNU .mo format, as msgfmt writes them), and the fixtures' questions."""

from __future__ import annotations

import struct
from pathlib import Path

from ragwatch_harness.bench.language_texts import FIXTURES, catalog_texts, fixture_texts, short_text

HEADER = "Content-Type: text/plain; charset=UTF-8\n"


def write_mo(path: Path, messages: dict[str, str]) -> None:
    """A GNU message catalog: header, then the sorted ids' and translations' offsets, then the
    strings."""
    messages = {"": HEADER, **messages}
    ids = sorted(messages)
    id_bytes = [i.encode() for i in ids]
    str_bytes = [messages[i].encode() for i in ids]
    start = 7 * 4 + 16 * len(ids)
    table, data = [], b""
    for encoded in id_bytes + str_bytes:
        table.append((len(encoded), start + len(data)))
        data += encoded + b"\0"
    header = struct.pack("Iiiiiii", 0x950412DE, 0, len(ids), 7 * 4, 7 * 4 + 8 * len(ids), 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + b"".join(struct.pack("ii", *entry) for entry in table) + data)


def test_catalogs_give_their_questions_first_then_their_sentences(tmp_path: Path) -> None:
    write_mo(
        tmp_path / "ca/LC_MESSAGES/tool.mo",
        {
            "Do you want to continue now?": "Voleu continuar ara?",
            "The file could not be written to disk": "No s'ha pogut escriure el fitxer al disc",
            "Cannot open %s for writing": "No es pot obrir %s per a escriure",  # a format directive
            "Open": "Obre",  # a label
            "Keep the old version": "Keep the old version",  # untranslated
            # with a context
            "menu\x04Save the document as a new file": "Desa el document com a fitxer nou",
        },
    )
    write_mo(
        tmp_path / "ca/LC_MESSAGES/iso_639-3.mo",
        {"Cocama-Cocamilla language family": "Cocama-Cocamilla"},
    )
    write_mo(
        tmp_path / "ja/LC_MESSAGES/tool.mo",
        {"Is the server running?": "サーバーが動作していますか?"},
    )
    (tmp_path / "de/LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "de/LC_MESSAGES/broken.mo").write_bytes(b"not a catalog")
    texts = catalog_texts(10, locale=tmp_path)
    by = {(t.language, t.text): t.source for t in texts}
    assert by == {
        ("en", "Do you want to continue now?"): "gettext-question",
        ("en", "The file could not be written to disk"): "gettext-sentence",
        ("en", "Save the document as a new file"): "gettext-sentence",
        ("en", "Is the server running?"): "gettext-question",
        ("ca", "Voleu continuar ara?"): "gettext-question",
        ("ca", "No s'ha pogut escriure el fitxer al disc"): "gettext-sentence",
        ("ca", "Desa el document com a fitxer nou"): "gettext-sentence",
        ("ja", "サーバーが動作していますか?"): "gettext-question",
    }
    english = [t.text for t in texts if t.language == "en"]
    assert [t.endswith("?") for t in english] == [True, True, False, False]
    assert [t.text for t in catalog_texts(1, locale=tmp_path) if t.language == "ca"] == [
        "Voleu continuar ara?"
    ]


def test_short_text_keeps_sentences_not_labels_paths_or_format_strings() -> None:
    assert short_text("¿Dónde se guardan las copias de seguridad?")
    assert short_text("バックアップはどこに保存されますか")
    assert not short_text("Guardar")
    assert not short_text("Cherokee")
    assert not short_text("Usage: %s [OPTION]... FILE")
    assert not short_text("see /usr/share/doc for details")
    assert not short_text("first line\nsecond line of the message")


def test_the_fixtures_questions_are_read_where_the_checkout_has_them(tmp_path: Path) -> None:
    texts = fixture_texts(FIXTURES)
    assert {t.source for t in texts} == {"gnome-help", "debian-faq"}
    assert {t.language for t in texts if t.source == "gnome-help"} == {"es", "fr", "it", "pt", "de"}
    assert fixture_texts(tmp_path) == []
