"""A published day of N sampled traces, as trace_sampling writes it, for the online eval's
benchmark.

The rows come from a pool of demo traces (`ragwatch_harness.demo.traces`: Spanish and English
engineers asking about the demo corpus, some with tool calls, PII planted) that went through the
real sampling step at rate 1 — parsed, anonymized, residual-checked, quarantined — so the pool has
the partition's schema and content exactly. The day then draws N rows from the pool, stratum by
stratum, with skewed stratum sizes (`STRATA`: one tiny Spanish stratum, which only a per-stratum
floor keeps in a budget).

Every row is a trace of its own, not a copy: a copied question and answer would be served from the
judge's cache, and the benchmark would count the cache instead of the eval. Each row's user
introduces themselves in the question and is greeted in the answer under a pseudonym of their own
(`[PERSON_…]`, the anonymizer's form), so no two rows share a question or an answer; the retrieved
contexts are the pool's, chunks of the demo corpus, so the corpus index and the noise pool have real
neighbours.

Writing is vectorized and streamed: `BUILD_ROWS` rows at a time are taken from the pool table and
written in row groups of the sampler's size, so memory does not grow with N.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from datetime import time as day_time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.core.records import (
    ANONYMIZER_VERSION,
    QUARANTINE_SCHEMA,
    SAMPLED_TRACE_SCHEMA,
    SAMPLER_VERSION,
)
from pipelines.core.settings import Settings
from pipelines.core.workspace import PartitionPaths, Workspace
from pipelines.stores.partitions import ROW_GROUP_SIZE, read_parts, write_manifest
from pipelines.stores.traces import TraceStore
from ragwatch_harness.demo.corpus_files import demo_corpus_chunks
from ragwatch_harness.demo.traces import generate_store_rows

DAY = date(2026, 11, 20)
POOL_SIZE = 2_000
"""Demo traces sampled once and drawn from: enough variety per stratum for questions, contexts and
tools."""
STRATA: dict[tuple[str, str], float] = {
    ("docs-assistant", "en"): 0.42,
    ("docs-assistant", "es"): 0.25,
    ("support-bot", "es"): 0.18,
    ("support-bot", "en"): 0.10,
    ("internal-search", "en"): 0.047,
    ("internal-search", "es"): 0.003,
}
"""(app, language) -> share of the day's rows: skewed like real traffic, down to 0.3 %."""
BUILD_ROWS = 20_000
"""Rows made per step (about 100 MB of Arrow data at the pool's 5 KB a row)."""
STRATA_KEYS = ["app", "language"]
_GREETING = re.compile(r"^(?:Hi|Hello|Hola) \[PERSON_[0-9a-f]+\], ")
_INTRO = {"en": "Hi, I'm [PERSON_{}]. ", "es": "Hola, soy [PERSON_{}]. "}
_GREET = {"en": "Hi [PERSON_{}], ", "es": "Hola [PERSON_{}], "}


