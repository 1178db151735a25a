"""Where production traces come from: `RAGWATCH_TRACE_SOURCE` picks the SQL store or a kind of span
export.

Every source answers the same three reads the sampling makes (`count_by`, `iter_keys`, `iter_rows`),
so a file source goes through the very selection, anonymization, quarantine and validation the SQL
store goes through.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.core.settings import Settings
from pipelines.stores.trace_sources.file_store import FileTraceStore, file_fingerprints
from pipelines.stores.trace_sources.spans import UnreadableSource, otlp_json_files, read_otlp_lines
from pipelines.stores.traces import TraceStore

SPAN_FILE_SOURCES = ("otlp", "openinference")


def open_trace_source(
    settings: Settings, *, selection: bool = False
) -> TraceStore | FileTraceStore:
    """The configured source of production traces; `selection` as in `TraceStore.from_settings`."""
    if settings.trace_source == "sql":
        return TraceStore.from_settings(settings, selection=selection)
    if not settings.trace_source_path:
        raise UnreadableSource(
            f"RAGWATCH_TRACE_SOURCE={settings.trace_source} reads files: set RAGWATCH_TRACE_SOURCE_PATH "
            "to the export's file or folder"
        )
    index_dir = (settings.home / "trace-index").resolve()
    if settings.trace_source in SPAN_FILE_SOURCES:
        root = Path(settings.trace_source_path)

        def read(name: str):
            return _span_reader(settings.trace_source, Path(name))(Path(name))

        return FileTraceStore(
            settings.trace_source,
            lambda: file_fingerprints(otlp_json_files(root)),
            read,
            index_dir,
            batch_size=settings.trace_batch_size,
            question_rule=settings.question_rule,
        )
    from pipelines.stores.trace_sources.langfuse_export import langfuse_export_store

    return langfuse_export_store(settings, index_dir)


def _span_reader(source: str, path: Path):
    """Phoenix exports its spans as a dataframe's Parquet file; every other span file is OTLP/JSON
    lines (plain, gzip or zstd)."""
    if source == "openinference" and path.suffix == ".parquet":
        from pipelines.stores.trace_sources.phoenix_spans import read_phoenix_parquet

        return read_phoenix_parquet
    return read_otlp_lines
