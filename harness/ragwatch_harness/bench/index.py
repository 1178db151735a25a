"""Corpus indexing and `golden import` at corpus scale, on a generated bilingual corpus.

One run, in a temporary folder with Qdrant local mode:
1. write a synthetic corpus of N chunks (Markdown and HTML, Spanish and English) and parse it;
2. index it as `ragwatch corpus index` does (fingerprint, parse, compare, embed, write), embedding
   and writing (BM25 vectors + Qdrant upserts) timed apart;
3. index the unchanged folder again, as `ragwatch corpus index` would: its fingerprint matches the
   index's, so nothing is parsed, compared or embedded;
4. import M hand-written items whose gold passages come from the corpus, against the chunks read
   back from the index, as `ragwatch golden import` does; then the one-by-one matching rule on a
   sample of the same passages, side by side, which must give the same chunk ids.

`embedder="hashing"` swaps the model for a stand-in that derives vectors from a hash of the text:
not a model, so its figures say nothing about search quality; it measures everything else at full
scale on a machine where the model alone would take the time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.table import Table

from pipelines.core.batching import available_cpus
from pipelines.core.settings import Settings
from pipelines.core.versioning import ensure_workspace
from pipelines.core.workspace import Workspace
from pipelines.corpus.chunking import load_chunks
from pipelines.corpus.steps import index_corpus
from pipelines.golden.human import import_human_items
from pipelines.golden.passages import PassageMatcher, match_passage
from pipelines.models.embeddings import Embedder, LocalEmbedder
from pipelines.stores.corpus import open_corpus_index
from ragwatch_harness.bench.synthetic_corpus import golden_rows, write_synthetic_corpus

TARGETS = {"index": 300.0, "reindex": 5.0, "import": 30.0}
"""Seconds, for 10,000 chunks and 1,000 items on the project's 2-core machine (the indexing
target)."""


class HashingEmbedder:
    """A stand-in with no model: a unit vector seeded by the text's hash (see the module
    docstring)."""

    name = "bench/hashing-stand-in"
    dim = 384

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            vector = np.random.default_rng(seed).standard_normal(self.dim)
            vectors.append((vector / np.linalg.norm(vector)).tolist())
        return vectors


@dataclass(frozen=True)
class IndexBench:
    embedder: str
    documents: int
    chunks: int
    write_corpus_s: float
    parse_s: float
    index_s: float
    embed_s: float
    upsert_s: float
    reindex_s: float
    reindex_embedded: int
    items: int
    imported: int
    import_problems: int
    import_s: float
    rule_sample: int
    rule_s: float
    rule_agrees: bool
    load_average: float
    cpus: int

    @property
    def import_rule_estimate_s(self) -> float:
        """The one-by-one rule's time for all items, extrapolated from its sample."""
        return self.rule_s / max(self.rule_sample, 1) * self.items


def _timed(call):
    started = time.monotonic()
    value = call()
    return value, time.monotonic() - started


