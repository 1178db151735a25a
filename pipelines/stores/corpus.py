"""The indexed corpus in Qdrant: incremental indexing, dense / BM25 / hybrid search, corpus version.

One collection holds the chunks (named vectors `dense` and `bm25`, payload = chunk metadata and
text). A second, vector-less `<collection>_manifest` collection records what was indexed: one
point per document with its fingerprint and chunk ids, and one point with the corpus version and
the embedder that produced the vectors. Re-indexing compares fingerprints, embeds only chunk ids
it has not seen, and removes a changed document's manifest entry before touching its points and
writes the new one after them, so a crash halfway is repaired by the next run. The corpus point also
keeps the fingerprint of the folder last indexed (withdrawn while a run is under way): an unchanged
folder is recognised without parsing it.

Local mode (`path=`) locks the folder for one process: use `with open_corpus_index(settings) as
index:` and keep it short-lived, or point `RAGWATCH_QDRANT_URL` at a server.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from qdrant_client import QdrantClient, models

from pipelines.core.records import Chunk, corpus_version
from pipelines.core.settings import Settings
from pipelines.models.embeddings import Embedder, build_embedder
from pipelines.stores.bm25 import document_vector, query_vector

SearchMode = Literal["hybrid", "dense", "sparse"]
Filter = models.Filter | Mapping[str, Any] | None

DENSE, SPARSE = "dense", "bm25"
SPARSE_SCHEME = "bm25-blake2b32-v1"
"""Names the tokenizer and hashing; vectors written under another scheme cannot be mixed."""
UPSERT_BATCH = 128
EMBED_BATCH = 1024
PREFETCH_FACTOR, PREFETCH_MIN = 4, 20
SEARCH_BATCH = 256
"""Queries per batched search request: a day's questions go in a few requests of bounded size."""
_NAMESPACE = uuid.UUID("6f1d9a52-3c1e-4a8e-9a43-2f6b1f3c2d10")
_CORPUS_KEY = "__corpus__"


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    score: float
    """Cosine (dense), BM25 (sparse) or reciprocal-rank fusion (hybrid): compare within one mode
    only."""
    text: str
    metadata: dict[str, Any]
    """Every payload field but `chunk_id` and `text`: document, section, type, date, language..."""


@dataclass(frozen=True)
class IndexReport:
    corpus_version: str
    previous_version: str | None
    documents_added: list[str] = field(default_factory=list)
    documents_updated: list[str] = field(default_factory=list)
    documents_removed: list[str] = field(default_factory=list)
    documents_unchanged: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_unchanged: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    """Of `seconds`, the time the embedder took for the new chunks."""
    write_seconds: float = 0.0
    """Of `seconds`, BM25 vectors plus the Qdrant writes of new points (the upsert side)."""

    @property
    def changed(self) -> bool:
        return self.corpus_version != self.previous_version

    def summary(self) -> dict[str, Any]:
        """Counts and seconds: what a task returns through XCom."""
        return {
            "corpus_version": self.corpus_version,
            "previous_version": self.previous_version,
            "documents_added": len(self.documents_added),
            "documents_updated": len(self.documents_updated),
            "documents_removed": len(self.documents_removed),
            "documents_unchanged": self.documents_unchanged,
            "chunks_added": self.chunks_added,
            "chunks_removed": self.chunks_removed,
            "chunks_unchanged": self.chunks_unchanged,
            "chunks_total": self.chunks_total,
            "seconds": self.seconds,
            "embed_seconds": self.embed_seconds,
            "write_seconds": self.write_seconds,
        }


class CorpusIndexError(RuntimeError):
    pass


def point_id(key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, key))


