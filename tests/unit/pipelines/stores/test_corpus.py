"""The corpus: loading and chunking files, stable chunk ids, BM25 vectors, the Qdrant index with the
real local embedding model, incremental re-indexing, and the Airflow refresh notification."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from pipelines.core.language import detect_language
from pipelines.core.records import corpus_version
from pipelines.core.settings import Settings
from pipelines.corpus.chunking import chunk_document, load_chunks, pack
from pipelines.corpus.documents import parse_document
from pipelines.corpus.refresh import AirflowNotificationError, notify_corpus_refreshed
from pipelines.corpus.steps import index_corpus
from pipelines.evaluation.metrics.judge import JudgeInput
from pipelines.evaluation.metrics.noise import NEIGHBOURS, NoisePool
from pipelines.models.embeddings import LocalEmbedder
from pipelines.stores.bm25 import document_vector, query_vector, term_index, tokenize
from pipelines.stores.corpus import CorpusIndex, CorpusIndexError
from ragwatch_harness.demo.corpus_files import demo_corpus_chunks, write_demo_corpus
from ragwatch_harness.demo.guides_es import GUIDES_ES

# A small, bilingual slice of the demo corpus keeps the real model's embedding time to seconds.
PYDOC_TOPICS = {
    "assert",
    "lambda",
    "nonlocal",
    "global",
    "try",
    "continue",
    "break",
    "for",
    "while",
    "with",
}

GUIDE = """\
---
title: Guía de operación
date: 2024-02-29
---

# Guía de operación

Introducción breve: este documento explica cómo operar el asistente en producción.

## Configuración inicial

La configuración se guarda en `config.yaml`. Revisa la sección de límites antes de arrancar.

```
# esto es un comentario dentro de código, no un título
limite: 10
```

## Errores frecuentes

Si el índice no responde, reinícialo con `ragwatch corpus index`.
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- loading and chunking --------------------------------------------------------------------------


def test_markdown_sections_front_matter_and_accents(tmp_path: Path) -> None:
    write(tmp_path, "docs/guia.md", GUIDE)
    chunks = load_chunks(tmp_path)
    assert [c.section for c in chunks] == [
        "Guía de operación",
        "Configuración inicial",
        "Errores frecuentes",
    ]
    assert chunks[1].chunk_id.startswith("docs/guia.md#configuracion-inicial/0-")
    assert chunks[1].chunk_id.endswith(chunks[1].content_hash[:8])
    assert (
        "# esto es un comentario" in chunks[1].text
    )  # a '#' inside a fence is code, not a heading
    assert {c.type for c in chunks} == {"md"}
    assert {c.date for c in chunks} == {"2024-02-29"}  # front matter beats the file's mtime
    assert {c.language for c in chunks} == {"es"}
    assert "Introducción" in chunks[0].text


def test_html_text_and_mtime_dates(tmp_path: Path) -> None:
    html = write(
        tmp_path,
        "web/faq.html",
        "<html lang='es'><head><title>Preguntas</title><style>h1 {color: red}</style></head><body>"
        "<nav>Inicio | Ayuda</nav><h1>Facturaci&oacute;n</h1><p>La factura se emite el primer d&iacute;a "
        "h&aacute;bil.</p><script>var x = 1;</script><h2>Presupuesto</h2><ul><li>Aviso al 80 %</li>"
        "<li>Cola lenta al 100 %</li></ul><pre>  indentado\n  conservado</pre></body></html>",
    )
    text = write(
        tmp_path, "notes.txt", "First paragraph of plain notes.\n\nSecond paragraph of the notes."
    )
    for path in (html, text):
        os.utime(path, (1_700_000_000, 1_700_000_000))  # 2023-11-14 UTC
    chunks = load_chunks(tmp_path)
    faq = [c for c in chunks if c.document == "web/faq.html"]
    assert [c.section for c in faq] == ["Facturación", "Presupuesto"]
    assert faq[0].text == "La factura se emite el primer día hábil."
    assert "- Aviso al 80 %\n\n- Cola lenta al 100 %" in faq[1].text
    assert "  indentado\n  conservado" in faq[1].text
    assert not any("var x" in c.text or "color" in c.text or "Inicio" in c.text for c in faq)
    notes = [c for c in chunks if c.document == "notes.txt"]
    assert len(notes) == 1 and notes[0].type == "txt" and notes[0].section == "notes"
    assert {c.date for c in chunks} == {"2023-11-14"}
    assert {c.language for c in faq} == {"es"} and notes[0].language == "en"


