"""The corpus the assistant retrieves from: files -> sections -> chunks with stable ids.

Indexing lives in `pipelines.stores.corpus`; this package only reads and splits.
"""

from pipelines.corpus.chunking import MAX_WORDS, Chunk, chunk_document, corpus_version, load_chunks
from pipelines.corpus.demo import demo_corpus_chunks, write_demo_corpus

__all__ = [
    "MAX_WORDS",
    "Chunk",
    "chunk_document",
    "corpus_version",
    "demo_corpus_chunks",
    "load_chunks",
    "write_demo_corpus",
]