class CorpusIndex:
    def __init__(self, settings: Settings, embedder: Embedder | None = None):
        self.settings = settings
        self.collection = settings.corpus_collection
        self.manifest = f"{self.collection}_manifest"
        self._embedder = embedder
        self.client = _connect(settings)

    def __enter__(self) -> CorpusIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = build_embedder(self.settings)
        return self._embedder

    # -- indexing -------------------------------------------------------------------------------

    def index(
        self, chunks: Iterable[Chunk], rebuild: bool = False, source: str | None = None
    ) -> IndexReport:
        """Make the index hold exactly `chunks`, touching only documents that changed.

        `source`: the fingerprint of the folder the chunks were parsed from, kept so that the next
        run of an unchanged folder can stop at `unchanged_since(source)` without parsing it.
        """
        started = time.monotonic()
        chunks = list(chunks)
        by_document = _group(chunks)
        if rebuild:
            self.drop()
        self._ensure_collections()
        info = self._corpus_info()
        if info:
            self._check_compatible(info, rebuilding_hint=True)
            if info.get("source"):
                # Withdraw the claim before touching any point: a run that dies halfway must not
                # leave a fingerprint saying the index matches a folder.
                self._write_corpus_info(
                    {key: value for key, value in info.items() if key != "source"}
                )
        stored = self._documents()

        removed = sorted(set(stored) - set(by_document))
        added: list[str] = []
        updated: list[str] = []
        to_embed: list[Chunk] = []
        to_repayload: list[Chunk] = []
        stale_ids: list[str] = []
        unchanged_docs = unchanged_chunks = 0
        for document, doc_chunks in by_document.items():
            previous = stored.get(document)
            if previous and previous["fingerprint"] == _fingerprint(doc_chunks):
                unchanged_docs += 1
                unchanged_chunks += len(doc_chunks)
                continue
            old_ids = set(previous["chunk_ids"]) if previous else set()
            (updated if previous else added).append(document)
            stale_ids += sorted(old_ids - {chunk.chunk_id for chunk in doc_chunks})
            for chunk in doc_chunks:
                (to_repayload if chunk.chunk_id in old_ids else to_embed).append(chunk)
        for document in removed:
            stale_ids += stored[document]["chunk_ids"]

        # Unlist changed documents before touching their points: if this run dies below, the next
        # one finds them unlisted and rebuilds them whole, whatever the folder holds by then.
        self._forget_documents(updated + removed)
        self._delete_points(stale_ids)
        for document in removed + added:
            # Points that no manifest entry lists: left by a run that crashed before writing it.
            self._delete_document_points(document)
        embed_seconds, write_seconds = self._upsert_embedded(to_embed)
        self._upsert_payloads(to_repayload)
        self._write_documents({document: by_document[document] for document in added + updated})
        version = corpus_version(chunks)
        self._write_corpus_info(
            {
                "version": version,
                "source": source,
                "documents": len(by_document),
                "chunks": len(chunks),
            }
        )
        return IndexReport(
            corpus_version=version,
            previous_version=info.get("version") if info else None,
            documents_added=added,
            documents_updated=updated,
            documents_removed=removed,
            documents_unchanged=unchanged_docs,
            chunks_added=len(to_embed),
            chunks_removed=len(stale_ids),
            chunks_unchanged=unchanged_chunks + len(to_repayload),
            chunks_total=len(chunks),
            seconds=round(time.monotonic() - started, 3),
            embed_seconds=round(embed_seconds, 3),
            write_seconds=round(write_seconds, 3),
        )

    def unchanged_since(self, source: str) -> IndexReport | None:
        """The report of a run with nothing to do, if the last completed `index()` was given this
        source fingerprint and this embedder; None when the folder has to be parsed and compared."""
        started = time.monotonic()
        info = self._corpus_info()
        if not info or info.get("source") != source or "chunks" not in info:
            return None
        self._check_compatible(info, rebuilding_hint=True)
        return IndexReport(
            corpus_version=info["version"],
            previous_version=info["version"],
            documents_unchanged=info["documents"],
            chunks_unchanged=info["chunks"],
            chunks_total=info["chunks"],
            seconds=round(time.monotonic() - started, 3),
        )

    def drop(self) -> None:
        for name in (self.collection, self.manifest):
            if self.client.collection_exists(name):
                self.client.delete_collection(name)

    # -- reading --------------------------------------------------------------------------------

    def search(
        self, query: str, k: int = 5, mode: SearchMode = "hybrid", filter: Filter = None
    ) -> list[Hit]:
        """Top-k chunks for `query`. Hybrid fuses the dense and BM25 rankings with RRF."""
        return self.search_many([query], k, mode, filter)[0]

    def search_many(
        self, queries: Sequence[str], k: int = 5, mode: SearchMode = "hybrid", filter: Filter = None
    ) -> list[list[Hit]]:
        """`search` for each query, in order: the queries are embedded in one call and sent as
        batched queries (`SEARCH_BATCH` per request), not one round trip per query."""
        if mode not in ("hybrid", "dense", "sparse"):
            raise ValueError(f"unknown search mode {mode!r}; use hybrid, dense or sparse")
        self._require_index()
        query_filter = _as_filter(filter)
        dense = iter(self.embedder.embed(list(queries)) if mode != "sparse" else [])
        requests: list[models.QueryRequest | None] = []
        for indices, values in map(query_vector, queries):
            sparse = models.SparseVector(indices=indices, values=values)
            if mode == "sparse":
                requests.append(
                    models.QueryRequest(
                        query=sparse, using=SPARSE, limit=k, filter=query_filter, with_payload=True
                    )
                    if indices
                    else None
                )
            elif mode == "dense" or not indices:  # a query of stopwords only has no BM25 side
                requests.append(
                    models.QueryRequest(
                        query=next(dense),
                        using=DENSE,
                        limit=k,
                        filter=query_filter,
                        with_payload=True,
                    )
                )
            else:
                depth = max(k * PREFETCH_FACTOR, PREFETCH_MIN)
                requests.append(
                    models.QueryRequest(
                        prefetch=[
                            models.Prefetch(
                                query=next(dense), using=DENSE, limit=depth, filter=query_filter
                            ),
                            models.Prefetch(
                                query=sparse, using=SPARSE, limit=depth, filter=query_filter
                            ),
                        ],
                        query=models.FusionQuery(fusion=models.Fusion.RRF),
                        limit=k,
                        filter=query_filter,
                        with_payload=True,
                    )
                )
        sent = [request for request in requests if request is not None]
        responses = []
        for start in range(0, len(sent), SEARCH_BATCH):
            responses += self.client.query_batch_points(
                self.collection, sent[start : start + SEARCH_BATCH]
            )
        answered = iter(responses)
        return [
            [_hit(point.payload or {}, point.score) for point in next(answered).points]
            if request is not None
            else []
            for request in requests
        ]

    def chunks(self, filter: Filter = None, batch_size: int = 256) -> Iterator[Chunk]:
        """Every stored chunk (optionally filtered), in storage order."""
        if not self.client.collection_exists(self.collection):
            return
        offset = None
        while True:
            records, offset = self.client.scroll(
                self.collection,
                scroll_filter=_as_filter(filter),
                limit=batch_size,
                offset=offset,
                with_payload=True,
                with_vectors=False,
            )
            yield from (Chunk.from_payload(record.payload or {}) for record in records)
            if offset is None:
                return

    def get(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The stored chunks among `chunk_ids`, in the order asked; unknown ids are left out."""
        if not chunk_ids or not self.client.collection_exists(self.collection):
            return []
        records = self.client.retrieve(
            self.collection, ids=[point_id(cid) for cid in chunk_ids], with_payload=True
        )
        found = {
            record.payload["chunk_id"]: Chunk.from_payload(record.payload)
            for record in records
            if record.payload
        }
        return [found[cid] for cid in chunk_ids if cid in found]

    def count(self, filter: Filter = None) -> int:
        if not self.client.collection_exists(self.collection):
            return 0
        return self.client.count(self.collection, count_filter=_as_filter(filter), exact=True).count

    def version(self) -> str | None:
        """The corpus version written by the last completed `index()`, or None if never indexed."""
        info = self._corpus_info()
        return info.get("version") if info else None

    # -- internals ------------------------------------------------------------------------------

    def _require_index(self) -> None:
        info = self._corpus_info()
        if not info:
            raise CorpusIndexError(
                f"collection {self.collection!r} has not been indexed yet; run `ragwatch corpus index <folder>`"
            )
        self._check_compatible(info, rebuilding_hint=False)

    def _check_compatible(self, info: dict[str, Any], rebuilding_hint: bool) -> None:
        wanted = {"embedder": self.embedder.name, "sparse_scheme": SPARSE_SCHEME}
        stored = {key: info.get(key) for key in wanted}
        if stored != wanted:
            fix = "re-index with rebuild=True (`--rebuild`)" if rebuilding_hint else "re-index it"
            raise CorpusIndexError(
                f"collection {self.collection!r} was indexed with {stored}, but this process uses {wanted}; "
                f"{fix}, or set RAGWATCH_CORPUS_COLLECTION to a collection built with this embedder"
            )

    def _ensure_collections(self) -> None:
        if not self.client.collection_exists(self.collection):
            self.client.create_collection(
                self.collection,
                vectors_config={
                    DENSE: models.VectorParams(
                        size=self.embedder.dim, distance=models.Distance.COSINE
                    )
                },
                sparse_vectors_config={
                    SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)
                },
            )
            if self.settings.qdrant_url:  # local mode has no payload indexes and warns about them
                for key in ("document", "type", "language", "date"):
                    self.client.create_payload_index(
                        self.collection, key, models.PayloadSchemaType.KEYWORD
                    )
        if not self.client.collection_exists(self.manifest):
            self.client.create_collection(self.manifest, vectors_config={})
        _relax_local_durability(self.client, (self.collection, self.manifest))

    def _documents(self) -> dict[str, dict[str, Any]]:
        documents = {}
        offset = None
        only_documents = models.Filter(must=[_match("kind", "document")])
        while True:
            records, offset = self.client.scroll(
                self.manifest,
                scroll_filter=only_documents,
                limit=512,
                offset=offset,
                with_payload=True,
            )
            documents.update({r.payload["document"]: r.payload for r in records if r.payload})
            if offset is None:
                return documents

    def _corpus_info(self) -> dict[str, Any] | None:
        if not self.client.collection_exists(self.manifest):
            return None
        records = self.client.retrieve(
            self.manifest, ids=[point_id(_CORPUS_KEY)], with_payload=True
        )
        return records[0].payload if records else None

    def _write_corpus_info(self, state: dict[str, Any]) -> None:
        """`state`: version, and source, documents and chunks when known; the embedder is this
        one."""
        payload = {
            **state,
            "kind": "corpus",
            "embedder": self.embedder.name,
            "dim": self.embedder.dim,
            "sparse_scheme": SPARSE_SCHEME,
        }
        self.client.upsert(
            self.manifest,
            [models.PointStruct(id=point_id(_CORPUS_KEY), vector={}, payload=payload)],
        )

    def _forget_documents(self, documents: Sequence[str]) -> None:
        if documents:
            self.client.delete(
                self.manifest, models.PointIdsList(points=[point_id(f"doc:{d}") for d in documents])
            )

    def _write_documents(self, documents: Mapping[str, list[Chunk]]) -> None:
        points = [
            models.PointStruct(
                id=point_id(f"doc:{document}"),
                vector={},
                payload={
                    "kind": "document",
                    "document": document,
                    "fingerprint": _fingerprint(chunks),
                    "chunk_ids": [chunk.chunk_id for chunk in chunks],
                },
            )
            for document, chunks in documents.items()
        ]
        for start in range(0, len(points), UPSERT_BATCH):
            self.client.upsert(self.manifest, points[start : start + UPSERT_BATCH])

    def _upsert_embedded(self, chunks: list[Chunk]) -> tuple[float, float]:
        """Embed and write `chunks`; returns (embedding seconds, writing seconds)."""
        embed_s = write_s = 0.0
        # Large embedding calls let the model sort texts by length, so batches carry little padding.
        for start in range(0, len(chunks), EMBED_BATCH):
            group = chunks[start : start + EMBED_BATCH]
            began = time.monotonic()
            dense = self.embedder.embed([_indexed_text(chunk) for chunk in group])
            embed_s += time.monotonic() - began
            began = time.monotonic()
            for offset in range(0, len(group), UPSERT_BATCH):
                points = []
                for chunk, vector in zip(
                    group[offset : offset + UPSERT_BATCH], dense[offset : offset + UPSERT_BATCH]
                ):
                    indices, values = document_vector(_indexed_text(chunk))
                    vectors: dict[str, Any] = {DENSE: vector}
                    if indices:
                        vectors[SPARSE] = models.SparseVector(indices=indices, values=values)
                    points.append(
                        models.PointStruct(
                            id=point_id(chunk.chunk_id), vector=vectors, payload=chunk.payload()
                        )
                    )
                self.client.upsert(self.collection, points)
            write_s += time.monotonic() - began
        return embed_s, write_s

    def _upsert_payloads(self, chunks: list[Chunk]) -> None:
        # Same id means same text: keep the vectors, refresh metadata such as the date.
        for chunk in chunks:
            self.client.overwrite_payload(
                self.collection, chunk.payload(), points=[point_id(chunk.chunk_id)]
            )

    def _delete_points(self, chunk_ids: Sequence[str]) -> None:
        for start in range(0, len(chunk_ids), UPSERT_BATCH):
            ids = [point_id(cid) for cid in chunk_ids[start : start + UPSERT_BATCH]]
            self.client.delete(self.collection, models.PointIdsList(points=ids))

    def _delete_document_points(self, document: str) -> None:
        selector = models.FilterSelector(filter=models.Filter(must=[_match("document", document)]))
        self.client.delete(self.collection, selector)


def open_corpus_index(settings: Settings, embedder: Embedder | None = None) -> CorpusIndex:
    """The configured index; use it as a context manager (local mode locks its folder per
    process)."""
    return CorpusIndex(settings, embedder)


def _connect(settings: Settings) -> QdrantClient:
    if settings.qdrant_url:
        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return QdrantClient(url=settings.qdrant_url, api_key=api_key)
    path = settings.resolved_qdrant_path
    path.mkdir(parents=True, exist_ok=True)
    # Local mode holds an exclusive lock per path: parallel tasks (a backfill) take turns.
    deadline = time.monotonic() + settings.qdrant_local_lock_wait_s
    while True:
        try:
            client = QdrantClient(path=str(path))
            _relax_local_durability(client, [c.name for c in client.get_collections().collections])
            return client
        except RuntimeError as error:
            if time.monotonic() > deadline:
                raise CorpusIndexError(
                    f"the local Qdrant at {path} stayed open in another process for {settings.qdrant_local_lock_wait_s:.0f} s (local "
                    "mode allows one at a time); run a Qdrant server and set RAGWATCH_QDRANT_URL"
                ) from error
            time.sleep(1.0)


def _relax_local_durability(client: QdrantClient, collections: Sequence[str]) -> None:
    """Local mode commits (and fsyncs) its SQLite file once per point: 10,000 chunks took minutes.

    Write-ahead logging with `synchronous=NORMAL` keeps every commit atomic and survives a crashed
    process; only a power cut may lose the last commits, which the next index run repairs (a
    document's manifest entry is what marks it done). Production runs a Qdrant server, where none
    of this applies. Reaching into the local client is guarded: if its internals change, this does
    nothing and indexing is merely slower.
    """
    local = getattr(client, "_client", None)
    for name in collections or ():
        storage = getattr(getattr(local, "collections", {}).get(name), "storage", None)
        connection = getattr(storage, "storage", None)
        if isinstance(connection, sqlite3.Connection):
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")


def _group(chunks: list[Chunk]) -> dict[str, list[Chunk]]:
    by_document: dict[str, list[Chunk]] = defaultdict(list)
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.chunk_id in seen:
            raise CorpusIndexError(
                f"duplicate chunk id {chunk.chunk_id!r}: two chunks would overwrite one point"
            )
        seen.add(chunk.chunk_id)
        by_document[chunk.document].append(chunk)
    return dict(by_document)


def _fingerprint(chunks: list[Chunk]) -> str:
    """Content and metadata of one document; unchanged fingerprint means nothing to write."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(repr(sorted(chunk.payload().items())).encode())
    return digest.hexdigest()


def _indexed_text(chunk: Chunk) -> str:
    # The heading names the topic that a chunk's body often leaves implicit ("it", "this
    # statement").
    return f"{chunk.section}\n\n{chunk.text}" if chunk.section else chunk.text


def _hit(payload: dict[str, Any], score: float) -> Hit:
    metadata = {key: value for key, value in payload.items() if key not in ("chunk_id", "text")}
    return Hit(
        chunk_id=payload["chunk_id"],
        score=float(score),
        text=payload.get("text", ""),
        metadata=metadata,
    )


def _match(key: str, value: Any) -> models.FieldCondition:
    if isinstance(value, (list, tuple, set, frozenset)):
        return models.FieldCondition(key=key, match=models.MatchAny(any=list(value)))
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _as_filter(filter: Filter) -> models.Filter | None:
    """A Qdrant filter, or a mapping of payload field -> value (or list of values), all required."""
    if filter is None or isinstance(filter, models.Filter):
        return filter
    return (
        models.Filter(must=[_match(key, value) for key, value in filter.items()])
        if filter
        else None
    )