def test_chunk_ids_are_stable_and_change_only_with_content(tmp_path: Path) -> None:
    write(tmp_path, "guia.md", GUIDE)
    first = load_chunks(tmp_path)
    assert [c.chunk_id for c in load_chunks(tmp_path)] == [c.chunk_id for c in first]
    write(tmp_path, "guia.md", GUIDE.replace("reinícialo", "vuelve a crearlo"))
    second = load_chunks(tmp_path)
    changed = {a.chunk_id for a in first} ^ {b.chunk_id for b in second}
    assert len(changed) == 2 and all("#errores-frecuentes/0-" in cid for cid in changed)
    assert corpus_version(first) != corpus_version(second)
    assert corpus_version(first) == corpus_version(reversed(first))


def test_duplicate_headings_get_distinct_ids() -> None:
    text = "# Doc\n\n## Ejemplo\n\nUno.\n\n## Ejemplo\n\nDos.\n"
    doc = parse_document(text, "d.md", "md", default_date=date(2024, 1, 1))
    ids = [c.chunk_id for c in chunk_document(doc)]
    assert ids[0].startswith("d.md#ejemplo/0-") and ids[1].startswith("d.md#ejemplo-2/0-")


def test_long_sections_split_in_balanced_chunks_on_paragraph_boundaries() -> None:
    paragraphs = [" ".join(f"w{p}x{i}" for i in range(60)) for p in range(7)]  # 420 words
    chunks = pack(paragraphs, max_words=300)
    assert [len(c.split()) for c in chunks] == [240, 180]
    assert all(c.split("\n\n")[0] in paragraphs for c in chunks)
    giant = " ".join(
        f"Sentence number {i} ends here." for i in range(150)
    )  # 750 words, one paragraph
    pieces = pack([giant], max_words=300)
    assert all(len(p.split()) <= 300 for p in pieces) and all(p.endswith("here.") for p in pieces)
    assert " ".join(pieces) == giant


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("¿Cómo se calcula el coste de cada consulta en la factura?", "es"),
        ("La reversión tarda unos dos minutos y no borra el índice", "es"),
        ("How is the cost of each query computed on the invoice?", "en"),
        ("The with statement is used to wrap the execution of a block", "en"),
        ("Com es calcula el cost de cada consulta a la factura?", "ca"),
        ("Wie wird der Preis jeder Anfrage auf der Rechnung berechnet?", "de"),
        (
            "Configuración",
            "es",
        ),  # one word, but only Spanish spells it so (configuració, configuração)
        ("Factura", "und"),  # Spanish, Catalan and Portuguese alike
        ("x = 1", "und"),
    ],
)
def test_detect_language(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_a_chunk_takes_its_own_language_else_its_documents() -> None:
    german = (
        "# Sicherung\n\nDie Sicherung des Index läuft jede Nacht und dauert etwa zwanzig Minuten. Während sie "
        "läuft, bleibt die Suche verfügbar, aber neue Dokumente werden erst danach aufgenommen.\n\n"
        "# Befehle\n\n`qdrant-backup --all` `qdrant-restore --latest`\n"
    )
    chunks = chunk_document(
        parse_document(german, "sicherung.md", "md", default_date=date(2024, 1, 1))
    )
    assert [c.language for c in chunks] == [
        "de",
        "de",
    ]  # the commands alone are no language: the document's
    declared = parse_document(
        "---\nlang: it\n---\n" + german, "s.md", "md", default_date=date(2024, 1, 1)
    )
    assert {c.language for c in chunk_document(declared)} == {
        "it"
    }  # declared by the document: kept as is


def test_demo_corpus_is_bilingual_and_keeps_demo_ids(tmp_path: Path) -> None:
    chunks = demo_corpus_chunks()
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert {c.language for c in chunks} == {"en", "es"}
    assert any(c.chunk_id.startswith("pydoc/assert#0-") for c in chunks)
    written = write_demo_corpus(tmp_path)
    assert len(written) == len({c.document for c in chunks if c.type == "pydoc"}) + len(GUIDES_ES)
    mtimes = [p.stat().st_mtime_ns for p in written]
    write_demo_corpus(tmp_path)
    assert [p.stat().st_mtime_ns for p in written] == mtimes  # rewriting leaves files alone
    from_files = load_chunks(tmp_path)
    assert {c.document for c in from_files} >= {"pydoc/assert.md", "guias/guia-de-despliegue.md"}
    assert {c.language for c in from_files} == {"en", "es"}


# -- BM25 ------------------------------------------------------------------------------------------


def test_bm25_tokens_fold_accents_and_drop_stopwords() -> None:
    assert tokenize("¿Cómo se calcula la facturación de __init__?") == [
        "calcula",
        "facturacion",
        "init",
    ]
    assert term_index("facturacion") == term_index("facturacion") == 4_180_531_673
    indices, values = document_vector("cola cola cola lenta")
    assert indices == sorted(indices) and len(indices) == 2
    assert max(values) < 2.2  # tf saturates at k1 + 1
    assert query_vector("la de que") == ([], [])


# -- the index, with the real local model ----------------------------------------------------------


def demo_subset():
    return [
        c
        for c in demo_corpus_chunks()
        if c.type != "pydoc" or c.document.split("/")[1] in PYDOC_TOPICS
    ]


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory) -> Iterator[CorpusIndex]:
    settings = Settings(home=tmp_path_factory.mktemp("corpus-index"))
    with CorpusIndex(settings) as index:
        report = index.index(demo_subset())
        assert report.chunks_added == report.chunks_total == len(demo_subset())
        yield index


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How do I write a small anonymous function inline?", "pydoc/lambda#0-"),
        (
            "How can a nested function rebind a variable of the enclosing function?",
            "pydoc/nonlocal#0-",
        ),
        ("What happens to assertions when Python runs with optimizations?", "pydoc/assert#0-"),
        (
            "¿Cuánto se paga por millón de tokens de entrada?",
            "#como-se-calcula-el-coste-de-cada-consulta/0-",
        ),
        ("¿Cuándo llega la factura mensual?", "#cuando-se-emite-la-factura/0-"),
        (
            "¿Qué debo revisar primero si baja la fidelidad de las respuestas?",
            "#alerta-de-fidelidad-baja/0-",
        ),
    ],
)
def test_hybrid_search_finds_paraphrased_questions(
    demo_index: CorpusIndex, question: str, expected: str
) -> None:
    hits = demo_index.search(question, k=3)
    assert any(expected in hit.chunk_id for hit in hits), [hit.chunk_id for hit in hits]


