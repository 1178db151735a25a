"""A folder's fingerprint: everything parsing and chunking read, hashed without parsing anything.

Parsing every file of an unchanged 10,000-chunk folder and comparing every document with the
index takes seconds of work to learn that nothing changed. The fingerprint covers what a chunk is
made of: each supported file's path, bytes and modification day (the default date of a file without
front matter), the chunk size, the code that turns files into chunks, and the languages told apart
with the detector's release; if any of them changes, the folder is parsed and compared with the
index.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from pipelines.core import language, records, text
from pipelines.corpus import chunking, documents
from pipelines.corpus.documents import SUFFIX_TYPES, supported_files

_PARSER_SOURCES = tuple(
    Path(module.__file__) for module in (documents, chunking, text, language, records)
)
"""Parsing, chunking, language detection and chunk ids: a new release of any re-parses once."""


def folder_fingerprint(folder: Path, max_words: int = chunking.MAX_WORDS) -> str:
    detector = (
        f"languages={','.join(language.configured_languages())} py3langid={version('py3langid')}"
    )
    digest = hashlib.sha256(f"max_words={max_words}\n{detector}\n".encode())
    for source in _PARSER_SOURCES:
        digest.update(source.read_bytes())
    for path, name in supported_files(folder):
        day = datetime.fromtimestamp(path.stat().st_mtime, UTC).date().isoformat()
        digest.update(f"\n{name}\n{SUFFIX_TYPES[path.suffix.lower()]}\n{day}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
