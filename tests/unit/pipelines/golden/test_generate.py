"""Golden questions written from real HTML documentation carry no markup and ask about real terms.

The corpus is documentation installed on a Debian machine (tests/data/html_docs/SOURCES): Sphinx
pages whose headings end in a "¶" permalink and are numbered ("2.1. Removal of ..."), and Texinfo
pages with "¶" anchors after their definitions. Every question the offline backend writes from every
chunk of it is checked.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from pipelines.core.text import FILLER_WORDS, NOT_ENOUGH, fold
from pipelines.corpus.chunking import chunk_document, load_chunks
from pipelines.corpus.documents import parse_document
from pipelines.golden.generate import generate_items
from pipelines.golden.params import GoldenParams
from pipelines.golden.plan import plan_jobs
from pipelines.golden.prompts import SECTION_NUMBER, is_content_word, key_term
from pipelines.models.llm import OfflineLLM

HTML_DOCS = Path(__file__).resolve().parents[3] / "data" / "html_docs"
MARKUP = re.compile(r"[¶§]|</?[a-z]+[ >]|\{#|&[a-z]+;|headerlink")


@pytest.fixture(scope="module")
def chunks():
    return load_chunks(HTML_DOCS)


@pytest.fixture(scope="module")
def items(chunks):
    params = GoldenParams(
        name="html",
        seeds=len(chunks),
        questions_per_seed=3,
        multi_hop=20,
        adversarial=20,
        tool_triples=9,
        from_traces=0,
        trace_days=0,
        dev_fraction=0.2,
        review_fraction=0.1,
        near_duplicate_cosine=0.95,
        batch_size=8,
    )
    jobs = plan_jobs(chunks, params, related=lambda chunk: None)
    generated, failures = generate_items(
        OfflineLLM(), jobs, corpus_version="html", created_at="2026-12-05T00:00:00Z"
    )
    assert not failures
    return generated


def test_the_real_pages_carry_the_markup_the_reader_must_drop():
    raw = "".join(p.read_text() for p in HTML_DOCS.rglob("*.html"))
    assert raw.count("¶") + raw.count("&para;") > 50
    assert 'class="headerlink"' in raw and "copiable-anchor" in raw


def test_sections_and_paragraphs_have_no_permalink_signs(chunks):
    assert len(chunks) > 50
    assert not [c.section for c in chunks if MARKUP.search(c.section)]
    assert not [c.chunk_id for c in chunks if "¶" in c.text]


def test_questions_have_no_markup_no_section_numbers_and_name_content_words(items, chunks):
    assert len(items) > 150
    assert not [i.question for i in items if MARKUP.search(i.question)]
    numbered = {c.section for c in chunks if SECTION_NUMBER.match(c.section)}
    assert len(numbered) > 20  # the corpus is numbered: "2.1. Removal of the unversioned packages"
    assert not [i.question for i in items if any(section in i.question for section in numbered)]
    for chunk in chunks:
        for sentence in chunk.text.split(". "):
            term = key_term(sentence, "fallback")
            assert fold(term) not in FILLER_WORDS, (term, sentence)


@pytest.mark.parametrize(
    ("sentence", "term"),
    [
        ("Nevertheless, the interpreter releases the lock periodically.", "interpreter"),
        ("Sin embargo, normalmente la configuración se recarga automáticamente.", "configuración"),
        ("Pass flags, e.g. on Windows, and/or set the environment.", "environment"),
        ("Use os.path to build the file names.", "os.path"),
    ],
)
def test_key_term_skips_fillers_adverbs_and_abbreviations(sentence, term):
    assert key_term(sentence, "fallback") == term


def test_content_words():
    assert not is_content_word("however") and not is_content_word("automáticamente")
    assert is_content_word("assembly") and is_content_word("nightly") and is_content_word("threads")


@pytest.mark.parametrize(
    ("html", "title"),
    [
        ('<h2>Setup<a class="headerlink" href="#setup">¶</a></h2><p>x y z</p>', "Setup"),
        ('<h2>Setup<a href="#setup">¶</a></h2><p>x y z</p>', "Setup"),
        (
            '<h2>Vec&lt;T&gt; <a class="anchor" href="#v"><span>#</span></a></h2><p>x y z</p>',
            "Vec<T>",
        ),
    ],
)
def test_html_headings_lose_their_permalinks(html, title):
    from datetime import date

    document = parse_document(html, "a.html", "html", date(2026, 1, 1))
    assert document.sections[-1].title == title


def test_markdown_headings_lose_attribute_lists_and_inline_anchors():
    from datetime import date

    document = parse_document(
        '# Guide\n\n## <a name="s"></a>Setup {#setup}\n\ntext here\n',
        "a.md",
        "md",
        date(2026, 1, 1),
    )
    assert [s.title for s in document.sections] == ["Setup"]


GERMAN_PAGE = """\
# Sicherung

Die Sicherung des Index läuft jede Nacht um zwei Uhr und dauert etwa zwanzig Minuten. Während sie läuft, bleibt
die Suche verfügbar, aber neue Dokumente werden erst danach aufgenommen.

Eine Sicherung wird dreißig Tage lang aufbewahrt. Danach löscht der Dienst sie automatisch aus dem Speicher.
"""


def test_items_keep_their_chunks_language_where_the_offline_templates_have_none() -> None:
    """The offline backend has English and Spanish wording only: a German chunk's items are worded
    in English, and stay German items (their stratum), never relabelled."""
    chunks = chunk_document(
        parse_document(GERMAN_PAGE, "sicherung.md", "md", default_date=date(2026, 12, 1))
    )
    assert {c.language for c in chunks} == {"de"}
    params = GoldenParams(
        name="de",
        seeds=len(chunks),
        questions_per_seed=2,
        multi_hop=0,
        adversarial=2,
        tool_triples=1,
        from_traces=0,
        trace_days=0,
        dev_fraction=0.2,
        review_fraction=0.1,
        near_duplicate_cosine=0.95,
        batch_size=8,
    )
    jobs = plan_jobs(chunks, params, related=lambda chunk: None)
    items, failures = generate_items(
        OfflineLLM(), jobs, corpus_version="de", created_at="2026-12-05T00:00:00Z"
    )
    assert not failures and {i.qtype for i in items} >= {"single_hop", "adversarial", "tool"}
    assert {i.language for i in items} == {"de"}
    adversarial = [i for i in items if i.qtype == "adversarial"]
    assert {i.reference_answer for i in adversarial} == {NOT_ENOUGH["en"]}