def test_sparse_search_matches_exact_keywords(demo_index: CorpusIndex) -> None:
    alert = demo_index.search("RagFaithfulnessLow", k=1, mode="sparse")
    assert alert[0].chunk_id.startswith(
        "guias/procedimiento-de-guardia.md#alerta-de-fidelidad-baja/0-"
    )
    assert demo_index.search("__debug__", k=1, mode="sparse")[0].chunk_id.startswith(
        "pydoc/assert#0-"
    )
    assert demo_index.search("de la que", mode="sparse") == []  # stopwords only: nothing to match


def test_search_modes_filters_and_reads(demo_index: CorpusIndex) -> None:
    dense = demo_index.search("anonymous function", k=2, mode="dense")
    assert len(dense) == 2 and dense[0].score >= dense[1].score
    assert dense[0].metadata["document"] == "pydoc/lambda" and "text" not in dense[0].metadata
    spanish = demo_index.search("factura", k=5, filter={"language": "es"})
    assert spanish and all(hit.metadata["language"] == "es" for hit in spanish)
    only_pydoc = demo_index.search("factura", k=3, filter={"type": ["pydoc"]})
    assert all(hit.metadata["type"] == "pydoc" for hit in only_pydoc)
    with pytest.raises(ValueError, match="unknown search mode"):
        demo_index.search("x", mode="bm25")  # type: ignore[arg-type]

    stored = sorted(demo_index.chunks(), key=lambda c: c.chunk_id)
    assert stored == sorted(demo_subset(), key=lambda c: c.chunk_id)
    assert demo_index.count(filter={"language": "es"}) == sum(
        c.language == "es" for c in demo_subset()
    )
    wanted = [stored[3].chunk_id, "nope#missing/0-00000000", stored[0].chunk_id]
    assert [c.chunk_id for c in demo_index.get(wanted)] == [wanted[0], wanted[2]]
    assert demo_index.version() == corpus_version(demo_subset())


