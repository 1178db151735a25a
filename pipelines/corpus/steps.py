"""Corpus steps: index a folder and record its version in the data workspace.

The record (golden/corpus.json) is what the golden pipeline depends on: a new corpus version
makes `dvc repro` and the golden_build DAG rebuild the set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipelines.core.settings import Settings
from pipelines.core.versioning import ensure_workspace
from pipelines.core.workspace import Workspace
from pipelines.corpus.chunking import load_chunks
from pipelines.corpus.fingerprint import folder_fingerprint
from pipelines.models.embeddings import Embedder
from pipelines.stores.corpus import open_corpus_index


def index_corpus(
    settings: Settings, folder: Path, embedder: Embedder | None = None, rebuild: bool = False
) -> dict[str, Any]:
    """Make the index hold `folder`'s chunks; an unchanged folder is recognised by its fingerprint
    and neither parsed nor compared. `embedder`: the settings' one when None. `rebuild`: drop the
    collection and embed everything again (another embedder, or vectors from an older release)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of Markdown, HTML or text files")
    source = folder_fingerprint(folder)
    with open_corpus_index(settings, embedder) as index:
        report = None if rebuild else index.unchanged_since(source)
        if report is None:
            chunks = load_chunks(folder)
            if not chunks:
                raise ValueError(f"no .md, .html or .txt content under {folder}")
            report = index.index(chunks, rebuild=rebuild, source=source)
    workspace = Workspace.from_settings(settings)
    ensure_workspace(workspace, settings.resolved_dvc_remote)
    workspace.corpus_record.write_text(
        json.dumps(
            {
                "corpus_version": report.corpus_version,
                "chunks": report.chunks_total,
                "collection": settings.corpus_collection,
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    return {"folder": str(folder), **report.summary()}


def notify_refresh(settings: Settings, report: dict[str, Any]) -> dict[str, Any]:
    from pipelines.corpus.refresh import notify_corpus_refreshed

    extra = {k: report[k] for k in ("corpus_version", "previous_version") if k in report}
    return notify_corpus_refreshed(settings, extra=extra)
