"""`ragwatch bench index` at a toy size: the generated corpus has the chunks asked for, an unchanged
re-index embeds nothing, and the indexed passage matcher agrees with the one-by-one rule."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pipelines.corpus.chunking import load_chunks
from ragwatch_harness.bench.index import run_index_bench
from ragwatch_harness.bench.synthetic_corpus import golden_rows, write_synthetic_corpus


def test_the_generated_corpus_is_bilingual_html_and_markdown_with_one_chunk_per_section(
    tmp_path: Path,
) -> None:
    files = write_synthetic_corpus(tmp_path, chunks=60, seed=3)
    chunks = load_chunks(tmp_path)
    assert len(chunks) == 60 and len({c.chunk_id for c in chunks}) == 60
    assert set(Counter((c.language, c.type) for c in chunks)) == {
        ("en", "md"),
        ("en", "html"),
        ("es", "md"),
        ("es", "html"),
    }
    assert all(120 <= len(c.text.split()) <= 300 for c in chunks[:-1])
    assert [
        p.read_bytes() for p in write_synthetic_corpus(tmp_path / "again", chunks=60, seed=3)
    ] == [p.read_bytes() for p in files]
    rows = golden_rows([c.text for c in chunks], 40, seed=3)
    assert len(rows) == 40 and any(r["question"].startswith("¿") for r in rows)


def test_bench_index_runs_every_step_with_the_stand_in_embedder() -> None:
    result = run_index_bench(
        chunks=50, items=30, embedder="hashing", rule_sample=30, progress=lambda _: None
    )
    assert result.chunks == 50 and result.reindex_embedded == 0
    assert result.imported + result.import_problems == 30 and result.import_problems < 30
    assert result.rule_agrees and result.rule_sample == 30
    assert (
        result.embed_s > 0
        and result.upsert_s > 0
        and result.index_s >= result.embed_s + result.upsert_s
    )