def test_search_many_answers_each_query_as_search_does_in_batched_requests(
    demo_index: CorpusIndex, monkeypatch
) -> None:
    queries = [
        "How do I write a small anonymous function inline?",
        "¿Cuándo llega la factura mensual?",
        "de la que",
    ]
    found = {}
    for mode in ("hybrid", "dense", "sparse"):
        found[mode] = [demo_index.search(q, k=NEIGHBOURS, mode=mode) for q in queries]
        batched = demo_index.search_many(queries, k=NEIGHBOURS, mode=mode)
        assert [[h.chunk_id for h in hits] for hits in batched] == [
            [h.chunk_id for h in hits] for hits in found[mode]
        ]
        scores = [h.score for hits in found[mode] for h in hits]
        assert [h.score for hits in batched for h in hits] == pytest.approx(scores)
    assert (
        found["sparse"][2] == [] and found["hybrid"][2]
    )  # stopwords only: no BM25 side, hybrid falls back to dense
    assert demo_index.search_many([], mode="dense") == []

    # The noise pool's candidates: every question's dense neighbours, in one batched request.
    requests: list[int] = []
    send = demo_index.client.query_batch_points
    monkeypatch.setattr(
        demo_index.client,
        "query_batch_points",
        lambda name, batch, **kw: requests.append(len(batch)) or send(name, batch, **kw),
    )
    gold = "pydoc/lambda#0-nope"  # a gold chunk the index lacks: its document is read from the id
    items = [
        JudgeInput(item_id=f"q{n}", stratum="s", question=q, answer="a", gold_chunk_ids=[gold])
        for n, q in enumerate([*queries, queries[0]])
    ]
    pool = NoisePool.from_index(demo_index, items)
    assert requests == [len(queries)]  # the repeated question is searched once
    assert {c.chunk_id for c in pool.chunks} == {
        h.chunk_id for hits in found["dense"] for h in hits
    }
    assert pool.document_of(gold) == "pydoc/lambda"


def test_reindex_touches_only_changed_documents(tmp_path: Path, settings: Settings) -> None:
    corpus = tmp_path / "corpus"
    for name, text in GUIDES_ES.items():
        write(corpus, name, text)
    write(
        corpus,
        "extra/notes.md",
        "# Notes\n\nThe rollback takes two minutes.\n\n## Owners\n\nThe platform team.\n",
    )
    with CorpusIndex(settings) as index:
        first = index.index(load_chunks(corpus))
        assert first.previous_version is None and len(first.documents_added) == len(GUIDES_ES) + 1
        assert index.count() == first.chunks_total == first.chunks_added

        again = index.index(load_chunks(corpus))
        assert (again.chunks_added, again.chunks_removed, again.documents_unchanged) == (
            0,
            0,
            len(GUIDES_ES) + 1,
        )
        assert not again.changed

        guide = "guias/preguntas-frecuentes-facturacion.md"
        edited = GUIDES_ES[guide].replace("0,40 €", "0,35 €")
        write(corpus, guide, edited)
        update = index.index(load_chunks(corpus))
        assert (
            update.documents_updated == [guide]
            and not update.documents_added
            and not update.documents_removed
        )
        assert (update.chunks_added, update.chunks_removed) == (1, 1)  # only the edited section
        assert update.documents_unchanged == len(GUIDES_ES)
        assert update.changed and update.previous_version == first.corpus_version
        assert index.version() == update.corpus_version
        assert "0,35 €" in index.search("precio por millón de tokens de entrada", k=1)[0].text

        (corpus / "extra/notes.md").unlink()
        removal = index.index(load_chunks(corpus))
        assert removal.documents_removed == ["extra/notes.md"] and removal.chunks_removed == 2
        assert index.count(filter={"document": "extra/notes.md"}) == 0
        assert index.count() == removal.chunks_total