def run_index_bench(
    chunks: int = 10_000,
    items: int = 1_000,
    seed: int = 11,
    embedder: str = "local",
    rule_sample: int = 50,
    progress=print,
) -> IndexBench:
    if embedder not in ("local", "hashing"):
        raise ValueError(f"embedder is local or hashing, not {embedder!r}")
    model: Embedder = LocalEmbedder() if embedder == "local" else HashingEmbedder()
    with tempfile.TemporaryDirectory(prefix="ragwatch-bench-index-") as tmp:
        root = Path(tmp)
        settings = Settings(home=root / "home", qdrant_url=None, embeddings_backend="local")
        progress(f"writing a synthetic corpus of {chunks:,} chunks")
        files, write_s = _timed(lambda: write_synthetic_corpus(root / "corpus", chunks, seed))
        parsed, parse_s = _timed(lambda: load_chunks(root / "corpus"))
        if embedder == "local":
            model.embed(["warm-up: load the model before the clock starts"])
        ensure_workspace(
            Workspace.from_settings(settings), settings.resolved_dvc_remote
        )  # first use only
        progress(f"indexing {len(parsed):,} chunks with {model.name}")
        # As `ragwatch corpus index` and the corpus DAG run it: fingerprint, parse, compare, embed,
        # write.
        first, index_s = _timed(lambda: index_corpus(settings, root / "corpus", model))
        progress("indexing the unchanged folder again")
        again, reindex_s = _timed(lambda: index_corpus(settings, root / "corpus", model))

        progress(f"importing {items:,} hand-written items")
        sheet = root / "human.jsonl"
        rows = golden_rows([c.text for c in parsed], items, seed)
        sheet.write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
        )
        started = time.monotonic()
        with open_corpus_index(settings, model) as index:
            stored = list(index.chunks(batch_size=4096))  # as `golden import` reads them
            version = index.version() or ""
        report = import_human_items(sheet, stored, corpus_version=version, created_at="2026-01-01")
        import_s = time.monotonic() - started

        progress(f"the one-by-one rule on {min(rule_sample, items)} of the passages")
        sample = [row["gold_passages"] for row in rows[:rule_sample]]
        by_rule, rule_s = _timed(lambda: [match_passage(p, stored) for p in sample])
        matcher = PassageMatcher(stored)
        agrees = by_rule == [matcher.match(p) for p in sample]
    return IndexBench(
        embedder=model.name,
        documents=len(files),
        chunks=len(parsed),
        write_corpus_s=write_s,
        parse_s=parse_s,
        index_s=index_s,
        embed_s=first["embed_seconds"],
        upsert_s=first["write_seconds"],
        reindex_s=reindex_s,
        reindex_embedded=again["chunks_added"],
        items=items,
        imported=len(report.items),
        import_problems=len(report.problems),
        import_s=import_s,
        rule_sample=len(sample),
        rule_s=rule_s,
        rule_agrees=agrees,
        load_average=os.getloadavg()[0],
        cpus=available_cpus(),
    )


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.1f}" if seconds > 0 else "-"


def format_index_bench(result: IndexBench) -> Table:
    table = Table(
        title=f"corpus of {result.chunks:,} chunks in {result.documents:,} files · embedder {result.embedder}"
    )
    for column in ("step", "seconds", "chunks/s", "note"):
        table.add_column(column)
    n = result.chunks
    scale = n / 10_000
    table.add_row(
        "parse (Markdown + HTML -> chunks)", f"{result.parse_s:.1f}", _rate(n, result.parse_s), ""
    )
    embed_note = (
        "windows of 254 word pieces, pooled"
        if result.embedder != HashingEmbedder.name
        else "stand-in, not the model"
    )
    table.add_row("embed", f"{result.embed_s:.1f}", _rate(n, result.embed_s), embed_note)
    table.add_row(
        "upsert (BM25 + Qdrant)",
        f"{result.upsert_s:.1f}",
        _rate(n, result.upsert_s),
        "Qdrant local mode",
    )
    table.add_row(
        "index, all of it",
        f"{result.index_s:.1f}",
        _rate(n, result.index_s),
        f"target {TARGETS['index'] * scale:.0f} s at this size",
    )
    table.add_row(
        "re-index, unchanged",
        f"{result.reindex_s:.1f}",
        _rate(n, result.reindex_s),
        f"{result.reindex_embedded} chunks embedded; target {TARGETS['reindex']:.0f} s at 10,000",
    )
    table.add_row(
        f"golden import of {result.items:,} items",
        f"{result.import_s:.1f}",
        "",
        f"{result.imported} imported, {result.import_problems} problems; target {TARGETS['import']:.0f} s",
    )
    table.add_row(
        f"one-by-one rule, {result.rule_sample} items",
        f"{result.rule_s:.1f}",
        "",
        f"~{result.import_rule_estimate_s:,.0f} s for {result.items:,}; same matches: {result.rule_agrees}",
    )
    table.caption = f"{result.cpus} CPUs, load average {result.load_average:.1f} at the end (a shared machine slows every figure)"
    return table