def sampled_pool(settings: Settings, size: int, seed: int, day: date = DAY) -> pa.Table:
    """`size` demo traces of `day` put through the real sampling step at rate 1 (in a scratch trace
    store and workspace): the rows it published, in the sampled partition's schema."""
    from pipelines.traces.steps import stage_trace_sample  # the sampling step's imports are heavy

    scratch = Path(tempfile.mkdtemp(prefix="ragwatch-bench-pool-"))
    try:
        pool_settings = settings.model_copy(
            update={
                "home": scratch,
                "workspace": scratch / "workspace",
                "trace_store_url": f"sqlite:///{scratch / 'traces.db'}",
                "trace_table": "traces",
                "trace_tables_allowed": ["traces"],
            }
        )
        store = TraceStore.from_settings(pool_settings, read_only=False)
        store.create_table()
        store.insert_rows(
            generate_store_rows(days=1, per_day=size, end=day + timedelta(days=1), seed=seed)
        )
        store.engine.dispose()
        staged = stage_trace_sample(
            pool_settings, day, rate=1.0, strata=STRATA_KEYS, min_per_stratum=0
        )
        return read_parts(PartitionPaths(Path(staged.staged)).parts)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_sampled_day(
    settings: Settings, rows: int, *, pool: pa.Table, seed: int, rate: float = 0.05, day: date = DAY
) -> dict[str, Any]:
    """Publish a sampled partition of `rows` rows for `day` in the settings' workspace (replaced);
    its figures."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    by_stratum = _pool_by_stratum(pool)
    strata = [s for s in STRATA if len(by_stratum[s])]  # a small pool may lack the rarest strata
    shares = np.array([STRATA[s] for s in strata]) / sum(STRATA[s] for s in strata)
    sizes = np.array([len(by_stratum[s]) for s in strata])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    flat = np.concatenate([by_stratum[s] for s in strata])
    languages = pool.column("language").to_pylist()
    bodies = pa.array([_greeted_body(a) for a in pool.column("answer").to_pylist()], pa.string())
    workspace = Workspace.from_settings(settings)
    partition = workspace.traces_partition(day)
    if partition.root.exists():
        shutil.rmtree(partition.root)
    partition.root.mkdir(parents=True)
    counts = np.zeros(len(strata), dtype=np.int64)
    start = datetime.combine(day, day_time(0), tzinfo=UTC)
    with pq.ParquetWriter(
        partition.part(0), SAMPLED_TRACE_SCHEMA, compression="zstd", use_dictionary=True
    ) as writer:
        for first in range(0, rows, BUILD_ROWS):
            n = min(BUILD_ROWS, rows - first)
            stratum = rng.choice(len(strata), size=n, p=shares)
            counts += np.bincount(stratum, minlength=len(strata))
            picked = flat[offsets[stratum] + (rng.random(n) * sizes[stratum]).astype(np.int64)]
            writer.write_table(
                _rows(pool, picked, languages, bodies, first, rows, rng, start, rate),
                row_group_size=ROW_GROUP_SIZE,
            )
    partition.quarantine_part(0).parent.mkdir()
    pq.write_table(
        QUARANTINE_SCHEMA.empty_table(), partition.quarantine_part(0), compression="zstd"
    )  # none: the pool's are left out
    per_stratum = {f"{app}/{language}": int(c) for (app, language), c in zip(strata, counts)}
    population = round(rows / rate)
    write_manifest(
        partition.manifest,
        {
            "dataset": "traces",
            "day": day.isoformat(),
            "population": population,
            "selected": rows,
            "sampled": rows,
            "quarantined": 0,
            "quarantine_reasons": {},
            "pii_counts": {},
            "sample_rate": rate,
            "strata_keys": STRATA_KEYS,
            "min_per_stratum": 0,
            "sampler_version": SAMPLER_VERSION,
            "anonymizer_version": ANONYMIZER_VERSION,
            "strata": [
                {
                    "stratum": {"app": app, "language": language},
                    "population": round(int(c) / rate),
                    "selected": int(c),
                }
                for (app, language), c in zip(strata, counts)
            ],
            "bench": "ragwatch bench online: a synthetic day drawn from a sampled pool of demo traces",
        },
    )
    return {
        "rows": rows,
        "per_stratum": per_stratum,
        "pool": pool.num_rows,
        "bytes": partition.part(0).stat().st_size,
        "build_s": time.perf_counter() - started,
        "partition": str(partition.root),
    }


def _pool_by_stratum(pool: pa.Table) -> dict[tuple[str, str], np.ndarray]:
    apps, languages = pool.column("app").to_pylist(), pool.column("language").to_pylist()
    return {
        s: np.array([i for i, key in enumerate(zip(apps, languages)) if key == s], dtype=np.int64)
        for s in STRATA
    }


def _greeted_body(answer: str) -> str:
    """The answer as it follows a greeting: its own greeting (a planted one) dropped, lower-cased as
    _plant does."""
    body = _GREETING.sub("", answer)
    return body[0].lower() + body[1:] if body[1:2].islower() else body


def _rows(
    pool: pa.Table,
    picked: np.ndarray,
    languages: list[str],
    bodies: pa.Array,
    first: int,
    total: int,
    rng: np.random.Generator,
    start: datetime,
    rate: float,
) -> pa.Table:
    """Rows first … first + len(picked) of the day: the picked pool rows with their own id, time and
    user."""
    n = len(picked)
    table = pool.take(picked)
    raw = rng.bytes(16 * n)
    ids = [f"tr-{uuid.UUID(bytes=raw[16 * i : 16 * i + 16], version=4)}" for i in range(n)]
    # A pseudonym per row from a bijection of its number: 32 bits, so distinct for any day under 4
    # billion rows.
    users = [f"{(k * 0x9E3779B1) & 0xFFFFFFFF:08x}" for k in range(first, first + n)]
    language = [languages[i] for i in picked]
    intro = pa.array(
        [_INTRO.get(lang, _INTRO["en"]).format(u) for lang, u in zip(language, users)], pa.string()
    )
    greet = pa.array(
        [_GREET.get(lang, _GREET["en"]).format(u) for lang, u in zip(language, users)], pa.string()
    )
    stamps = pa.array(
        [start + timedelta(days=1) * ((first + i) / total) for i in range(n)],
        pa.timestamp("us", tz="UTC"),
    )
    columns = {
        "trace_id": pa.array(ids, pa.string()),
        "ts": stamps,
        "question": pc.binary_join_element_wise(intro, table.column("question"), ""),
        "answer": pc.binary_join_element_wise(greet, bodies.take(picked), ""),
        "sample_rate": pa.array(np.full(n, rate), pa.float64()),
    }
    return pa.table(
        [columns.get(f.name, table.column(f.name)) for f in SAMPLED_TRACE_SCHEMA],
        schema=SAMPLED_TRACE_SCHEMA,
    )


def cited_chunks(traces: pa.Table) -> list:
    """The demo corpus chunks the traces' contexts cite: a small index that still holds every
    trace's contexts."""
    cited = {
        c["chunk_id"] for contexts in traces.column("contexts").to_pylist() for c in contexts or []
    }
    return [c for c in demo_corpus_chunks() if c.chunk_id in cited]


def index_demo_corpus(settings: Settings, chunks: list | None = None) -> dict[str, Any]:
    """Index the demo corpus (or `chunks` of it) in the settings' Qdrant with the settings'
    embedder, with the chunk ids the demo traces cite (the Markdown files of `corpus index` get
    file-style ids)."""
    from pipelines.stores.corpus import open_corpus_index

    started = time.perf_counter()
    chunks = demo_corpus_chunks() if chunks is None else chunks
    with open_corpus_index(settings) as index:
        report = index.index(chunks)
    return {
        "chunks": len(chunks),
        "index_s": time.perf_counter() - started,
        "corpus_version": report.corpus_version,
    }