def test_an_unchanged_folder_is_recognised_without_parsing_and_any_change_is_seen(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus"
    write(corpus, "guia.md", GUIDE)
    notes = write(corpus, "notes.md", "# Notes\n\nThe rollback takes two minutes.\n")
    first = index_corpus(settings, corpus)
    assert first["chunks_added"] == first["chunks_total"] > 0

    def no_parsing(folder: Path) -> list:
        raise AssertionError(f"{folder} was parsed although nothing changed")

    with monkeypatch.context() as patch:
        patch.setattr("pipelines.corpus.steps.load_chunks", no_parsing)
        again = index_corpus(settings, corpus)
    assert again["corpus_version"] == again["previous_version"] == first["corpus_version"]
    assert (again["chunks_added"], again["chunks_unchanged"], again["documents_unchanged"]) == (
        0,
        first["chunks_total"],
        2,
    )

    write(corpus, "notes.md", "# Notes\n\nThe rollback takes three minutes.\n")
    edited = index_corpus(settings, corpus)
    assert edited["documents_updated"] == 1 and edited["chunks_added"] == 1
    # A file without front matter is dated by its modification day: a new day is new metadata.
    os.utime(notes, (notes.stat().st_atime, notes.stat().st_mtime - 3 * 86_400))
    redated = index_corpus(settings, corpus)
    assert (
        redated["documents_updated"] == 1
        and redated["chunks_added"] == 0
        and redated["chunks_unchanged"] > 0
    )
    rebuilt = index_corpus(
        settings, corpus, rebuild=True
    )  # what `ragwatch corpus index --rebuild` asks
    assert rebuilt["chunks_added"] == rebuilt["chunks_total"] == first["chunks_total"]


def test_a_run_that_dies_halfway_is_repaired_whatever_the_folder_holds_next(
    tmp_path: Path, settings: Settings
) -> None:
    corpus = tmp_path / "corpus"
    write(corpus, "guia.md", GUIDE)
    original = GUIDE.replace("config.yaml", "ajustes.yaml")
    write(corpus, "notes.md", "# Notes\n\n" + original)
    first = index_corpus(settings, corpus)

    class DiesWhileEmbedding:
        name, dim = LocalEmbedder.name, 384

        def embed(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("the embedding server went away")

    write(corpus, "notes.md", "# Notes\n\n" + original.replace("arrancar", "empezar"))
    with pytest.raises(RuntimeError, match="went away"):
        index_corpus(settings, corpus, DiesWhileEmbedding())
    # The folder goes back to what was indexed first: neither the folder's fingerprint nor the
    # document's manifest entry may pass for the index's state, which lost the edited chunk's old
    # point.
    write(corpus, "notes.md", "# Notes\n\n" + original)
    repaired = index_corpus(settings, corpus)
    assert (
        repaired["corpus_version"] == first["corpus_version"]
        and repaired["chunks_total"] == first["chunks_total"]
    )
    with CorpusIndex(settings) as index:
        assert index.count() == first["chunks_total"]
        assert {chunk.chunk_id for chunk in index.chunks()} == {
            chunk.chunk_id for chunk in load_chunks(corpus)
        }


def test_local_mode_is_exclusive_and_reopens_after_close(settings: Settings) -> None:
    with CorpusIndex(settings) as index:
        assert index.version() is None and list(index.chunks()) == []
        with pytest.raises(CorpusIndexError, match="not been indexed"):
            index.search("anything")
        with pytest.raises(CorpusIndexError, match="RAGWATCH_QDRANT_URL"):
            CorpusIndex(settings.model_copy(update={"qdrant_local_lock_wait_s": 1.0}))
    CorpusIndex(settings).close()


def test_index_refuses_vectors_from_another_embedder(settings: Settings) -> None:
    chunks = demo_subset()[:2]

    class OtherEmbedder:
        name, dim = "other/model", 4

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    with CorpusIndex(settings, embedder=OtherEmbedder()) as index:
        index.index(chunks)
    with CorpusIndex(settings) as index:
        with pytest.raises(CorpusIndexError, match="rebuild"):
            index.index(chunks)
        assert index.index(chunks, rebuild=True).chunks_added == 2


# -- Airflow refresh notification ------------------------------------------------------------------


class FakeAirflow(ThreadingHTTPServer):
    """The two endpoints the notification uses, plus /auth/token; records every request."""

    def __init__(self, assets: list[dict]):
        super().__init__(("127.0.0.1", 0), _AirflowHandler)
        self.assets = assets
        self.calls: list[tuple[str, str, dict, dict | None, str | None]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _AirflowHandler(BaseHTTPRequestHandler):
    server: FakeAirflow

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.server.calls.append(
            (method, parts.path, query, body, self.headers.get("authorization"))
        )
        if parts.path == "/auth/token" and method == "POST":
            ok = body == {"username": "admin", "password": "s3cret"}
            return self._reply(
                201 if ok else 401, {"access_token": "jwt-1"} if ok else {"detail": "Invalid"}
            )
        if self.headers.get("authorization") != "Bearer jwt-1":
            return self._reply(401, {"detail": "Not authenticated"})
        if parts.path == "/api/v2/assets" and method == "GET":
            # Airflow matches a LIKE pattern in which `_` is a wildcard: the client must keep exact
            # names.
            pattern = query["name_pattern"].replace("_", "")
            matches = [a for a in self.server.assets if pattern in a["name"].replace("_", "")]
            return self._reply(200, {"assets": matches, "total_entries": len(matches)})
        if parts.path == "/api/v2/assets/events" and method == "POST":
            extra = {**body["extra"], "from_rest_api": True}
            return self._reply(200, {"id": 99, "asset_id": body["asset_id"], "extra": extra})
        self._reply(404, {"detail": "Not Found"})

    def _reply(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake_airflow() -> Iterator[FakeAirflow]:
    server = FakeAirflow(
        [
            {"id": 3, "name": "ragwatch_corpus_v2", "uri": "ragwatch_corpus_v2"},
            {"id": 7, "name": "ragwatch_corpus", "uri": "ragwatch_corpus"},
        ]
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_refresh_posts_an_asset_event(fake_airflow: FakeAirflow, tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        airflow_api_url=fake_airflow.url,
        airflow_username="admin",
        airflow_password="s3cret",
    )
    extra = {"corpus_version": "abc123", "documents_added": 2, "documents_removed": 1}
    event = notify_corpus_refreshed(settings, extra=extra)
    assert event["asset_id"] == 7 and event["extra"]["corpus_version"] == "abc123"
    token, assets, post = fake_airflow.calls
    assert token[:2] == ("POST", "/auth/token")
    assert assets[:3] == (
        "GET",
        "/api/v2/assets",
        {"name_pattern": "ragwatch_corpus", "limit": "100", "offset": "0"},
    )
    assert post == (
        "POST",
        "/api/v2/assets/events",
        {},
        {"asset_id": 7, "extra": extra},
        "Bearer jwt-1",
    )


def test_refresh_errors_say_what_to_fix(fake_airflow: FakeAirflow, tmp_path: Path) -> None:
    wrong = Settings(
        home=tmp_path,
        airflow_api_url=fake_airflow.url,
        airflow_username="admin",
        airflow_password="nope",
    )
    with pytest.raises(AirflowNotificationError, match="RAGWATCH_AIRFLOW_PASSWORD"):
        notify_corpus_refreshed(wrong)
    right = Settings(
        home=tmp_path,
        airflow_api_url=fake_airflow.url,
        airflow_username="admin",
        airflow_password="s3cret",
    )
    with pytest.raises(AirflowNotificationError, match="no asset named 'golden_sets'"):
        notify_corpus_refreshed(right, asset_name="golden_sets")
    closed = Settings(home=tmp_path, airflow_api_url="http://127.0.0.1:9", airflow_username="admin")
    with pytest.raises(AirflowNotificationError, match="RAGWATCH_AIRFLOW_API_URL"):
        notify_corpus_refreshed(closed)
